//! Integer products of quantized operands, as the ONNX reference computes them: the
//! UINT8/INT8 operands widened, their zero points subtracted, and the product accumulated
//! exactly. `MatMulInteger` and `ConvInteger` (opset 10) give that INT32 accumulator;
//! `QLinearMatMul` and `QLinearConv` (opsets 10, 21) requantize it with the output scale and
//! zero point ([`requantize`]). Convolutions, and products of a per-tensor-quantized `A` of 4
//! rows or more by a 2-D `B` (those of `DynamicQuantizeLSTM` included), become the IR's
//! 8-bit `ConvolutionInteger`, whose native kernel multiplies the bytes themselves
//! (`vpdpbusd`); other products shift the operands to INT32 for the INT32 `MatMul`.

use std::cell::OnceCell;

use graphlift_ir::{BinaryOp, Convolution, ElementType, Op, Output, Shape, TensorData, Window};

use super::conv::{add_bias, convolution_attrs};
use super::layout::{dims, reshape_to as reshape};
use super::nn::matmul_of;
use super::quantize::{check_scale, dynamic_quantize, round_and_saturate};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// UINT8 or INT8.
fn eight_bit(t: ElementType) -> bool {
    matches!(t, ElementType::U8 | ElementType::I8)
}

/// Where a 1-D zero point runs: along the operand's `axis` (as long as it), laid out as a
/// column followed by `trailing` axes of extent 1 to broadcast against the operand.
#[derive(Debug, Clone, Copy)]
struct Along {
    axis: usize,
    trailing: usize,
}

/// `q` (input `qi`: a zero point or a scale of operand `v`, input `vi`) reshaped to
/// broadcast against what it applies to: a scalar for one element (per tensor), or, where
/// `per` allows it, a 1-D `q` as long as `v`'s axis laid out as `[n, 1, ..]` (`trailing`
/// ones). With `qi == vi` (an output scale or zero point) only one element is allowed.
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] naming both inputs for any other shape.
fn laid_out(
    e: &mut NodeEmitter<'_>,
    q: Output,
    qi: usize,
    v: Output,
    vi: usize,
    per: Option<Along>,
) -> Result<Output, OnnxError> {
    let (qd, vd) = (dims(e, q)?, dims(e, v)?);
    let layout = if qd.len() <= 1 && qd.iter().product::<usize>() == 1 {
        vec![]
    } else {
        match per {
            Some(Along { axis, trailing }) if qd.len() == 1 && vd.get(axis) == Some(&qd[0]) => {
                let mut column = vec![qd[0]];
                column.resize(1 + trailing, 1);
                column
            }
            _ if qi == vi => {
                return Err(e.shape_error(format!(
                    "input {qi} is {}: it must have one element (per tensor)",
                    Shape::new(qd)
                )));
            }
            _ => {
                let what = if e.et(q)?.is_float() {
                    "scale"
                } else {
                    "zero point"
                };
                return Err(e.shape_error(format!(
                    "{what} (input {qi}) {} does not fit operand {vi} {}: it must have one \
                     element{}",
                    Shape::new(qd),
                    Shape::new(vd),
                    per.map_or(String::new(), |p| format!(
                        " or be 1-D as long as the operand's axis {}",
                        p.axis
                    ))
                )));
            }
        }
    };
    reshape(e, q, layout)
}

/// Operand `i` (UINT8 or INT8) converted to `to`, minus its zero point (input `zp`, of the
/// operand's type) converted to `to`. The zero point is a scalar or one-element tensor, or,
/// where `per` allows it, a 1-D tensor along an axis.
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for an operand that is not 8-bit or a zero point of another
/// type, [`OnnxError::ShapeMismatch`] for a zero point of another shape.
fn shifted(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    i: usize,
    zp: usize,
    to: ElementType,
    per: Option<Along>,
) -> Result<Output, OnnxError> {
    let v = e.input(ins, i)?;
    let t = e.require(v, eight_bit, "UINT8 or INT8")?;
    let wide = e.convert(v, to)?;
    let Some(z) = e.optional_input(ins, zp) else {
        return Ok(wide);
    };
    let zt = e.et(z)?;
    if zt != t {
        return Err(e.type_error(format!(
            "zero point (input {zp}) is {zt}, its operand (input {i}) is {t}; they must have \
             one type"
        )));
    }
    let z = laid_out(e, z, zp, v, i, per)?;
    let z = e.convert(z, to)?;
    e.binary(BinaryOp::Subtract, wide, z)
}

