//! Linear quantization: `QuantizeLinear`, `DequantizeLinear` (opsets 10 to 25: per tensor,
//! per axis and blocked) and `DynamicQuantizeLinear` (opset 11), composed of IR ops that
//! compute them exactly: `Convert`, `Divide`, `Round` (ties to even), `Add`, `Maximum` and
//! `Minimum` for the saturation, `Multiply`, and `Reshape`/`Broadcast`/`Slice` to lay the
//! scale and zero point along the quantization axis.
//!
//! The integer types are UINT8, INT8, UINT16, INT16 and the storage-only INT4, UINT4, INT2
//! and UINT2 (rounded and saturated alike); the float8 types and FLOAT4E2M1 are reached by
//! the conversion itself (`Cast`'s, with the node's `saturate`), as the ONNX reference does.

use graphlift_ir::{
    BinaryOp, CompareOp, ElementType, Op, Output, ReduceOp, Reduction, Shape, UnaryOp,
};

use super::layout::{axis as normalize_axis, dims, reshape_to as reshape, slice_range};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;
use crate::tensor::element_type;

/// The saturation range `[lo, hi]` of a quantized integer type, `None` for the others.
pub(crate) fn quantized_range(t: ElementType) -> Option<(f64, f64)> {
    match t {
        ElementType::U8 => Some((0.0, 255.0)),
        ElementType::I8 => Some((-128.0, 127.0)),
        ElementType::U16 => Some((0.0, 65535.0)),
        ElementType::I16 => Some((-32768.0, 32767.0)),
        ElementType::U4 => Some((0.0, 15.0)),
        ElementType::I4 => Some((-8.0, 7.0)),
        ElementType::U2 => Some((0.0, 3.0)),
        ElementType::I2 => Some((-2.0, 1.0)),
        _ => None,
    }
}

/// How a scale (and its zero point) maps onto the elements of `x`, from the scale's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Granularity {
    /// One scale for every element (a scalar, or a tensor of one element).
    PerTensor,
    /// One scale per index of `axis` (a 1-D scale as long as that axis).
    PerAxis(usize),
    /// One scale per `block` consecutive indices of `axis` (opset 21: a scale of `x`'s rank,
    /// `ceil(D / block)` along the axis and `x`'s extent elsewhere).
    Blocked(usize, usize),
}

