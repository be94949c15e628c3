//! Tensors widened for the reference's compute kernels and narrowed back once at the end:
//! floats (`f16`, `bf16`, `f32`, `f64`) to `f64`, rounded once to the element type (so a
//! result is the correctly rounded value of the `f64` computation, as for the elementwise
//! ops); integers of every width to `i128`, where wrapping `i128` arithmetic truncated to
//! the element type is the element type's own wrapping arithmetic.

use graphlift_ir::{match_data, Element, ElementType, Shape, TensorData};
use num_traits::AsPrimitive;

/// `data`'s elements as `f64` (exact), or `None` for a non-float tensor.
pub(crate) fn floats(data: &TensorData) -> Option<Vec<f64>> {
    data.element_type().is_float().then(
        || match_data!(data, v => v.iter().map(|&x| x.to_f64()).collect(), String(_) => Vec::new()),
    )
}

/// `values` rounded once to `element_type` (to nearest even; a non-float type is given
/// `f64`).
pub(crate) fn narrow(element_type: ElementType, values: Vec<f64>) -> TensorData {
    match element_type {
        ElementType::F32 | ElementType::F16 | ElementType::BF16 => {
            TensorData::from_f64(element_type, &values)
        }
        _ => TensorData::F64(values),
    }
}

/// `data`'s elements as `i128` (exact for every integer type), or `None` for a non-integer.
pub(crate) fn integers(data: &TensorData) -> Option<Vec<i128>> {
    fn wide<T: AsPrimitive<i128>>(v: &[T]) -> Vec<i128> {
        v.iter().map(|&x| x.as_()).collect()
    }
    Some(match data {
        TensorData::I8(v) => wide(v),
        TensorData::U8(v) => wide(v),
        TensorData::I16(v) => wide(v),
        TensorData::U16(v) => wide(v),
        TensorData::I32(v) => wide(v),
        TensorData::U32(v) => wide(v),
        TensorData::I64(v) => wide(v),
        TensorData::U64(v) => wide(v),
        _ => return None,
    })
}

/// The least and greatest values of integer type `element_type` (`None` for another type).
pub(crate) fn integer_range(element_type: ElementType) -> Option<(i128, i128)> {
    fn range<T: Element + AsPrimitive<i128> + num_traits::Bounded>() -> Option<(i128, i128)> {
        Some((T::min_value().as_(), T::max_value().as_()))
    }
    match element_type {
        ElementType::I8 => range::<i8>(),
        ElementType::U8 => range::<u8>(),
        ElementType::I16 => range::<i16>(),
        ElementType::U16 => range::<u16>(),
        ElementType::I32 => range::<i32>(),
        ElementType::U32 => range::<u32>(),
        ElementType::I64 => range::<i64>(),
        ElementType::U64 => range::<u64>(),
        _ => None,
    }
}

/// `values` truncated to integer type `element_type`, keeping the low bits (as wrapping
/// arithmetic in that type would have given); a non-integer type is given `i64`.
pub(crate) fn narrow_int(element_type: ElementType, values: Vec<i128>) -> TensorData {
    fn cut<T: Element>(values: &[i128]) -> TensorData
    where
        i128: AsPrimitive<T>,
    {
        T::into_data(values.iter().map(|&x| x.as_()).collect())
    }
    match element_type {
        ElementType::I8 => cut::<i8>(&values),
        ElementType::U8 => cut::<u8>(&values),
        ElementType::I16 => cut::<i16>(&values),
        ElementType::U16 => cut::<u16>(&values),
        ElementType::I32 => cut::<i32>(&values),
        ElementType::U32 => cut::<u32>(&values),
        ElementType::U64 => cut::<u64>(&values),
        _ => cut::<i64>(&values),
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
