//! `Cast` and `CastLike` (opsets 1 to 25), with the `saturate` (opset 19) and `round_mode`
//! (opset 24) attributes of the conversions to the 8-bit floats.
//!
//! The IR's `Convert` is ONNX's default conversion: to the float8 types it saturates
//! (`saturate = 1`), to FLOAT8E8M0 it rounds up (`round_mode = "up"`). `saturate = 0` is
//! composed here rather than carried by the IR: it differs from the saturating conversion
//! only where the rounded value passes the largest finite one, so the importer selects the
//! format's overflow value (infinity for E5M2, NaN for the others) where `|x|` reaches that
//! point. This keeps one conversion op in the IR, fused and folded as before.

use graphlift_ir::minifloat::MiniFloat;
use graphlift_ir::{CompareOp, ElementType, Output, Shape, TensorData, UnaryOp};

use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;
use crate::proto::{attribute_type, data_type};
use crate::tensor::element_type;

/// `Cast`: `to` is a data type code (a name string in opsets 1–5). Float to integer
/// truncates toward zero and saturates, to BOOL is `x != 0`, to the storage-only types as
/// [`graphlift_ir::StorageElement`] (graphlift's `Convert`); `saturate` and `round_mode` as
/// in the module docs.
///
/// # Errors
/// A missing or malformed `to`, an unknown data type, and `round_mode` other than `up` or
/// `saturate = 0` for FLOAT8E8M0 (not supported), each naming the node.
pub(super) fn cast(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let Some(a) = e.attr("to")? else {
        return Err(e.attribute_error("to", "is required".into()));
    };
    let code = match a.r#type {
        attribute_type::INT => i32::try_from(a.i).unwrap_or(-1),
        attribute_type::STRING => {
            let name = String::from_utf8_lossy(&a.s).to_string();
            data_type::from_name(&name)
                .ok_or_else(|| e.attribute_error("to", format!("unknown data type {name:?}")))?
        }
        attribute_type::UNDEFINED if a.i != 0 => i32::try_from(a.i).unwrap_or(-1),
        other => {
            return Err(e.attribute_error(
                "to",
                format!("expected INT, got {}", attribute_type::name(other)),
            ))
        }
    };
    let to = element_type(code, &e.at())?;
    convert(e, x, to)
}

/// `CastLike`: `Cast` to the type of input 1 (`saturate`, `round_mode` as in [`cast`]).
pub(super) fn cast_like(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (x, like) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let to = e.et(like)?;
    convert(e, x, to)
}

/// The float8 formats that `saturate = 0` changes, with their conversion.
fn float8(t: ElementType) -> Option<MiniFloat> {
    match t {
        ElementType::F8E4M3FN => Some(MiniFloat::E4M3FN),
        ElementType::F8E4M3FNUZ => Some(MiniFloat::E4M3FNUZ),
        ElementType::F8E5M2 => Some(MiniFloat::E5M2),
        ElementType::F8E5M2FNUZ => Some(MiniFloat::E5M2FNUZ),
        _ => None,
    }
}

/// `x` converted to `to` under the node's `saturate` (default 1) and `round_mode` (default
/// `up`) attributes (`Cast`, `CastLike`, `QuantizeLinear`).
pub(super) fn convert(
    e: &mut NodeEmitter<'_>,
    x: Output,
    to: ElementType,
) -> Result<Output, OnnxError> {
    let saturate = e.attr_i64("saturate")?.unwrap_or(1) != 0;
    let round_up = e.attr_choice(
        "round_mode",
        "up",
        &[("up", true), ("down", false), ("nearest", false)],
    )?;
    if to == ElementType::F8E8M0 && !(saturate && round_up) {
        return Err(e.unsupported(
            "FLOAT8E8M0 with saturate = 0 or round_mode other than \"up\"".to_string(),
        ));
    }
    let y = e.convert(x, to)?;
    match float8(to) {
        Some(format) if !saturate && e.et(x)? != to => unsaturated(e, x, y, to, format),
        _ => Ok(y),
    }
}

/// The non-saturating conversion of `x` from its saturating one `y`: where `|x|` rounds past
/// the largest finite value (`|x| > max + ulp/2`, or `>=` when that tie rounds up), the
/// format's overflow pattern of `x`'s sign (`±inf` for E5M2, `±NaN` for E4M3FN, the one NaN
/// of the FNUZ formats). NaN stays NaN (the comparison is false).
fn unsaturated(
    e: &mut NodeEmitter<'_>,
    x: Output,
    y: Output,
    to: ElementType,
    format: MiniFloat,
) -> Result<Output, OnnxError> {
    let max = format.max_finite();
    let exponent = ((max.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let half_ulp = f64::powi(2.0, exponent - format.mantissa_bits as i32 - 1);
    let tie = max + half_ulp;
    let tie_overflows = format.encode(tie, false) != format.encode(max, false);
    let wide = e.convert(x, ElementType::F64)?;
    let magnitude = e.unary(UnaryOp::Abs, wide)?;
    let threshold = e.scalar(ElementType::F64, tie)?;
    let op = if tie_overflows {
        CompareOp::GreaterEq
    } else {
        CompareOp::Greater
    };
    let over = e.compare(op, magnitude, threshold)?;
    let pattern = |e: &mut NodeEmitter<'_>, x: f64| -> Result<Output, OnnxError> {
        let bits = format.encode(x, false);
        let data = graphlift_ir::storage_from_bits(to, std::iter::once(bits))
            .unwrap_or_else(|| TensorData::zeros(to, 1));
        e.constant(data, Shape::scalar())
    };
    let positive = pattern(e, f64::INFINITY)?;
    let negative = pattern(e, f64::NEG_INFINITY)?;
    let zero = e.scalar(ElementType::F64, 0.0)?;
    let below = e.compare(CompareOp::Less, wide, zero)?;
    let overflow = e.select(below, negative, positive)?;
    e.select(over, overflow, y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::StorageElement;

    #[test]
    fn the_overflow_threshold_is_the_rounding_midpoint() {
        // E4M3FN: 464 ties to 448 (even); E5M2: 61440 ties up to infinity.
        let f = MiniFloat::E4M3FN;
        assert_eq!(f.encode(464.0, false), f.encode(448.0, false));
        let f = MiniFloat::E5M2;
        assert_ne!(f.encode(61440.0, false), f.encode(57344.0, false));
        assert_eq!(
            graphlift_ir::F8E5M2::from_f64(61440.0, false).to_f64(),
            f64::INFINITY
        );
    }
}
