//! The `Resize` reference kernel: ONNX `Resize` as its reference implementation
//! (`onnx.reference.ops.op_resize`) computes it, axis by axis from the last, in `f64`, rounded
//! once to the element type.

use graphlift_ir::{CoordinateTransform, NearestMode, Resize, ResizeMode, Shape, TensorData};

use super::widen::{float_operand, narrow};

/// What one output position along one axis reads.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisTaps {
    /// The source lies outside the input (`TfCropAndResize`): the output is the
    /// extrapolation value.
    Extrapolate,
    /// `(input index, weight)` pairs; the weights sum to 1 (up to rounding).
    Taps(Vec<(usize, f64)>),
}

/// The taps of every output position of axis `axis`, whose input extent is `input` (at
/// least 1), following the ONNX reference: the source coordinate `x` of the position
/// ([`CoordinateTransform`]) is split as `base + ratio` with `ratio` in `(0, 1]` (an integral
/// `x` is the right end of the interval on its left); the mode's `n` coefficients of `ratio`
/// weigh the inputs `base - n/2 + 1 ..= base + n/2`, those beyond the input reading the edge
/// element (or, with `exclude_outside`, weighing 0 and the rest renormalised). `Nearest`
/// keeps only its one tap of weight 1.
///
/// # Errors
/// A message when `axis` or `input` do not fit the attribute.
pub fn axis_taps(r: &Resize, axis: usize, input: usize) -> Result<Vec<AxisTaps>, String> {
    let (Some(&s), Some(&out), Some(&[roi_start, roi_end])) =
        (r.scales.get(axis), r.shape.get(axis), r.roi.get(axis))
    else {
        return Err(format!("axis {axis} is beyond the attribute's rank"));
    };
    if input == 0 {
        return Err(format!("axis {axis} is empty"));
    }
    let in_f = input as f64;
    let len = s * in_f;
    (0..out)
        .map(|x| {
            let x = x as f64;
            let x_ori = match r.coordinate_transform {
                CoordinateTransform::HalfPixel => (x + 0.5) / s - 0.5,
                CoordinateTransform::HalfPixelSymmetric => {
                    let adjustment = out as f64 / len;
                    in_f / 2.0 * (1.0 - adjustment) + (x + 0.5) / s - 0.5
                }
                CoordinateTransform::PytorchHalfPixel if len == 1.0 => -0.5,
                CoordinateTransform::PytorchHalfPixel => (x + 0.5) / s - 0.5,
                CoordinateTransform::AlignCorners if len == 1.0 => 0.0,
                CoordinateTransform::AlignCorners => x * (in_f - 1.0) / (len - 1.0),
                CoordinateTransform::Asymmetric => x / s,
                CoordinateTransform::TfHalfPixelForNn => (x + 0.5) / s,
                CoordinateTransform::TfCropAndResize => {
                    let span = (roi_end - roi_start) * (in_f - 1.0);
                    let at = if len == 1.0 {
                        span / 2.0
                    } else {
                        x * span / (len - 1.0)
                    };
                    let x_ori = at + roi_start * (in_f - 1.0);
                    if x_ori < 0.0 || x_ori > in_f - 1.0 {
                        return Ok(AxisTaps::Extrapolate);
                    }
                    x_ori
                }
            };
            if !x_ori.is_finite() {
                return Err(format!(
                    "axis {axis}: output {x} maps to source coordinate {x_ori}"
                ));
            }
            let floor = x_ori.floor();
            let (base, ratio) = if x_ori == floor {
                (floor as i64 - 1, 1.0)
            } else {
                (floor as i64, x_ori - floor)
            };
            let mut coeffs = coefficients(r, ratio, s);
            let n = coeffs.len() as i64;
            let first = base - n / 2 + 1;
            let inside = |k: usize| (0..input as i64).contains(&(first + k as i64));
            if r.exclude_outside {
                for (k, c) in coeffs.iter_mut().enumerate() {
                    if !inside(k) {
                        *c = 0.0;
                    }
                }
                let sum: f64 = coeffs.iter().sum();
                if sum != 0.0 {
                    coeffs.iter_mut().for_each(|c| *c /= sum);
                }
            }
            let nearest = matches!(r.mode, ResizeMode::Nearest(_));
            let taps = coeffs
                .iter()
                .enumerate()
                .filter(|&(_, &c)| !(nearest && c == 0.0))
                .map(|(k, &c)| {
                    let i = (first + k as i64).clamp(0, input as i64 - 1);
                    (i as usize, c)
                })
                .collect();
            Ok(AxisTaps::Taps(taps))
        })
        .collect()
}

