//! `NonZero` (ONNX, numpy's `nonzero`): the indices of the elements that are not zero. Its
//! output shape depends on the values, so it runs outside compiled Functions, as a dynamic
//! step between them (`graphlift_onnx::Session`) or folded at import when its operand is
//! constant.

use graphlift_ir::{Shape, TensorData};

/// The indices of the elements of `data` (shape `from`) that are not zero, as ONNX
/// `NonZero` (opsets 9, 13) gives them: `i64[r, count]` with `r` the rank of `from` (1 for a
/// scalar, which counts as one element of rank 1, as onnxruntime and numpy's `atleast_1d`
/// take it), column `j` holding the index of the `j`-th non-zero element in row-major
/// order. NaN is not zero, `-0.0` is; `true` is not zero.
///
/// # Errors
/// A message when `data` does not fill `from`.
pub fn non_zero(data: &TensorData, from: &Shape) -> Result<(TensorData, Shape), String> {
    let n = from.element_count().map_err(|e| e.to_string())?;
    if data.len() != n {
        return Err(format!("{} elements for shape {from}", data.len()));
    }
    let dims: Vec<usize> = if from.rank() == 0 {
        vec![1]
    } else {
        from.dims().to_vec()
    };
    let hits: Vec<usize> = (0..n)
        .filter(|&i| data.get_f64(i).is_some_and(|v| v != 0.0))
        .collect();
    let count = hits.len();
    let mut out = vec![0i64; dims.len() * count];
    for (j, &flat) in hits.iter().enumerate() {
        let mut rest = flat;
        for (axis, &d) in dims.iter().enumerate().rev() {
            // Row `axis` of column `j`; `d` is not 0 since element `flat` exists.
            out[axis * count + j] = (rest % d) as i64;
            rest /= d;
        }
    }
    Ok((TensorData::I64(out), Shape::new([dims.len(), count])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_of_non_zero_elements_in_row_major_order() {
        let data = TensorData::F32(vec![1.0, 0.0, -0.0, f32::NAN, 0.0, 2.5]);
        let (idx, shape) = non_zero(&data, &Shape::new([2, 3])).unwrap();
        assert_eq!(shape, Shape::new([2, 3]));
        // (0, 0), (1, 0) for NaN, (1, 2).
        assert_eq!(idx, TensorData::I64(vec![0, 1, 1, 0, 0, 2]));
    }

    #[test]
    fn scalars_empty_results_and_bools() {
        let (idx, shape) = non_zero(&TensorData::I32(vec![7]), &Shape::scalar()).unwrap();
        assert_eq!((idx, shape), (TensorData::I64(vec![0]), Shape::new([1, 1])));
        let (idx, shape) = non_zero(&TensorData::I64(vec![0; 4]), &Shape::new([4])).unwrap();
        assert_eq!((idx, shape), (TensorData::I64(vec![]), Shape::new([1, 0])));
        let bools = TensorData::Bool(vec![false, true, true, false]);
        let (idx, _) = non_zero(&bools, &Shape::new([2, 1, 2])).unwrap();
        assert_eq!(idx, TensorData::I64(vec![0, 1, 0, 0, 1, 0]));
        assert!(non_zero(&bools, &Shape::new([3])).is_err());
    }
}