/// The granularity of `scale` for an `x` of extents `x_dims`, from the `axis` (default 1)
/// and `block_size` (default 0, opset 21) attributes.
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] for a scale of a shape no granularity allows (a per-axis
/// scale of the wrong length names the axis and both lengths), [`OnnxError::BadAttribute`]
/// for an axis out of range or a negative `block_size`.
fn granularity(
    e: &NodeEmitter<'_>,
    scale: Output,
    x_dims: &[usize],
) -> Result<Granularity, OnnxError> {
    let s = dims(e, scale)?;
    if s.iter().product::<usize>() == 1 && s.len() <= 1 {
        return Ok(Granularity::PerTensor);
    }
    let block = e.attr_i64("block_size")?.unwrap_or(0);
    let block = usize::try_from(block)
        .map_err(|_| e.attribute_error("block_size", format!("{block} must be >= 0")))?;
    let a = normalize_axis(e, e.attr_i64("axis")?.unwrap_or(1), x_dims.len(), "axis")?;
    let x_shape = Shape::new(x_dims);
    if block == 0 {
        if s.len() != 1 || s[0] != x_dims[a] {
            return Err(e.shape_error(format!(
                "a per-axis scale must be 1-D as long as axis {a} of x {x_shape} ({}), \
                 the scale is {}",
                x_dims[a],
                Shape::new(s)
            )));
        }
        return Ok(Granularity::PerAxis(a));
    }
    let fits = s.len() == x_dims.len()
        && s.iter()
            .zip(x_dims)
            .enumerate()
            .all(|(i, (&si, &di))| si == if i == a { di.div_ceil(block) } else { di });
    if !fits {
        return Err(e.shape_error(format!(
            "a blocked scale (block_size {block}, axis {a}) for x {x_shape} must have x's \
             shape with ceil({} / {block}) along the axis, the scale is {}",
            x_dims[a],
            Shape::new(s)
        )));
    }
    Ok(Granularity::Blocked(a, block))
}

/// `v` (a scale or a zero point of granularity `g`) laid out to broadcast against an `x` of
/// extents `x_dims`: a scalar, a `[1, .., C, .., 1]` column along the axis, or (blocked) each
/// entry repeated `block` times along the axis and cut to `x`'s extent.
fn spread(
    e: &mut NodeEmitter<'_>,
    v: Output,
    x_dims: &[usize],
    g: Granularity,
) -> Result<Output, OnnxError> {
    match g {
        Granularity::PerTensor => reshape(e, v, vec![]),
        Granularity::PerAxis(a) => {
            let mut column = vec![1; x_dims.len()];
            column[a] = x_dims[a];
            reshape(e, v, column)
        }
        Granularity::Blocked(a, block) => {
            let s = dims(e, v)?;
            let mut split = s.clone();
            split.insert(a + 1, 1);
            let v = reshape(e, v, split.clone())?;
            split[a + 1] = block;
            let v = e.broadcast_to(v, &Shape::new(split))?;
            let mut joined = s;
            joined[a] *= block;
            let v = reshape(e, v, joined)?;
            slice_range(e, v, a, 0, x_dims[a])
        }
    }
}

/// Checks a scale known at import: every element nonzero and not NaN (`what` names it in
/// the error: `scale`, `y_scale`, ...). A scale computed at run time is not checked.
///
/// # Errors
/// [`OnnxError::InvalidModel`] naming the node, the scale and its first bad element.
pub(super) fn check_scale(e: &NodeEmitter<'_>, scale: Output, what: &str) -> Result<(), OnnxError> {
    if e.constant_value(scale).is_none() {
        return Ok(());
    }
    let values = e.constant_floats(scale, "the scale")?;
    if let Some((i, v)) = values
        .iter()
        .enumerate()
        .find(|(_, v)| **v == 0.0 || v.is_nan())
    {
        return Err(OnnxError::InvalidModel {
            at: e.at(),
            message: format!(
                "{what} element {i} is {v}; a quantization scale must be nonzero and not NaN"
            ),
        });
    }
    Ok(())
}

/// The optional zero point (input 2), which must have `want`'s element type (when given)
/// and the scale's shape.
///
/// # Errors
/// [`OnnxError::TypeMismatch`] or [`OnnxError::ShapeMismatch`] naming both.
fn zero_point(
    e: &NodeEmitter<'_>,
    ins: In<'_>,
    scale: Output,
    want: Option<(ElementType, &str)>,
) -> Result<Option<Output>, OnnxError> {
    let Some(zp) = e.optional_input(ins, 2) else {
        return Ok(None);
    };
    let t = e.et(zp)?;
    if let Some((want, of)) = want.filter(|(w, _)| *w != t) {
        return Err(e.type_error(format!(
            "the zero point is {t}, {of} is {want}; they must have one type"
        )));
    }
    let (zs, ss) = (e.ty(zp)?.shape, e.ty(scale)?.shape);
    let one = |s: &Shape| s.rank() <= 1 && s.element_count().ok() == Some(1);
    if zs != ss && !(one(&zs) && one(&ss)) {
        return Err(e.shape_error(format!(
            "the zero point {zs} and the scale {ss} must have one shape"
        )));
    }
    Ok(Some(zp))
}

/// The float type an op computes in: `f64` for `f64`, else `f32` (which holds every
/// `f16`/`bf16` value and every integer of the quantized types exactly).
fn wide(t: ElementType) -> ElementType {
    if t == ElementType::F64 {
        ElementType::F64
    } else {
        ElementType::F32
    }
}

/// The float type named by an element-type attribute (`output_dtype`, `precision`), if set
/// (0 means unset).
fn type_attr(e: &NodeEmitter<'_>, name: &str) -> Result<Option<ElementType>, OnnxError> {
    match e.attr_i64(name)? {
        None | Some(0) => Ok(None),
        Some(code) => {
            let code = i32::try_from(code)
                .map_err(|_| e.attribute_error(name, format!("{code} is not a data type")))?;
            element_type(code, &e.at()).map(Some)
        }
    }
}

/// `saturate(round(q) + zero_point)` converted to `to`: `q` (the quotient `x / scale`) is
/// rounded to nearest even in its own type, widened exactly to `f32` (or `f64`), the zero
/// point (already widened, laid out along `q`) added, the sum clamped to `to`'s range and
/// converted (exact: an integral value in range). NaN gives 0 (the `Convert` of NaN).
pub(super) fn round_and_saturate(
    e: &mut NodeEmitter<'_>,
    q: Output,
    zero_point: Option<Output>,
    to: ElementType,
) -> Result<Output, OnnxError> {
    let Some((lo, hi)) = quantized_range(to) else {
        return Err(e.type_error(format!(
            "quantizing to {to}: graphlift quantizes to UINT8, INT8, UINT16, INT16, UINT4, \
             INT4, UINT2, INT2, the FLOAT8 types but E8M0, and FLOAT4E2M1"
        )));
    };
    let r = e.unary(UnaryOp::Round, q)?;
    let w = wide(e.et(q)?);
    let mut y = e.convert(r, w)?;
    if let Some(zp) = zero_point {
        y = e.binary(BinaryOp::Add, y, zp)?;
    }
    let lo = e.scalar(w, lo)?;
    let hi = e.scalar(w, hi)?;
    let y = e.binary(BinaryOp::Maximum, y, lo)?;
    let y = e.binary(BinaryOp::Minimum, y, hi)?;
    e.convert(y, to)
}

/// `QuantizeLinear` (opsets 10, 13, 19, 21, 23, 25):
/// `y = saturate(round(x / y_scale) + y_zero_point)`.
///
/// - `y`'s type is `y_zero_point`'s, else `output_dtype` (opset 21; both given must agree),
///   else UINT8; the zero point defaults to 0. Saturation clamps to the type's range
///   (`[0, 255]`, `[-128, 127]`, `[0, 65535]`, `[-32768, 32767]`, and the 4- and 2-bit
///   ranges). To the float8 types `y = x / y_scale` is converted as `Cast` does with the
///   node's `saturate` (the zero point, 0 by the spec, is not added, as in the ONNX
///   reference); to FLOAT4E2M1 the zero point is added before the (always saturating)
///   conversion.
/// - The division is computed in `precision` (opset 23) if set, else in `y_scale`'s type
///   (`x` is converted to it first: FLOAT, FLOAT16, BFLOAT16, INT32 `x`), and rounds to
///   nearest, ties to even (`0.5 -> 0`, `1.5 -> 2`, `2.5 -> 2`); the zero point is added
///   exactly (in `f32`, or `f64` for a DOUBLE division).
/// - Per tensor (a scalar or one-element scale), per axis (a 1-D scale along `axis`, default
///   1) or blocked (`block_size`, opset 21).
///
/// # Errors
/// A zero point of a type other than `output_dtype`, or of another shape than the scale, a
/// scale of a shape that fits no granularity, or a constant scale holding 0 or NaN: each
/// names the node.
pub(super) fn quantize_linear(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 3)?;
    let (x, scale) = (e.input(ins, 0)?, e.input(ins, 1)?);
    e.require(
        x,
        |t| t.is_float() || t == ElementType::I32,
        "a FLOAT, FLOAT16, BFLOAT16 or INT32",
    )?;
    let scale_type = e.require(scale, ElementType::is_float, "a float scale and a")?;
    let output_dtype = type_attr(e, "output_dtype")?;
    // `saturate` has no effect here, but a malformed one is still an error.
    if let Some(s) = e.attr_i64("saturate")? {
        if !(0..=1).contains(&s) {
            return Err(e.attribute_error("saturate", format!("{s} must be 0 or 1")));
        }
    }
    let zp = zero_point(e, ins, scale, output_dtype.map(|t| (t, "output_dtype")))?;
    let to = match zp {
        Some(zp) => e.et(zp)?,
        None => output_dtype.unwrap_or(ElementType::U8),
    };
    let division = type_attr(e, "precision")?.unwrap_or(scale_type);
    if !division.is_float() {
        return Err(e.attribute_error("precision", format!("{division} is not a float type")));
    }
    check_scale(e, scale, "scale")?;
    let x_dims = dims(e, x)?;
    let g = granularity(e, scale, &x_dims)?;
    let xd = e.convert(x, division)?;
    let s = spread(e, scale, &x_dims, g)?;
    let s = e.convert(s, division)?;
    let q = e.binary(BinaryOp::Divide, xd, s)?;
    let zp = match zp {
        Some(zp) => {
            let zp = spread(e, zp, &x_dims, g)?;
            Some(e.convert(zp, wide(division))?)
        }
        None => None,
    };
    if to.is_storage_only() && quantized_range(to).is_none() && to != ElementType::F8E8M0 {
        let mut y = e.convert(q, wide(division))?;
        if let (ElementType::F4E2M1, Some(zp)) = (to, zp) {
            y = e.binary(BinaryOp::Add, y, zp)?;
        }
        return super::cast::convert(e, y, to);
    }
    round_and_saturate(e, q, zp, to)
}