/// Where a 1-D zero point or scale of each `MatMul` operand runs, for operands of ranks
/// `ra` and `rb`: per row of `A` (a column `[M, 1]` against the product `[.., M, N]`), per
/// column of `B` (`[N]`); none for a 1-D operand.
fn matmul_axes(ra: usize, rb: usize) -> (Option<Along>, Option<Along>) {
    let a = (ra >= 2).then(|| Along {
        axis: ra - 2,
        trailing: 1,
    });
    let b = (rb >= 2).then(|| Along {
        axis: rb - 1,
        trailing: 0,
    });
    (a, b)
}

/// `(A - a_zero_point) @ (B - b_zero_point)` accumulated in INT32 (numpy `matmul` shapes),
/// for `A`, `B` and their zero points at inputs `[a, a_zero_point, b, b_zero_point]`. The
/// IR's integer `MatMul` accumulates in INT32 and wraps, as the reference's does.
fn shifted_matmul(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    [ai, azi, bi, bzi]: [usize; 4],
) -> Result<Output, OnnxError> {
    let ra = dims(e, e.input(ins, ai)?)?.len();
    let rb = dims(e, e.input(ins, bi)?)?.len();
    let (a_per, b_per) = matmul_axes(ra, rb);
    let per_tensor = |e: &NodeEmitter<'_>, zi: usize| -> Result<bool, OnnxError> {
        Ok(match e.optional_input(ins, zi) {
            Some(z) => dims(e, z)?.iter().product::<usize>() == 1,
            None => true,
        })
    };
    if ra >= 2 && rb == 2 && per_tensor(e, azi)? {
        let [a, az] = with_zero_point(e, ins, ai, azi, None)?;
        let [b, bz] = with_zero_point(e, ins, bi, bzi, b_per)?;
        if let Some(y) = integer_matmul_2d(e, [a, az, b, bz])? {
            return Ok(y);
        }
    }
    let a = shifted(e, ins, ai, azi, ElementType::I32, a_per)?;
    let b = shifted(e, ins, bi, bzi, ElementType::I32, b_per)?;
    matmul_of(e, a, b)
}

/// `MatMulInteger`: `(A - a_zero_point) @ (B - b_zero_point)` in INT32 (numpy `matmul`
/// shapes), UINT8/INT8 operands. `a_zero_point` is per tensor or per row (1-D, one per row
/// of a matrix `A`); `b_zero_point` per tensor or per column (1-D, one per column of `B`).
/// The IR's integer `MatMul` accumulates in INT32 and wraps, as the reference's does.
pub(super) fn matmul_integer(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 4)?;
    shifted_matmul(e, ins, [0, 2, 1, 3])
}

/// An 8-bit weight matrix `q` `[K, N]` (UINT8 or INT8) with its FLOAT scale and zero point
/// (of `q`'s type), each per tensor (a scalar) or per column (`[N]`).
pub(super) struct QuantizedMatrix {
    pub(super) q: Output,
    pub(super) scale: Output,
    pub(super) zero_point: Output,
    /// `q - zero_point` in INT32, made by the first product that multiplies on the INT32
    /// `MatMul` and reused by the others (an unrolled recurrence's steps share it, instead
    /// of folding a copy of the weights per step at import).
    pub(super) shifted: OnceCell<Output>,
}

impl QuantizedMatrix {
    /// The matrix `q` with its `scale` and `zero_point`.
    pub(super) fn new(q: Output, scale: Output, zero_point: Output) -> QuantizedMatrix {
        QuantizedMatrix {
            q,
            scale,
            zero_point,
            shifted: OnceCell::new(),
        }
    }
}

