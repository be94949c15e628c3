//! `TopK` (opsets 1, 10, 11): the indices of the `K` extremes along an axis by the IR's
//! `TopK`, the values read at them as `GatherElements` reads.

use graphlift_ir::{ElementType, Op, Output, TopK};

use super::gather::along_axis;
use super::layout::{axis, dims};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `TopK`: outputs `Values` (the input's element type) and `Indices` (INT64), of the input's
/// shape with extent `K` on `axis` (default -1), the largest elements (`largest`, default 1)
/// or the smallest, most extreme first, ties to the lower index (ONNX). `K` is the attribute
/// `k` (opset 1) or input 1, a one-element INT64 tensor that must be known at import (a
/// constant, or a graph input given through [`crate::ImportOptions::input_values`]).
/// `sorted = 0` leaves the order unspecified, so the sorted order is one of its answers.
///
/// # Errors
/// [`OnnxError::RunTimeOperand`] / [`OnnxError::UnsupportedFeature`] for a `K` computed at
/// run time; [`OnnxError::ShapeMismatch`] for a `K` that is not one element, negative, or
/// larger than the axis; [`OnnxError::TypeMismatch`] for a non-numeric input;
/// [`OnnxError::BadAttribute`] for an axis out of range or a missing `k` (opset 1).
pub(super) fn top_k(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Vec<Output>, OnnxError> {
    let k = if e.opset() < 10 {
        e.arity(ins, 1, 1)?;
        e.attr_i64("k")?
            .ok_or_else(|| e.attribute_error("k", "is required before opset 10".into()))?
    } else {
        e.arity(ins, 2, 2)?;
        let k = e.input(ins, 1)?;
        let k_shape = e.ty(k)?.shape;
        if k_shape.rank() != 1 {
            return Err(e.shape_error(format!(
                "K must be a 1-D tensor of one element, has shape {k_shape}"
            )));
        }
        match e.constant_ints(k, "input 1 (`K`)")?[..] {
            [k] => k,
            ref other => {
                return Err(e.shape_error(format!("K must hold one element, holds {other:?}")))
            }
        }
    };
    let x = e.input(ins, 0)?;
    e.require(x, ElementType::is_numeric, "a numeric")?;
    let d = dims(e, x)?;
    let a = axis(e, e.attr_i64("axis")?.unwrap_or(-1), d.len(), "axis")?;
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k <= d[a])
        .ok_or_else(|| {
            e.shape_error(format!(
                "K = {k} must lie in [0, {}], the extent of axis {a} of {d:?}",
                d[a]
            ))
        })?;
    let t = TopK {
        axis: a,
        k,
        largest: e.attr_i64("largest")?.unwrap_or(1) != 0,
    };
    let indices = e.op(Op::TopK(t), &[x])?;
    let values = along_axis(e, x, indices, a)?;
    Ok(vec![values, indices])
}
