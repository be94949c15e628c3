//! Constant elements in the JSON format: decoding their exact encoding (bit patterns for
//! floats, decimal strings for `i64`) and checking them against the recorded type.

use serde_json::Value;

use crate::error::{SerializationError, SerializationErrorKind as Kind};
use crate::{bf16, f16, Element, ElementType, TensorData, TensorType};

type Res<T> = Result<T, SerializationError>;

fn invalid(location: &str, message: impl Into<String>) -> SerializationError {
    SerializationError::new(Kind::Invalid, location, message)
}

/// Decodes constant elements (see the format's encoding in [`super::JSON_VERSION`]).
pub(super) fn decode_constant(et: ElementType, values: Vec<Value>, loc: &str) -> Res<TensorData> {
    /// Each value through `parse`, or an error naming the element and what was expected.
    fn each<T: Element>(
        values: &[Value],
        loc: &str,
        want: &str,
        parse: impl Fn(&Value) -> Option<T>,
    ) -> Res<TensorData> {
        let v = values
            .iter()
            .enumerate()
            .map(|(k, v)| {
                parse(v).ok_or_else(|| {
                    invalid(loc, format!("constant element {k} is {v}, expected {want}"))
                })
            })
            .collect::<Res<Vec<T>>>()?;
        Ok(T::into_data(v))
    }
    /// A JSON integer that fits `T`.
    fn int<T: Element + TryFrom<i64>>(v: &Value) -> Option<T> {
        v.as_i64().and_then(|x| T::try_from(x).ok())
    }
    /// A decimal string that parses as `T`.
    fn decimal<T: Element + std::str::FromStr>(v: &Value) -> Option<T> {
        v.as_str()
            .filter(|s| is_decimal(s))
            .and_then(|s| s.parse().ok())
    }
    let bits16 = |v: &Value| hex_bits(v, 4).and_then(|b| u16::try_from(b).ok());
    let v = values.as_slice();
    match et {
        ElementType::F32 => each(v, loc, "an f32 bit pattern \"0x\" + 8 hex digits", |v| {
            hex_bits(v, 8)
                .and_then(|b| u32::try_from(b).ok())
                .map(f32::from_bits)
        }),
        ElementType::F64 => each(v, loc, "an f64 bit pattern \"0x\" + 16 hex digits", |v| {
            hex_bits(v, 16).map(f64::from_bits)
        }),
        ElementType::F16 => each(v, loc, "an f16 bit pattern \"0x\" + 4 hex digits", |v| {
            bits16(v).map(f16::from_bits)
        }),
        ElementType::BF16 => each(v, loc, "a bf16 bit pattern \"0x\" + 4 hex digits", |v| {
            bits16(v).map(bf16::from_bits)
        }),
        ElementType::I32 => each(v, loc, "an i32 as a JSON integer", int::<i32>),
        ElementType::I8 => each(v, loc, "an i8 as a JSON integer", int::<i8>),
        ElementType::U8 => each(v, loc, "a u8 as a JSON integer", int::<u8>),
        ElementType::I16 => each(v, loc, "an i16 as a JSON integer", int::<i16>),
        ElementType::U16 => each(v, loc, "a u16 as a JSON integer", int::<u16>),
        ElementType::U32 => each(v, loc, "a u32 as a JSON integer", int::<u32>),
        ElementType::I64 => each(v, loc, "an i64 as a decimal string", decimal::<i64>),
        ElementType::U64 => each(v, loc, "a u64 as a decimal string", decimal::<u64>),
        ElementType::Bool => each(v, loc, "true or false", Value::as_bool),
        ElementType::String => {
            let strings = v.iter().enumerate().map(|(k, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    invalid(
                        loc,
                        format!("constant element {k} is {v}, expected a JSON string"),
                    )
                })
            });
            strings.collect::<Res<_>>().map(TensorData::String)
        }
        // The storage-only types: their bit patterns as JSON integers.
        t => {
            let width = crate::storage_bit_width(t).unwrap_or(8);
            let bits = each(
                v,
                loc,
                &format!("a {width}-bit pattern as a JSON integer"),
                |v| {
                    v.as_u64()
                        .filter(|&b| b < 1 << width)
                        .and_then(|b| u8::try_from(b).ok())
                },
            )?;
            let bits = bits.into_vec::<u8>().unwrap_or_default();
            Ok(crate::storage_from_bits(t, bits.into_iter())
                .unwrap_or_else(|| TensorData::zeros(t, 0)))
        }
    }
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