/// `a · w` for a FLOAT `a` `[M, K]` and a quantized `w`, as onnxruntime's dynamically
/// quantized kernels (`DynamicQuantizeLSTM`, `DynamicQuantizeMatMul`) compute it: `a` is
/// quantized per tensor to UINT8 as `DynamicQuantizeLinear` does, the integer product
/// `Σ (a_q - a_zp)(w_q - w_zp)` accumulates exactly in INT32 (a constant `w`'s shift folds
/// at import), and the sum, converted to FLOAT, is scaled by `a_scale · w_scale` (per column
/// when `w_scale` is).
pub(super) fn dynamic_quantized_matmul(
    e: &mut NodeEmitter<'_>,
    a: Output,
    w: &QuantizedMatrix,
) -> Result<Output, OnnxError> {
    let [aq, a_scale, a_zp] = dynamic_quantize(e, a)?;
    let wide = |e: &mut NodeEmitter<'_>, v: Output, zp: Output| -> Result<Output, OnnxError> {
        let v = e.convert(v, ElementType::I32)?;
        let zp = e.convert(zp, ElementType::I32)?;
        e.binary(BinaryOp::Subtract, v, zp)
    };
    let a_zp8 = e.convert(a_zp, ElementType::U8)?;
    let acc = match integer_matmul_2d(e, [aq, a_zp8, w.q, w.zero_point])? {
        Some(acc) => acc,
        None => {
            let a_shifted = wide(e, aq, a_zp)?;
            let w_shifted = match w.shifted.get() {
                Some(&v) => v,
                None => {
                    let v = wide(e, w.q, w.zero_point)?;
                    w.shifted.get_or_init(|| v);
                    v
                }
            };
            matmul_of(e, a_shifted, w_shifted)?
        }
    };
    let acc = e.convert(acc, ElementType::F32)?;
    let m = e.binary(BinaryOp::Multiply, a_scale, w.scale)?;
    e.binary(BinaryOp::Multiply, acc, m)
}

/// Operand `i` (UINT8 or INT8) and its zero point (input `zp`, of the operand's type; 0 when
/// absent) laid out per tensor (a scalar) or, where `per` allows it, as a 1-D column.
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for an operand that is not 8-bit or a zero point of another
/// type, [`OnnxError::ShapeMismatch`] for a zero point of another shape; each names the node.
fn with_zero_point(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    i: usize,
    zp: usize,
    per: Option<Along>,
) -> Result<[Output; 2], OnnxError> {
    let v = e.input(ins, i)?;
    let t = e.require(v, eight_bit, "UINT8 or INT8")?;
    let Some(z) = e.optional_input(ins, zp) else {
        let z = e.scalar(t, 0.0)?;
        return Ok([v, z]);
    };
    let zt = e.et(z)?;
    if zt != t {
        return Err(e.type_error(format!(
            "zero point (input {zp}) is {zt}, its operand (input {i}) is {t}; they must have \
             one type"
        )));
    }
    Ok([v, laid_out(e, z, zp, v, i, per)?])
}

/// The IR's [`graphlift_ir::Op::ConvolutionInteger`] (INT32) of `x - x_zero_point` (per
/// tensor) with `w - w_zero_point` (per tensor, or 1-D: one per output channel) under
/// `Conv`'s window attributes, padding with the zero point (adding nothing), for the operands
/// and zero points at inputs `[x, x_zero_point, w, w_zero_point]`: exact, in wrapping INT32.
fn integer_conv(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    [xi, xzi, wi, wzi]: [usize; 4],
) -> Result<Output, OnnxError> {
    let [x, xz] = with_zero_point(e, ins, xi, xzi, None)?;
    let per_channel = Along {
        axis: 0,
        trailing: 0,
    };
    let [w, wz] = with_zero_point(e, ins, wi, wzi, Some(per_channel))?;
    let c = convolution_attrs(e, x, w)?;
    let [w, wz] = int8_domain(e, [w, wz])?;
    e.op(Op::ConvolutionInteger(c), &[x, xz, w, wz])
}

