//! `NonMaxSuppression` (opsets 10, 11): the detector's box selection
//! ([`reference::non_max_suppression`]). Folded to a Constant when every operand is known at
//! import; otherwise its output length is known only at run time, and
//! [`OnnxError::DataDependentShape`] hands the node to a [`crate::Session`], which runs it
//! between two compiled parts of the model (as for `NonZero`).

use graphlift_ir::{ElementType, Output, TensorData};
use graphlift_runtime::reference::{self, Suppression};
use graphlift_runtime::Tensor;

use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// The operands in order, with their element types.
const OPERANDS: [(&str, ElementType); 5] = [
    ("boxes", ElementType::F32),
    ("scores", ElementType::F32),
    ("max_output_boxes_per_class", ElementType::I64),
    ("iou_threshold", ElementType::F32),
    ("score_threshold", ElementType::F32),
];

/// `NonMaxSuppression`: `boxes` FLOAT `[B, N, 4]`, `scores` FLOAT `[B, C, N]`, and the
/// optional scalars `max_output_boxes_per_class` (INT64), `iou_threshold` and
/// `score_threshold` (FLOAT), with the `center_point_box` attribute (0 or 1), give the
/// selected `(batch, class, box)` triples, INT64 `[K, 3]`.
///
/// # Errors
/// Named errors for other element types or shapes, an optional operand of more than one
/// value, a constant `iou_threshold` outside `[0, 1]`, or a `center_point_box` other than
/// 0 or 1; [`OnnxError::DataDependentShape`] when an operand is computed at run time.
pub(super) fn non_max_suppression(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 5)?;
    let (boxes, scores) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let operands: Vec<Option<Output>> = (0..5).map(|i| e.optional_input(ins, i)).collect();
    for (k, want) in OPERANDS.iter().enumerate() {
        if let Some(v) = operands[k] {
            let t = e.et(v)?;
            if t != want.1 {
                return Err(e.type_error(format!(
                    "input {k} (`{}`) must be {}, got {t}",
                    want.0, want.1
                )));
            }
        }
    }
    let (db, ds) = (e.ty(boxes)?.shape, e.ty(scores)?.shape);
    match (db.dims(), ds.dims()) {
        (&[b, n, 4], &[sb, _, sn]) if (sb, sn) == (b, n) => {}
        _ => {
            return Err(e.shape_error(format!(
                "boxes {db} and scores {ds} must be [B, N, 4] and [B, C, N]"
            )))
        }
    }
    let center_point_box = e.attr_i64("center_point_box")?.unwrap_or(0);
    reference::BoxEncoding::from_center_point_box(center_point_box)
        .map_err(|m| e.attribute_error("center_point_box", m))?;
    let values: Vec<Option<Tensor>> = operands
        .iter()
        .map(|v| v.and_then(|v| e.constant_value(v)))
        .collect();
    let computed = |k: usize| operands[k].is_some() && values[k].is_none();
    let param = |k: usize| values[k].as_ref().map(Tensor::data);
    // The parameters, when known here, are checked at import even if the boxes are not.
    let suppression = (!(2..5).any(computed))
        .then(|| Suppression::from_operands(param(2), param(3), param(4), center_point_box))
        .transpose()
        .map_err(|m| e.shape_error(m))?;
    let (Some(s), Some(bv), Some(sv)) = (suppression, &values[0], &values[1]) else {
        let k = (0..5).find(|&k| computed(k)).unwrap_or(0);
        let node = e.node();
        return Err(OnnxError::DataDependentShape {
            at: e.at(),
            operand: node.input[k].clone(),
            output: node.output.first().cloned().unwrap_or_default(),
        });
    };
    let (TensorData::F32(b), TensorData::F32(sc)) = (bv.data(), sv.data()) else {
        return Err(e.type_error("boxes and scores must be FLOAT".into()));
    };
    let (data, shape) = reference::non_max_suppression((b, bv.shape()), (sc, sv.shape()), &s)
        .map_err(|message| OnnxError::Fold {
            at: e.at(),
            message,
        })?;
    e.constant(data, shape)
}
