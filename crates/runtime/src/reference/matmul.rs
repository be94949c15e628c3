//! Matrix products with numpy `matmul` batch broadcasting.

use graphlift_ir::{Shape, TensorData};

use super::widen::{floats, integers, narrow, narrow_int};

/// The offset of every batch of an output with batch extents `out`, in an operand with
/// batch extents `from` (aligned at the right; an extent of 1 repeats) and `matrix`
/// elements per batch: numpy `matmul`'s batch broadcasting, shared with native kernels.
/// `from` must broadcast to `out`.
pub fn batch_offsets(from: &[usize], out: &[usize], matrix: usize) -> Vec<usize> {
    let offset = out.len() - from.len();
    let strides = Shape::new(from).strides();
    let count: usize = out.iter().product();
    let mut idx = vec![0usize; out.len()];
    let mut result = Vec::with_capacity(count);
    for _ in 0..count {
        let batch: usize = (offset..out.len())
            .filter(|&a| from[a - offset] != 1)
            .map(|a| idx[a] * strides[a - offset])
            .sum();
        result.push(batch * matrix);
        for a in (0..out.len()).rev() {
            idx[a] += 1;
            if idx[a] < out[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    result
}

/// `a` `[..., M, K]` times `b` `[..., K, N]`; the batch axes broadcast (numpy `matmul`).
///
/// Floats accumulate in `f64` and round once; integers wrap.
///
/// # Errors
/// A message when the shapes do not fit (ranks below 2, inner extents, batch axes) or the
/// data do not fill them.
pub fn matmul(
    a: &TensorData,
    sa: &Shape,
    b: &TensorData,
    sb: &Shape,
) -> Result<TensorData, String> {
    let (da, db) = (sa.dims(), sb.dims());
    if da.len() < 2 || db.len() < 2 || da[da.len() - 1] != db[db.len() - 2] {
        return Err(format!("cannot multiply {sa} by {sb}"));
    }
    for (d, s) in [(a, sa), (b, sb)] {
        if d.len() != s.element_count().map_err(|e| e.to_string())? {
            return Err(format!("{} elements for shape {s}", d.len()));
        }
    }
    let (m, k, n) = (da[da.len() - 2], da[da.len() - 1], db[db.len() - 1]);
    let (ba, bb) = (&da[..da.len() - 2], &db[..db.len() - 2]);
    let batch = Shape::broadcast(&Shape::new(ba), &Shape::new(bb))
        .ok_or_else(|| format!("batch axes of {sa} and {sb} do not broadcast"))?;
    let oa = batch_offsets(ba, batch.dims(), m * k);
    let ob = batch_offsets(bb, batch.dims(), k * n);
    let et = a.element_type();
    if let (Some(x), Some(y)) = (floats(a), floats(b)) {
        let mut out = Vec::with_capacity(oa.len() * m * n);
        for (&pa, &pb) in oa.iter().zip(&ob) {
            for i in 0..m {
                for j in 0..n {
                    let dot: f64 = (0..k).map(|p| x[pa + i * k + p] * y[pb + p * n + j]).sum();
                    out.push(dot);
                }
            }
        }
        return Ok(narrow(et, out));
    }
    let (Some(x), Some(y)) = (integers(a), integers(b)) else {
        return Err(format!(
            "MatMul does not accept {et} and {}",
            b.element_type()
        ));
    };
    let mut out = Vec::with_capacity(oa.len() * m * n);
    for (&pa, &pb) in oa.iter().zip(&ob) {
        for i in 0..m {
            for j in 0..n {
                let dot = (0..k).fold(0i128, |s, p| {
                    s.wrapping_add(x[pa + i * k + p].wrapping_mul(y[pb + p * n + j]))
                });
                out.push(dot);
            }
        }
    }
    Ok(narrow_int(et, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiplies_with_broadcast_batches() {
        // [2, 2, 3] x [3, 1]: the second operand is shared by both batches.
        let a = TensorData::F32((0..12).map(|i| i as f32).collect());
        let b = TensorData::F32(vec![1.0, 10.0, 100.0]);
        let r = matmul(&a, &Shape::new([2, 2, 3]), &b, &Shape::new([3, 1])).unwrap();
        assert_eq!(r, TensorData::F32(vec![210.0, 543.0, 876.0, 1209.0]));
        let i = TensorData::I32(vec![1, 2, 3, 4]);
        let r = matmul(&i, &Shape::new([2, 2]), &i, &Shape::new([2, 2])).unwrap();
        assert_eq!(r, TensorData::I32(vec![7, 10, 15, 22]));
        assert!(matmul(&a, &Shape::new([2, 2, 3]), &b, &Shape::new([1, 3])).is_err());
    }
}
