//! Numpy broadcasting of a tensor to a larger shape.

use graphlift_ir::{Shape, TensorData};

use super::layout::take_strided;

/// Broadcasts `data` of shape `from` to shape `to` (numpy rules: axes aligned at the right,
/// an extent of 1 repeats).
///
/// # Errors
/// A message when `from` does not broadcast to `to` or the data does not fill `from`.
pub fn broadcast(data: &TensorData, from: &Shape, to: &Shape) -> Result<TensorData, String> {
    if !from.broadcasts_to(to) {
        return Err(format!("shape {from} does not broadcast to {to}"));
    }
    let n_in = from.element_count().map_err(|e| e.to_string())?;
    if data.len() != n_in {
        return Err(format!("{} elements for shape {from}", data.len()));
    }
    to.element_count().map_err(|e| e.to_string())?;
    let rank = to.rank();
    let offset = rank - from.rank();
    let in_strides = from.strides();
    // Stride in the source for each output axis (0 where the source repeats).
    let strides: Vec<isize> = (0..rank)
        .map(|a| {
            if a < offset || from.dims()[a - offset] == 1 {
                0
            } else {
                in_strides[a - offset] as isize
            }
        })
        .collect();
    Ok(take_strided(data, to.dims(), &strides, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasts_rows_and_columns() {
        let d = TensorData::F32(vec![1.0, 2.0, 3.0]);
        let r = broadcast(&d, &Shape::new([3]), &Shape::new([2, 3])).unwrap();
        assert_eq!(r, TensorData::F32(vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]));
        let r = broadcast(&d, &Shape::new([3, 1]), &Shape::new([3, 2])).unwrap();
        assert_eq!(r, TensorData::F32(vec![1.0, 1.0, 2.0, 2.0, 3.0, 3.0]));
        let s = TensorData::I32(vec![7]);
        let r = broadcast(&s, &Shape::scalar(), &Shape::new([2, 0])).unwrap();
        assert_eq!(r, TensorData::I32(vec![]));
        assert!(broadcast(&d, &Shape::new([3]), &Shape::new([4])).is_err());
    }
}
