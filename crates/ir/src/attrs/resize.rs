//! The attribute of [`Op::Resize`](crate::Op::Resize): ONNX `Resize` (opsets 11 to 19) with
//! its scales, output extents and region of interest resolved at import.

use serde::{Deserialize, Serialize};

/// How `Nearest` interpolation rounds a fractional source coordinate (ONNX `nearest_mode`).
/// An integral coordinate is taken as it is in every mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NearestMode {
    /// Halves go down (ONNX's default).
    RoundPreferFloor,
    /// Halves go up.
    RoundPreferCeil,
    /// Toward −∞.
    Floor,
    /// Toward +∞.
    Ceil,
}

/// The interpolation of [`Resize`] (ONNX `mode`, with `cubic_coeff_a`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResizeMode {
    /// The nearest source element, rounded as the mode says.
    Nearest(NearestMode),
    /// Linear along each resized axis (bilinear in 2-D, trilinear in 3-D).
    Linear,
    /// Keys' cubic convolution along each resized axis, with coefficient `a` (ONNX
    /// `cubic_coeff_a`, default −0.75).
    Cubic(f64),
}

/// How an output coordinate maps to a source coordinate along one axis (ONNX
/// `coordinate_transformation_mode`). With `x` the output index, `s` the axis's scale, `in`
/// the input extent, `len = s · in` and `out` the output extent:
///
/// | mode | source coordinate |
/// |---|---|
/// | `HalfPixel` | `(x + 0.5) / s − 0.5` |
/// | `HalfPixelSymmetric` | `in / 2 · (1 − out / len) + (x + 0.5) / s − 0.5` |
/// | `PytorchHalfPixel` | `len == 1 ? −0.5 : (x + 0.5) / s − 0.5` |
/// | `AlignCorners` | `len == 1 ? 0 : x · (in − 1) / (len − 1)` |
/// | `Asymmetric` | `x / s` |
/// | `TfHalfPixelForNn` | `(x + 0.5) / s` (opsets 11 and 12) |
/// | `TfCropAndResize` | `roi_start · (in − 1) + (len == 1 ? (roi_end − roi_start) · (in − 1) / 2 : x · (roi_end − roi_start) · (in − 1) / (len − 1))`; outside `[0, in − 1]` the output is the extrapolation value |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoordinateTransform {
    /// ONNX's default.
    HalfPixel,
    /// Centres the output on the input when the output extent was rounded (opset 19).
    HalfPixelSymmetric,
    /// PyTorch's `align_corners=False`.
    PytorchHalfPixel,
    /// Corner elements map onto corner elements.
    AlignCorners,
    /// `x / scale`.
    Asymmetric,
    /// TensorFlow's half pixel for nearest neighbours (opsets 11, 12).
    TfHalfPixelForNn,
    /// TensorFlow's `CropAndResize` over the region of interest [`Resize::roi`].
    TfCropAndResize,
}

/// ONNX `Resize` of a float tensor, every axis at once: output element `y[i..]` interpolates
/// the input around the source coordinates of `i` ([`CoordinateTransform`]), axis by axis, as
/// the ONNX reference implementation (`onnx.reference.ops.op_resize`) does. Neighbours beyond
/// the input take the edge element (or weigh nothing with `exclude_outside`).
///
/// All per-axis vectors have one entry per input axis; an axis that is not resized has scale
/// 1 and its input extent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resize {
    /// The interpolation.
    pub mode: ResizeMode,
    /// Output to source coordinates.
    pub coordinate_transform: CoordinateTransform,
    /// The scale of each axis (output over input length, finite and > 0): given by the model,
    /// or the ratio of the output and input extents when the model gave sizes.
    pub scales: Vec<f64>,
    /// The output extents.
    pub shape: Vec<usize>,
    /// The region of interest of `TfCropAndResize`, `[start, end]` per axis in units of the
    /// input extent (`[0, 1]` is the whole axis); ignored by the other transforms.
    pub roi: Vec<[f64; 2]>,
    /// Neighbours outside the input weigh 0 and the others are renormalised (ONNX
    /// `exclude_outside`).
    pub exclude_outside: bool,
    /// The value of `TfCropAndResize` outputs whose source lies outside the input.
    pub extrapolation_value: f64,
    /// When downsampling with `Linear` or `Cubic`, widen the filter by `1 / scale` (ONNX
    /// `antialias`, opset 18).
    pub antialias: bool,
}

impl Resize {
    /// Checks the attribute against an input of extents `input`: one entry per axis in each
    /// vector, finite positive scales, a finite ROI, a finite cubic
    /// coefficient, no antialias with `Nearest`. Returns what is wrong.
    pub fn check(&self, input: &[usize]) -> Result<(), String> {
        let n = input.len();
        for (what, len) in [
            ("scales", self.scales.len()),
            ("shape", self.shape.len()),
            ("roi", self.roi.len()),
        ] {
            if len != n {
                return Err(format!("{what} has {len} entries for rank {n}"));
            }
        }
        if let Some(s) = self.scales.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(format!("scale {s} must be finite and > 0"));
        }
        if self.roi.iter().flatten().any(|r| !r.is_finite()) {
            return Err(format!("roi {:?} must be finite", self.roi));
        }
        if let ResizeMode::Cubic(a) = self.mode {
            if !a.is_finite() {
                return Err(format!("cubic coefficient {a} must be finite"));
            }
        }
        if self.antialias && matches!(self.mode, ResizeMode::Nearest(_)) {
            return Err("antialias needs linear or cubic interpolation".into());
        }
        if let Some(a) = (0..n).find(|&a| input[a] == 0 && self.shape[a] != 0) {
            return Err(format!(
                "axis {a} is empty and cannot be resized to {}",
                self.shape[a]
            ));
        }
        Ok(())
    }
}
