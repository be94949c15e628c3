//! Constant elements in the JSON format: decoding their exact encoding (bit patterns for
//! floats, decimal strings for `i64`) and checking them against the recorded type.

use serde_json::Value;

use crate::error::{SerializationError, SerializationErrorKind as Kind};
use crate::{ElementType, TensorData, TensorType};

type Res<T> = Result<T, SerializationError>;

fn invalid(location: &str, message: impl Into<String>) -> SerializationError {
    SerializationError::new(Kind::Invalid, location, message)
}

/// Decodes constant elements (see the format's encoding in [`super::JSON_VERSION`]).
pub(super) fn decode_constant(et: ElementType, values: Vec<Value>, loc: &str) -> Res<TensorData> {
    let bad = |k: usize, v: &Value, want: &str| {
        invalid(loc, format!("constant element {k} is {v}, expected {want}"))
    };
    Ok(match et {
        ElementType::F32 => TensorData::F32(
            values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    hex_bits(v, 8)
                        .and_then(|b| u32::try_from(b).ok())
                        .map(f32::from_bits)
                        .ok_or_else(|| bad(k, v, "an f32 bit pattern \"0x\" + 8 hex digits"))
                })
                .collect::<Res<_>>()?,
        ),
        ElementType::F64 => TensorData::F64(
            values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    hex_bits(v, 16)
                        .map(f64::from_bits)
                        .ok_or_else(|| bad(k, v, "an f64 bit pattern \"0x\" + 16 hex digits"))
                })
                .collect::<Res<_>>()?,
        ),
        ElementType::I32 => TensorData::I32(
            values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    v.as_i64()
                        .and_then(|x| i32::try_from(x).ok())
                        .ok_or_else(|| bad(k, v, "an i32 as a JSON integer"))
                })
                .collect::<Res<_>>()?,
        ),
        ElementType::I64 => TensorData::I64(
            values
                .iter()
                .enumerate()
                .map(|(k, v)| {
                    v.as_str()
                        .filter(|s| is_decimal(s))
                        .and_then(|s| s.parse::<i64>().ok())
                        .ok_or_else(|| bad(k, v, "an i64 as a decimal string"))
                })
                .collect::<Res<_>>()?,
        ),
        ElementType::Bool => TensorData::Bool(
            values
                .iter()
                .enumerate()
                .map(|(k, v)| v.as_bool().ok_or_else(|| bad(k, v, "true or false")))
                .collect::<Res<_>>()?,
        ),
    })
}

/// `"0x"` followed by exactly `digits` hex digits, as an integer.
fn hex_bits(v: &Value, digits: usize) -> Option<u64> {
    let hex = v.as_str()?.strip_prefix("0x")?;
    if hex.len() != digits || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// An optional `-` and one or more ASCII digits.
fn is_decimal(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Checks that constant `d` has the element type and fills the shape of `t`.
pub(super) fn check_constant(d: &TensorData, t: &TensorType, loc: &str) -> Res<()> {
    if d.element_type() != t.element_type {
        return Err(invalid(
            loc,
            format!(
                "constant elements are {} but the output type is {t}",
                d.element_type()
            ),
        ));
    }
    let expected = t
        .shape
        .element_count()
        .map_err(|e| invalid(loc, e.to_string()))?;
    if d.len() != expected {
        return Err(invalid(
            loc,
            format!(
                "constant has {} elements but its shape {} holds {expected}",
                d.len(),
                t.shape
            ),
        ));
    }
    Ok(())
}
