//! Reductions over trailing axes, or over one contiguous group of axes before kept ones, on
//! `f32`/`f64`: the native versions of `ReduceSum`, `GlobalAveragePool` and the like, each
//! output element reduced in `f64` and rounded once as the reference does (the maximum and
//! minimum of an `f32` row in `f32` lanes, exact, as `DynamicQuantizeLinear` needs them).

use graphlift_ir::{ReduceOp, Reduction, Shape, TensorData};
use multiversion::multiversion;

use super::rows::sum_wide;

/// Reduces one non-empty row in `f64`.
#[multiversion(targets = "simd")]
fn fold_row<T: Copy>(row_slice: &[T], wide: impl Fn(T) -> f64 + Copy, op: ReduceOp) -> f64 {
    let len = row_slice.len();
    let row = || row_slice.iter().map(move |&v| wide(v));
    let nan_or = |a: f64, v: f64, pick: fn(f64, f64) -> f64| {
        if a.is_nan() || v.is_nan() {
            f64::NAN
        } else {
            pick(a, v)
        }
    };
    match op {
        ReduceOp::Sum => sum_wide(row_slice, wide),
        ReduceOp::Mean => sum_wide(row_slice, wide) / len as f64,
        ReduceOp::Prod => row().fold(1.0, |a, v| a * v),
        ReduceOp::Max => row().fold(f64::NEG_INFINITY, |a, v| nan_or(a, v, f64::max)),
        ReduceOp::Min => row().fold(f64::INFINITY, |a, v| nan_or(a, v, f64::min)),
    }
}

/// The reduction of `x` (shape `from`) over trailing axes (rows) or over one contiguous
/// group of axes followed by kept ones, when the reduced extent is not empty; else `None`
/// (the caller runs the reference).
///
/// Over trailing axes each output element reduces one contiguous row, in `f64`, rounded once
/// as the reference does. `Max`, `Min` and `Prod` fold in row order, so they are
/// bit-identical to the reference; `Sum` and `Mean` add in interleaved partial sums
/// ([`super::rows::sum_wide`]), whose `f64` value may differ from the reference's in its last
/// bits: the rounded result is the reference's except when that value lies that close to a
/// rounding boundary, and then 1 ulp from it.
///
/// Over one contiguous group of axes followed by kept axes (`ReduceSum` over the sequence
/// axis of `[batch, seq, hidden]`) the input is viewed as `[outer, R, inner]` and whole rows
/// of `inner` are added into `f64` accumulators, for each output element in the reference's
/// order (`r = 0, 1, ...`), so the result is bit-identical to the reference.
pub fn reduce(x: &TensorData, from: &Shape, r: &Reduction) -> Option<TensorData> {
    let rank = from.rank();
    let k = r.axes.len();
    let first = *r.axes.first()?;
    if r.axes.iter().copied().ne(first..first + k) || first + k > rank {
        return None;
    }
    let dims = from.dims();
    let len: usize = dims[first..first + k].iter().product();
    let inner: usize = dims[first + k..].iter().product();
    if len == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    if inner > 1 {
        return match x {
            TensorData::F32(v) => Some(TensorData::F32(
                reduce_middle(v, len, inner, f64::from, r.op)
                    .into_iter()
                    .map(|a| a as f32)
                    .collect(),
            )),
            TensorData::F64(v) => Some(TensorData::F64(reduce_middle(v, len, inner, |v| v, r.op))),
            _ => None,
        };
    }
    match x {
        TensorData::F32(v) => Some(TensorData::F32(
            v.chunks(len)
                .map(|row| match r.op {
                    ReduceOp::Max | ReduceOp::Min => extreme_f32(row, r.op == ReduceOp::Max)
                        .unwrap_or_else(|| fold_row(row, f64::from, r.op) as f32),
                    _ => fold_row(row, f64::from, r.op) as f32,
                })
                .collect(),
        )),
        TensorData::F64(v) => Some(TensorData::F64(
            v.chunks(len)
                .map(|row| fold_row(row, |v| v, r.op))
                .collect(),
        )),
        _ => None,
    }
}

/// The largest (`max`) or smallest value of a non-empty `f32` row, in 16 lanes of `f32`
/// (the extreme is one of the values, so it is exact in `f32`: the reference's result),
/// or `None` when the row holds a NaN or the extreme is a zero (whose sign the reference's
/// fold in row order decides), for the caller to fold it as the reference does.
fn extreme_f32(row: &[f32], max: bool) -> Option<f32> {
    let m = if max {
        lanes::<true>(row)
    } else {
        lanes::<false>(row)
    }?;
    (m != 0.0).then_some(m)
}

/// [`extreme_f32`]'s lanes: the maximum (`MAX`) or minimum of `row`, `None` if it holds a
/// NaN; compare-and-select per lane (`vmaxps`/`vminps`), NaNs counted apart.
#[multiversion(targets = "simd")]
fn lanes<const MAX: bool>(row: &[f32]) -> Option<f32> {
    const LANES: usize = 16;
    let init = if MAX {
        f32::NEG_INFINITY
    } else {
        f32::INFINITY
    };
    let pick = |a: f32, v: f32| {
        let better = if MAX { v > a } else { v < a };
        if better {
            v
        } else {
            a
        }
    };
    let mut acc = [init; LANES];
    let mut nan = [0u32; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for j in 0..LANES {
            let v = c[j];
            nan[j] |= u32::from(v.is_nan());
            acc[j] = pick(acc[j], v);
        }
    }
    let mut any_nan = nan.iter().any(|&n| n != 0);
    let mut m = acc.iter().fold(init, |a, &v| pick(a, v));
    for &v in tail {
        any_nan |= v.is_nan();
        m = pick(m, v);
    }
    (!any_nan).then_some(m)
}

