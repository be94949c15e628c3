//! `ScatterNd`: slices of a copy of the data replaced by, or combined with, updates at
//! index tuples (ONNX `ScatterND`, and `ScatterElements` through full index tuples).

use graphlift_ir::{map_data, BinaryOp, ScatterReduction, Shape, TensorData};

use super::arith::Arith;
use super::layout::{index_values, wrap_index};

/// `data` (shape `shape`) with the slices at `indices` (shape `[I.., q]`) replaced by or
/// combined with `updates` (shape `[I.., shape[q..]]`), tuples applied in row-major order
/// (see [`graphlift_ir::Op::ScatterNd`]); `Add`, `Mul`, `Max` and `Min` are the elementwise
/// ops `Add`, `Multiply`, `Maximum` and `Minimum` of the element type (wrapping integers,
/// NaN propagating).
///
/// # Errors
/// A message for an index outside `[-d, d)` (naming it, its position and axis), indices
/// that are not integers, operands that do not fill their shapes or do not fit each other,
/// or a reduction of booleans.
pub fn scatter_nd(
    data: &TensorData,
    shape: &Shape,
    indices: &TensorData,
    indices_shape: &Shape,
    updates: &TensorData,
    reduction: ScatterReduction,
) -> Result<TensorData, String> {
    let d = shape.dims();
    let n = shape.element_count().map_err(|e| e.to_string())?;
    let idx = index_values(indices)?;
    let Some((&q, lead)) = indices_shape.dims().split_last() else {
        return Err("indices must have rank >= 1".into());
    };
    if q > d.len() || data.len() != n || idx.len() != lead.iter().product::<usize>() * q {
        return Err(format!(
            "indices {indices_shape} ({} elements) do not index data {shape} ({} elements)",
            idx.len(),
            data.len()
        ));
    }
    let tuples = lead.iter().product::<usize>();
    let inner: usize = d[q..].iter().product();
    if updates.len() != tuples * inner {
        return Err(format!(
            "{} updates given, indices {indices_shape} into {shape} take {}",
            updates.len(),
            tuples * inner
        ));
    }
    // The element offset of each tuple's slice.
    let mut offsets = Vec::with_capacity(tuples);
    for t in 0..tuples {
        let mut at = 0;
        for (axis, &extent) in d[..q].iter().enumerate() {
            let k = t * q + axis;
            at = at * extent + wrap_index(idx[k], extent, k, axis)?;
        }
        offsets.push(at * inner);
    }
    let op = match reduction {
        ScatterReduction::None => None,
        ScatterReduction::Add => Some(BinaryOp::Add),
        ScatterReduction::Mul => Some(BinaryOp::Multiply),
        ScatterReduction::Max => Some(BinaryOp::Maximum),
        ScatterReduction::Min => Some(BinaryOp::Minimum),
    };
    fn apply<T: Clone>(
        out: &mut [T],
        updates: &[T],
        offsets: &[usize],
        inner: usize,
        combine: Option<impl Fn(T, T) -> T>,
    ) {
        for (t, &at) in offsets.iter().enumerate() {
            let (dst, src) = (
                &mut out[at..at + inner],
                &updates[t * inner..(t + 1) * inner],
            );
            match &combine {
                None => dst.clone_from_slice(src),
                Some(f) => dst
                    .iter_mut()
                    .zip(src)
                    .for_each(|(o, u)| *o = f(o.clone(), u.clone())),
            }
        }
    }
    if updates.element_type() != data.element_type() {
        return Err(format!(
            "updates are {}, data {}",
            updates.element_type(),
            data.element_type()
        ));
    }
    if !data.element_type().is_numeric() && op.is_some() {
        return Err(format!(
            "reduction `{}` needs a numeric type, got {}",
            reduction.name(),
            data.element_type()
        ));
    }
    let out = map_data!(data, d => {
        let mut o = d.to_vec();
        let u = updates.as_slice().unwrap_or_default();
        apply(&mut o, u, &offsets, inner, op.map(|b| move |x, y| Arith::binary(b, x, y)));
        o
    }, String(d) => {
        // Strings only move (no reduction: checked above).
        let mut o = d.to_vec();
        let u = updates.as_strings().unwrap_or_default();
        apply(&mut o, u, &offsets, inner, None::<fn(String, String) -> String>);
        o
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scatter(
        data: Vec<f32>,
        shape: &[usize],
        idx: Vec<i64>,
        idx_shape: &[usize],
        updates: Vec<f32>,
        r: ScatterReduction,
    ) -> Result<TensorData, String> {
        scatter_nd(
            &TensorData::F32(data),
            &Shape::new(shape),
            &TensorData::I64(idx),
            &Shape::new(idx_shape),
            &TensorData::F32(updates),
            r,
        )
    }

    #[test]
    fn slices_and_elements_with_every_reduction() {
        // Rows 2 and 0 of [[1, 2], [3, 4], [5, 6]] replaced (a negative index counts back).
        let rows = scatter(
            vec![1., 2., 3., 4., 5., 6.],
            &[3, 2],
            vec![-1, 0],
            &[2, 1],
            vec![9., 8., 7., 6.],
            ScatterReduction::None,
        );
        assert_eq!(rows.unwrap(), TensorData::F32(vec![7., 6., 3., 4., 9., 8.]));
        // Element (1, 0) hit twice, (0, 1) once.
        let base = vec![1., 2., 3., 4.];
        let idx = vec![1, 0, 0, 1, 1, 0];
        let upd = vec![10., 20., 5.];
        let run = |r| scatter(base.clone(), &[2, 2], idx.clone(), &[3, 2], upd.clone(), r);
        let f = |v: Vec<f32>| TensorData::F32(v);
        assert_eq!(
            run(ScatterReduction::None).unwrap(),
            f(vec![1., 20., 5., 4.])
        );
        assert_eq!(
            run(ScatterReduction::Add).unwrap(),
            f(vec![1., 22., 18., 4.])
        );
        assert_eq!(
            run(ScatterReduction::Mul).unwrap(),
            f(vec![1., 40., 150., 4.])
        );
        assert_eq!(
            run(ScatterReduction::Max).unwrap(),
            f(vec![1., 20., 10., 4.])
        );
        assert_eq!(run(ScatterReduction::Min).unwrap(), f(vec![1., 2., 3., 4.]));
        // q = 0: the update replaces the whole tensor.
        let all = scatter(
            vec![1., 2.],
            &[2],
            vec![],
            &[0],
            vec![3., 4.],
            ScatterReduction::None,
        );
        assert_eq!(all.unwrap(), f(vec![3., 4.]));
        let ints = scatter_nd(
            &TensorData::I32(vec![1, 2]),
            &Shape::new([2]),
            &TensorData::I32(vec![1]),
            &Shape::new([1, 1]),
            &TensorData::I32(vec![5]),
            ScatterReduction::Add,
        );
        assert_eq!(ints.unwrap(), TensorData::I32(vec![1, 7]));
    }

    #[test]
    fn out_of_range_indices_and_bad_operands_are_errors() {
        let e = scatter(
            vec![1., 2.],
            &[2],
            vec![2],
            &[1, 1],
            vec![0.],
            ScatterReduction::None,
        );
        assert!(e.unwrap_err().contains("outside [-2, 2)"));
        let e = scatter(
            vec![1., 2.],
            &[2],
            vec![0],
            &[1, 1],
            vec![],
            ScatterReduction::None,
        );
        assert!(e.unwrap_err().contains("updates"));
        let b = scatter_nd(
            &TensorData::Bool(vec![true]),
            &Shape::new([1]),
            &TensorData::I64(vec![0]),
            &Shape::new([1, 1]),
            &TensorData::Bool(vec![false]),
            ScatterReduction::Add,
        );
        assert!(b.unwrap_err().contains("numeric"));
    }
}
