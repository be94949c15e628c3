//! Shape and element-type inference: the output types of an op from its operand types.

mod attention;
mod backprop;
mod quantized;
mod recurrent;
mod sampling;
mod tensor_ops;

use smallvec::{smallvec, SmallVec};

use crate::{BinaryOp, ElementType, Op, TensorType};

/// The output types of a node: one for every op but a multi-output fused kernel (inline).
pub type OutputTypes = SmallVec<[TensorType; 1]>;

/// The output types of `op` applied to operands of types `inputs`.
///
/// `Parameter` and `Constant` take no operands and carry their type themselves, so they are
/// not inferred here (the caller passes their type in); a `Variable`'s type is its
/// initializer's result type. That an `Assign` or `ReadVariable` reads a `Variable` is a
/// fact of the graph, checked by [`crate::Function::validate`], not of types. Returns a message saying what is
/// wrong; [`crate::Function::add_node`] wraps it with the op, the operands and the creation
/// site.
pub fn infer_output_types(op: &Op, inputs: &[TensorType]) -> Result<OutputTypes, String> {
    let arity = |n: usize| -> Result<(), String> {
        if inputs.len() == n {
            Ok(())
        } else {
            Err(format!("expects {n} operand(s), got {}", inputs.len()))
        }
    };
    match op {
        Op::Parameter | Op::Constant(_) => {
            Err("Parameter and Constant are created with their own type".to_string())
        }
        Op::Result => {
            arity(1)?;
            Ok(smallvec![inputs[0].clone()])
        }
        Op::Unary(u) => {
            arity(1)?;
            let t = &inputs[0];
            if !u.accepts(t.element_type) {
                return Err(format!("does not accept element type {}", t.element_type));
            }
            Ok(smallvec![t.clone()])
        }
        Op::Binary(b) => {
            arity(2)?;
            same_shape(&inputs[0], &inputs[1])?;
            same_type(&inputs[0], &inputs[1])?;
            if !b.accepts(inputs[0].element_type) {
                let want = if matches!(b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor) {
                    "bool or an integer type"
                } else {
                    "a numeric type"
                };
                return Err(format!(
                    "does not accept element type {} (needs {want})",
                    inputs[0].element_type
                ));
            }
            Ok(smallvec![inputs[0].clone()])
        }
        Op::Compare(c) => {
            arity(2)?;
            same_shape(&inputs[0], &inputs[1])?;
            same_type(&inputs[0], &inputs[1])?;
            let t = inputs[0].element_type;
            if !c.accepts(t) {
                let why = if t == ElementType::String {
                    "strings are only compared for equality"
                } else {
                    "storage only: convert it first"
                };
                return Err(format!("does not accept element type {t} ({why})"));
            }
            Ok(smallvec![TensorType::new(
                ElementType::Bool,
                inputs[0].shape.clone(),
            )])
        }
        Op::Select => {
            arity(3)?;
            if inputs[0].element_type != ElementType::Bool {
                return Err(format!(
                    "condition must be bool, is {}",
                    inputs[0].element_type
                ));
            }
            same_shape(&inputs[0], &inputs[1])?;
            same_shape(&inputs[1], &inputs[2])?;
            same_type(&inputs[1], &inputs[2])?;
            Ok(smallvec![inputs[1].clone()])
        }
        Op::Convert(to) => {
            arity(1)?;
            Ok(smallvec![TensorType::new(*to, inputs[0].shape.clone())])
        }
        Op::Broadcast(target) => {
            arity(1)?;
            target
                .element_count()
                .map_err(|e| format!("target shape invalid: {e}"))?;
            if !inputs[0].shape.broadcasts_to(target) {
                return Err(format!(
                    "shape {} does not broadcast to {target} (numpy rules)",
                    inputs[0].shape
                ));
            }
            Ok(smallvec![TensorType::new(
                inputs[0].element_type,
                target.clone(),
            )])
        }
        Op::FusedKernel(k) => {
            if k.body.results().is_empty() {
                return Err("a fused kernel must have at least one output".to_string());
            }
            let params = k.body.parameters();
            arity(params.len())?;
            for (i, (&p, t)) in params.iter().zip(inputs).enumerate() {
                let want = k.body.node(p).map_err(|e| e.to_string())?.output_type();
                if want != t {
                    return Err(format!("live-in {i} must be {want}, is {t}"));
                }
            }
            k.body
                .results()
                .iter()
                .map(|&r| {
                    k.body
                        .node(r)
                        .map(|n| n.output_type().clone())
                        .map_err(|e| e.to_string())
                })
                .collect()
        }
        Op::ControlFlow(c) => c.infer(inputs).map(OutputTypes::from_vec),
        Op::Reshape(target) => tensor_ops::reshape(target, inputs),
        Op::Transpose(perm) => tensor_ops::transpose(perm, inputs),
        Op::Slice(axes) => tensor_ops::slice(axes, inputs),
        Op::Pad(p) => tensor_ops::pad(p, inputs),
        Op::Concat(axis) => tensor_ops::concat(*axis, inputs),
        Op::Gather(axis) => tensor_ops::gather(*axis, inputs),
        Op::ScatterAdd(s) => tensor_ops::scatter_add(s, inputs),
        Op::ScatterNd(r) => tensor_ops::scatter_nd(*r, inputs),
        Op::Reduce(r) => tensor_ops::reduce(r, inputs),
        Op::ArgReduce(r) => sampling::arg_reduce(r, inputs),
        Op::TopK(t) => sampling::top_k(t, inputs),
        Op::CumSum(c) => {
            arity(1)?;
            let x = &inputs[0];
            if !x.element_type.is_numeric() {
                return Err(format!("needs a numeric operand, got {}", x.element_type));
            }
            if c.axis >= x.shape.rank() {
                return Err(format!(
                    "axis {} is out of range for rank {}",
                    c.axis,
                    x.shape.rank()
                ));
            }
            Ok(smallvec![x.clone()])
        }
        Op::Resize(r) => sampling::resize(r, inputs),
        Op::GridSample(_) => sampling::grid_sample(inputs),
        Op::MatMul => tensor_ops::matmul(inputs),
        Op::QuantizedMatMul(q) => quantized::quantized_matmul(q, inputs),
        Op::Softmax(axis) => tensor_ops::softmax(*axis, inputs),
        Op::LayerNorm(l) => tensor_ops::layer_norm(l, inputs),
        Op::Attention(a) => attention::attention(a, inputs),
        Op::Recurrent(r) => recurrent::recurrent(r, inputs),
        Op::Convolution(c) => tensor_ops::convolution(c, inputs),
        Op::ConvolutionInteger(c) => quantized::convolution_integer(c, inputs),
        Op::BatchNormInference(eps) => tensor_ops::batch_norm(*eps, inputs),
        Op::MaxPool(w) => tensor_ops::max_pool(w, inputs),
        Op::MaxPoolIndices(w) => {
            let mut t = tensor_ops::max_pool(w, inputs)?;
            t[0].element_type = ElementType::I64;
            Ok(t)
        }
        Op::ConvolutionBackpropData(b) => backprop::convolution_backprop_data(b, inputs),
        Op::ConvolutionBackpropFilters(b) => backprop::convolution_backprop_filters(b, inputs),
        Op::MaxPoolBackprop(w) => backprop::max_pool_backprop(w, inputs),
        Op::Variable(v) => {
            arity(0)?;
            match v.initializer.result_types().as_slice() {
                [t] => Ok(smallvec![t.clone()]),
                other => Err(format!(
                    "the initializer must have one result, has {}",
                    other.len()
                )),
            }
        }
        Op::Random(r) => {
            arity(0)?;
            r.check()?;
            Ok(smallvec![TensorType::new(r.element_type, r.shape.clone())])
        }
        Op::ReadVariable => {
            arity(1)?;
            Ok(smallvec![inputs[0].clone()])
        }
        Op::Assign => {
            arity(2)?;
            if inputs[0] != inputs[1] {
                return Err(format!(
                    "assigns a value of {} to a variable of {} (element type and shape must match)",
                    inputs[1], inputs[0]
                ));
            }
            Ok(smallvec![inputs[1].clone()])
        }
    }
}

fn same_shape(a: &TensorType, b: &TensorType) -> Result<(), String> {
    if a.shape == b.shape {
        Ok(())
    } else {
        Err(format!(
            "operand shapes {} and {} differ (insert a Broadcast)",
            a.shape, b.shape
        ))
    }
}

fn same_type(a: &TensorType, b: &TensorType) -> Result<(), String> {
    if a.element_type == b.element_type {
        Ok(())
    } else {
        Err(format!(
            "operand element types {} and {} differ (insert a Convert)",
            a.element_type, b.element_type
        ))
    }
}
