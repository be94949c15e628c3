//! `GridSample` ([`graphlift_ir::GridSample`]): `x` sampled at normalised positions, with
//! nearest, N-linear or N-cubic interpolation and zero, border or reflection padding. Each
//! output element is computed in `f64` and rounded once to the element type.

use graphlift_ir::{GridMode, GridPadding, GridSample, Shape, TensorData};

/// `x` (shape `xs`, `[N, C, D1..Dr]`) sampled at `grid` (shape `gs`, `[N, O1..Or, r]`),
/// `f32` or `f64` both, giving `[N, C, O1..Or]` as [`GridSample`] defines it. Per spatial
/// axis of extent `D`, a position `p` (after `nearest`'s rounding to even, and the
/// padding's clamp or reflection of a `p` outside the sampled range: `[0, D - 1]` with
/// `align_corners`, else `[-0.5, D - 0.5]`) reads the samples `floor(p)` and `floor(p) + 1`
/// (linear), `floor(p) - 1 ..= floor(p) + 2` (cubic, Keys' `a = -0.75`) or `p` (nearest);
/// a sample index outside `[0, D)` reads 0 (`zeros`), the nearest border element
/// (`border`), or the element at its reflection (`reflection`).
///
/// # Errors
/// A message when the shapes do not fit, the types differ or are not `f32`/`f64`, or the
/// data do not fill the shapes.
pub fn grid_sample(
    (x, xs): (&TensorData, &Shape),
    (grid, gs): (&TensorData, &Shape),
    g: &GridSample,
) -> Result<TensorData, String> {
    let (xd, gd) = (xs.dims(), gs.dims());
    let r = xd.len().saturating_sub(2);
    if r == 0 || gd.len() != r + 2 || gd[0] != xd[0] || gd[r + 1] != r {
        return Err(format!("x {xs} and grid {gs} do not fit GridSample"));
    }
    if x.len() != xs.element_count().map_err(|e| e.to_string())?
        || grid.len() != gs.element_count().map_err(|e| e.to_string())?
    {
        return Err(format!("data do not fill x {xs} and grid {gs}"));
    }
    let sampler = Sampler::new(g, &xd[2..]);
    let (n, c) = (xd[0], xd[1]);
    let plane: usize = xd[2..].iter().product();
    let positions: usize = gd[1..=r].iter().product();
    let sample = |read: &dyn Fn(usize) -> f64,
                  write: &mut dyn FnMut(usize, f64),
                  at: &dyn Fn(usize) -> f64| {
        let mut taps = Vec::new();
        for b in 0..n {
            for o in 0..positions {
                let point: Vec<f64> = (0..r)
                    .map(|a| at((b * positions + o) * r + r - 1 - a))
                    .collect();
                sampler.taps(&point, &mut taps);
                for ch in 0..c {
                    let base = (b * c + ch) * plane;
                    let v = taps.iter().map(|&(i, w)| w * read(base + i)).sum();
                    write((b * c + ch) * positions + o, v);
                }
            }
        }
    };
    match (x, grid) {
        (TensorData::F32(x), TensorData::F32(p)) => {
            let mut y = vec![0f32; n * c * positions];
            sample(&|i| f64::from(x[i]), &mut |i, v| y[i] = v as f32, &|i| {
                f64::from(p[i])
            });
            Ok(TensorData::F32(y))
        }
        (TensorData::F64(x), TensorData::F64(p)) => {
            let mut y = vec![0f64; n * c * positions];
            sample(&|i| x[i], &mut |i, v| y[i] = v, &|i| p[i]);
            Ok(TensorData::F64(y))
        }
        _ => Err(format!(
            "samples f32 or f64 at positions of the same type, got {} at {}",
            x.element_type(),
            grid.element_type()
        )),
    }
}

/// The sampling of one spatial shape: per position, the flat indices and weights it reads.
struct Sampler {
    g: GridSample,
    dims: Vec<usize>,
    /// Row-major strides of the spatial axes.
    strides: Vec<usize>,
}

impl Sampler {
    fn new(g: &GridSample, dims: &[usize]) -> Sampler {
        let mut strides = vec![1; dims.len()];
        for a in (0..dims.len().saturating_sub(1)).rev() {
            strides[a] = strides[a + 1] * dims[a + 1];
        }
        Sampler {
            g: *g,
            dims: dims.to_vec(),
            strides,
        }
    }

    /// The sampled range of an axis of extent `d` (outside it, padding applies).
    fn range(&self, d: usize) -> (f64, f64) {
        if self.g.align_corners {
            (0.0, d as f64 - 1.0)
        } else {
            (-0.5, d as f64 - 0.5)
        }
    }

