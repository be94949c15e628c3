//! Float tensors widened to `f64` for the reference's compute kernels, and rounded back
//! once at the end (so an `f32` result is the correctly rounded value of the `f64`
//! computation, as for the elementwise ops).

use graphlift_ir::{ElementType, Shape, TensorData};

/// `data`'s elements as `f64`, or `None` for a non-float tensor.
pub(crate) fn floats(data: &TensorData) -> Option<Vec<f64>> {
    match data {
        TensorData::F32(v) => Some(v.iter().map(|&x| f64::from(x)).collect()),
        TensorData::F64(v) => Some(v.clone()),
        _ => None,
    }
}

/// `values` rounded once to `element_type` (`f32` or `f64`; anything else is given `f64`).
pub(crate) fn narrow(element_type: ElementType, values: Vec<f64>) -> TensorData {
    match element_type {
        ElementType::F32 => TensorData::F32(values.into_iter().map(|x| x as f32).collect()),
        _ => TensorData::F64(values),
    }
}

/// `data`'s elements as wrapping `i64` (`i32` sign-extended), or `None` for a non-integer.
pub(crate) fn integers(data: &TensorData) -> Option<Vec<i64>> {
    match data {
        TensorData::I32(v) => Some(v.iter().map(|&x| i64::from(x)).collect()),
        TensorData::I64(v) => Some(v.clone()),
        _ => None,
    }
}

/// `values` truncated to `element_type` (`i32` keeps the low bits, as two's-complement
/// wrapping arithmetic in `i32` would have given).
pub(crate) fn narrow_int(element_type: ElementType, values: Vec<i64>) -> TensorData {
    match element_type {
        ElementType::I32 => TensorData::I32(values.into_iter().map(|x| x as i32).collect()),
        _ => TensorData::I64(values),
    }
}

/// `data`'s elements as `f64` after checking it is a float tensor filling `shape`; `what`
/// names the operand in the message.
pub(crate) fn float_operand(
    data: &TensorData,
    shape: &Shape,
    what: &str,
) -> Result<Vec<f64>, String> {
    let x =
        floats(data).ok_or_else(|| format!("{what} is {}, not a float", data.element_type()))?;
    if x.len() != shape.element_count().map_err(|e| e.to_string())? {
        return Err(format!("{what}: {} elements for shape {shape}", x.len()));
    }
    Ok(x)
}