/// `x` as `[outer, len, inner]` reduced over the middle axis in `f64`, each output element
/// folded in the order `r = 0, 1, ...` with the reference's operations.
#[multiversion(targets = "simd")]
fn reduce_middle<T: Copy>(
    x: &[T],
    len: usize,
    inner: usize,
    wide: impl Fn(T) -> f64 + Copy,
    op: ReduceOp,
) -> Vec<f64> {
    let init = match op {
        ReduceOp::Sum | ReduceOp::Mean => 0.0,
        ReduceOp::Prod => 1.0,
        ReduceOp::Max => f64::NEG_INFINITY,
        ReduceOp::Min => f64::INFINITY,
    };
    let mut out = Vec::with_capacity(x.len() / len);
    for block in x.chunks_exact(len * inner) {
        let mut acc = vec![init; inner];
        for row in block.chunks_exact(inner) {
            let pairs = acc.iter_mut().zip(row);
            match op {
                ReduceOp::Sum | ReduceOp::Mean => pairs.for_each(|(a, &v)| *a += wide(v)),
                ReduceOp::Prod => pairs.for_each(|(a, &v)| *a *= wide(v)),
                ReduceOp::Max | ReduceOp::Min => pairs.for_each(|(a, &v)| {
                    let v = wide(v);
                    *a = if a.is_nan() || v.is_nan() {
                        f64::NAN
                    } else if op == ReduceOp::Max {
                        a.max(v)
                    } else {
                        a.min(v)
                    };
                }),
            }
        }
        if op == ReduceOp::Mean {
            acc.iter_mut().for_each(|a| *a /= len as f64);
        }
        out.extend(acc);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_reference() {
        // Rows of 37 and 148 elements: partial sums and a remainder.
        let x = TensorData::F32(
            (0..2 * 3 * 4 * 37)
                .map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5)
                .collect(),
        );
        let s = Shape::new([2, 3, 4, 37]);
        for op in ReduceOp::ALL {
            let cases = [
                (vec![3], false),
                (vec![2, 3], true),
                (vec![1, 2, 3], false),
                (vec![1], false),
                (vec![0, 1], true),
                (vec![2], false),
            ];
            for (axes, keep_dims) in cases {
                let middle = *axes.last().unwrap() < 3;
                let r = Reduction {
                    op,
                    axes,
                    keep_dims,
                };
                let got = reduce(&x, &s, &r).unwrap();
                let want = graphlift_runtime::reference::reduce(&x, &s, &r).unwrap();
                let (TensorData::F32(g), TensorData::F32(w)) = (&got, &want) else {
                    panic!("types")
                };
                assert_eq!(g.len(), w.len(), "{r:?}");
                for (&g, &w) in g.iter().zip(w) {
                    if matches!(op, ReduceOp::Sum | ReduceOp::Mean) && !middle {
                        // Within 1 ulp (same sign: the bit patterns are adjacent).
                        let ulps = (g.to_bits() as i64 - w.to_bits() as i64).abs();
                        assert!(ulps <= 1 && g.signum() == w.signum(), "{r:?}: {g} vs {w}");
                    } else {
                        assert_eq!(g.to_bits(), w.to_bits(), "{r:?}");
                    }
                }
            }
        }
        // Rows with a NaN, signed zeros as the extreme, infinities, and long rows.
        let specials: [&[f32]; 5] = [
            &[1.0, f32::NAN, 3.0],
            &[-0.0, -1.0, 0.0, -2.0],
            &[0.0, 1.0, -0.0, 2.0],
            &[f32::NEG_INFINITY, f32::INFINITY],
            &[-7.5; 40],
        ];
        let long: Vec<f32> = (0..1000)
            .map(|i| ((i * 7919) % 1009) as f32 - 500.25)
            .collect();
        for row in specials.into_iter().chain([&long[..]]) {
            for op in [ReduceOp::Max, ReduceOp::Min] {
                let (x, s) = (TensorData::F32(row.to_vec()), Shape::new([row.len()]));
                let r = Reduction {
                    op,
                    axes: vec![0],
                    keep_dims: false,
                };
                let got = reduce(&x, &s, &r).unwrap();
                let want = graphlift_runtime::reference::reduce(&x, &s, &r).unwrap();
                let (TensorData::F32(g), TensorData::F32(w)) = (&got, &want) else {
                    panic!("types")
                };
                assert_eq!(g[0].to_bits(), w[0].to_bits(), "{op:?} of {row:?}");
            }
        }
        let gap = Reduction {
            op: ReduceOp::Sum,
            axes: vec![0, 2],
            keep_dims: false,
        };
        assert!(
            reduce(&x, &s, &gap).is_none(),
            "axes with a kept axis between them"
        );
    }
}
