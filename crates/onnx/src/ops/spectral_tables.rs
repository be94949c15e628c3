//! The constant tables of audio front ends (opset 17): `HannWindow`, `HammingWindow`,
//! `BlackmanWindow` and `MelWeightMatrix`, computed at import in `f64` as ONNX's reference
//! implementation defines them, then converted to the requested element type.

use std::f64::consts::PI;

use graphlift_ir::{ElementType, Output, Shape, TensorData};

use super::spectral::constant_count;
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;
use crate::tensor::element_type;

/// The window functions (opset 17): `a0 - a1 cos(2πn/N) + a2 cos(4πn/N)`.
#[derive(Debug, Clone, Copy)]
pub(super) enum Window {
    /// `a0 = a1 = 0.5` (`HannWindow`).
    Hann,
    /// `a0 = 25/46`, `a1 = 21/46` (`HammingWindow`).
    Hamming,
    /// `a0 = 0.42`, `a1 = 0.5`, `a2 = 0.08` (`BlackmanWindow`).
    Blackman,
}

/// The element type an `output_datatype` attribute names (default FLOAT).
fn output_datatype(e: &NodeEmitter<'_>) -> Result<ElementType, OnnxError> {
    let Some(code) = e.attr_i64("output_datatype")? else {
        return Ok(ElementType::F32);
    };
    let t = i32::try_from(code)
        .map_err(|_| e.attribute_error("output_datatype", format!("{code} is no data type")))
        .and_then(|c| element_type(c, &e.at()))?;
    if !t.is_numeric() || t.is_storage_only() {
        return Err(e.attribute_error(
            "output_datatype",
            format!("{t} is not a numeric type graphlift computes in"),
        ));
    }
    Ok(t)
}

/// `HannWindow`, `HammingWindow`, `BlackmanWindow` (opset 17): `size` (a constant) values
/// of the window at `n = 0..size` with `N = size` (`periodic`, the default) or `size - 1`
/// (symmetric; a symmetric window of one value divides 0 by 0, as the spec's function body
/// does), of `output_datatype` (default FLOAT).
///
/// # Errors
/// Named errors for a `size` that is not a constant count, or an `output_datatype` that is
/// not numeric.
pub(super) fn window(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    kind: Window,
) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let size = constant_count(e, e.input(ins, 0)?, "input 0 (`size`)")?;
    let periodic = e.attr_i64("periodic")?.unwrap_or(1) != 0;
    let t = output_datatype(e)?;
    let big_n = if periodic {
        size as f64
    } else {
        size as f64 - 1.0
    };
    let (a0, a1, a2) = match kind {
        Window::Hann => (0.5, 0.5, 0.0),
        Window::Hamming => (25.0 / 46.0, 21.0 / 46.0, 0.0),
        Window::Blackman => (0.42, 0.5, 0.08),
    };
    let values: Vec<f64> = (0..size)
        .map(|i| {
            let x = 2.0 * PI * i as f64 / big_n;
            a0 - a1 * x.cos() + a2 * (2.0 * x).cos()
        })
        .collect();
    e.constant(TensorData::from_f64(t, &values), Shape::new([size]))
}

/// `MelWeightMatrix` (opset 17): the `[dft_length / 2 + 1, num_mel_bins]` matrix that maps a
/// one-sided spectrum's bins to triangular mel bands between `lower_edge_hertz` and
/// `upper_edge_hertz` at `sample_rate` (all constant scalars), of `output_datatype`
/// (default FLOAT): ONNX's reference construction (band edges at mel-spaced frequencies,
/// each mapped to the spectrum bin `floor((dft_length + 1) · f / sample_rate)`).
///
/// # Errors
/// Named errors for operands that are not constant scalars, a zero sample rate, or band
/// edges beyond the spectrum's last bin.
pub(super) fn mel_weight_matrix(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 5, 5)?;
    let mels = constant_count(e, e.input(ins, 0)?, "input 0 (`num_mel_bins`)")?;
    let dft_length = constant_count(e, e.input(ins, 1)?, "input 1 (`dft_length`)")?;
    let rate = constant_count(e, e.input(ins, 2)?, "input 2 (`sample_rate`)")?;
    let hertz = |e: &NodeEmitter<'_>, i: usize, what: &str| -> Result<f64, OnnxError> {
        match e.constant_floats(e.input(ins, i)?, what)?[..] {
            [v] => Ok(v),
            ref other => Err(e.shape_error(format!("{what} must be one value, got {other:?}"))),
        }
    };
    let low = hertz(e, 3, "input 3 (`lower_edge_hertz`)")?;
    let high = hertz(e, 4, "input 4 (`upper_edge_hertz`)")?;
    let t = output_datatype(e)?;
    if rate == 0 {
        return Err(e.shape_error("sample_rate is 0".into()));
    }
    let spectrum = dft_length / 2 + 1;
    let mel = |f: f64| 2595.0 * (1.0 + f / 700.0).log10();
    let (low_mel, high_mel) = (mel(low), mel(high));
    let step = (high_mel - low_mel) / (mels + 2) as f64;
    let edges: Vec<i64> = (0..mels + 2)
        .map(|i| {
            let f = 700.0 * (10f64.powf((i as f64 * step + low_mel) / 2595.0) - 1.0);
            ((dft_length + 1) as f64 * f / rate as f64).floor() as i64
        })
        .collect();
    if edges.iter().any(|&b| b < 0 || b as usize >= spectrum) {
        return Err(e.shape_error(format!(
            "band edges {edges:?} fall outside the {spectrum} bins of the spectrum"
        )));
    }
    let mut w = vec![0.0; spectrum * mels];
    for band in 0..mels {
        let (lo, centre, hi) = (edges[band], edges[band + 1], edges[band + 2]);
        if centre == lo {
            w[centre as usize * mels + band] = 1.0;
        } else {
            for j in lo..=centre {
                w[j as usize * mels + band] = (j - lo) as f64 / (centre - lo) as f64;
            }
        }
        if hi > centre {
            for j in centre..hi {
                w[j as usize * mels + band] = (hi - j) as f64 / (hi - centre) as f64;
            }
        }
    }
    e.constant(TensorData::from_f64(t, &w), Shape::new([spectrum, mels]))
}
