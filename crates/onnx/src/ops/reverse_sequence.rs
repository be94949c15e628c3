//! `ReverseSequence` (opset 10), which TensorFlow exporters write for the backward half of a
//! bidirectional recurrent layer: a `GatherElements` along the time axis at indices computed
//! from the sequence lengths (constant or given at run time).

use graphlift_ir::{BinaryOp, CompareOp, ElementType, Op, Output, Shape, TensorData};

use super::gather::along_axis;
use super::layout::dims;
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `ReverseSequence`: `input` of rank >= 2 with its time axis `time_axis` and batch axis
/// `batch_axis` (0 and 1, either way round; defaults 0 and 1) and `sequence_lens` INT64
/// `[batch]`: for each batch entry `b`, the first `sequence_lens[b]` elements along the
/// time axis in reverse order, the others as they are. A length outside `[0, time]` is
/// clamped to it (the spec requires it inside).
///
/// # Errors
/// Named errors for axes other than 0 and 1 or equal, a rank below 2, and `sequence_lens`
/// of another type or length.
pub(super) fn reverse_sequence(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (x, lens) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let dx = dims(e, x)?;
    let batch_axis = e.attr_i64("batch_axis")?.unwrap_or(1);
    let time_axis = e.attr_i64("time_axis")?.unwrap_or(0);
    let (batch_axis, time_axis) = match (batch_axis, time_axis) {
        (0, 1) => (0usize, 1usize),
        (1, 0) => (1, 0),
        _ => {
            return Err(e.attribute_error(
                "batch_axis",
                format!("{batch_axis} with time_axis {time_axis}: one must be 0, the other 1"),
            ))
        }
    };
    if dx.len() < 2 {
        return Err(e.shape_error(format!("input {dx:?} has no batch and time axes")));
    }
    let (batch, time) = (dx[batch_axis], dx[time_axis]);
    if e.et(lens)? != ElementType::I64 || dims(e, lens)? != [batch] {
        return Err(e.shape_error(format!(
            "sequence_lens must be INT64 [{batch}], is {} {:?}",
            e.et(lens)?,
            dims(e, lens)?
        )));
    }
    // Positions along time and lengths along batch, each at its axis of a rank-2 shape.
    let mut t_shape = [1, 1];
    t_shape[time_axis] = time;
    let mut l_shape = [1, 1];
    l_shape[batch_axis] = batch;
    let positions = (0..time as i64).collect();
    let t = e.constant(TensorData::I64(positions), Shape::new(t_shape))?;
    let l = e.op(Op::Reshape(Shape::new(l_shape)), &[lens])?;
    let (zero, top) = (
        e.scalar(ElementType::I64, 0.0)?,
        e.scalar(ElementType::I64, time as f64)?,
    );
    let l = e.binary(BinaryOp::Maximum, l, zero)?;
    let l = e.binary(BinaryOp::Minimum, l, top)?;
    // Inside its sequence, position t reads l - 1 - t; past it, itself.
    let one = e.scalar(ElementType::I64, 1.0)?;
    let last = e.binary(BinaryOp::Subtract, l, one)?;
    let mirrored = e.binary(BinaryOp::Subtract, last, t)?;
    let inside = e.compare(CompareOp::Less, t, l)?;
    let at = e.select(inside, mirrored, t)?;
    let mut full = vec![1; dx.len()];
    full[time_axis] = time;
    full[batch_axis] = batch;
    let at = e.op(Op::Reshape(Shape::new(full)), &[at])?;
    let at = e.broadcast_to(at, &Shape::new(dx.clone()))?;
    along_axis(e, x, at, time_axis)
}
