//! The Upsample-like resize: `Upsample` (opsets 7 and 9; deprecated at 10, where it is
//! opset 9's) and `Resize` of opset 10, which has Upsample-9's form. One owner for the three:
//! per-axis `scales`, `mode` `nearest` or `linear`, output extents `floor(in · scale)`, and
//! the source coordinate `x_out / scale` (ONNX's `asymmetric`), nearest rounding down (the
//! `floor` nearest mode) — the attributes the ONNX version converter gives `Resize` when it
//! lifts an opset-10 node to opset 11.

use graphlift_ir::{CoordinateTransform, NearestMode, Op, Output, Resize, ResizeMode, Shape};

use super::layout::dims;
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `Upsample` (opset 7: `scales` an attribute; opsets 9 and 10: a FLOAT input) and `Resize`
/// of opset 10 (`scales` an input): `X` of any rank resized by one scale per axis, each
/// finite and `> 0` (`>= 1` for `Upsample`), to extents `floor(in · scale)`.
///
/// FLOAT16, FLOAT, DOUBLE and BFLOAT16 become one [`Op::Resize`] (`nearest`: the source
/// element `floor(x / scale)`; `linear`: interpolated between the two neighbours of
/// `x / scale`, clamped to the axis). The other types ONNX allows (BOOL and the integers)
/// resize in `nearest` mode as one `Gather` per resized axis, picking the same source
/// elements. A `scales` input must be a constant (or computed from constants), or come from
/// a graph input whose value the caller gives ([`OnnxError::RunTimeOperand`]).
///
/// # Errors
/// [`OnnxError::BadAttribute`] for an unknown `mode` or a missing `scales` attribute;
/// [`OnnxError::ShapeMismatch`] for a scale count other than the rank or a scale out of
/// range; [`OnnxError::UnsupportedFeature`] for `linear` of a non-float `X` and for the
/// experimental `Upsample` of opsets 1 to 6.
pub(super) fn upsample(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let upsample = e.node().op_type == "Upsample";
    let opset = e.opset();
    if upsample && opset < 7 {
        return Err(e.unsupported(format!(
            "the experimental Upsample of opset {opset} (height_scale, width_scale)"
        )));
    }
    let scales = if upsample && opset < 9 {
        e.arity(ins, 1, 1)?;
        let listed = e
            .attr_floats("scales")?
            .ok_or_else(|| e.attribute_error("scales", "is required".into()))?;
        listed.into_iter().map(f64::from).collect()
    } else {
        e.arity(ins, 2, 2)?;
        e.constant_floats(e.input(ins, 1)?, "input 1 (`scales`)")?
    };
    let x = e.input(ins, 0)?;
    let input = dims(e, x)?;
    if scales.len() != input.len() {
        return Err(e.shape_error(format!(
            "scales {scales:?} has {} entries for an input of rank {}",
            scales.len(),
            input.len()
        )));
    }
    let least = if upsample {
        "must be finite and >= 1"
    } else {
        "must be finite and > 0"
    };
    if let Some(bad) = scales
        .iter()
        .find(|&&s| !s.is_finite() || s <= 0.0 || (upsample && s < 1.0))
    {
        return Err(e.shape_error(format!("scale {bad} {least}")));
    }
    let shape: Vec<usize> = input
        .iter()
        .zip(&scales)
        .map(|(&n, &s)| (n as f64 * s).floor() as usize)
        .collect();
    let linear = e.attr_choice("mode", "nearest", &[("nearest", false), ("linear", true)])?;
    let et = e.et(x)?;
    if et.is_float() {
        let r = Resize {
            mode: if linear {
                ResizeMode::Linear
            } else {
                ResizeMode::Nearest(NearestMode::Floor)
            },
            coordinate_transform: CoordinateTransform::Asymmetric,
            scales,
            shape,
            roi: vec![[0.0, 1.0]; input.len()],
            exclude_outside: false,
            extrapolation_value: 0.0,
            antialias: false,
        };
        r.check(&input).map_err(|m| e.shape_error(m))?;
        return e.op(Op::Resize(r), &[x]);
    }
    if linear {
        return Err(e.unsupported(format!(
            "linear interpolation of {et} (graphlift interpolates FLOAT16, FLOAT, DOUBLE and \
             BFLOAT16; nearest resizes every type)"
        )));
    }
    nearest_by_gathers(e, x, &input, &scales, &shape)
}

/// `x` resized in `nearest` mode with the `asymmetric` / `floor` rule as one `Gather` per
/// axis whose extent or scale changes: output `o` of an axis reads input
/// `min(floor(o / scale), in - 1)`.
fn nearest_by_gathers(
    e: &mut NodeEmitter<'_>,
    mut x: Output,
    input: &[usize],
    scales: &[f64],
    shape: &[usize],
) -> Result<Output, OnnxError> {
    for (a, (&n, &out)) in input.iter().zip(shape).enumerate() {
        if n == out && scales[a] == 1.0 {
            continue;
        }
        if n == 0 {
            return Err(e.shape_error(format!("axis {a} is empty and cannot be resized")));
        }
        let picks: Vec<i64> = (0..out)
            .map(|o| ((o as f64 / scales[a]).floor() as usize).min(n - 1) as i64)
            .collect();
        let picks = e.constant(graphlift_ir::TensorData::I64(picks), Shape::new([out]))?;
        x = e.op(Op::Gather(a), &[x, picks])?;
    }
    Ok(x)
}
