//! Softmax and layer normalisation over the last axis, row by row, rows in parallel on the
//! backend's pool when the tensor is large enough, without the reference's whole-tensor copies
//! and index arithmetic.

use super::rows::{map_row_blocks, map_rows, sum_wide, W};
use crate::parallel::Parallel;
use crate::veclib::{VecFn, MAX_PARAMS};
use graphlift_ir::{LayerNorm, Shape, TensorData};
use multiversion::multiversion;

/// Elements each thread of a split softmax must get (an `exp` per element).
const SOFTMAX_PER_THREAD: usize = 1 << 14;
/// Elements each thread of a split LayerNorm must get: a few operations per element, so a
/// fork pays only for larger tensors (MiniLM's `[128, 384]` runs on three threads).
const LAYER_NORM_PER_THREAD: usize = 1 << 14;

/// An `f32` or `f64` element, widened and narrowed as the reference does (also
/// [`super::batch_norm`]'s).
pub(super) trait Float: Copy {
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

/// The reference's `f64` softmax of the row `x` into `out` (same length): the same
/// arithmetic in the same order, so bit-identical.
pub(super) fn softmax_row_f64(x: &[f64], out: &mut [f64]) {
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for (e, v) in out.iter_mut().zip(x) {
        *e = (v - max).exp();
        sum += *e;
    }
    out.iter_mut().for_each(|v| *v /= sum);
}

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

/// Elements of `x − max` staged on the stack for one call of the library's `exp`.
const EXP_STAGE: usize = 256;

/// Softmax of each row of `len` elements of the `f32` rows `x` into `out` (same length),
/// as [`softmax`] documents: several rows at a time on AVX-512 hosts
/// ([`crate::veclib::softmax_rows`]), else row by row (nothing for rows of no elements).
pub(super) fn softmax_rows_f32(x: &[f32], out: &mut [f32], len: usize) {
    if len > 0 && !crate::veclib::softmax_rows(x, out, len) {
        for (x, out) in x.chunks(len).zip(out.chunks_mut(len)) {
            softmax_row_f32(x, out);
        }
    }
}

/// Softmax of the `f32` row `x` into `out` (same length) without AVX-512, as [`softmax`]
/// documents.
#[multiversion(targets = "simd")]
fn softmax_row_f32(x: &[f32], out: &mut [f32]) {
    let max = row_max(x);
    let mut stage = [0f32; EXP_STAGE];
    // Each stage's exponentials summed while they are in L1.
    let mut sum = 0f64;
    for (xs, os) in x.chunks(EXP_STAGE).zip(out.chunks_mut(EXP_STAGE)) {
        let stage = &mut stage[..xs.len()];
        for (s, &v) in stage.iter_mut().zip(xs) {
            *s = v - max;
        }
        VecFn::Exp.map(stage, os, [0.0; MAX_PARAMS]);
        sum += sum_wide(os, f64::from);
    }
    // One multiplication by the reciprocal rather than a division per element.
    let scale = (1.0 / sum) as f32;
    for o in out.iter_mut() {
        *o *= scale;
    }
}

/// The mean of the row `x` and `1 / √(variance + epsilon)`, in `f64` (the variance about
/// the mean, a second pass). Inlined into its callers' SIMD widths.
#[inline(always)]
fn moments<T: Float>(x: &[T], epsilon: f64) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = sum_wide(x, T::wide) / n;
    let var = sum_wide(x, |v| (v.wide() - mean) * (v.wide() - mean)) / n;
    (mean, 1.0 / (var + epsilon).sqrt())
}

/// Layer normalisation of the row `x` with scale `g` and bias `b` (all one length) into
/// `out`.
#[inline(always)]
fn layer_norm_row<T: Float>(x: &[T], g: &[T], b: &[T], epsilon: f64, out: &mut [T]) {
    let (mean, inv) = moments(x, epsilon);
    for (o, (v, (g, b))) in out.iter_mut().zip(x.iter().zip(g.iter().zip(b))) {
        *o = T::narrow((v.wide() - mean) * inv * g.wide() + b.wide());
    }
}

