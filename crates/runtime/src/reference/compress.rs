//! `Compress` (ONNX opsets 9, 11; numpy's `compress`): the slices (or, without an axis, the
//! elements) where a boolean condition holds. Its output length depends on the condition's
//! values, so, like `NonZero`, it runs as a dynamic step between compiled Functions
//! (`graphlift_onnx::Session`), or becomes a `Gather` at import when the condition is
//! constant.

use graphlift_ir::{Shape, TensorData};

use super::layout::gather;

/// The positions where `condition` (BOOL, one axis) is true, among the first `extent`:
/// ONNX `Compress` drops what lies beyond the condition's length.
///
/// # Errors
/// A message when `condition` is not BOOL or is longer than `extent`.
pub fn compress_positions(condition: &TensorData, extent: usize) -> Result<Vec<i64>, String> {
    let TensorData::Bool(c) = condition else {
        return Err(format!(
            "condition is {}, not BOOL",
            condition.element_type()
        ));
    };
    if c.len() > extent {
        return Err(format!(
            "condition of {} values for an axis of {extent}",
            c.len()
        ));
    }
    Ok((0..c.len() as i64).filter(|&i| c[i as usize]).collect())
}

/// `data` (shape `from`) compressed along `axis` (a normalised axis; `None`: the flattened
/// tensor) by `condition`: the slices at the positions [`compress_positions`] gives, in
/// order; the result and its shape.
///
/// # Errors
/// As [`compress_positions`], or when `axis` is out of range or `data` does not fill `from`.
pub fn compress(
    data: &TensorData,
    from: &Shape,
    condition: &TensorData,
    axis: Option<usize>,
) -> Result<(TensorData, Shape), String> {
    let flat;
    let (from, axis) = match axis {
        Some(a) => (from, a),
        None => {
            flat = Shape::new([from.element_count().map_err(|e| e.to_string())?]);
            (&flat, 0)
        }
    };
    let Some(&extent) = from.dims().get(axis) else {
        return Err(format!("axis {axis} is out of range for {from}"));
    };
    let at = compress_positions(condition, extent)?;
    let mut dims = from.dims().to_vec();
    dims[axis] = at.len();
    let y = gather(data, from, &TensorData::I64(at), axis)?;
    Ok((y, Shape::new(dims)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_or_elements_where_the_condition_holds() {
        let x = TensorData::F32((0..6).map(|v| v as f32).collect());
        let s = Shape::new([3, 2]);
        let c = TensorData::Bool(vec![false, true, true]);
        let (y, sy) = compress(&x, &s, &c, Some(0)).unwrap();
        assert_eq!(
            (y, sy),
            (TensorData::F32(vec![2., 3., 4., 5.]), Shape::new([2, 2]))
        );
        // A short condition drops the rest; no axis compresses the flattened tensor.
        let c = TensorData::Bool(vec![true, false, true]);
        let (y, sy) = compress(&x, &s, &c, None).unwrap();
        assert_eq!((y, sy), (TensorData::F32(vec![0., 2.]), Shape::new([2])));
        let none = TensorData::Bool(vec![false]);
        let (y, sy) = compress(&x, &s, &none, Some(1)).unwrap();
        assert_eq!((y.len(), sy), (0, Shape::new([3, 0])));
    }

    #[test]
    fn bad_conditions_and_axes_are_errors() {
        let x = TensorData::F32(vec![0.0; 6]);
        let s = Shape::new([3, 2]);
        assert!(compress(&x, &s, &TensorData::Bool(vec![true; 3]), Some(1)).is_err());
        assert!(compress(&x, &s, &TensorData::I64(vec![1]), Some(0)).is_err());
        assert!(compress(&x, &s, &TensorData::Bool(vec![true]), Some(2)).is_err());
    }
}
