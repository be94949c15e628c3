//! `RMSNormalization` (opset 23; the RMSNorm of Zhang and Sennrich, arXiv:1910.07467, that
//! PyTorch's dynamo exporter writes for `torch.nn.RMSNorm`), composed as the ONNX function
//! body composes it.

use graphlift_ir::{BinaryOp, ElementType, Op, Output, ReduceOp, Reduction, UnaryOp};

use super::layout::{axis, dims};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `RMSNormalization` (opset 23) of `X` (FLOAT16, FLOAT, DOUBLE or BFLOAT16, rank `r >= 1`)
/// over the axes `axis..r` (`axis` in `[-r, r)`, default -1), with `scale` (a float type
/// `V`) broadcast unidirectionally (numpy) to `X`'s shape:
///
/// ```text
/// XU         = Cast(X, stash_type)                          (FLOAT by default)
/// Normalized = XU / Sqrt(ReduceMean(XU · XU, axis..r) + epsilon)   (epsilon 1e-5)
/// Y          = Cast(Normalized, T) · scale                  (X's shape, of V)
/// ```
///
/// `Normalized` is rounded to `X`'s type `T` as the specification says, then converted to
/// `V` when `scale` has another float type.
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for a non-float `X` or `scale`; [`OnnxError::BadAttribute`]
/// for an `axis` out of range or a `stash_type` that is not a float type;
/// [`OnnxError::ShapeMismatch`] for a `scale` that does not broadcast to `X`.
pub(super) fn rms_normalization(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (x, scale) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let t = e.require(x, ElementType::is_float, "a float `X`")?;
    let v = e.require(scale, ElementType::is_float, "a float `scale`")?;
    let d = dims(e, x)?;
    let first = axis(e, e.attr_i64("axis")?.unwrap_or(-1), d.len(), "axis")?;
    let epsilon = f64::from(e.attr_f32("epsilon", 1e-5)?);
    let stash = e.attr_float_type("stash_type")?.unwrap_or(ElementType::F32);
    let (x_shape, scale_shape) = (e.ty(x)?.shape, e.ty(scale)?.shape);
    if !scale_shape.broadcasts_to(&x_shape) {
        return Err(e.shape_error(format!(
            "scale {scale_shape} does not broadcast to X {x_shape}"
        )));
    }
    let xu = e.convert(x, stash)?;
    let squared = e.binary(BinaryOp::Multiply, xu, xu)?;
    let mean = Reduction {
        op: ReduceOp::Mean,
        axes: (first..d.len()).collect(),
        keep_dims: true,
    };
    let mean = e.op(Op::Reduce(mean), &[squared])?;
    let shifted = e.add_scalar(mean, epsilon)?;
    let rms = e.unary(UnaryOp::Sqrt, shifted)?;
    let normalized = e.binary(BinaryOp::Divide, xu, rms)?;
    let normalized = e.convert(normalized, t)?;
    let normalized = e.convert(normalized, v)?;
    e.binary(BinaryOp::Multiply, normalized, scale)
}
