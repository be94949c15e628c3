//! `Resize` (opsets 11 to 19) as one [`graphlift_ir::Op::Resize`], its `roi`, `scales` and
//! `sizes` read from constants and resolved into per-axis scales and output extents the way
//! the ONNX reference implementation (`onnx.reference.ops.op_resize`) resolves them. Opset
//! 10's `Resize`, which has `Upsample`'s form, is `upsample.rs`'s.

use graphlift_ir::{CoordinateTransform, NearestMode, Op, Output, Resize, ResizeMode};

use super::layout::{axis, dims};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `Resize`: inputs `X`, `roi`, `scales`, `sizes` (one of the last two, constant; an empty
/// tensor counts as absent); attributes `mode` (`nearest`), `nearest_mode`
/// (`round_prefer_floor`), `coordinate_transformation_mode` (`half_pixel`), `cubic_coeff_a`
/// (−0.75), `exclude_outside` (0), `extrapolation_value` (0), and from opset 18 `antialias`
/// (0), `axes` (all) and `keep_aspect_ratio_policy` (`stretch`). With scales the output
/// extent is `floor(in · scale)`; with sizes the scale is `size / in`, or under
/// `not_larger` / `not_smaller` the smallest / largest of those over `axes` for every one of
/// them, with extents `floor(in · scale + 0.5)`. `X` must be FLOAT or DOUBLE. Before opset
/// 11: [`super::upsample::upsample`].
pub(super) fn resize(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    if e.opset() < 11 {
        return super::upsample::upsample(e, ins);
    }
    e.arity(ins, 1, 4)?;
    let x = e.input(ins, 0)?;
    let et = e.et(x)?;
    if !et.is_float() {
        return Err(e.unsupported(format!(
            "Resize of {et} (graphlift resizes FLOAT and DOUBLE)"
        )));
    }
    let input = dims(e, x)?;
    let rank = input.len();
    let given = |i: usize| e.optional_input(ins, i);
    let floats = |i: usize, what: &str| -> Result<Option<Vec<f64>>, OnnxError> {
        match given(i) {
            Some(v) => Ok(Some(e.constant_floats(v, what)?).filter(|d| !d.is_empty())),
            None => Ok(None),
        }
    };
    let roi = floats(1, "input 1 (`roi`)")?;
    let scales = floats(2, "input 2 (`scales`)")?;
    let sizes = match given(3) {
        Some(v) => Some(e.constant_ints(v, "input 3 (`sizes`)")?).filter(|d| !d.is_empty()),
        None => None,
    };
    let axes: Vec<usize> = match e.attr_ints("axes")? {
        Some(list) => {
            let mut seen = vec![false; rank];
            list.iter()
                .map(|&a| {
                    let a = axis(e, a, rank, "axes")?;
                    if std::mem::replace(&mut seen[a], true) {
                        return Err(e.attribute_error("axes", format!("repeats an axis: {list:?}")));
                    }
                    Ok(a)
                })
                .collect::<Result<_, _>>()?
        }
        None => (0..rank).collect(),
    };
    let n = axes.len();
    let (scales, shape) = match (scales, sizes) {
        (Some(s), None) => {
            if s.len() != n {
                return Err(
                    e.shape_error(format!("scales {s:?} has {} entries for {n} axes", s.len()))
                );
            }
            let mut full = vec![1.0; rank];
            for (k, &a) in axes.iter().enumerate() {
                full[a] = s[k];
            }
            if let Some(bad) = full.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
                return Err(e.shape_error(format!("scale {bad} must be finite and > 0")));
            }
            let shape = (0..rank)
                .map(|a| (input[a] as f64 * full[a]).floor() as usize)
                .collect();
            (full, shape)
        }
        (None, Some(s)) => sized(e, &input, &axes, &s)?,
        _ => {
            return Err(e.shape_error(
                "Resize needs exactly one of `scales` and `sizes` (a non-empty constant)".into(),
            ))
        }
    };
    let coordinate_transform = e.attr_choice(
        "coordinate_transformation_mode",
        "half_pixel",
        &[
            ("half_pixel", CoordinateTransform::HalfPixel),
            (
                "half_pixel_symmetric",
                CoordinateTransform::HalfPixelSymmetric,
            ),
            ("pytorch_half_pixel", CoordinateTransform::PytorchHalfPixel),
            ("align_corners", CoordinateTransform::AlignCorners),
            ("asymmetric", CoordinateTransform::Asymmetric),
            (
                "tf_half_pixel_for_nn",
                CoordinateTransform::TfHalfPixelForNn,
            ),
            ("tf_crop_and_resize", CoordinateTransform::TfCropAndResize),
        ],
    )?;
    let mut full_roi = vec![[0.0, 1.0]; rank];
    if coordinate_transform == CoordinateTransform::TfCropAndResize {
        let Some(roi) = roi else {
            return Err(e.shape_error(
                "tf_crop_and_resize needs the `roi` input (a non-empty constant)".into(),
            ));
        };
        if roi.len() != 2 * n {
            return Err(e.shape_error(format!(
                "roi {roi:?} has {} entries; {n} axes need {}",
                roi.len(),
                2 * n
            )));
        }
        for (k, &a) in axes.iter().enumerate() {
            full_roi[a] = [roi[k], roi[n + k]];
        }
    }
    let nearest = e.attr_choice(
        "nearest_mode",
        "round_prefer_floor",
        &[
            ("round_prefer_floor", NearestMode::RoundPreferFloor),
            ("round_prefer_ceil", NearestMode::RoundPreferCeil),
            ("floor", NearestMode::Floor),
            ("ceil", NearestMode::Ceil),
        ],
    )?;
    let a = f64::from(e.attr_f32("cubic_coeff_a", -0.75)?);
    let mode = e.attr_choice(
        "mode",
        "nearest",
        &[
            ("nearest", ResizeMode::Nearest(nearest)),
            ("linear", ResizeMode::Linear),
            ("cubic", ResizeMode::Cubic(a)),
        ],
    )?;
    let antialias = e.attr_i64("antialias")?.unwrap_or(0) != 0;
    if antialias && matches!(mode, ResizeMode::Nearest(_)) {
        return Err(e.attribute_error(
            "antialias",
            "applies to linear and cubic interpolation only, the mode is nearest".into(),
        ));
    }
    let r = Resize {
        mode,
        coordinate_transform,
        scales,
        shape,
        roi: full_roi,
        exclude_outside: e.attr_i64("exclude_outside")?.unwrap_or(0) != 0,
        extrapolation_value: f64::from(e.attr_f32("extrapolation_value", 0.0)?),
        antialias,
    };
    r.check(&input).map_err(|m| e.shape_error(m))?;
    e.op(Op::Resize(r), &[x])
}

