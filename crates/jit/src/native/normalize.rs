//! Softmax and layer normalisation over the last axis, row by row.
//!
//! - Layer normalisation, and softmax on `f64`, follow the reference's arithmetic (`f64`,
//!   same order, one rounding at the end) without its whole-tensor `f64` copies and index
//!   arithmetic, so results are bit-identical to it.
//! - Softmax on `f32` computes in `f32` as ONNX runtimes do: the row maximum, `e = exp(x −
//!   max)` with the native [`super::exp`] (≤ 1 ulp), the sum of `e` in `f64`, then `e / sum`.
//!   Each result is within a relative `2^-21 · (1 + |x − max|)` of the reference's
//!   (the rounding of `x − max` in `f32` is the `|x − max|` term); special values give the
//!   reference's: a NaN in a row, or `+inf` in it, makes the row NaN, `-inf` entries give 0.
//!   Rows run in parallel on the backend's pool when the tensor is large enough.

use graphlift_ir::{LayerNorm, Shape, TensorData};
use rayon::prelude::*;

use super::exp::exp;
use crate::parallel::Parallel;

/// Elements of a softmax below which it runs on the calling thread.
const PARALLEL_SOFTMAX_ELEMENTS: usize = 1 << 15;

/// An `f32` or `f64` element, widened and narrowed as the reference does.
trait Float: Copy {
    fn wide(self) -> f64;
    fn narrow(x: f64) -> Self;
}

impl Float for f32 {
    fn wide(self) -> f64 {
        f64::from(self)
    }
    fn narrow(x: f64) -> f32 {
        x as f32
    }
}

impl Float for f64 {
    fn wide(self) -> f64 {
        self
    }
    fn narrow(x: f64) -> f64 {
        x
    }
}

/// The reference's `f64` softmax of `f64` rows.
fn softmax_rows_f64(x: &[f64], len: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    let mut e = vec![0f64; len];
    for row in x.chunks(len) {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut sum = 0.0;
        for (e, v) in e.iter_mut().zip(row) {
            *e = (v - max).exp();
            sum += *e;
        }
        out.extend(e.iter().map(|&v| v / sum));
    }
    out
}

/// Partial results kept side by side, so that the loops below vectorize.
const W: usize = 8;

/// The largest element of `row`, NaNs skipped (`-inf` for an all-NaN row).
fn row_max(row: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; W];
    let chunks = row.chunks_exact(W);
    let rest = chunks.remainder();
    for c in chunks {
        for (m, &v) in m.iter_mut().zip(c) {
            *m = if v > *m { v } else { *m };
        }
    }
    m.iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |a, &v| if v > a { v } else { a })
}

/// The sum of `row` in `f64`.
fn row_sum(row: &[f32]) -> f64 {
    let mut s = [0f64; W];
    let chunks = row.chunks_exact(W);
    let rest = chunks.remainder();
    for c in chunks {
        for (s, &v) in s.iter_mut().zip(c) {
            *s += f64::from(v);
        }
    }
    s.iter().sum::<f64>() + rest.iter().map(|&v| f64::from(v)).sum::<f64>()
}

/// Softmax of the `f32` row `x` into `out` (same length).
fn softmax_row_f32(x: &[f32], out: &mut [f32]) {
    let max = row_max(x);
    for (o, &v) in out.iter_mut().zip(x) {
        *o = exp(v - max);
    }
    let sum = row_sum(out) as f32;
    for o in out.iter_mut() {
        *o /= sum;
    }
}

/// Softmax of `f32` rows of `len` elements, rows in parallel on `parallel`'s pool when large.
fn softmax_rows_f32(x: &[f32], len: usize, parallel: &Parallel) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    let rows = x.len() / len;
    match parallel
        .pool()
        .filter(|_| x.len() >= PARALLEL_SOFTMAX_ELEMENTS && rows > 1)
    {
        Some(pool) => {
            let per_task = rows.div_ceil(pool.current_num_threads().max(1)) * len;
            pool.install(|| {
                out.par_chunks_mut(per_task)
                    .zip(x.par_chunks(per_task))
                    .for_each(|(o, x)| {
                        o.chunks_mut(len)
                            .zip(x.chunks(len))
                            .for_each(|(o, x)| softmax_row_f32(x, o))
                    })
            });
        }
        None => out
            .chunks_mut(len)
            .zip(x.chunks(len))
            .for_each(|(o, x)| softmax_row_f32(x, o)),
    }
    out
}

fn layer_norm_rows<T: Float>(x: &[T], g: &[T], b: &[T], epsilon: f64) -> Vec<T> {
    let n = g.len();
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let mean = row.iter().map(|v| v.wide()).sum::<f64>() / n as f64;
        let var = row
            .iter()
            .map(|v| (v.wide() - mean) * (v.wide() - mean))
            .sum::<f64>()
            / n as f64;
        let inv = 1.0 / (var + epsilon).sqrt();
        out.extend(
            row.iter()
                .zip(g.iter().zip(b))
                .map(|(v, (g, b))| T::narrow((v.wide() - mean) * inv * g.wide() + b.wide())),
        );
    }
    out
}

