//! `Compress` (opsets 9, 11): with a constant condition, a `Gather` at the positions it
//! selects; with a computed one, [`OnnxError::DataDependentShape`] hands the node to a
//! [`crate::Session`], which runs it ([`reference::compress`]) between two compiled parts.

use graphlift_ir::{ElementType, Op, Output, Shape, TensorData};
use graphlift_runtime::reference;

use super::layout::{axis, dims};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `Compress`: `input` of any type and shape, `condition` BOOL of one axis, and `axis`
/// (optional, negative counts from the end): the slices along `axis` (without it, the
/// elements of the flattened input) at the positions where `condition` is true; positions
/// past the condition's length are dropped.
///
/// # Errors
/// Named errors for a non-BOOL or multi-axis condition, one longer than the axis, or an axis
/// out of range; [`OnnxError::DataDependentShape`] for a condition computed at run time.
pub(super) fn compress(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (x, c) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let d = dims(e, x)?;
    if e.et(c)? != ElementType::Bool || dims(e, c)?.len() != 1 {
        return Err(e.type_error(format!(
            "condition must be BOOL of one axis, is {} {:?}",
            e.et(c)?,
            dims(e, c)?
        )));
    }
    let a = match e.attr_i64("axis")? {
        Some(raw) => Some(axis(e, raw, d.len(), "axis")?),
        None => None,
    };
    let extent = a.map_or_else(|| d.iter().product(), |a| d[a]);
    if dims(e, c)?[0] > extent {
        return Err(e.shape_error(format!(
            "condition of {} values for {extent} slices",
            dims(e, c)?[0]
        )));
    }
    let Some(condition) = e.constant_value(c) else {
        let node = e.node();
        return Err(OnnxError::DataDependentShape {
            at: e.at(),
            operand: node.input[1].clone(),
            output: node.output.first().cloned().unwrap_or_default(),
        });
    };
    let at =
        reference::compress_positions(condition.data(), extent).map_err(|m| e.shape_error(m))?;
    let count = at.len();
    let at = e.constant(TensorData::I64(at), Shape::new([count]))?;
    let (source, a) = match a {
        Some(a) => (x, a),
        None => (e.op(Op::Reshape(Shape::new([extent])), &[x])?, 0),
    };
    e.op(Op::Gather(a), &[source, at])
}
