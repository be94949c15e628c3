//! Integer products of quantized operands: `MatMulInteger` and `ConvInteger` (opset 10), as
//! the ONNX reference computes them: the UINT8/INT8 operands widened, their zero points
//! subtracted, and the product accumulated exactly to INT32.

use graphlift_ir::{BinaryOp, ElementType, Output, Shape};

use super::conv::convolution_of;
use super::layout::{dims, reshape_to as reshape};
use super::nn::matmul_of;
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
    let (zd, vd) = (dims(e, z)?, dims(e, v)?);
    let layout = if zd.len() <= 1 && zd.iter().product::<usize>() == 1 {
        vec![]
    } else {
        match per {
            Some(Along { axis, trailing }) if zd.len() == 1 && vd.get(axis) == Some(&zd[0]) => {
                let mut column = vec![zd[0]];
                column.resize(1 + trailing, 1);
                column
            }
            _ => {
                return Err(e.shape_error(format!(
                    "zero point (input {zp}) {} does not fit operand {} {}",
                    Shape::new(zd),
                    i,
                    Shape::new(vd)
                )))
            }
        }
    };
    let z = reshape(e, z, layout)?;
    let z = e.convert(z, to)?;
    e.binary(BinaryOp::Subtract, wide, z)
}

/// `MatMulInteger`: `(A - a_zero_point) @ (B - b_zero_point)` in INT32 (numpy `matmul`
/// shapes), UINT8/INT8 operands. `a_zero_point` is per tensor or per row (1-D, one per row
/// of a matrix `A`); `b_zero_point` per tensor or per column (1-D, one per column of `B`).
/// The IR's integer `MatMul` accumulates in INT32 and wraps, as the reference's does.
pub(super) fn matmul_integer(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 4)?;
    let ra = dims(e, e.input(ins, 0)?)?.len();
    let rb = dims(e, e.input(ins, 1)?)?.len();
    let a_per = (ra >= 2).then(|| Along {
        axis: ra - 2,
        trailing: 1,
    });
    let b_per = (rb >= 2).then(|| Along {
        axis: rb - 1,
        trailing: 0,
    });
    let a = shifted(e, ins, 0, 2, ElementType::I32, a_per)?;
    let b = shifted(e, ins, 1, 3, ElementType::I32, b_per)?;
    matmul_of(e, a, b)
}

/// `ConvInteger`: the convolution of `x - x_zero_point` (per tensor) with
/// `w - w_zero_point` (per tensor, or 1-D: one per output channel) under `Conv`'s window
/// attributes, padding with 0 after the zero point is subtracted, giving INT32.
///
/// The IR's `Convolution` is defined on floats: the shifted operands are exact in `f64`, and
/// so is every partial sum (each product is at most `255²` in magnitude, far from `2⁵³` for
/// any real window), so the `f64` convolution converted to INT32 is the integer
/// convolution exactly while the result fits INT32 (where an INT32 accumulator would wrap,
/// the conversion saturates).
pub(super) fn conv_integer(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 4)?;
    let rank = dims(e, e.input(ins, 1)?)?.len();
    let x = shifted(e, ins, 0, 2, ElementType::F64, None)?;
    let w = shifted(
        e,
        ins,
        1,
        3,
        ElementType::F64,
        Some(Along {
            axis: 0,
            trailing: rank.saturating_sub(1),
        }),
    )?;
    let y = convolution_of(e, x, w)?;
    e.convert(y, ElementType::I32)
}