/// A constant UINT8 filter and zero point moved to INT8 as `v - 128` (the same differences
/// `w - w_zero_point`, so the same products), so the integer kernel reads the constant as it
/// multiplies it instead of shifting it on every call; anything else unchanged.
fn int8_domain(e: &mut NodeEmitter<'_>, [w, wz]: [Output; 2]) -> Result<[Output; 2], OnnxError> {
    let (Some(tw), Some(tz)) = (e.constant_value(w), e.constant_value(wz)) else {
        return Ok([w, wz]);
    };
    let mut shifted = Vec::with_capacity(2);
    for t in [tw, tz] {
        let TensorData::U8(d) = t.data() else {
            return Ok([w, wz]);
        };
        shifted.push((
            d.iter().map(|&b| (b ^ 0x80) as i8).collect(),
            t.shape().clone(),
        ));
    }
    let [(w, sw), (z, sz)]: [(Vec<i8>, Shape); 2] = shifted
        .try_into()
        .map_err(|_| e.shape_error("a filter and its zero point".into()))?;
    Ok([
        e.constant(TensorData::I8(w), sw)?,
        e.constant(TensorData::I8(z), sz)?,
    ])
}

/// The fewest rows of `a` (the product of its leading extents) for which a MatMulInteger
/// runs on the integer convolution kernel: its tiles span 64 rows and it prepares the
/// weights on each call, so a product of one or a few rows (a recurrent step's) is no faster
/// there than on the plain INT32 `MatMul`.
const MIN_KERNEL_ROWS: usize = 4;

/// `(a - a_zero_point) @ (b - b_zero_point)` in INT32 for `a` `[.., M, K]` and a 2-D `b`
/// `[K, N]`, `a_zero_point` per tensor (a scalar) and `b_zero_point` a scalar or `[N]`: the
/// integer convolution ([`graphlift_ir::Op::ConvolutionInteger`]) of `aᵀ` `[1, K, rows]`
/// (`rows` the product of `a`'s leading extents) with the 1-wide filter `bᵀ` `[N, K, 1]`,
/// transposed back to `[.., M, N]`, so that MatMulInteger runs on the 8-bit kernel. `None`
/// for an empty product or fewer than [`MIN_KERNEL_ROWS`] rows (the caller then uses the
/// general path).
fn integer_matmul_2d(
    e: &mut NodeEmitter<'_>,
    [a, az, b, bz]: [Output; 4],
) -> Result<Option<Output>, OnnxError> {
    let (da, db) = (dims(e, a)?, dims(e, b)?);
    let (&[.., k], &[kb, n]) = (&da[..], &db[..]) else {
        return Ok(None);
    };
    let rows: usize = da[..da.len() - 1].iter().product();
    if da.len() < 2 || k != kb || rows < MIN_KERNEL_ROWS || k == 0 || n == 0 {
        return Ok(None);
    }
    let a = reshape(e, a, vec![rows, k])?;
    let a = e.op(Op::Transpose(vec![1, 0]), &[a])?;
    let x = reshape(e, a, vec![1, k, rows])?;
    let b = e.op(Op::Transpose(vec![1, 0]), &[b])?;
    let w = reshape(e, b, vec![n, k, 1])?;
    let [w, bz] = int8_domain(e, [w, bz])?;
    let c = Convolution {
        window: Window {
            shape: vec![1],
            strides: vec![1],
            dilations: vec![1],
            pads_begin: vec![0],
            pads_end: vec![0],
        },
        groups: 1,
    };
    let y = e.op(Op::ConvolutionInteger(c), &[x, az, w, bz])?;
    let y = reshape(e, y, vec![n, rows])?;
    let y = e.op(Op::Transpose(vec![1, 0]), &[y])?;
    let mut out = da[..da.len() - 1].to_vec();
    out.push(n);
    reshape(e, y, out).map(Some)
}