/// [`layer_norm_row`] on `f32` rows, with the scale and bias widened to `f64` once per call
/// (`g`, `b`) and the last two steps one fused multiply-add, compiled for the host's SIMD
/// extensions: per element one conversion in and one out.
#[multiversion(targets = "simd")]
fn layer_norm_row_f32(x: &[f32], g: &[f64], b: &[f64], epsilon: f64, out: &mut [f32]) {
    let (mean, inv) = moments(x, epsilon);
    for (o, (&v, (&g, &b))) in out.iter_mut().zip(x.iter().zip(g.iter().zip(b))) {
        *o = ((f64::from(v) - mean) * inv).mul_add(g, b) as f32;
    }
}

/// Softmax along the last axis of `x` (shape `from`), or `None` for another axis or a
/// non-float tensor (the caller runs the reference); written into `out` when it is a buffer
/// of the result's type and size.
///
/// On `f64` it follows the reference's arithmetic (`f64`, same order, one rounding), so
/// results are bit-identical. On `f32` it computes in `f32` as ONNX runtimes do: the row
/// maximum, `e = exp(x − max)` with the vector math library's `exp` ([`crate::veclib`],
/// ≤ 1 ulp), the sum of `e` in `f64`, then `e · (1 / sum)` (the reciprocal rounded to
/// `f32` once). Each result is within a relative
/// `2^-21 · (1 + |x − max|)` of the reference's (the rounding of `x − max` in `f32` is the
/// `|x − max|` term); special values give the reference's: a NaN in a row, or `+inf` in it,
/// makes the row NaN, `-inf` entries give 0.
pub fn softmax(
    x: &TensorData,
    from: &Shape,
    axis: usize,
    parallel: &Parallel,
    out: Option<TensorData>,
) -> Option<TensorData> {
    let len = *from.dims().last()?;
    if axis + 1 != from.rank() || len == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    match x {
        TensorData::F32(v) => Some(TensorData::F32(map_row_blocks(
            v,
            len,
            parallel,
            (SOFTMAX_PER_THREAD, out.and_then(TensorData::into_vec)),
            |x, o| softmax_rows_f32(x, o, len),
        ))),
        TensorData::F64(v) => Some(TensorData::F64(map_rows(
            v,
            len,
            parallel,
            (SOFTMAX_PER_THREAD, out.and_then(TensorData::into_vec)),
            softmax_row_f64,
        ))),
        _ => None,
    }
}

