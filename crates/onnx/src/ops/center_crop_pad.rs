//! `CenterCropPad` (opsets 18, 21): each chosen axis cropped or zero-padded to a target
//! extent around its centre, as one `Slice` and one `Pad`.

use graphlift_ir::{Op, Output, Pad, PadMode, SliceAxis};

use super::layout::{axis, dims};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `CenterCropPad`: `input_data` of any rank and `shape` (a constant INT64 vector, one
/// extent per axis of `axes`, by default every axis; negative axes count from the end):
/// an axis longer than its target keeps the `target` elements from `(extent - target) / 2`
/// (rounded down), a shorter one is padded with zeros, `(target - extent) / 2` (rounded
/// down) before and the rest after, as ONNX's reference does.
///
/// # Errors
/// Named errors for a `shape` that is not a constant of one extent per axis (or has a
/// negative one), and for repeated or out-of-range axes.
pub(super) fn center_crop_pad(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let target = e.constant_ints(e.input(ins, 1)?, "input 1 (`shape`)")?;
    let axes: Vec<usize> = match e.attr_ints("axes")? {
        Some(list) => list
            .iter()
            .map(|&a| axis(e, a, d.len(), "axes"))
            .collect::<Result<_, _>>()?,
        None => (0..d.len()).collect(),
    };
    if target.len() != axes.len() {
        return Err(e.shape_error(format!(
            "shape {target:?} must give one extent for each of the axes {axes:?}"
        )));
    }
    let mut slices: Vec<SliceAxis> = d.iter().map(|&n| SliceAxis::full(n)).collect();
    let (mut low, mut high) = (vec![0; d.len()], vec![0; d.len()]);
    let mut seen = vec![false; d.len()];
    for (&a, &t) in axes.iter().zip(&target) {
        if std::mem::replace(&mut seen[a], true) {
            return Err(e.attribute_error("axes", format!("axis {a} appears twice")));
        }
        let t = usize::try_from(t)
            .map_err(|_| e.shape_error(format!("shape {target:?} has a negative extent")))?;
        if t < d[a] {
            slices[a] = SliceAxis {
                start: (d[a] - t) / 2,
                step: 1,
                len: t,
            };
        } else {
            low[a] = (t - d[a]) / 2;
            high[a] = t - d[a] - low[a];
        }
    }
    let cropped = e.op(Op::Slice(slices), &[x])?;
    if low.iter().chain(&high).all(|&p| p == 0) {
        return Ok(cropped);
    }
    let pad = Pad {
        low,
        high,
        interior: vec![0; d.len()],
        mode: PadMode::Constant,
    };
    let zero = e.scalar_like(x, 0.0)?;
    e.op(Op::Pad(pad), &[cropped, zero])
}
