//! `CumSum`: the running sum of each lane along one axis, one sequential scan.

use graphlift_ir::{match_data, BinaryOp, CumSum, Shape, TensorData};

use super::arith::Arith;

/// The running sums of `data` (shape `from`) along `c.axis` ([`graphlift_ir::CumSum`]; ONNX
/// `CumSum`, nGraph's `CumSum`): the output has `data`'s shape and element type. Each lane
/// is scanned once in its direction (`O(n)` in all): an inclusive sum starts with the lane's
/// first element itself (as numpy's `cumsum`: a `-0` stays `-0`), an exclusive one with 0,
/// and each further sum is the previous one plus the next element under the reference's
/// `Add` (integers wrap; `f16`/`bf16` are added in `f32` and rounded at each step). An
/// infinity or NaN therefore reaches only the sums after it in the scan direction.
///
/// # Errors
/// A message when the data is not numeric, does not fill `from`, or the axis is out of
/// range.
pub fn cum_sum(data: &TensorData, from: &Shape, c: &CumSum) -> Result<TensorData, String> {
    if !data.element_type().is_numeric() {
        return Err(format!(
            "needs a numeric tensor, got {}",
            data.element_type()
        ));
    }
    let n = from.element_count().map_err(|e| e.to_string())?;
    if data.len() != n {
        return Err(format!("{} elements for shape {from}", data.len()));
    }
    let Some(&extent) = from.dims().get(c.axis) else {
        return Err(format!("axis {} is out of range for {from}", c.axis));
    };
    let inner: usize = from.dims()[c.axis + 1..].iter().product();
    match_data!(data, x => Ok(scan(x, extent, inner, c).into()),
        String(_) => Err("needs a numeric tensor, got string".into()))
}

/// The scan of `x`, laid out `[outer, extent, inner]`: for each outer block, the rows along
/// the axis in scan order, each row of `inner` lanes added to the running row at once (so
/// memory is read in order whatever the axis).
fn scan<T: Arith + Default>(x: &[T], extent: usize, inner: usize, c: &CumSum) -> Vec<T> {
    let mut y = vec![T::default(); x.len()];
    let block = extent * inner;
    if block == 0 {
        return y;
    }
    let mut sum = vec![T::default(); inner];
    for (xb, yb) in x.chunks_exact(block).zip(y.chunks_exact_mut(block)) {
        for step in 0..extent {
            let j = if c.reverse { extent - 1 - step } else { step };
            let row = j * inner..(j + 1) * inner;
            let (xr, yr) = (&xb[row.clone()], &mut yb[row]);
            // An inclusive sum takes in its element before it is written, an exclusive one
            // after.
            match (step, c.exclusive) {
                (0, true) => sum.fill(T::default()),
                (0, false) => sum.copy_from_slice(xr),
                (_, false) => add_into(&mut sum, xr),
                (_, true) => {}
            }
            yr.copy_from_slice(&sum);
            if c.exclusive {
                add_into(&mut sum, xr);
            }
        }
    }
    y
}

/// `sum[i] = sum[i] + x[i]` under the reference's `Add`.
fn add_into<T: Arith>(sum: &mut [T], x: &[T]) {
    for (s, &v) in sum.iter_mut().zip(x) {
        *s = T::binary(BinaryOp::Add, *s, v);
    }
}

#[cfg(test)]
mod tests {
    use graphlift_ir::bf16;

    use super::*;

    fn attrs(axis: usize, exclusive: bool, reverse: bool) -> CumSum {
        CumSum {
            axis,
            exclusive,
            reverse,
        }
    }

    /// The scan of 1-D `x` under every combination of `exclusive` and `reverse`, in the order
    /// inclusive forward, exclusive forward, inclusive reverse, exclusive reverse.
    fn all_four(x: &TensorData) -> [TensorData; 4] {
        let s = Shape::new([x.len()]);
        [(false, false), (true, false), (false, true), (true, true)]
            .map(|(e, r)| cum_sum(x, &s, &attrs(0, e, r)).unwrap())
    }

    #[test]
    fn inclusive_exclusive_forward_reverse() {
        let [inc, exc, rinc, rexc] = all_four(&TensorData::I32(vec![1, 2, 3, 4]));
        assert_eq!(inc, TensorData::I32(vec![1, 3, 6, 10]));
        assert_eq!(exc, TensorData::I32(vec![0, 1, 3, 6]));
        assert_eq!(rinc, TensorData::I32(vec![10, 9, 7, 4]));
        assert_eq!(rexc, TensorData::I32(vec![9, 7, 4, 0]));
        let [inc, _, _, rexc] = all_four(&TensorData::F64(vec![0.5, -2.0, 4.0]));
        assert_eq!(inc, TensorData::F64(vec![0.5, -1.5, 2.5]));
        assert_eq!(rexc, TensorData::F64(vec![2.0, 4.0, 0.0]));
    }