/// Softmax along the last axis of `x` (shape `from`), or `None` for another axis or a
/// non-float tensor (the caller runs the reference). See the module documentation for the
/// `f32` arithmetic and its error.
pub(crate) fn softmax(
    x: &TensorData,
    from: &Shape,
    axis: usize,
    parallel: &Parallel,
) -> Option<TensorData> {
    let len = *from.dims().last()?;
    if axis + 1 != from.rank() || len == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    match x {
        TensorData::F32(v) => Some(TensorData::F32(softmax_rows_f32(v, len, parallel))),
        TensorData::F64(v) => Some(TensorData::F64(softmax_rows_f64(v, len))),
        _ => None,
    }
}

/// Layer normalisation over the last axis, or `None` for other axes or mismatched data.
pub(crate) fn layer_norm(
    x: &TensorData,
    from: &Shape,
    scale: &TensorData,
    bias: &TensorData,
    l: &LayerNorm,
) -> Option<TensorData> {
    let len = *from.dims().last()?;
    if l.axis + 1 != from.rank() || len == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    match (x, scale, bias) {
        (TensorData::F32(v), TensorData::F32(g), TensorData::F32(b))
            if g.len() == len && b.len() == len =>
        {
            Some(TensorData::F32(layer_norm_rows(v, g, b, l.epsilon)))
        }
        (TensorData::F64(v), TensorData::F64(g), TensorData::F64(b))
            if g.len() == len && b.len() == len =>
        {
            Some(TensorData::F64(layer_norm_rows(v, g, b, l.epsilon)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_runtime::reference;

    fn f32s(d: &TensorData) -> &[f32] {
        match d {
            TensorData::F32(v) => v,
            other => panic!("expected f32 data, got {other:?}"),
        }
    }

    /// Checks the `f32` softmax of `x` (rows of `len`) against the reference, on one thread
    /// and on a pool of two.
    fn check_f32(x: Vec<f32>, len: usize) {
        let s = Shape::new([x.len() / len, len]);
        let x = TensorData::F32(x);
        let want = reference::softmax(&x, &s, 1).unwrap();
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            let got = softmax(&x, &s, 1, &parallel).unwrap();
            let rows = f32s(&x).chunks(len);
            let pairs = f32s(&got).chunks(len).zip(f32s(&want).chunks(len));
            for (row, (got, want)) in rows.zip(pairs) {
                let max = row_max(row);
                for ((&v, &g), &w) in row.iter().zip(got).zip(want) {
                    if w.is_nan() {
                        assert!(g.is_nan(), "{g} for NaN in row {row:?}");
                        continue;
                    }
                    let bound = (1.0 + f64::from((v - max).abs())) * 2f64.powi(-21);
                    let err = (f64::from(g) - f64::from(w)).abs() / f64::from(w).max(1e-38);
                    assert!(
                        err <= bound || g == w,
                        "x = {v}: {g} vs {w} ({err:e} > {bound:e})"
                    );
                }
            }
        }
    }

    #[test]
    fn f32_softmax_is_within_its_bound_of_the_reference() {
        // Small rows, a row length off the partial-sum width, and enough for the pool.
        check_f32(
            (0..120)
                .map(|i| ((i * 53) % 37) as f32 / 3.0 - 6.0)
                .collect(),
            10,
        );
        check_f32(
            (0..13 * 5100)
                .map(|i| ((i * 7919) % 1013) as f32 / 17.0 - 30.0)
                .collect(),
            13,
        );
        check_f32((0..1 << 16).map(|i| (i % 977) as f32 * 0.37).collect(), 128);
    }

    #[test]
    fn f32_softmax_special_values_as_the_reference() {
        let inf = f32::INFINITY;
        check_f32(
            vec![
                -inf, 0.0, -inf, 1.0, // -inf entries give 0
                f32::NAN, 1.0, 2.0, 3.0, // a NaN makes the row NaN
                inf, 1.0, 2.0, 3.0, // so does +inf
                -inf, -inf, -inf, -inf, // all -inf: NaN
                -0.0, 0.0, -0.0, 0.0, // signed zeros: uniform
                -100.0, 0.0, -90.0, 0.0, // subnormal results
            ],
            4,
        );
    }

    #[test]
    fn f64_softmax_and_layer_norm_are_bit_identical_to_the_reference() {
        let s = Shape::new([3, 4, 10]);
        let values = (0..120).map(|i| ((i * 53) % 37) as f64 / 3.0 - 6.0);
        let x = TensorData::F64(values.clone().collect());
        let one = Parallel::new(ThreadConfig::with_threads(1));
        assert_eq!(
            softmax(&x, &s, 2, &one),
            reference::softmax(&x, &s, 2).ok()
        );
        assert!(softmax(&x, &s, 1, &one).is_none());
        let x = TensorData::F32(values.map(|v| v as f32).collect());
        let g = TensorData::F32((0..10).map(|i| i as f32 / 4.0).collect());
        let b = TensorData::F32((0..10).map(|i| 1.0 - i as f32).collect());
        let l = LayerNorm {
            axis: 2,
            epsilon: 1e-12,
        };
        assert_eq!(
            layer_norm(&x, &s, &g, &b, &l),
            reference::layer_norm(&x, &s, &g, &b, &l).ok()
        );
    }
}