/// Layer normalisation over the axes `l.axis..` (each row the flattened trailing axes: the
/// last axis for a transformer's LayerNorm, an image's planes for InstanceNormalization
/// as the importer writes it), or `None` for mismatched data; written into `out` when it is
/// a buffer of the result's type and size.
///
/// It computes in `f64` and rounds once, as the reference does, but sums each row's mean and
/// variance in [`W`] interleaved partial sums (so the sums vectorize and are not bound by the
/// latency of one chain of additions). The `f64` values before rounding may differ from the
/// reference's in their last bits: the result is the reference's except when that value
/// lies within those bits of a rounding boundary, and then 1 ulp from it.
pub fn layer_norm(
    x: &TensorData,
    from: &Shape,
    scale: &TensorData,
    bias: &TensorData,
    l: &LayerNorm,
    parallel: &Parallel,
    out: Option<TensorData>,
) -> Option<TensorData> {
    let len: usize = from.dims().get(l.axis..)?.iter().product();
    if l.axis >= from.rank() || len == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    match (x, scale, bias) {
        (TensorData::F32(v), TensorData::F32(g), TensorData::F32(b))
            if g.len() == len && b.len() == len =>
        {
            let out = (LAYER_NORM_PER_THREAD, out.and_then(TensorData::into_vec));
            let wide = |w: &[f32]| w.iter().map(|&w| f64::from(w)).collect::<Vec<f64>>();
            let (g, b) = (wide(g), wide(b));
            Some(TensorData::F32(map_rows(v, len, parallel, out, |x, o| {
                layer_norm_row_f32(x, &g, &b, l.epsilon, o)
            })))
        }
        (TensorData::F64(v), TensorData::F64(g), TensorData::F64(b))
            if g.len() == len && b.len() == len =>
        {
            let out = (LAYER_NORM_PER_THREAD, out.and_then(TensorData::into_vec));
            Some(TensorData::F64(map_rows(v, len, parallel, out, |x, o| {
                layer_norm_row(x, g, b, l.epsilon, o)
            })))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_runtime::reference;

    fn bits(d: &TensorData) -> Vec<u32> {
        f32s(d).iter().map(|v| v.to_bits()).collect()
    }

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
            let got = softmax(&x, &s, 1, &parallel, None).unwrap();
            // A recycled buffer full of NaN is overwritten completely.
            let stale = TensorData::F32(vec![f32::NAN; f32s(&x).len()]);
            let again = softmax(&x, &s, 1, &parallel, Some(stale)).unwrap();
            assert_eq!(bits(&got), bits(&again));
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
                -inf,
                0.0,
                -inf,
                1.0, // -inf entries give 0
                f32::NAN,
                1.0,
                2.0,
                3.0, // a NaN makes the row NaN
                inf,
                1.0,
                2.0,
                3.0, // so does +inf
                -inf,
                -inf,
                -inf,
                -inf, // all -inf: NaN
                -0.0,
                0.0,
                -0.0,
                0.0, // signed zeros: uniform
                -100.0,
                0.0,
                -90.0,
                0.0, // subnormal results
            ],
            4,
        );
    }

    #[test]
    fn f64_softmax_is_bit_identical_to_the_reference() {
        let s = Shape::new([3, 4, 10]);
        let x = TensorData::F64(
            (0..120)
                .map(|i| ((i * 53) % 37) as f64 / 3.0 - 6.0)
                .collect(),
        );
        let one = Parallel::new(ThreadConfig::with_threads(1));
        assert_eq!(
            softmax(&x, &s, 2, &one, None),
            reference::softmax(&x, &s, 2).ok()
        );
        assert!(softmax(&x, &s, 1, &one, None).is_none());
    }

    #[test]
    fn layer_norm_is_within_one_ulp_of_the_reference() {
        // A small case and one large enough for the pool (rows of MiniLM's width), and
        // rows over several trailing axes (InstanceNormalization as imported: planes).
        let cases: [(&[usize], usize); 4] = [
            (&[12, 10], 1),
            (&[96, 384], 1),
            (&[2, 3, 5, 7], 2),
            (&[2, 6, 48, 40], 2),
        ];
        for (dims, axis) in cases {
            let s = Shape::new(dims);
            let len: usize = dims[axis..].iter().product();
            let rows = s.element_count().unwrap() / len;
            let x = TensorData::F32(
                (0..rows * len)
                    .map(|i| ((i * 53) % 37) as f32 / 3.0 - 6.0 + (i / len) as f32 * 1e3)
                    .collect(),
            );
            let g = TensorData::F32((0..len).map(|i| i as f32 / 4.0 - 7.0).collect());
            let b = TensorData::F32((0..len).map(|i| 1.0 - i as f32).collect());
            let l = LayerNorm {
                axis,
                epsilon: 1e-12,
            };
            let want = reference::layer_norm(&x, &s, &g, &b, &l).unwrap();
            for threads in [1, 2] {
                let parallel = Parallel::new(ThreadConfig::with_threads(threads));
                let got = layer_norm(&x, &s, &g, &b, &l, &parallel, None).unwrap();
                let stale = TensorData::F32(vec![f32::NAN; f32s(&x).len()]);
                let again = layer_norm(&x, &s, &g, &b, &l, &parallel, Some(stale)).unwrap();
                assert_eq!(bits(&got), bits(&again));
                for (&g, &w) in f32s(&got).iter().zip(f32s(&want)) {
                    let ulps =
                        (i64::from(g.to_bits() as i32) - i64::from(w.to_bits() as i32)).abs();
                    assert!(ulps <= 1, "{g} vs {w}");
                }
            }
        }
    }
}
