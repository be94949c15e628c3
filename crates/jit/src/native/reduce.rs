//! Reductions over trailing axes (`GlobalAveragePool`, `ReduceSum` over the last axis, ...)
//! on `f32`/`f64`: each output element reduces one contiguous row, in `f64`, rounded once
//! as the reference does. `Max`, `Min` and `Prod` fold in row order, so they are
//! bit-identical to the reference; `Sum` and `Mean` add in interleaved partial sums
//! ([`super::rows::sum_wide`]), whose `f64` value may differ from the reference's in its last
//! bits: the rounded result is the reference's except when that value lies that close to a
//! rounding boundary, and then 1 ulp from it.

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

/// The reduction of `x` (shape `from`) when its axes are the trailing ones and the rows are
/// not empty, else `None` (the caller runs the reference).
pub(crate) fn reduce(x: &TensorData, from: &Shape, r: &Reduction) -> Option<TensorData> {
    let rank = from.rank();
    let k = r.axes.len();
    if k == 0 || r.axes.iter().copied().ne(rank - k..rank) {
        return None;
    }
    let len: usize = from.dims()[rank - k..].iter().product();
    if len == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    match x {
        TensorData::F32(v) => Some(TensorData::F32(
            v.chunks(len)
                .map(|row| fold_row(row, f64::from, r.op) as f32)
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
            for (axes, keep_dims) in [(vec![3], false), (vec![2, 3], true), (vec![1, 2, 3], false)]
            {
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
                    if matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
                        // Within 1 ulp (same sign: the bit patterns are adjacent).
                        let ulps = (g.to_bits() as i64 - w.to_bits() as i64).abs();
                        assert!(ulps <= 1 && g.signum() == w.signum(), "{r:?}: {g} vs {w}");
                    } else {
                        assert_eq!(g.to_bits(), w.to_bits(), "{r:?}");
                    }
                }
            }
        }
        let leading = Reduction {
            op: ReduceOp::Sum,
            axes: vec![0],
            keep_dims: false,
        };
        assert!(reduce(&x, &s, &leading).is_none());
    }
}
