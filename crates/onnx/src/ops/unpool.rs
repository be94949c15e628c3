//! `MaxUnpool`: the partial inverse of `MaxPool` with its `Indices`, a scatter into zeros.

use graphlift_ir::{ElementType, Op, Output, Shape};

use super::layout::dims;
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `MaxUnpool` (opsets 9, 11): the partial inverse of `MaxPool`: zeros of the unpooled
/// shape (each spatial extent `(D - 1) · stride - pad_begin - pad_end + kernel`) with each
/// element of `X` `[N, C, D..]` written at its flat index in `I` (`MaxPool`'s `Indices`:
/// INT64 of `X`'s shape; of repeated indices the last element wins), as a `ScatterND` of
/// the flattened tensors; a larger `output_shape` (a constant) pads it with zeros at the
/// end of each axis, as ONNX's reference does.
///
/// # Errors
/// Named errors for a missing `kernel_shape`, an `I` of another shape or type, or an
/// `output_shape` of the wrong rank or batch and channels; an index outside the output is
/// a run-time error of the scatter.
pub(super) fn max_unpool(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 3)?;
    let (x, i) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let dx = dims(e, x)?;
    if dims(e, i)? != dx || e.et(i)? != ElementType::I64 {
        return Err(e.shape_error(format!("I must be INT64 of X's shape {dx:?}")));
    }
    let k = dx.len().saturating_sub(2);
    let ints = |name: &str, len: usize, default: usize| -> Result<Vec<usize>, OnnxError> {
        let Some(v) = e.attr_ints(name)? else {
            return Ok(vec![default; len]);
        };
        let v = v
            .iter()
            .map(|&x| usize::try_from(x))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| e.attribute_error(name, format!("{v:?} has a negative entry")))?;
        if v.len() != len {
            return Err(e.attribute_error(name, format!("has {} entries, not {len}", v.len())));
        }
        Ok(v)
    };
    if e.attr_ints("kernel_shape")?.is_none() {
        return Err(e.attribute_error("kernel_shape", "is required".into()));
    }
    let (kernel, strides, pads) = (
        ints("kernel_shape", k, 1)?,
        ints("strides", k, 1)?,
        ints("pads", 2 * k, 0)?,
    );
    if k == 0 || strides.contains(&0) {
        return Err(e.shape_error(format!("X {dx:?} with strides {strides:?}")));
    }
    let mut unpooled = dx[..2].to_vec();
    for a in 0..k {
        let full = (dx[2 + a].max(1) - 1) * strides[a] + kernel[a];
        let extent = full
            .checked_sub(pads[a] + pads[k + a])
            .filter(|&x| x > 0)
            .ok_or_else(|| e.shape_error(format!("pads leave no extent on spatial axis {a}")))?;
        unpooled.push(extent);
    }
    let total: usize = unpooled.iter().product();
    let count: usize = dx.iter().product();
    let zero = e.scalar_like(x, 0.0)?;
    let zeros = e.broadcast_to(zero, &Shape::new([total]))?;
    let at = e.op(Op::Reshape(Shape::new([count, 1])), &[i])?;
    let values = e.op(Op::Reshape(Shape::new([count])), &[x])?;
    let y = e.op(
        Op::ScatterNd(graphlift_ir::ScatterReduction::None),
        &[zeros, at, values],
    )?;
    let y = e.op(Op::Reshape(Shape::new(unpooled.clone())), &[y])?;
    let Some(asked_shape) = e.optional_input(ins, 2) else {
        return Ok(y);
    };
    // A larger output_shape pads the unpooled tensor at the end of each axis (the indices
    // stay those of the unpooled shape, as ONNX's reference reads them).
    let s = e.constant_ints(asked_shape, "input 2 (`output_shape`)")?;
    let fits = s.len() == unpooled.len()
        && s.iter()
            .zip(&unpooled)
            .all(|(&o, &u)| usize::try_from(o).is_ok_and(|o| o >= u))
        && s[..2] == [dx[0] as i64, dx[1] as i64];
    if !fits {
        return Err(e.shape_error(format!(
            "output_shape {s:?} must hold the unpooled shape {unpooled:?}"
        )));
    }
    let high: Vec<usize> = s
        .iter()
        .zip(&unpooled)
        .map(|(&o, &u)| o as usize - u)
        .collect();
    if high.iter().all(|&h| h == 0) {
        return Ok(y);
    }
    let rank = unpooled.len();
    let pad = graphlift_ir::Pad {
        low: vec![0; rank],
        high,
        interior: vec![0; rank],
        mode: graphlift_ir::PadMode::Constant,
    };
    let zero = e.scalar_like(x, 0.0)?;
    e.op(Op::Pad(pad), &[y, zero])
}
