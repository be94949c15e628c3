//! Reductions over trailing axes (`GlobalAveragePool`, `ReduceSum` over the last axis, ...)
//! on `f32`/`f64`: each output element reduces one contiguous row. Accumulation is in `f64`
//! in row order, as the reference does, so results are bit-identical to it.

use graphlift_ir::{ReduceOp, Reduction, Shape, TensorData};

/// Reduces one non-empty row, in order, in `f64`.
fn fold_row(row: impl Iterator<Item = f64>, len: usize, op: ReduceOp) -> f64 {
    let nan_or = |a: f64, v: f64, pick: fn(f64, f64) -> f64| {
        if a.is_nan() || v.is_nan() {
            f64::NAN
        } else {
            pick(a, v)
        }
    };
    match op {
        ReduceOp::Sum => row.fold(0.0, |a, v| a + v),
        ReduceOp::Mean => row.fold(0.0, |a, v| a + v) / len as f64,
        ReduceOp::Prod => row.fold(1.0, |a, v| a * v),
        ReduceOp::Max => row.fold(f64::NEG_INFINITY, |a, v| nan_or(a, v, f64::max)),
        ReduceOp::Min => row.fold(f64::INFINITY, |a, v| nan_or(a, v, f64::min)),
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
                .map(|row| fold_row(row.iter().map(|&a| f64::from(a)), len, r.op) as f32)
                .collect(),
        )),
        TensorData::F64(v) => Some(TensorData::F64(
            v.chunks(len)
                .map(|row| fold_row(row.iter().copied(), len, r.op))
                .collect(),
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_identical_to_the_reference() {
        let x = TensorData::F32(
            (0..2 * 3 * 20)
                .map(|i| ((i * 37) % 23) as f32 / 7.0 - 1.5)
                .collect(),
        );
        let s = Shape::new([2, 3, 4, 5]);
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
                assert_eq!(got, want, "{r:?}");
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