/// Scales and extents from `sizes` (one per entry of `axes`) and `keep_aspect_ratio_policy`.
fn sized(
    e: &NodeEmitter<'_>,
    input: &[usize],
    axes: &[usize],
    sizes: &[i64],
) -> Result<(Vec<f64>, Vec<usize>), OnnxError> {
    if sizes.len() != axes.len() {
        return Err(e.shape_error(format!(
            "sizes {sizes:?} has {} entries for {} axes",
            sizes.len(),
            axes.len()
        )));
    }
    let mut shape = input.to_vec();
    for (k, &a) in axes.iter().enumerate() {
        shape[a] = usize::try_from(sizes[k])
            .map_err(|_| e.shape_error(format!("sizes {sizes:?} has a negative extent")))?;
        if input[a] == 0 {
            return Err(e.shape_error(format!("axis {a} is empty and cannot be resized")));
        }
    }
    let mut scales: Vec<f64> = (0..input.len())
        .map(|a| shape[a] as f64 / input[a].max(1) as f64)
        .collect();
    #[derive(Clone, Copy, PartialEq)]
    enum Policy {
        Stretch,
        NotLarger,
        NotSmaller,
    }
    let policy = e.attr_choice(
        "keep_aspect_ratio_policy",
        "stretch",
        &[
            ("stretch", Policy::Stretch),
            ("not_larger", Policy::NotLarger),
            ("not_smaller", Policy::NotSmaller),
        ],
    )?;
    if policy != Policy::Stretch {
        let over = axes.iter().map(|&a| scales[a]);
        let scale = if policy == Policy::NotLarger {
            over.fold(f64::INFINITY, f64::min)
        } else {
            over.fold(f64::NEG_INFINITY, f64::max)
        };
        for &a in axes {
            scales[a] = scale;
            shape[a] = (scale * input[a] as f64 + 0.5).floor() as usize;
        }
    }
    if let Some(a) = axes.iter().find(|&&a| scales[a] <= 0.0) {
        return Err(e.shape_error(format!("axis {a} would be resized to nothing (scale 0)")));
    }
    Ok((scales, shape))
}
