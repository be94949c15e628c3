//! `Dropout` at inference: the output is the input, and the optional `mask` keeps every
//! element. graphlift runs inference only, so a node that asks for training is an error.

use graphlift_ir::{ElementType, Output, TensorData};

use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `Dropout` (opsets 7, 10, 12, 13 and 22; opsets 1 and 6 with `is_test` = 1) in inference
/// mode: `output` is `data` (any shape; FLOAT16, FLOAT, DOUBLE, BFLOAT16 from opset 13, and
/// from opset 22 the FLOAT8 types it only passes on), and the optional second output
/// `mask`, of `data`'s shape, keeps every element: BOOL true from opset 10, a `T` one
/// before (opsets 7 to 9 type the mask as the data).
///
/// `ratio` (an attribute before opset 12, in `[0, 1)`; from opset 12 an optional float
/// input) does not matter at inference; `seed` (opset 12) is ignored.
///
/// # Errors
/// [`OnnxError::UnsupportedFeature`] for training: a `training_mode` input (opset 12) that is
/// true or computed at run time (one a graph input gives is [`OnnxError::RunTimeOperand`],
/// so that a caller can bind it to false), or before opset 7 an `is_test` of 0 (its
/// default); [`OnnxError::BadAttribute`] for a `ratio` out of range or mistyped;
/// [`OnnxError::TypeMismatch`] for non-float `data` or `ratio`, or a non-BOOL
/// `training_mode`; [`OnnxError::ShapeMismatch`] for a `training_mode` of more than one
/// value.
pub(super) fn dropout(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Vec<Output>, OnnxError> {
    let opset = e.opset();
    e.arity(ins, 1, if opset >= 12 { 3 } else { 1 })?;
    let x = e.input(ins, 0)?;
    let t = e.et(x)?;
    if !(t.is_float() || (opset >= 22 && passed_on_float8(t))) {
        return Err(e.type_error(format!(
            "Dropout needs a float input (FLOAT16, FLOAT, DOUBLE, BFLOAT16), got {t}"
        )));
    }
    if opset < 7 && e.attr_i64("is_test")?.unwrap_or(0) == 0 {
        return Err(e.unsupported(format!(
            "training (is_test = 0, the default at opset {opset}; graphlift runs inference only)"
        )));
    }
    if opset < 12 {
        let ratio = e.attr_f32("ratio", 0.5)?;
        if !(0.0..1.0).contains(&ratio) {
            return Err(e.attribute_error("ratio", format!("{ratio} is not in [0, 1)")));
        }
    } else {
        if let Some(ratio) = e.optional_input(ins, 1) {
            e.require(ratio, ElementType::is_float, "a float `ratio`")?;
        }
        if let Some(mode) = e.optional_input(ins, 2) {
            refuse_training(e, mode)?;
        }
        e.attr_i64("seed")?;
    }
    let mut outputs = vec![x];
    if e.node().output.get(1).is_some_and(|m| !m.is_empty()) {
        let keep = if opset >= 10 {
            e.scalar(ElementType::Bool, 1.0)?
        } else {
            e.scalar(t, 1.0)?
        };
        let shape = e.ty(x)?.shape;
        outputs.push(e.broadcast_to(keep, &shape)?);
    }
    Ok(outputs)
}

/// The 8-bit float types that opset 22's `Dropout` accepts (it only passes them on).
fn passed_on_float8(t: ElementType) -> bool {
    matches!(
        t,
        ElementType::F8E4M3FN
            | ElementType::F8E4M3FNUZ
            | ElementType::F8E5M2
            | ElementType::F8E5M2FNUZ
    )
}

/// Checks that the `training_mode` input is a constant false.
fn refuse_training(e: &NodeEmitter<'_>, mode: Output) -> Result<(), OnnxError> {
    let what = "input 2 (`training_mode`)";
    e.require(mode, |t| t == ElementType::Bool, "a BOOL `training_mode`")?;
    let Some(value) = e.constant_value(mode) else {
        return Err(e.not_constant(
            mode,
            what,
            "graphlift runs inference only; give it the value false",
        ));
    };
    match value.data() {
        TensorData::Bool(v) if v.len() == 1 => {
            if v[0] {
                return Err(e.unsupported(
                    "training_mode = true (graphlift runs inference only)".to_string(),
                ));
            }
            Ok(())
        }
        _ => Err(e.shape_error(format!(
            "{what} must be one value, has shape {}",
            value.shape()
        ))),
    }
}
