//! The attribute of [`Op::GridSample`](crate::Op::GridSample): how the samples are
//! interpolated and what is read outside the input (ONNX `GridSample`, opsets 16 and 20 on;
//! PyTorch's `grid_sample`).

use serde::{Deserialize, Serialize};

/// The interpolation of [`GridSample`] (ONNX `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GridMode {
    /// The nearest sample, halves to even (ONNX `nearest`, PyTorch's rounding).
    Nearest,
    /// Linear along each spatial axis: bilinear in 2-D (ONNX `linear`, `bilinear` before
    /// opset 20).
    Linear,
    /// Keys' cubic convolution along each spatial axis with `a = -0.75`, over 4 samples per
    /// axis (ONNX `cubic`, `bicubic` before opset 20).
    Cubic,
}

/// What [`GridSample`] reads at a position outside the input (ONNX `padding_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GridPadding {
    /// Zero.
    Zeros,
    /// The nearest element on the border.
    Border,
    /// The position reflected at the borders until it falls inside.
    Reflection,
}

/// Sampling of `x` `[N, C, D1, .., Dr]` (`f32` or `f64`) at the positions `grid`
/// `[N, O1, .., Or, r]` (of `x`'s type) gives `[N, C, O1, .., Or]`: each grid vector holds
/// one position normalised to `[-1, 1]` per spatial axis, in reverse axis order (`x` for the
/// last axis first, as PyTorch writes it). A normalised `g` on an axis of extent `D` is the
/// element coordinate `(g + 1) / 2 · (D - 1)` with `align_corners` (`-1` and `1` are the
/// centres of the corner elements), else `((g + 1) · D - 1) / 2` (`-1` and `1` are the
/// corners' outer edges). Follows ONNX `GridSample` (opsets 16 and 20, its reference
/// implementation) and PyTorch's `grid_sampler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridSample {
    /// The interpolation.
    pub mode: GridMode,
    /// What is read outside `x`.
    pub padding: GridPadding,
    /// Whether `-1` and `1` are the centres (not the outer edges) of the corner elements.
    pub align_corners: bool,
}
