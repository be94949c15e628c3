//! The integer convolution of 8-bit operands ([`graphlift_ir::Op::ConvolutionInteger`], ONNX
//! `ConvInteger`): the definition the native kernel is tested against. Plain loops over the
//! convolution's taps, exact wrapping INT32.

use graphlift_ir::{Convolution, Shape, TensorData};

use super::window::ConvolutionTaps;

/// The values of an 8-bit tensor widened to INT32, or `None` for another type.
fn widened(d: &TensorData) -> Option<Vec<i32>> {
    match d {
        TensorData::U8(v) => Some(v.iter().map(|&b| i32::from(b)).collect()),
        TensorData::I8(v) => Some(v.iter().map(|&b| i32::from(b)).collect()),
        _ => None,
    }
}

/// [`graphlift_ir::Op::ConvolutionInteger`] of `x` `[N, C, D..]` (UINT8 or INT8) with
/// zero point `x_zero_point` (one element of `x`'s type) and filter `w` `[M, C / groups, K..]`
/// (UINT8 or INT8) with zero point `w_zero_point` (of `w`'s type, one element or `[M]`):
/// INT32 `[N, M, O..]`,
/// `y[n, m, o..] = Σ (x[n, c, i..] - x_zero_point) · (w[m, c, k..] - w_zero_point[m])` over the
/// taps inside `x`, in wrapping INT32 (ONNX `ConvInteger`, opset 10).
///
/// # Errors
/// A message when an operand is not 8-bit, a zero point's type differs from its operand's,
/// or the shapes, groups, window or zero point lengths do not fit.
pub fn convolution_integer(
    (x, sx): (&TensorData, &Shape),
    x_zero_point: &TensorData,
    (w, sw): (&TensorData, &Shape),
    w_zero_point: &TensorData,
    c: &Convolution,
) -> Result<TensorData, String> {
    let (Some(xv), Some(wv), Some(xz), Some(wz)) = (
        widened(x),
        widened(w),
        widened(x_zero_point),
        widened(w_zero_point),
    ) else {
        return Err("ConvolutionInteger takes UINT8 or INT8 operands and zero points".into());
    };
    if x.element_type() != x_zero_point.element_type()
        || w.element_type() != w_zero_point.element_type()
    {
        return Err(format!(
            "zero points {} and {} do not match x {} and w {}",
            x_zero_point.element_type(),
            w_zero_point.element_type(),
            x.element_type(),
            w.element_type()
        ));
    }
    let count = |s: &Shape| s.element_count().map_err(|e| e.to_string());
    if xv.len() != count(sx)? || wv.len() != count(sw)? {
        return Err(format!("x {sx} or w {sw} does not hold its elements"));
    }
    let m = sw.dims().first().copied().unwrap_or(0);
    if xz.len() != 1 || (wz.len() != 1 && wz.len() != m) {
        return Err(format!(
            "x_zero_point has {} elements (need 1), w_zero_point {} (need 1 or {m})",
            xz.len(),
            wz.len()
        ));
    }
    let plan = ConvolutionTaps::of(sx, sw, c)?;
    let per_output: usize = sw.dims()[1..].iter().product();
    let mut y = vec![0i32; plan.output_len()];
    plan.for_each(|xi, fi, yi| {
        let zw = if wz.len() == 1 {
            wz[0]
        } else {
            wz[fi / per_output]
        };
        let p = (xv[xi] - xz[0]) * (wv[fi] - zw);
        y[yi] = y[yi].wrapping_add(p);
    });
    Ok(TensorData::I32(y))
}

#[cfg(test)]
mod tests {
    use graphlift_ir::Window;

    use super::*;

    #[test]
    fn subtracts_zero_points_and_pads_with_them() {
        // x = [[1, 2, 3]] (UINT8, zero point 2), w = [[[1, 3]]] (UINT8, zero point 1),
        // pad 1 each side: windows [pad, 1], [1, 2], [2, 3], [3, pad] over (x - 2) = [-1, 0, 1]
        // and (w - 1) = [0, 2].
        let c = Convolution {
            window: Window {
                shape: vec![2],
                strides: vec![1],
                dilations: vec![1],
                pads_begin: vec![1],
                pads_end: vec![1],
            },
            groups: 1,
        };
        let y = convolution_integer(
            (&TensorData::U8(vec![1, 2, 3]), &Shape::new([1, 1, 3])),
            &TensorData::U8(vec![2]),
            (&TensorData::U8(vec![1, 3]), &Shape::new([1, 1, 2])),
            &TensorData::U8(vec![1]),
            &c,
        )
        .unwrap();
        assert_eq!(y, TensorData::I32(vec![-2, 0, 2, 0]));
        let wrong = convolution_integer(
            (&TensorData::U8(vec![1, 2, 3]), &Shape::new([1, 1, 3])),
            &TensorData::I8(vec![2]),
            (&TensorData::U8(vec![1, 3]), &Shape::new([1, 1, 2])),
            &TensorData::U8(vec![1]),
            &c,
        );
        assert!(wrong.unwrap_err().contains("zero points"));
    }
}
