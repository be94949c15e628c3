//! Reductions over axes.

use graphlift_ir::{ReduceOp, Reduction, Shape, TensorData};

use super::layout::strided_indices;
use super::widen::{floats, integer_range, integers, narrow, narrow_int};

/// Reduces `data` (shape `from`) over `r.axes`.
///
/// Floats (`f16` and `bf16` too) are combined in `f64` and rounded once. Over no elements: `Sum` 0, `Prod` 1,
/// `Mean` NaN, `Max` `-inf` (integers: `MIN`), `Min` `+inf` (`MAX`). `Max` and `Min`
/// propagate NaN, as `Maximum`/`Minimum` do. Integer `Sum` and `Prod` wrap in the element
/// type, signed or unsigned, of any width.
///
/// # Errors
/// A message when the data does not fill `from`, the axes are out of range, or the element
/// type is not numeric (`Mean`: not a float).
pub fn reduce(data: &TensorData, from: &Shape, r: &Reduction) -> Result<TensorData, String> {
    let n = from.element_count().map_err(|e| e.to_string())?;
    if data.len() != n {
        return Err(format!("{} elements for shape {from}", data.len()));
    }
    if r.axes.iter().any(|&a| a >= from.rank()) {
        return Err(format!("axes {:?} out of range for {from}", r.axes));
    }
    // Output index of every input element: the output strides with 0 on reduced axes.
    let kept: Vec<usize> = from
        .dims()
        .iter()
        .enumerate()
        .map(|(a, &d)| if r.axes.contains(&a) { 1 } else { d })
        .collect();
    let out_strides = Shape::new(kept.clone()).strides();
    let strides: Vec<isize> = (0..from.rank())
        .map(|a| {
            if r.axes.contains(&a) {
                0
            } else {
                out_strides[a] as isize
            }
        })
        .collect();
    let target = strided_indices(from.dims(), &strides, 0);
    let out_len: usize = kept.iter().product();
    let count = n.checked_div(out_len).unwrap_or(0);
    let et = data.element_type();
    if let Some(x) = floats(data) {
        let init = match r.op {
            ReduceOp::Sum | ReduceOp::Mean => 0.0,
            ReduceOp::Prod => 1.0,
            ReduceOp::Max => f64::NEG_INFINITY,
            ReduceOp::Min => f64::INFINITY,
        };
        let mut acc = vec![init; out_len];
        for (&t, &v) in target.iter().zip(&x) {
            let a = &mut acc[t];
            *a = match r.op {
                ReduceOp::Sum | ReduceOp::Mean => *a + v,
                ReduceOp::Prod => *a * v,
                ReduceOp::Max if v.is_nan() || a.is_nan() => f64::NAN,
                ReduceOp::Min if v.is_nan() || a.is_nan() => f64::NAN,
                ReduceOp::Max => a.max(v),
                ReduceOp::Min => a.min(v),
            };
        }
        if r.op == ReduceOp::Mean {
            acc.iter_mut().for_each(|a| *a /= count as f64);
        }
        return Ok(narrow(et, acc));
    }
    let Some(x) = integers(data) else {
        return Err(format!("Reduce{} does not accept {et}", r.op.name()));
    };
    let (min, max) = integer_range(et).unwrap_or((i128::MIN, i128::MAX));
    let init = match r.op {
        ReduceOp::Sum => 0,
        ReduceOp::Prod => 1,
        ReduceOp::Max => min,
        ReduceOp::Min => max,
        ReduceOp::Mean => return Err(format!("ReduceMean does not accept {et}")),
    };
    let mut acc = vec![init; out_len];
    for (&t, &v) in target.iter().zip(&x) {
        let a = &mut acc[t];
        *a = match r.op {
            ReduceOp::Sum => a.wrapping_add(v),
            ReduceOp::Prod => a.wrapping_mul(v),
            ReduceOp::Max => (*a).max(v),
            _ => (*a).min(v),
        };
    }
    Ok(narrow_int(et, acc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(op: ReduceOp, axes: &[usize]) -> Reduction {
        Reduction {
            op,
            axes: axes.to_vec(),
            keep_dims: false,
        }
    }

    #[test]
    fn reduces_each_way() {
        let x = TensorData::F32((1..=6).map(|i| i as f32).collect());
        let s = Shape::new([2, 3]);
        let sum = reduce(&x, &s, &red(ReduceOp::Sum, &[1])).unwrap();
        assert_eq!(sum, TensorData::F32(vec![6.0, 15.0]));
        let mean = reduce(&x, &s, &red(ReduceOp::Mean, &[0])).unwrap();
        assert_eq!(mean, TensorData::F32(vec![2.5, 3.5, 4.5]));
        let max = reduce(&x, &s, &red(ReduceOp::Max, &[0, 1])).unwrap();
        assert_eq!(max, TensorData::F32(vec![6.0]));
        let prod = reduce(&x, &s, &red(ReduceOp::Prod, &[])).unwrap();
        assert_eq!(prod, x);
        let nan = TensorData::F64(vec![1.0, f64::NAN]);
        let m = reduce(&nan, &Shape::new([2]), &red(ReduceOp::Min, &[0])).unwrap();
        assert!(matches!(m, TensorData::F64(v) if v[0].is_nan()));
        let ints = TensorData::I32(vec![i32::MAX, 1]);
        let w = reduce(&ints, &Shape::new([2]), &red(ReduceOp::Sum, &[0])).unwrap();
        assert_eq!(w, TensorData::I32(vec![i32::MIN]));
        let empty = TensorData::F32(vec![]);
        let e = reduce(&empty, &Shape::new([2, 0]), &red(ReduceOp::Sum, &[1])).unwrap();
        assert_eq!(e, TensorData::F32(vec![0.0, 0.0]));
    }
}