/// `ConvInteger`: the convolution of `x - x_zero_point` (per tensor) with
/// `w - w_zero_point` (per tensor, or 1-D: one per output channel) under `Conv`'s window
/// attributes, padding with 0 after the zero point is subtracted, giving INT32 (the IR's
/// [`graphlift_ir::Op::ConvolutionInteger`], accumulating in wrapping INT32 as onnxruntime
/// does).
pub(super) fn conv_integer(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 4)?;
    integer_conv(e, ins, [0, 2, 1, 3])
}

/// A scale of a `QLinear*` op: input `si`, which applies to operand `vi` per tensor or, where
/// `per` allows it, per index of an axis (see [`laid_out`]); checked to be a float scale
/// (FLOAT, or FLOAT16 / BFLOAT16 from opset 21) and, when known at import, nonzero and not
/// NaN.
#[derive(Debug, Clone, Copy)]
struct Scale {
    si: usize,
    vi: usize,
    per: Option<Along>,
}

/// `(s1 * s2) / y_scale` (input `yi`, per tensor), computed in the scales' type and laid out
/// to broadcast against the accumulator: the multiplier of the ONNX reference's
/// requantization (`a_scale * b_scale / y_scale`, `x_scale * w_scale / y_scale`), each
/// operation rounded to the scales' type.
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for a non-float scale or scales of different types,
/// [`OnnxError::ShapeMismatch`] for a scale of a shape its granularity does not allow,
/// [`OnnxError::InvalidModel`] for a constant scale holding 0 or NaN; each names the node.
fn multiplier(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    [s1, s2]: [Scale; 2],
    yi: usize,
) -> Result<Output, OnnxError> {
    let mut laid = Vec::with_capacity(3);
    for (Scale { si, vi, per }, name) in [(s1, "first scale"), (s2, "second scale")]
        .into_iter()
        .chain([(
            Scale {
                si: yi,
                vi: yi,
                per: None,
            },
            "y_scale",
        )])
    {
        let s = e.input(ins, si)?;
        e.require(s, ElementType::is_float, "float scales: a FLOAT or FLOAT16")?;
        check_scale(e, s, &format!("the {name} (input {si})"))?;
        let v = e.input(ins, vi)?;
        laid.push(laid_out(e, s, si, v, vi, per)?);
    }
    e.same_type(&laid)?;
    let product = e.binary(BinaryOp::Multiply, laid[0], laid[1])?;
    e.binary(BinaryOp::Divide, product, laid[2])
}

/// The ONNX reference's requantization of the accumulator `acc` (INT32 or an exact DOUBLE)
/// by `multiplier` ([`multiplier`]):
/// `y = saturate(rint(acc * multiplier + y_zero_point))`, in DOUBLE (numpy's type for an
/// INT32 array times a float one), the zero point added before rounding to nearest even,
/// saturation to UINT8 `[0, 255]` or INT8 `[-128, 127]`.
///
/// `y`'s type is the zero point's (input `zi`, per tensor) if given, else operand `fallback`'s.
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for a zero point that is not UINT8 or INT8,
/// [`OnnxError::ShapeMismatch`] for one of more than one element; each names the node.
fn requantize(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    acc: Output,
    multiplier: Output,
    zi: usize,
    fallback: usize,
) -> Result<Output, OnnxError> {
    let acc = e.convert(acc, ElementType::F64)?;
    let m = e.convert(multiplier, ElementType::F64)?;
    let mut y = e.binary(BinaryOp::Multiply, acc, m)?;
    let to = match e.optional_input(ins, zi) {
        Some(z) => {
            let t = e.et(z)?;
            if !eight_bit(t) {
                return Err(e.type_error(format!(
                    "the output zero point (input {zi}) is {t}; it must be UINT8 or INT8"
                )));
            }
            let z = laid_out(e, z, zi, z, zi, None)?;
            let z = e.convert(z, ElementType::F64)?;
            y = e.binary(BinaryOp::Add, y, z)?;
            t
        }
        None => e.et(e.input(ins, fallback)?)?,
    };
    round_and_saturate(e, y, None, to)
}

