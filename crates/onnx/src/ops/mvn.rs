//! `MeanVarianceNormalization`: `x` standardised over a set of axes with the `Reduce*`
//! family's mean ([`super::reduce::reduce_of`]).

use graphlift_ir::{BinaryOp, Output, ReduceOp, UnaryOp};

use super::layout::{axes, dims};
use super::reduce::{reduce_of, Reducer};
use super::{float_input, In};
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `MeanVarianceNormalization` (opsets 9 and 13): `(x - mean) / (sqrt(variance) + 1e-9)`
/// with the mean and the (biased) variance over `axes` (default `[0, 2, 3]`, negative
/// counting from the end), as the operator's function body defines it; `x` FLOAT16, FLOAT,
/// DOUBLE or (opset 13) BFLOAT16, the result of its shape and type. The variance is the mean
/// of the squared deviations, which equals the body's `E[x²] - E[x]²` without its
/// cancellation (that difference can round below 0, and its root to NaN).
///
/// # Errors
/// [`OnnxError::BadAttribute`] for an axis out of range (the default axes need rank 4) or a
/// repeated one; [`OnnxError::TypeMismatch`] for a non-float `x`.
pub(super) fn mean_variance_normalization(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let rank = dims(e, x)?.len();
    let list = e.attr_ints("axes")?.unwrap_or_else(|| vec![0, 2, 3]);
    let over = axes(e, &list, rank, "axes")?;
    let mean = reduce_of(e, x, Reducer::Plain(ReduceOp::Mean), &over, true)?;
    let centred = e.binary(BinaryOp::Subtract, x, mean)?;
    let squared = e.binary(BinaryOp::Multiply, centred, centred)?;
    let variance = reduce_of(e, squared, Reducer::Plain(ReduceOp::Mean), &over, true)?;
    let deviation = e.unary(UnaryOp::Sqrt, variance)?;
    let denominator = e.add_scalar(deviation, 1e-9)?;
    e.binary(BinaryOp::Divide, centred, denominator)
}
