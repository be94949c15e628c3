//! The integer matrix product of a quantized activation and INT8 weights
//! ([`graphlift_ir::Op::QuantizedMatMul`]): the definition the native kernels are tested
//! against. Plain loops: exact integers, no vectorization.

use graphlift_ir::{QuantizedMatMul, Shape, TensorData};

/// `x` quantized to UINT8 as ONNX `QuantizeLinear` computes it in FLOAT:
/// `clamp(round_half_even(x / scale) + zero_point, 0, 255)`; NaN gives 0 (the IR's `Convert`
/// of NaN to an integer).
pub fn quantize_u8(x: f32, scale: f32, zero_point: u8) -> u8 {
    let v = (x / scale).round_ties_even() + f32::from(zero_point);
    // `as` saturates, and takes NaN to 0.
    v.clamp(0.0, 255.0) as u8
}

/// [`QuantizedMatMul`] on `x` `[..., M, K]` (FLOAT), `w` `[ceil(K / 4), N, 4]` (INT8, VNNI
/// layout), `offset` `[N]` (INT32) and `scale` `[N]` (FLOAT): FLOAT `[..., M, N]` with
/// `y[.., m, n] = f32(offset[n] + Σ_k quantize_u8(x[.., m, k]) · W[k, n]) · scale[n]`, the sum
/// in wrapping INT32.
///
/// # Errors
/// A message when the operands are not of those types or shapes.
pub fn quantized_matmul(
    q: &QuantizedMatMul,
    (x, sx): (&TensorData, &Shape),
    (w, sw): (&TensorData, &Shape),
    offset: &TensorData,
    scale: &TensorData,
) -> Result<TensorData, String> {
    let (TensorData::F32(x), TensorData::I8(w), TensorData::I32(offset), TensorData::F32(scale)) =
        (x, w, offset, scale)
    else {
        return Err("QuantizedMatMul takes f32 x, i8 w, i32 offset and f32 scale".to_string());
    };
    let dx = sx.dims();
    let (&[.., _, k], &[k4, n, 4]) = (dx, sw.dims()) else {
        return Err(format!("cannot multiply x {sx} by packed w {sw}"));
    };
    if k4 != k.div_ceil(4) || w.len() != k4 * n * 4 || offset.len() != n || scale.len() != n {
        return Err(format!(
            "x {sx}, w {sw}, offset [{}], scale [{}] do not fit",
            offset.len(),
            scale.len()
        ));
    }
    if x.len() != sx.element_count().map_err(|e| e.to_string())? {
        return Err(format!("{} elements for shape {sx}", x.len()));
    }
    let rows: usize = dx[..dx.len() - 1].iter().product();
    let mut y = vec![0f32; rows * n];
    let mut a = vec![0u8; k];
    for r in 0..rows {
        for (kk, av) in a.iter_mut().enumerate() {
            *av = quantize_u8(x[r * k + kk], q.x_scale, q.x_zero_point);
        }
        for c in 0..n {
            let mut acc = offset[c];
            for (kk, &av) in a.iter().enumerate() {
                let wv = w[(kk / 4 * n + c) * 4 + kk % 4];
                acc = acc.wrapping_add(i32::from(av) * i32::from(wv));
            }
            y[r * n + c] = acc as f32 * scale[c];
        }
    }
    Ok(TensorData::F32(y))
}

/// `W` `[K, N]` (INT8, row-major) in the VNNI layout `[ceil(K / 4), N, 4]` of
/// [`graphlift_ir::Op::QuantizedMatMul`]'s `w`: `w[k / 4, n, k % 4] = W[k, n]`, zero beyond `K`.
///
/// # Panics
/// Never: a `w` shorter than `k · n` is read as zeros beyond its end.
pub fn pack_vnni(w: &[i8], k: usize, n: usize) -> Vec<i8> {
    let mut packed = vec![0i8; k.div_ceil(4) * n * 4];
    for kk in 0..k {
        for c in 0..n {
            packed[(kk / 4 * n + c) * 4 + kk % 4] = w.get(kk * n + c).copied().unwrap_or(0);
        }
    }
    packed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantizes_half_to_even_saturating_and_nan_to_zero() {
        assert_eq!(quantize_u8(2.5, 1.0, 0), 2);
        assert_eq!(quantize_u8(3.5, 1.0, 0), 4);
        assert_eq!(quantize_u8(-1.5, 1.0, 10), 8);
        assert_eq!(quantize_u8(1e30, 0.5, 3), 255);
        assert_eq!(quantize_u8(-1e30, 0.5, 3), 0);
        assert_eq!(quantize_u8(f32::NAN, 0.5, 3), 0);
    }

    #[test]
    fn matches_the_dequantized_product_in_integers() {
        // x = [[1, 2, 3, 4, 5]] at scale 0.5, zero point 1: a = [3, 5, 7, 9, 11].
        let x = TensorData::F32(vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        let wm: Vec<i8> = vec![1, -1, 2, 0, -3, 4, 5, 6, -128, 127];
        let w = TensorData::I8(pack_vnni(&wm, 5, 2));
        let q = QuantizedMatMul {
            x_scale: 0.5,
            x_zero_point: 1,
        };
        let y = quantized_matmul(
            &q,
            (&x, &Shape::new([1, 5])),
            (&w, &Shape::new([2, 2, 4])),
            &TensorData::I32(vec![10, -10]),
            &TensorData::F32(vec![1.0, 0.25]),
        )
        .unwrap();
        let a = [3, 5, 7, 9, 11];
        let col = |c: usize| -> i32 { (0..5).map(|kk| a[kk] * i32::from(wm[kk * 2 + c])).sum() };
        let want = vec![(col(0) + 10) as f32, (col(1) - 10) as f32 * 0.25];
        assert_eq!(y, TensorData::F32(want));
    }
}
