//! `LpNormalization`: `x` divided by its L1 or L2 norm along one axis, the norm taken from
//! the `Reduce*` family's composition ([`super::reduce::reduce_of`]).

use graphlift_ir::{BinaryOp, CompareOp, Output};

use super::layout::{axis, dims};
use super::reduce::{reduce_of, Reducer};
use super::{float_input, In};
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `LpNormalization` (opsets 1 and 22): `x / ||x||_p` along `axis` (default -1, negative
/// counting from the end), `p` 1 (`sum |x|`) or 2 (`sqrt(sum x²)`, the default); `x` of any
/// rank but 0, FLOAT16, FLOAT, DOUBLE or (opset 22) BFLOAT16; the result has `x`'s shape and
/// type.
/// Where the norm is 0 (every element along the axis 0) the result is 0 (opset 22's
/// definition, which the reference applies to every opset).
///
/// # Errors
/// [`OnnxError::BadAttribute`] for a `p` other than 1 or 2 or an axis out of range;
/// [`OnnxError::TypeMismatch`] for a non-float `x`.
pub(super) fn lp_normalization(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let rank = dims(e, x)?.len();
    let a = axis(e, e.attr_i64("axis")?.unwrap_or(-1), rank, "axis")?;
    let norm = match e.attr_i64("p")?.unwrap_or(2) {
        1 => Reducer::L1,
        2 => Reducer::L2,
        p => return Err(e.attribute_error("p", format!("must be 1 or 2, is {p}"))),
    };
    let n = reduce_of(e, x, norm, &[a], true)?;
    let normalized = e.binary(BinaryOp::Divide, x, n)?;
    let zero = e.scalar_like(x, 0.0)?;
    let vanishing = e.compare(CompareOp::Equal, n, zero)?;
    e.select(vanishing, zero, normalized)
}
