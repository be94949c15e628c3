//! `Gather` along one axis, of any element type but strings, into the buffer the executor
//! hands over: one copy of the trailing elements per (leading index, gathered row). The
//! reference allocates its result on every call, and an embedding lookup's fresh pages then
//! cost more than its copies.

use graphlift_ir::{match_data, Element, TensorData};
use graphlift_runtime::reference::gathered_rows;
use graphlift_runtime::Tensor;

use super::result_buffer;

/// The slices of `x` along `axis` at `indices` (`i32` or `i64`, a negative index counting
/// from the end; ONNX `Gather`), into `out` when it is a buffer of the result's type and
/// length; `None` where an index is outside the axis, the indices are not integers or the
/// axis not one of `x`'s (the reference then runs, and names what is wrong).
pub(super) fn gather(
    x: &Tensor,
    indices: &Tensor,
    axis: usize,
    out: Option<TensorData>,
) -> Option<TensorData> {
    let dims = x.shape().dims();
    let &d = dims.get(axis)?;
    if x.shape().element_count().ok()? != x.data().len() {
        return None;
    }
    let rows = gathered_rows(indices.data(), d, axis).ok()?;
    let outer: usize = dims[..axis].iter().product();
    let inner: usize = dims[axis + 1..].iter().product();
    let mut y = result_buffer(out, x.element_type(), outer * rows.len() * inner);
    let extents = (d, inner);
    match_data!(&mut y, v => copy_rows(x.data(), v, &rows, extents), String(_) => None)?;
    Some(y)
}

/// `y`'s runs of `inner` elements: for each leading index `o` (of `y.len() / (rows.len() ·
/// inner)`), row `rows[r]` of the `d` along the axis, for every `r`.
fn copy_rows<T: Element>(
    x: &TensorData,
    y: &mut [T],
    rows: &[usize],
    (d, inner): (usize, usize),
) -> Option<()> {
    let x = x.as_slice::<T>()?;
    if y.is_empty() {
        return Some(());
    }
    for (o, out) in y.chunks_exact_mut(rows.len() * inner).enumerate() {
        for (&r, dst) in rows.iter().zip(out.chunks_exact_mut(inner)) {
            let at = (o * d + r) * inner;
            dst.copy_from_slice(x.get(at..at + inner)?);
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::Shape;
    use graphlift_runtime::reference;

    fn tensor(data: TensorData, dims: &[usize]) -> Tensor {
        Tensor::from_data(data, Shape::new(dims)).unwrap()
    }

    /// Every axis of a rank-3 tensor, `i32` and `i64` indices with negative ones and
    /// repeats, scalar-like and empty index lists, an integer type and a recycled buffer
    /// agree with the reference exactly; an index outside the axis is left to it.
    #[test]
    fn agrees_with_the_reference() {
        let dims = [3usize, 4, 5];
        let floats = TensorData::F32((0..60).map(|i| i as f32 * 0.5).collect());
        let ints = TensorData::I16((0..60).map(|i| i as i16 - 30).collect());
        let index_sets: [&[i64]; 4] = [&[0, -1, 2, 0], &[1], &[], &[-3, 2, 2]];
        for data in [floats, ints] {
            let x = tensor(data.clone(), &dims);
            for axis in 0..3 {
                for set in index_sets {
                    let as64 = TensorData::I64(set.to_vec());
                    let as32 = TensorData::I32(set.iter().map(|&i| i as i32).collect());
                    for idx in [as64, as32] {
                        let indices = tensor(idx.clone(), &[set.len()]);
                        let want = reference::gather(&data, x.shape(), &idx, axis).unwrap();
                        let recycled = Some(TensorData::zeros(data.element_type(), want.len()));
                        for out in [None, recycled] {
                            let got = gather(&x, &indices, axis, out).unwrap();
                            assert_eq!(got, want, "axis {axis}, indices {set:?}");
                        }
                    }
                }
            }
        }
        let x = tensor(TensorData::F32(vec![0.0; 60]), &dims);
        let bad = tensor(TensorData::I64(vec![0, 4]), &[2]);
        assert!(gather(&x, &bad, 2, None).is_some());
        for axis in [0, 1, 3] {
            assert!(gather(&x, &bad, axis, None).is_none(), "axis {axis}");
        }
    }
}
