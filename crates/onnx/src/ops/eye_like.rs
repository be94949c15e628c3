//! `EyeLike`: a matrix of the input's shape with ones on one diagonal, composed as a
//! comparison of row and column positions.

use graphlift_ir::{CompareOp, Output, Shape, TensorData};

use super::layout::dims;
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;
use crate::tensor::element_type;

/// `EyeLike` (opsets 9 and 22): for a 2-D `input` `[R, C]` (only its shape and type are
/// read), `y[i, j]` is 1 where `j - i = k` (`k` default 0: the main diagonal; positive above
/// it, negative below) and 0 elsewhere, of `dtype` (a data type code: BOOL, the integers,
/// FLOAT16, FLOAT, DOUBLE, BFLOAT16; default the input's type) and shape `[R, C]`.
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] for an input not of rank 2; [`OnnxError::BadAttribute`] for
/// a mistyped `k` or `dtype`, or a `dtype` ONNX does not allow (the FLOAT8 and 4-bit types);
/// [`OnnxError::UnsupportedElementType`] for one graphlift lacks (STRING, COMPLEX).
pub(super) fn eye_like(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let [rows, cols] = d[..] else {
        return Err(e.shape_error(format!("EyeLike needs a 2-D input, got {d:?}")));
    };
    let t = match e.attr_i64("dtype")? {
        None => e.et(x)?,
        Some(code) => {
            let code = i32::try_from(code)
                .map_err(|_| e.attribute_error("dtype", format!("{code} is no data type")))?;
            element_type(code, &e.at())?
        }
    };
    if t.is_storage_only() {
        return Err(e.attribute_error("dtype", format!("EyeLike does not produce {t}")));
    }
    let k = e.attr_i64("k")?.unwrap_or(0);
    // y[i, j] = (i + k == j).
    let shifted = (0..rows as i64).map(|i| i.saturating_add(k)).collect();
    let shifted = e.constant(TensorData::I64(shifted), Shape::new([rows, 1]))?;
    let columns = (0..cols as i64).collect();
    let columns = e.constant(TensorData::I64(columns), Shape::new([1, cols]))?;
    let diagonal = e.compare(CompareOp::Equal, shifted, columns)?;
    e.convert(diagonal, t)
}