/// The mode's coefficients for `ratio` in `(0, 1]` at scale `s` (ONNX reference's
/// `_nearest_coeffs`, `_linear_coeffs[_antialias]`, `_cubic_coeffs[_antialias]`).
fn coefficients(r: &Resize, ratio: f64, s: f64) -> Vec<f64> {
    let bit = |b: bool| if b { 1.0 } else { 0.0 };
    match r.mode {
        ResizeMode::Nearest(_) if ratio == 1.0 => vec![0.0, 1.0],
        ResizeMode::Nearest(m) => {
            let up = match m {
                NearestMode::RoundPreferFloor => ratio > 0.5,
                NearestMode::RoundPreferCeil => ratio >= 0.5,
                NearestMode::Floor => false,
                NearestMode::Ceil => true,
            };
            vec![bit(!up), bit(up)]
        }
        ResizeMode::Linear if r.antialias => {
            let s = s.min(1.0);
            let start = (-1.0 / s).floor() as i64 + 1;
            let weights: Vec<f64> = (start..2 - start)
                .map(|i| (1.0 - ((i as f64 - ratio) * s).abs()).clamp(0.0, 1.0))
                .collect();
            normalised(weights)
        }
        ResizeMode::Linear => vec![1.0 - ratio, ratio],
        ResizeMode::Cubic(a) if r.antialias => {
            let s = s.min(1.0);
            let start = (-2.0 / s).floor() as i64 + 1;
            let weights: Vec<f64> = (start..2 - start)
                .map(|i| keys(s * (i as f64 - ratio), a))
                .collect();
            normalised(weights)
        }
        ResizeMode::Cubic(a) => [ratio + 1.0, ratio, 1.0 - ratio, 2.0 - ratio]
            .iter()
            .map(|&d| keys(d, a))
            .collect(),
    }
}

/// Keys' cubic convolution kernel with coefficient `a` at distance `x`.
fn keys(x: f64, a: f64) -> f64 {
    let x = x.abs();
    if x <= 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    } else {
        0.0
    }
}

/// Whether the [`axis_taps`] `taps` of an axis of `extent` inputs map it onto itself (every
/// output position reads its own input with weight 1): [`resize`] leaves such an axis as
/// it is, and so must a kernel that gives its results bit for bit.
pub fn is_identity_axis(taps: &[AxisTaps], extent: usize) -> bool {
    taps.len() == extent
        && taps
            .iter()
            .enumerate()
            .all(|(o, t)| matches!(t, AxisTaps::Taps(v) if v.as_slice() == [(o, 1.0)]))
}

fn normalised(mut w: Vec<f64>) -> Vec<f64> {
    let sum: f64 = w.iter().sum();
    w.iter_mut().for_each(|c| *c /= sum);
    w
}

