//! Composite functions as the elementwise nodes graphlift computes them, written once for
//! everything that adds them to a graph: the ONNX importer (an operator) and the canonical
//! forms pass (an exporter's spelling of the same function).

use crate::{BinaryOp, Output, UnaryOp};

/// Adds elementwise nodes to a graph under construction: the ONNX importer's node emitter,
/// a pass's emitter. Each call returns the new node's output, or the emitter's error.
pub trait ElementwiseEmitter {
    /// The emitter's error (an import or a pass error).
    type Error;
    /// A node of the unary `op` on `x`.
    fn unary(&mut self, op: UnaryOp, x: Output) -> Result<Output, Self::Error>;
    /// A node of the binary `op` on `a` and `b` (of one element type and shape).
    fn binary(&mut self, op: BinaryOp, a: Output, b: Output) -> Result<Output, Self::Error>;
}

/// `ln(1 + e^x)` (ONNX `Softplus`) as `relu(x) + log1p(e^-|x|)`, for a float `x` of any
/// shape: it does not overflow for large `x` (the result is `x` there), and keeps relative
/// accuracy far below zero, where the result is `e^x` and `ln(1 + tiny)` would round to 0.
///
/// # Errors
/// The emitter's, from any node it adds.
pub fn softplus<E: ElementwiseEmitter>(e: &mut E, x: Output) -> Result<Output, E::Error> {
    let relu = e.unary(UnaryOp::Relu, x)?;
    let magnitude = e.unary(UnaryOp::Abs, x)?;
    let minus = e.unary(UnaryOp::Negative, magnitude)?;
    let exp = e.unary(UnaryOp::Exp, minus)?;
    let tail = e.unary(UnaryOp::Log1p, exp)?;
    e.binary(BinaryOp::Add, relu, tail)
}
