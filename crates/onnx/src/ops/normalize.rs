//! `InstanceNormalization` and `GroupNormalization`: each one [`Op::LayerNorm`] over the
//! trailing axes of a (regrouped) view of `x`, with unit scale and zero bias, followed by the
//! per-channel (or, for `GroupNormalization` before opset 21, per-group) scale and bias as
//! broadcast elementwise ops that fuse into a JIT kernel.

use graphlift_ir::{BinaryOp, LayerNorm, Op, Output, Shape};

use super::layout::{dims, reshape_to as reshape};
use super::{float, In};
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `(x - mean) / sqrt(var + epsilon)` over the axes `axis..` of `x` (biased variance).
fn standardize(
    e: &mut NodeEmitter<'_>,
    x: Output,
    axis: usize,
    epsilon: f64,
) -> Result<Output, OnnxError> {
    let d = dims(e, x)?;
    let inner = Shape::new(&d[axis..]);
    let one = e.scalar_like(x, 1.0)?;
    let zero = e.scalar_like(x, 0.0)?;
    let ones = e.broadcast_to(one, &inner)?;
    let zeros = e.broadcast_to(zero, &inner)?;
    e.op(
        Op::LayerNorm(LayerNorm { axis, epsilon }),
        &[x, ones, zeros],
    )
}

/// `y * scale + bias` with `scale` and `bias` of shape `[n]` along axis 1 of `y`.
fn affine_on_axis1(
    e: &mut NodeEmitter<'_>,
    y: Output,
    scale: Output,
    bias: Output,
) -> Result<Output, OnnxError> {
    let rank = dims(e, y)?.len();
    let mut per = Vec::with_capacity(2);
    for v in [scale, bias] {
        let n = dims(e, v)?.iter().product();
        let mut target = vec![1; rank];
        target[1] = n;
        per.push(reshape(e, v, target)?);
    }
    let scaled = e.binary(BinaryOp::Multiply, y, per[0])?;
    e.binary(BinaryOp::Add, scaled, per[1])
}

/// Checks `v` is a vector of `n` elements of `x`'s type.
fn vector_of(
    e: &NodeEmitter<'_>,
    x: Output,
    v: Output,
    n: usize,
    what: &str,
) -> Result<(), OnnxError> {
    e.same_type(&[x, v])?;
    let d = dims(e, v)?;
    if d != [n] {
        return Err(e.shape_error(format!("{what} has shape {d:?}, expected [{n}]")));
    }
    Ok(())
}

/// The float input `x` `[N, C, D..]` (rank at least 3), the scale and the bias, and `x`'s
/// extents.
fn operands(
    e: &NodeEmitter<'_>,
    ins: In<'_>,
) -> Result<(Output, Output, Output, Vec<usize>), OnnxError> {
    e.arity(ins, 3, 3)?;
    let (x, scale, bias) = (e.input(ins, 0)?, e.input(ins, 1)?, e.input(ins, 2)?);
    e.require(x, float, "a float")?;
    let d = dims(e, x)?;
    if d.len() < 3 {
        return Err(e.shape_error(format!("input must have rank >= 3, has shape {d:?}")));
    }
    Ok((x, scale, bias, d))
}

/// `InstanceNormalization` (opsets 1–22): `x` `[N, C, D..]` normalised over `D..` per
/// sample and channel, then `* scale[c] + B[c]`; `epsilon` defaults to 1e-5.
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] when `x` has rank < 3 or `scale`/`B` are not `[C]`.
pub(super) fn instance_norm(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let (x, scale, bias, d) = operands(e, ins)?;
    vector_of(e, x, scale, d[1], "scale")?;
    vector_of(e, x, bias, d[1], "B")?;
    let epsilon = f64::from(e.attr_f32("epsilon", 1e-5)?);
    let y = standardize(e, x, 2, epsilon)?;
    affine_on_axis1(e, y, scale, bias)
}

/// `GroupNormalization` (opsets 18 and 21): the `C` channels of `x` `[N, C, D..]` in
/// `num_groups` groups, each group of each sample normalised over its channels and `D..`;
/// then `* scale + bias`, per group (`[num_groups]`, opset 18) or per channel (`[C]`,
/// opset 21). `epsilon` defaults to 1e-5; `stash_type` (opset 21) asks for f32 statistics,
/// which graphlift computes in at least the input's precision.
///
/// # Errors
/// [`OnnxError::BadAttribute`] when `num_groups` is missing, not positive or does not divide
/// `C`; [`OnnxError::ShapeMismatch`] for a rank < 3 input or a wrong scale or bias shape.
pub(super) fn group_norm(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let (x, scale, bias, d) = operands(e, ins)?;
    let c = d[1];
    let groups = e
        .attr_i64("num_groups")?
        .ok_or_else(|| e.attribute_error("num_groups", "is required".into()))?;
    let g = usize::try_from(groups)
        .ok()
        .filter(|&g| g > 0 && c % g == 0)
        .ok_or_else(|| {
            e.attribute_error(
                "num_groups",
                format!("{groups} must be positive and divide the {c} channels"),
            )
        })?;
    let per_channel = e.opset() >= 21;
    let n = if per_channel { c } else { g };
    vector_of(e, x, scale, n, "scale")?;
    vector_of(e, x, bias, n, "bias")?;
    let epsilon = f64::from(e.attr_f32("epsilon", 1e-5)?);
    let rest: usize = d[2..].iter().product();
    let grouped = reshape(e, x, vec![d[0], g, (c / g) * rest])?;
    let y = standardize(e, grouped, 2, epsilon)?;
    if per_channel {
        let y = reshape(e, y, d)?;
        affine_on_axis1(e, y, scale, bias)
    } else {
        let y = affine_on_axis1(e, y, scale, bias)?;
        reshape(e, y, d)
    }
}