/// `DequantizeLinear` (opsets 10, 13, 19, 21, 23, 25): `y = (x - x_zero_point) * x_scale`.
///
/// `x` is UINT8, INT8, UINT16, INT16, INT32 or a storage-only type (FLOAT8, FLOAT4E2M1,
/// INT4, UINT4, INT2, UINT2: converted exactly) and the zero point (default 0) of `x`'s type
/// and the scale's shape. The difference and the product are computed in `f32` (`f64` for a
/// DOUBLE scale or output), as the ONNX reference does, and rounded once to the output
/// type: `output_dtype` (opset 23) if set, else the scale's type (FLOAT, FLOAT16,
/// BFLOAT16). Granularity as in [`quantize_linear`].
///
/// # Errors
/// As [`quantize_linear`]; a zero point of another type than `x` is a type mismatch.
pub(super) fn dequantize_linear(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 3)?;
    let (x, scale) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let x_type = e.require(
        x,
        |t| quantized_range(t).is_some() || t == ElementType::I32 || t.is_storage_only(),
        "a UINT8, INT8, UINT16, INT16, INT32, FLOAT8, FLOAT4E2M1, INT4, UINT4, INT2 or UINT2",
    )?;
    let scale_type = e.require(scale, ElementType::is_float, "a float scale and a")?;
    let zp = zero_point(e, ins, scale, Some((x_type, "x")))?;
    let out = type_attr(e, "output_dtype")?.unwrap_or(scale_type);
    if !out.is_float() {
        return Err(e.attribute_error("output_dtype", format!("{out} is not a float type")));
    }
    check_scale(e, scale, "scale")?;
    let x_dims = dims(e, x)?;
    let g = granularity(e, scale, &x_dims)?;
    let w = if out == ElementType::F64 {
        ElementType::F64
    } else {
        wide(scale_type)
    };
    // A constant 8-bit weight stays integer in the graph for the QDQ lowering pass.
    let eight_bit = matches!(x_type, ElementType::U8 | ElementType::I8);
    let mut d = if eight_bit && e.constant_value(x).is_some() {
        e.convert_unfolded(x, w)?
    } else {
        e.convert(x, w)?
    };
    if let Some(zp) = zp {
        let zp = spread(e, zp, &x_dims, g)?;
        let zp = e.convert(zp, w)?;
        d = e.binary(BinaryOp::Subtract, d, zp)?;
    }
    let s = spread(e, scale, &x_dims, g)?;
    let s = e.convert(s, w)?;
    let y = e.binary(BinaryOp::Multiply, d, s)?;
    e.convert(y, out)
}

