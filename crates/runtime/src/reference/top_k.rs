//! `TopK`: the positions of the `k` largest or smallest elements along one axis.

use std::cmp::Ordering;

use graphlift_ir::{Shape, TensorData, TopK};

use super::widen::{floats, integers};

/// numpy's sort order of floats: NaN above every number (all NaNs equal), `-0 == +0`.
fn float_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// The `i64` indices along `t.axis` of the `t.k` largest (or smallest) elements of each lane
/// of `data` (shape `from`), most extreme first, laid out in `from` with extent `k` on the
/// axis (see [`graphlift_ir::TopK`]): of equal values the lower index comes first; NaN
/// orders above every number.
///
/// # Errors
/// A message when the data does not fill `from`, the axis is out of range, `k` exceeds its
/// extent, or the data is boolean.
pub fn top_k(data: &TensorData, from: &Shape, t: &TopK) -> Result<TensorData, String> {
    let n = from.element_count().map_err(|e| e.to_string())?;
    if data.len() != n {
        return Err(format!("{} elements for shape {from}", data.len()));
    }
    let d = match from.dims().get(t.axis) {
        Some(&d) if d >= t.k => d,
        Some(&d) => {
            return Err(format!(
                "k = {} exceeds the extent {d} of axis {}",
                t.k, t.axis
            ))
        }
        None => return Err(format!("axis {} is out of range for {from}", t.axis)),
    };
    let inner: usize = from.dims()[t.axis + 1..].iter().product();
    let outer = n.checked_div(d * inner).unwrap_or(0);
    let pick = |order: &dyn Fn(usize, usize) -> Ordering| -> Vec<i64> {
        let mut out = vec![0i64; outer * t.k * inner];
        let mut lane: Vec<usize> = Vec::with_capacity(d);
        for o in 0..outer {
            for i in 0..inner {
                let at = |j: usize| (o * d + j) * inner + i;
                lane.clear();
                lane.extend(0..d);
                // A stable sort: equal values keep their index order.
                if t.largest {
                    lane.sort_by(|&a, &b| order(at(b), at(a)));
                } else {
                    lane.sort_by(|&a, &b| order(at(a), at(b)));
                }
                for (j, &idx) in lane[..t.k].iter().enumerate() {
                    out[(o * t.k + j) * inner + i] = idx as i64;
                }
            }
        }
        out
    };
    let indices = if let Some(x) = floats(data) {
        pick(&|a, b| float_order(x[a], x[b]))
    } else if let Some(x) = integers(data) {
        pick(&|a, b| x[a].cmp(&x[b]))
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

    fn top(axis: usize, k: usize, largest: bool) -> TopK {
        TopK { axis, k, largest }
    }

    #[test]
    fn picks_extremes_in_order_ties_to_the_lower_index() {
        // [[2, 7, 7, 1], [5, 1, 1, 9]]
        let x = TensorData::F32(vec![2., 7., 7., 1., 5., 1., 1., 9.]);
        let s = Shape::new([2, 4]);
        let i = |t| top_k(&x, &s, &t).unwrap();
        assert_eq!(i(top(1, 2, true)), TensorData::I64(vec![1, 2, 3, 0]));
        assert_eq!(i(top(1, 3, false)), TensorData::I64(vec![3, 0, 1, 1, 2, 0]));
        // Along axis 0: per column, the larger of the two rows first.
        assert_eq!(
            i(top(0, 2, true)),
            TensorData::I64(vec![1, 0, 0, 1, 0, 1, 1, 0])
        );
        assert_eq!(i(top(1, 0, true)), TensorData::I64(vec![]));
        let ints = TensorData::I64(vec![3, -4, 3, 8]);
        let r = top_k(&ints, &Shape::new([4]), &top(0, 3, true)).unwrap();
        assert_eq!(r, TensorData::I64(vec![3, 0, 2]));
    }

    #[test]
    fn nan_orders_above_numbers_and_bad_operands_are_errors() {
        let x = TensorData::F64(vec![1., f64::NAN, 9., f64::NAN]);
        let s = Shape::new([4]);
        let largest = top_k(&x, &s, &top(0, 3, true)).unwrap();
        assert_eq!(largest, TensorData::I64(vec![1, 3, 2]));
        let smallest = top_k(&x, &s, &top(0, 3, false)).unwrap();
        assert_eq!(smallest, TensorData::I64(vec![0, 2, 1]));
        assert!(top_k(&x, &s, &top(0, 5, true))
            .unwrap_err()
            .contains("exceeds"));
        assert!(top_k(&x, &s, &top(1, 1, true)).is_err());
        let b = TensorData::Bool(vec![true]);
        assert!(top_k(&b, &Shape::new([1]), &top(0, 1, true)).is_err());
    }
}
