//! `LRN`, local response normalisation across channels: each element divided by a power of
//! the sum of squares over a window of neighbouring channels, that sum one `Convolution`
//! with a filter of ones sliding along the channel axis.

use graphlift_ir::{BinaryOp, Convolution, Op, Output, Shape, Window};

use super::layout::{dims, reshape_to as reshape};
use super::{float_input, In};
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `LRN` (opsets 1 and 13): for `x` `[N, C, D..]` (rank >= 2; FLOAT16, FLOAT, DOUBLE, and
/// BFLOAT16 from opset 13), `y = x / (bias + alpha / size · s)^beta` with `s[n, c, d..]` the
/// sum of `x[n, i, d..]²` over the channels `max(0, c - floor((size - 1) / 2)) <= i <=
/// min(C - 1, c + ceil((size - 1) / 2))`; `size` is required (>= 1), `alpha` 1e-4, `beta`
/// 0.75 and `bias` 1 by default. The result has `x`'s shape and type.
///
/// `s` is a convolution of `x²` viewed as `[N, 1, C, D1·D2·..]` with a `[w, 1]` filter of
/// ones, padded by zeros along the channels (the window clipped to the `2C - 1` channels
/// that can reach one, so a huge `size` costs no more than that).
///
/// # Errors
/// [`OnnxError::BadAttribute`] for a missing or non-positive `size` or a mistyped
/// attribute; [`OnnxError::ShapeMismatch`] for `x` of rank < 2;
/// [`OnnxError::TypeMismatch`] for a non-float `x`.
pub(super) fn lrn(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let d = dims(e, x)?;
    if d.len() < 2 {
        return Err(e.shape_error(format!("LRN needs [N, C, D..] (rank >= 2), got {d:?}")));
    }
    let size = e
        .attr_i64("size")?
        .ok_or_else(|| e.attribute_error("size", "is required".into()))?;
    if size < 1 {
        return Err(e.attribute_error("size", format!("must be >= 1, is {size}")));
    }
    let alpha = f64::from(e.attr_f32("alpha", 1e-4)?);
    let beta = f64::from(e.attr_f32("beta", 0.75)?);
    let bias = f64::from(e.attr_f32("bias", 1.0)?);
    if d.contains(&0) {
        return Ok(x);
    }
    let squares = e.binary(BinaryOp::Multiply, x, x)?;
    let sums = channel_window_sums(e, squares, &d, size)?;
    let scaled = e.mul_scalar(sums, alpha / size as f64)?;
    let base = e.add_scalar(scaled, bias)?;
    let exponent = e.scalar_like(x, beta)?;
    let denominator = e.binary(BinaryOp::Power, base, exponent)?;
    e.binary(BinaryOp::Divide, x, denominator)
}

/// The sums of `v` (extents `d`, none 0) over LRN's window of `size` channels around each.
fn channel_window_sums(
    e: &mut NodeEmitter<'_>,
    v: Output,
    d: &[usize],
    size: i64,
) -> Result<Output, OnnxError> {
    let channels = d[1];
    let reach = channels - 1;
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    // floor((size - 1) / 2) channels before, ceil((size - 1) / 2) after; past C - 1 adds
    // only padding.
    let before = ((size - 1) / 2).min(reach);
    let after = (size / 2).min(reach);
    let rest: usize = d[2..].iter().product();
    let grid = reshape(e, v, vec![d[0], 1, channels, rest])?;
    let window = before + after + 1;
    let one = e.scalar_like(v, 1.0)?;
    let ones = e.broadcast_to(one, &Shape::new([1, 1, window, 1]))?;
    let c = Convolution {
        window: Window {
            shape: vec![window, 1],
            strides: vec![1, 1],
            dilations: vec![1, 1],
            pads_begin: vec![before, 0],
            pads_end: vec![after, 0],
        },
        groups: 1,
    };
    let sums = e.op(Op::Convolution(c), &[grid, ones])?;
    reshape(e, sums, d.to_vec())
}
