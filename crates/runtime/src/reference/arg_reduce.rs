//! `ArgMax` and `ArgMin`: the index of the extreme element along one axis.

use graphlift_ir::{ArgOp, ArgReduction, Shape, TensorData};

use super::widen::{floats, integers};

/// The `i64` index along `r.axis` of the largest (`ArgOp::Max`) or smallest element of
/// each lane of `data` (shape `from`), laid out in the input's shape without the axis (the
/// same elements with `keep_dims`). Of equal extremes the first index wins, the last with
/// `select_last_index`; a NaN is more extreme than any number (numpy's `argmax` and
/// `argmin` both return the first NaN), and of several NaNs the tie rule picks.
///
/// # Errors
/// A message when the data does not fill `from`, the axis is out of range or empty, or the
/// data is boolean.
pub fn arg_reduce(data: &TensorData, from: &Shape, r: &ArgReduction) -> Result<TensorData, String> {
    let n = from.element_count().map_err(|e| e.to_string())?;
    if data.len() != n {
        return Err(format!("{} elements for shape {from}", data.len()));
    }
    let d = match from.dims().get(r.axis) {
        Some(&d) if d > 0 => d,
        _ => return Err(format!("axis {} of {from} is missing or empty", r.axis)),
    };
    let inner: usize = from.dims()[r.axis + 1..].iter().product();
    let outer = n / (d * inner);
    let pick = |better: &dyn Fn(usize, usize) -> bool| -> Vec<i64> {
        let mut out = Vec::with_capacity(outer * inner);
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| (o * d + k) * inner + i;
                let mut best = 0;
                for k in 1..d {
                    if better(at(k), at(best)) {
                        best = k;
                    }
                }
                out.push(best as i64);
            }
        }
        out
    };
    let last = r.select_last_index;
    // `better(a, b)`: element a replaces the best so far, b.
    let indices = if let Some(x) = floats(data) {
        pick(&|a, b| {
            let (va, vb) = (x[a], x[b]);
            if vb.is_nan() {
                return last && va.is_nan();
            }
            if va.is_nan() {
                return true;
            }
            let beyond = match r.op {
                ArgOp::Max => va > vb,
                ArgOp::Min => va < vb,
            };
            beyond || (last && va == vb)
        })
    } else if let Some(x) = integers(data) {
        pick(&|a, b| {
            let (va, vb) = (x[a], x[b]);
            let beyond = match r.op {
                ArgOp::Max => va > vb,
                ArgOp::Min => va < vb,
            };
            beyond || (last && va == vb)
        })
    } else {
        return Err(format!(
            "needs a numeric tensor, got {}",
            data.element_type()
        ));
    };
    Ok(TensorData::I64(indices))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(op: ArgOp, axis: usize, select_last_index: bool) -> ArgReduction {
        ArgReduction {
            op,
            axis,
            keep_dims: true,
            select_last_index,
        }
    }

    #[test]
    fn picks_first_or_last_extreme() {
        // [[2, 7, 7], [5, 1, 1]]
        let x = TensorData::F32(vec![2., 7., 7., 5., 1., 1.]);
        let s = Shape::new([2, 3]);
        let i = |r| arg_reduce(&x, &s, &r).unwrap();
        assert_eq!(i(arg(ArgOp::Max, 1, false)), TensorData::I64(vec![1, 0]));
        assert_eq!(i(arg(ArgOp::Max, 1, true)), TensorData::I64(vec![2, 0]));
        assert_eq!(i(arg(ArgOp::Min, 1, true)), TensorData::I64(vec![0, 2]));
        assert_eq!(i(arg(ArgOp::Min, 0, false)), TensorData::I64(vec![0, 1, 1]));
        let ints = TensorData::I32(vec![3, -4, 3]);
        let r = arg_reduce(&ints, &Shape::new([3]), &arg(ArgOp::Max, 0, true)).unwrap();
        assert_eq!(r, TensorData::I64(vec![2]));
    }

    #[test]
    fn nan_is_the_extreme_and_bad_operands_are_errors() {
        let x = TensorData::F64(vec![1., f64::NAN, 9., f64::NAN]);
        let s = Shape::new([4]);
        for op in [ArgOp::Max, ArgOp::Min] {
            let first = arg_reduce(&x, &s, &arg(op, 0, false)).unwrap();
            assert_eq!(first, TensorData::I64(vec![1]));
            let last = arg_reduce(&x, &s, &arg(op, 0, true)).unwrap();
            assert_eq!(last, TensorData::I64(vec![3]));
        }
        let empty = TensorData::F32(vec![]);
        let r = arg_reduce(&empty, &Shape::new([2, 0]), &arg(ArgOp::Max, 1, false));
        assert!(r.unwrap_err().contains("empty"));
        let b = TensorData::Bool(vec![true]);
        assert!(arg_reduce(&b, &Shape::new([1]), &arg(ArgOp::Max, 0, false)).is_err());
    }
}