/// `QLinearMatMul` (opsets 10, 21): the `MatMul` of the dequantized `a` and `b`, quantized
/// with `y_scale` and `y_zero_point`, as the ONNX reference computes it:
/// `C = (a - a_zero_point) @ (b - b_zero_point)` exactly in INT32 (wrapping, as the
/// reference's), then `y = saturate(rint(C * (a_scale * b_scale / y_scale) + y_zero_point))`
/// ([`requantize`]: rounding to nearest even, saturation to `y`'s UINT8 or INT8 range).
///
/// Inputs `a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point`.
/// `a`, `b` are UINT8 or INT8, each zero point of its operand's type; `a`'s scale and zero
/// point per tensor or per row (1-D, as long as `a`'s second-to-last axis), `b`'s per tensor
/// or per column (1-D, as long as `b`'s last axis), `y`'s per tensor. Scales are FLOAT
/// (FLOAT16 or BFLOAT16 from opset 21), all three of one type.
///
/// # Errors
/// A zero point of the wrong type or shape, a scale of the wrong type or shape, or a
/// constant scale holding 0 or NaN: each names the node.
pub(super) fn qlinear_matmul(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 8, 8)?;
    let c = shifted_matmul(e, ins, [0, 2, 3, 5])?;
    let ra = dims(e, e.input(ins, 0)?)?.len();
    let rb = dims(e, e.input(ins, 3)?)?.len();
    let (a_per, b_per) = matmul_axes(ra, rb);
    let scales = [
        Scale {
            si: 1,
            vi: 0,
            per: a_per,
        },
        Scale {
            si: 4,
            vi: 3,
            per: b_per,
        },
    ];
    let m = multiplier(e, ins, scales, 6)?;
    requantize(e, ins, c, m, 7, 0)
}

/// `QLinearConv` (opsets 10): the `Conv` of the dequantized `x` and `w`, quantized with
/// `y_scale` and `y_zero_point`, as the ONNX reference computes it:
/// `C = conv(x - x_zero_point, w - w_zero_point) + B` exactly ([`integer_conv`] in INT32,
/// padding with 0 after the shift), then
/// `y = saturate(rint(C * (x_scale * w_scale / y_scale) + y_zero_point))` ([`requantize`]:
/// rounding to nearest even, saturation to `y`'s UINT8 or INT8 range).
///
/// Inputs `x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B`
/// under `Conv`'s attributes. `x`, `w` are UINT8 or INT8, each zero point of its operand's
/// type; `x`'s and `y`'s scale and zero point are per tensor, `w`'s per tensor or per output
/// channel (1-D `[M]`). The optional bias `B` is INT32 `[M]`, quantized with scale
/// `x_scale * w_scale` and zero point 0, so added to the accumulator before requantizing.
/// (The reference broadcasts a 1-D `w_scale` against the output's last axis; graphlift
/// applies it per output channel, as the spec defines and onnxruntime does.)
///
/// # Errors
/// As [`qlinear_matmul`]; a bias that is not INT32 is a type mismatch.
pub(super) fn qlinear_conv(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 8, 9)?;
    let rank = dims(e, e.input(ins, 3)?)?.len();
    let c = integer_conv(e, ins, [0, 2, 3, 5])?;
    let mut c = e.convert(c, ElementType::F64)?;
    if let Some(b) = e.optional_input(ins, 8) {
        e.require(b, |t| t == ElementType::I32, "an INT32 bias and a")?;
        let b = e.convert(b, ElementType::F64)?;
        c = add_bias(e, c, Some(b))?;
    }
    let scales = [
        Scale {
            si: 1,
            vi: 0,
            per: None,
        },
        Scale {
            si: 4,
            vi: 3,
            per: Some(Along {
                axis: 0,
                trailing: rank.saturating_sub(2),
            }),
        },
    ];
    let m = multiplier(e, ins, scales, 6)?;
    requantize(e, ins, c, m, 7, 0)
}
