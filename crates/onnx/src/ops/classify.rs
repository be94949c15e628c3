//! Float classification: `IsNaN` and `IsInf`, as comparisons.

use graphlift_ir::{BinaryOp, CompareOp, ElementType, Output};

use super::{float_input, In};
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `IsNaN`: `x != x` (BOOL).
pub(super) fn is_nan(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    e.compare(CompareOp::NotEqual, x, x)
}

/// `IsInf`: `x == +inf` (with `detect_positive`, default 1) or `x == -inf` (with
/// `detect_negative`, default 1), BOOL; neither gives all false.
pub(super) fn is_inf(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let positive = e.attr_i64("detect_positive")?.unwrap_or(1) != 0;
    let negative = e.attr_i64("detect_negative")?.unwrap_or(1) != 0;
    let mut found: Option<Output> = None;
    for (wanted, inf) in [(positive, f64::INFINITY), (negative, f64::NEG_INFINITY)] {
        if !wanted {
            continue;
        }
        let k = e.scalar_like(x, inf)?;
        let hit = e.compare(CompareOp::Equal, x, k)?;
        found = Some(match found {
            Some(f) => e.binary(BinaryOp::Or, f, hit)?,
            None => hit,
        });
    }
    match found {
        Some(f) => Ok(f),
        None => {
            let no = e.scalar(ElementType::Bool, 0.0)?;
            let shape = e.ty(x)?.shape;
            e.broadcast_to(no, &shape)
        }
    }
}