/// `DynamicQuantizeLinear` (opset 11) of a FLOAT `x` to UINT8, as the ONNX reference
/// computes it:
///
/// - `y_scale = (max(0, max x) - min(0, min x)) / 255`, or 1 when that range is 0 (an `x` of
///   zeros: the spec's formula would divide by zero);
/// - `y_zero_point = round(clamp(0 - min(0, min x) / y_scale, 0, 255))`;
/// - `y = saturate(round(x / y_scale) + y_zero_point)` to `[0, 255]`;
///
/// every rounding to nearest even. Outputs `y`, `y_scale` (FLOAT) and `y_zero_point`
/// (UINT8).
pub(super) fn dynamic_quantize_linear(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
) -> Result<Vec<Output>, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    e.require(x, |t| t == ElementType::F32, "a FLOAT")?;
    let [y, scale, zp] = dynamic_quantize(e, x)?;
    let zp = e.convert(zp, ElementType::U8)?;
    Ok(vec![y, scale, zp])
}

/// [`dynamic_quantize_linear`] of a FLOAT value `x`: `y` (UINT8), `y_scale` (FLOAT, a
/// scalar) and `y_zero_point` as an integral FLOAT scalar in `[0, 255]`.
pub(super) fn dynamic_quantize(
    e: &mut NodeEmitter<'_>,
    x: Output,
) -> Result<[Output; 3], OnnxError> {
    let rank = dims(e, x)?.len();
    let extreme = |e: &mut NodeEmitter<'_>, op, with_zero| -> Result<Output, OnnxError> {
        let r = e.op(
            Op::Reduce(Reduction {
                op,
                axes: (0..rank).collect(),
                keep_dims: false,
            }),
            &[x],
        )?;
        let zero = e.scalar(ElementType::F32, 0.0)?;
        e.binary(with_zero, r, zero)
    };
    let max = extreme(e, ReduceOp::Max, BinaryOp::Maximum)?;
    let min = extreme(e, ReduceOp::Min, BinaryOp::Minimum)?;
    let range = e.binary(BinaryOp::Subtract, max, min)?;
    let zero = e.scalar(ElementType::F32, 0.0)?;
    let empty = e.compare(CompareOp::Equal, range, zero)?;
    let one = e.scalar(ElementType::F32, 1.0)?;
    // `range / 255` divided as the reference does (not multiplied by a rounded reciprocal).
    let k255 = e.scalar(ElementType::F32, 255.0)?;
    let divided = e.binary(BinaryOp::Divide, range, k255)?;
    let scale = e.select(empty, one, divided)?;
    let shifted = e.binary(BinaryOp::Divide, min, scale)?;
    let initial = e.binary(BinaryOp::Subtract, zero, shifted)?;
    let clamped = e.binary(BinaryOp::Maximum, initial, zero)?;
    let clamped = e.binary(BinaryOp::Minimum, clamped, k255)?;
    let zp = e.unary(UnaryOp::Round, clamped)?;
    let q = e.binary(BinaryOp::Divide, x, scale)?;
    let y = round_and_saturate(e, q, Some(zp), ElementType::U8)?;
    Ok([y, scale, zp])
}
