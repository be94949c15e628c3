//! Matrix products with numpy `matmul` batch broadcasting.

use graphlift_ir::{Shape, TensorData};
use multiversion::multiversion;

use super::widen::{floats, narrow};

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
    let dims = (m, k, n);
    let out = match (a, b) {
        (TensorData::I8(x), TensorData::I8(y)) => TensorData::I8(wrapping(x, y, &oa, &ob, dims)),
        (TensorData::U8(x), TensorData::U8(y)) => TensorData::U8(wrapping(x, y, &oa, &ob, dims)),
        (TensorData::I16(x), TensorData::I16(y)) => TensorData::I16(wrapping(x, y, &oa, &ob, dims)),
        (TensorData::U16(x), TensorData::U16(y)) => TensorData::U16(wrapping(x, y, &oa, &ob, dims)),
        (TensorData::I32(x), TensorData::I32(y)) => TensorData::I32(wrapping(x, y, &oa, &ob, dims)),
        (TensorData::U32(x), TensorData::U32(y)) => TensorData::U32(wrapping(x, y, &oa, &ob, dims)),
        (TensorData::I64(x), TensorData::I64(y)) => TensorData::I64(wrapping(x, y, &oa, &ob, dims)),
        (TensorData::U64(x), TensorData::U64(y)) => TensorData::U64(wrapping(x, y, &oa, &ob, dims)),
        _ => {
            return Err(format!(
                "MatMul does not accept {et} and {}",
                b.element_type()
            ))
        }
    };
    Ok(out)
}

/// The integer products of the batches at offsets `oa` / `ob`, wrapping in `T`: arithmetic
/// modulo `2^bits` is exact whatever the order of the additions, so each row of the result
/// accumulates row `p` of `y` scaled by `x[i, p]` in turn (contiguous, vectorisable), the
/// same result as the dot products in any order.
fn wrapping<T>(
    x: &[T],
    y: &[T],
    oa: &[usize],
    ob: &[usize],
    (m, k, n): (usize, usize, usize),
) -> Vec<T>
where
    T: Copy + num_traits::Zero + num_traits::WrappingAdd + num_traits::WrappingMul,
{
    let mut out = vec![T::zero(); oa.len() * m * n];
    for (c, (&pa, &pb)) in out.chunks_mut((m * n).max(1)).zip(oa.iter().zip(ob)) {
        for (i, row) in c.chunks_mut(n.max(1)).take(m).enumerate() {
            for p in 0..k {
                axpy(row, x[pa + i * k + p], &y[pb + p * n..pb + (p + 1) * n]);
            }
        }
    }
    out
}

/// `row += s · y_row`, wrapping.
#[multiversion(targets = "simd")]
fn axpy<T>(row: &mut [T], s: T, y_row: &[T])
where
    T: Copy + num_traits::WrappingAdd + num_traits::WrappingMul,
{
    for (o, &v) in row.iter_mut().zip(y_row) {
        *o = o.wrapping_add(&s.wrapping_mul(&v));
    }
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