    #[test]
    fn a_middle_axis_of_a_3d_tensor() {
        // x[a, b, c] = 100a + 10b + c on [2, 3, 2], summed along b.
        let x: Vec<i64> = (0..12)
            .map(|k| 100 * (k / 6) + 10 * (k / 2 % 3) + k % 2)
            .collect();
        let s = Shape::new([2, 3, 2]);
        let y = cum_sum(&TensorData::I64(x), &s, &attrs(1, false, false)).unwrap();
        let want = vec![0, 1, 10, 12, 30, 33, 100, 101, 210, 212, 330, 333];
        assert_eq!(y, TensorData::I64(want));
        let x = TensorData::F32((0..12).map(|k| k as f32).collect());
        let y = cum_sum(&x, &s, &attrs(1, true, true)).unwrap();
        let want = [6., 8., 4., 5., 0., 0., 18., 20., 10., 11., 0., 0.];
        assert_eq!(y, TensorData::F32(want.to_vec()));
    }

    #[test]
    fn integers_wrap_and_half_floats_round_at_each_step() {
        let [inc, ..] = all_four(&TensorData::I8(vec![100, 100, -128]));
        assert_eq!(inc, TensorData::I8(vec![100, -56, 72]));
        let [_, exc, ..] = all_four(&TensorData::U8(vec![200, 100, 1]));
        assert_eq!(exc, TensorData::U8(vec![0, 200, 44]));
        // bf16 keeps 8 significant bits: 256 + 1 rounds (to even) back to 256 at every step,
        // where one rounding of the exact sum would give 258.
        let x = [256.0f32, 1.0, 1.0].map(bf16::from_f32).to_vec();
        let [inc, ..] = all_four(&TensorData::BF16(x));
        assert_eq!(inc, TensorData::BF16(vec![bf16::from_f32(256.0); 3]));
    }

    #[test]
    fn inf_and_nan_reach_only_the_later_sums() {
        let inf = f32::INFINITY;
        let [inc, exc, rinc, rexc] = all_four(&TensorData::F32(vec![1., 2., inf, 3., 4.]));
        assert_eq!(inc, TensorData::F32(vec![1., 3., inf, inf, inf]));
        assert_eq!(exc, TensorData::F32(vec![0., 1., 3., inf, inf]));
        assert_eq!(rinc, TensorData::F32(vec![inf, inf, inf, 7., 4.]));
        assert_eq!(rexc, TensorData::F32(vec![inf, inf, 7., 4., 0.]));
        let [inc, _, rinc, _] = all_four(&TensorData::F64(vec![1., f64::NAN, 2.]));
        let nan_at = |d: &TensorData| -> Vec<bool> {
            (0..3).map(|i| d.get_f64(i).unwrap().is_nan()).collect()
        };
        assert_eq!(nan_at(&inc), [false, true, true]);
        assert_eq!(nan_at(&rinc), [true, true, false]);
        assert_eq!(inc.get_f64(0), Some(1.0));
        assert_eq!(rinc.get_f64(2), Some(2.0));
        // An inclusive scan starts with the element itself: -0 stays -0.
        let [inc, ..] = all_four(&TensorData::F32(vec![-0.0]));
        assert!(inc.get_f64(0).unwrap().is_sign_negative());
    }

    #[test]
    fn a_long_axis_is_one_linear_scan() {
        // 200,000 elements: an n x n matrix would hold 4 * 10^10.
        let n = 200_000;
        let s = Shape::new([n]);
        let y = cum_sum(&TensorData::F32(vec![1.0; n]), &s, &attrs(0, false, true)).unwrap();
        let y = y.into_vec::<f32>().unwrap();
        assert_eq!((y[0], y[n - 1]), (n as f32, 1.0));
        assert!(y.windows(2).all(|w| w[0] == w[1] + 1.0));
    }

    #[test]
    fn empty_tensors_and_bad_operands() {
        for dims in [[2, 0, 3], [0, 4, 1]] {
            let y = cum_sum(
                &TensorData::F32(vec![]),
                &Shape::new(dims),
                &attrs(1, true, false),
            );
            assert_eq!(y.unwrap(), TensorData::F32(vec![]));
        }
        let x = TensorData::F32(vec![1., 2.]);
        let e = cum_sum(&x, &Shape::new([2]), &attrs(1, false, false)).unwrap_err();
        assert!(e.contains("axis 1 is out of range"), "{e}");
        assert!(cum_sum(&x, &Shape::new([3]), &attrs(0, false, false)).is_err());
        let b = TensorData::Bool(vec![true]);
        let e = cum_sum(&b, &Shape::new([1]), &attrs(0, false, false)).unwrap_err();
        assert!(e.contains("numeric"), "{e}");
    }
}