/// `data` (shape `from`, `f32` or `f64`) resized as `r` says ([`graphlift_ir::Resize`]):
/// each axis in turn from the last, every output position the weighted sum of its
/// [`axis_taps`] (or the extrapolation value), computed in `f64` and rounded once.
///
/// # Errors
/// A message when the data is not a float tensor filling `from`, or the attribute does not
/// fit it.
pub fn resize(data: &TensorData, from: &Shape, r: &Resize) -> Result<TensorData, String> {
    r.check(from.dims())?;
    let mut x = float_operand(data, from, "x")?;
    let mut dims = from.dims().to_vec();
    for axis in (0..dims.len()).rev() {
        let taps = axis_taps(r, axis, dims[axis])?;
        if is_identity_axis(&taps, dims[axis]) {
            continue;
        }
        let outer: usize = dims[..axis].iter().product();
        let inner: usize = dims[axis + 1..].iter().product();
        let d = dims[axis];
        let mut y = Vec::with_capacity(outer * taps.len() * inner);
        for o in 0..outer {
            for t in &taps {
                match t {
                    AxisTaps::Extrapolate => {
                        y.extend(std::iter::repeat_n(r.extrapolation_value, inner));
                    }
                    AxisTaps::Taps(taps) => y.extend((0..inner).map(|i| {
                        taps.iter()
                            .map(|&(k, w)| w * x[(o * d + k) * inner + i])
                            .sum::<f64>()
                    })),
                }
            }
        }
        x = y;
        dims[axis] = taps.len();
    }
    Ok(narrow(data.element_type(), x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(mode: ResizeMode, t: CoordinateTransform, scales: &[f64], shape: &[usize]) -> Resize {
        Resize {
            mode,
            coordinate_transform: t,
            scales: scales.to_vec(),
            shape: shape.to_vec(),
            roi: vec![[0.0, 1.0]; scales.len()],
            exclude_outside: false,
            extrapolation_value: 0.0,
            antialias: false,
        }
    }

    fn run(r: &Resize, x: &[f32], from: &[usize]) -> Vec<f32> {
        let out = resize(&TensorData::F32(x.to_vec()), &Shape::new(from), r).unwrap();
        out.into_vec::<f32>().unwrap()
    }

    #[test]
    fn nearest_rounds_as_each_mode_says() {
        // [0, 10, 20, 30] to 3 elements, half_pixel: sources 0.1667, 1.5, 2.8333.
        let x = [0., 10., 20., 30.];
        let t = CoordinateTransform::HalfPixel;
        let near = |m| attr(ResizeMode::Nearest(m), t, &[0.75], &[3]);
        assert_eq!(
            run(&near(NearestMode::RoundPreferFloor), &x, &[4]),
            [0., 10., 30.]
        );
        assert_eq!(
            run(&near(NearestMode::RoundPreferCeil), &x, &[4]),
            [0., 20., 30.]
        );
        assert_eq!(run(&near(NearestMode::Floor), &x, &[4]), [0., 10., 20.]);
        assert_eq!(run(&near(NearestMode::Ceil), &x, &[4]), [10., 20., 30.]);
        // Upsampling by 2, asymmetric, floor: every element twice.
        let up = attr(
            ResizeMode::Nearest(NearestMode::Floor),
            CoordinateTransform::Asymmetric,
            &[2.0],
            &[4],
        );
        assert_eq!(run(&up, &[1., 2.], &[2]), [1., 1., 2., 2.]);
    }

    #[test]
    fn linear_is_bilinear_in_two_dimensions() {
        // [[0, 1], [2, 3]] to 4x4, half_pixel: sources -0.25, 0.25, 0.75, 1.25 per axis.
        let r = attr(
            ResizeMode::Linear,
            CoordinateTransform::HalfPixel,
            &[2.0, 2.0],
            &[4, 4],
        );
        let y = run(&r, &[0., 1., 2., 3.], &[2, 2]);
        let row = |v: f32| [v, v + 0.25, v + 0.75, v + 1.0];
        let want: Vec<f32> = [0.0, 0.5, 1.5, 2.0].iter().flat_map(|&v| row(v)).collect();
        assert_eq!(y, want);
        // align_corners: the corners stay, the middle is the mean.
        let a = attr(
            ResizeMode::Linear,
            CoordinateTransform::AlignCorners,
            &[1.5],
            &[3],
        );
        assert_eq!(run(&a, &[2., 4.], &[2]), [2., 3., 4.]);
    }

    #[test]
    fn cubic_weights_and_exclude_outside() {
        // Keys' kernel with a = -0.75 at ratio 0.5: [-0.09375, 0.59375, 0.59375, -0.09375].
        let r = attr(
            ResizeMode::Cubic(-0.75),
            CoordinateTransform::Asymmetric,
            &[2.0],
            &[8],
        );
        let taps = axis_taps(&r, 0, 4).unwrap();
        let AxisTaps::Taps(t) = &taps[1] else {
            panic!("{taps:?}")
        };
        let w: Vec<f64> = t.iter().map(|p| p.1).collect();
        assert_eq!(w, [-0.09375, 0.59375, 0.59375, -0.09375]);
        // Source 0.5: taps at -1 (the edge, index 0), 0, 1, 2.
        assert_eq!(t.iter().map(|p| p.0).collect::<Vec<_>>(), [0, 0, 1, 2]);
        let mut ex = r.clone();
        ex.exclude_outside = true;
        let AxisTaps::Taps(t) = &axis_taps(&ex, 0, 4).unwrap()[1] else {
            panic!()
        };
        assert_eq!(t[0].1, 0.0);
        assert!((t.iter().map(|p| p.1).sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn crop_and_resize_extrapolates_outside_the_roi() {
        let mut r = attr(
            ResizeMode::Linear,
            CoordinateTransform::TfCropAndResize,
            &[1.0],
            &[3],
        );
        r.roi = vec![[0.5, 1.5]];
        r.extrapolation_value = -1.0;
        // Sources 1.5 + x · (1.5 - 0.5) · 3 / (4 - 1) = 1.5, 2.5, 3.5 of [0, 10, 20, 30]:
        // 15, 25, outside.
        assert_eq!(run(&r, &[0., 10., 20., 30.], &[4]), [15., 25., -1.]);
    }

    #[test]
    fn antialias_widens_the_linear_filter() {
        // Downsampling [0, 1, 2, 3] by 2 with antialias: a triangle of half-width 2.
        let mut r = attr(
            ResizeMode::Linear,
            CoordinateTransform::HalfPixel,
            &[0.5],
            &[2],
        );
        r.antialias = true;
        // Source 0.5: offsets -1..=2 at distances 1.5, 0.5, 0.5, 1.5 -> 0.25, 0.75, 0.75, 0.25.
        let y = run(&r, &[0., 1., 2., 3.], &[4]);
        let first = (0.25 * 0. + 0.75 * 0. + 0.75 * 1. + 0.25 * 2.) / 2.0;
        assert_eq!(y[0], first as f32);
    }

    #[test]
    fn bad_operands_are_errors() {
        let r = attr(
            ResizeMode::Linear,
            CoordinateTransform::HalfPixel,
            &[2.0],
            &[4],
        );
        let ints = TensorData::I32(vec![1, 2]);
        assert!(resize(&ints, &Shape::new([2]), &r).is_err());
        assert!(resize(&TensorData::F32(vec![1.0]), &Shape::new([2]), &r).is_err());
        assert!(
            resize(&TensorData::F32(vec![1.0; 4]), &Shape::new([2, 2]), &r)
                .unwrap_err()
                .contains("rank")
        );
    }
}