    /// Into `taps`, the `(flat index, weight)` pairs of the sample at the normalised
    /// `point` (one coordinate per spatial axis, in axis order); a tap that reads padding
    /// zeros is left out.
    fn taps(&self, point: &[f64], taps: &mut Vec<(usize, f64)>) {
        taps.clear();
        taps.push((0, 1.0));
        for (a, &normalised) in point.iter().enumerate() {
            let d = self.dims[a];
            let (lo, hi) = self.range(d);
            let mut p = if self.g.align_corners {
                (normalised + 1.0) / 2.0 * (d as f64 - 1.0)
            } else {
                ((normalised + 1.0) * d as f64 - 1.0) / 2.0
            };
            if self.g.mode == GridMode::Nearest {
                p = p.round_ties_even();
            }
            if p < lo || p > hi {
                match self.g.padding {
                    GridPadding::Zeros => {}
                    GridPadding::Border => p = p.clamp(0.0, d as f64 - 1.0),
                    GridPadding::Reflection => p = reflect(p, lo, hi),
                }
            }
            let axis: Vec<(i64, f64)> = match self.g.mode {
                // NaN positions read index 0 with weight NaN: the result is NaN.
                GridMode::Nearest => vec![(p as i64, if p.is_nan() { p } else { 1.0 })],
                GridMode::Linear => {
                    let f = p.floor();
                    let t = p - f;
                    vec![(f as i64, 1.0 - t), ((f as i64).saturating_add(1), t)]
                }
                GridMode::Cubic => {
                    let f = p.floor();
                    let w = keys(p - f);
                    let first = (f as i64).saturating_sub(1);
                    (0..4)
                        .map(|k| (first.saturating_add(k), w[k as usize]))
                        .collect()
                }
            };
            let before = std::mem::take(taps);
            for &(index, weight) in &before {
                for &(i, w) in &axis {
                    if let Some(i) = self.sample_index(i, d, (lo, hi)) {
                        taps.push((index + i * self.strides[a], weight * w));
                    }
                }
            }
        }
    }

    /// The element a sample index `i` of an axis of extent `d` reads, `None` for a zero of
    /// the padding.
    fn sample_index(&self, i: i64, d: usize, (lo, hi): (f64, f64)) -> Option<usize> {
        let last = d as i64 - 1;
        match self.g.padding {
            GridPadding::Zeros => (0..=last).contains(&i).then_some(i as usize),
            GridPadding::Border => Some(i.clamp(0, last.max(0)) as usize),
            GridPadding::Reflection => {
                // Truncated toward zero, as the ONNX reference and onnxruntime do.
                let at = reflect(i as f64, lo, hi) as i64;
                Some(at.clamp(0, last.max(0)) as usize)
            }
        }
    }
}

/// `x` reflected at `lo` and `hi` until it lies between them (an empty range gives `lo`).
fn reflect(x: f64, lo: f64, hi: f64) -> f64 {
    let range = hi - lo;
    if range <= 0.0 {
        return lo;
    }
    let (distance, from_lo) = if x < lo {
        (lo - x, true)
    } else if x > hi {
        (x - hi, false)
    } else {
        return x;
    };
    let flips = (distance / range).floor();
    let rest = distance - flips * range;
    // An even number of flips leaves the position measured from the border it crossed.
    if (flips % 2.0 == 0.0) == from_lo {
        lo + rest
    } else {
        hi - rest
    }
}

/// Keys' cubic convolution weights of the samples at `-1, 0, 1, 2` for a fraction `t`
/// in `[0, 1)` (`a = -0.75`, PyTorch's and onnxruntime's).
fn keys(t: f64) -> [f64; 4] {
    const A: f64 = -0.75;
    let near = |x: f64| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f64| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gs(mode: GridMode, padding: GridPadding, align_corners: bool) -> GridSample {
        GridSample {
            mode,
            padding,
            align_corners,
        }
    }

    fn run(x: &[f32], xs: &[usize], grid: &[f32], gsh: &[usize], g: GridSample) -> Vec<f32> {
        let y = grid_sample(
            (&TensorData::F32(x.to_vec()), &Shape::new(xs)),
            (&TensorData::F32(grid.to_vec()), &Shape::new(gsh)),
            &g,
        )
        .unwrap();
        let TensorData::F32(y) = y else {
            panic!("not f32")
        };
        y
    }

    /// A 2 x 3 image `[[0, 1, 2], [3, 4, 5]]`.
    const X: [f32; 6] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];

    #[test]
    fn corners_and_centre_with_and_without_align_corners() {
        use GridMode::*;
        use GridPadding::*;
        // (x, y) pairs: top-left corner, bottom-right corner, centre.
        let grid = [-1.0, -1.0, 1.0, 1.0, 0.0, 0.0];
        let aligned = run(
            &X,
            &[1, 1, 2, 3],
            &grid,
            &[1, 3, 1, 2],
            gs(Linear, Zeros, true),
        );
        assert_eq!(aligned, [0.0, 5.0, 2.5]);
        // Not aligned: -1 is the outer edge, half a pixel beyond the corner element's
        // centre, so zero padding weighs in: 0.25 of element (0, 0).
        let edges = run(
            &X,
            &[1, 1, 2, 3],
            &grid,
            &[1, 3, 1, 2],
            gs(Linear, Zeros, false),
        );
        assert_eq!(edges, [0.0, 1.25, 2.5]);
        let border = run(
            &X,
            &[1, 1, 2, 3],
            &grid,
            &[1, 3, 1, 2],
            gs(Linear, Border, false),
        );
        assert_eq!(border, [0.0, 5.0, 2.5]);
        // Nearest: the centre (x = 1, y = 0.5) rounds y to even (0): element 1.
        let nearest = run(
            &X,
            &[1, 1, 2, 3],
            &grid,
            &[1, 3, 1, 2],
            gs(Nearest, Zeros, true),
        );
        assert_eq!(nearest, [0.0, 5.0, 1.0]);
    }

    #[test]
    fn reflection_folds_positions_back_inside() {
        assert!((reflect(-0.7, -0.5, 2.5) + 0.3).abs() < 1e-12);
        assert!((reflect(3.2, -0.5, 2.5) - 1.8).abs() < 1e-12);
        // 7.5 past the top of [0, 3]: two whole flips, then 1.5 down from the top.
        assert_eq!(reflect(10.5, 0.0, 3.0), 1.5);
        assert_eq!(reflect(0.4, 0.0, 0.0), 0.0);
        // A 1-D signal [0, 10, 20] sampled at x = 2.5 (aligned: coordinate 3.5, reflected
        // at 2 to 0.5): halfway between 0 and 10.
        let g = gs(GridMode::Linear, GridPadding::Reflection, true);
        let y = run(&[0.0, 10.0, 20.0], &[1, 1, 3], &[2.5], &[1, 1, 1], g);
        assert_eq!(y, [5.0]);
    }

    #[test]
    fn cubic_weighs_four_samples_and_channels_share_positions() {
        let ramp: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let twice: Vec<f32> = ramp.iter().map(|v| v * 2.0).collect();
        let x: Vec<f32> = ramp.iter().chain(&twice).copied().collect();
        let g = gs(GridMode::Cubic, GridPadding::Border, true);
        // x = 3.3 of [0, 7] is normalised 3.3 / 3.5 - 1.
        let p = [3.3f32 / 3.5 - 1.0];
        let y = run(&x, &[1, 2, 8], &p, &[1, 1, 1], g);
        // Samples 2 to 5 (values 2 to 5), weighed by Keys' kernel at 0.3; the weights sum
        // to 1, and a = -0.75 overshoots a ramp slightly (a = -0.5 would reproduce it).
        let w = keys(0.3);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let want: f64 = w.iter().zip(2..).map(|(w, v)| w * f64::from(v)).sum();
        assert!((f64::from(y[0]) - want).abs() < 1e-5, "{y:?} {want}");
        assert!((f64::from(y[1]) - 2.0 * want).abs() < 1e-5, "{y:?} {want}");
    }

    #[test]
    fn three_spatial_axes_and_bad_shapes() {
        // A 2 x 2 x 2 volume, the position at its centre with aligned corners: the mean.
        let x: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let g = gs(GridMode::Linear, GridPadding::Zeros, true);
        let y = run(&x, &[1, 1, 2, 2, 2], &[0.0, 0.0, 0.0], &[1, 1, 1, 1, 3], g);
        assert_eq!(y, [3.5]);
        // Reverse order: (x, y, z) = (1, -1, -1) is element [0, 0, 1].
        let y = run(
            &x,
            &[1, 1, 2, 2, 2],
            &[1.0, -1.0, -1.0],
            &[1, 1, 1, 1, 3],
            g,
        );
        assert_eq!(y, [1.0]);
        let bad = grid_sample(
            (&TensorData::F32(x.clone()), &Shape::new([1, 1, 2, 2, 2])),
            (&TensorData::F32(vec![0.0; 2]), &Shape::new([1, 1, 2])),
            &g,
        );
        assert!(bad.is_err());
        let mixed = grid_sample(
            (&TensorData::F32(x), &Shape::new([1, 1, 8])),
            (&TensorData::F64(vec![0.0]), &Shape::new([1, 1, 1])),
            &g,
        );
        assert!(mixed.is_err());
    }
}
