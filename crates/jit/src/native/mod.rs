//! Native kernels: the CPU-JIT backend's implementations of the ops that are not fused into
//! JIT kernels. An op without a native kernel here runs the reference kernel
//! (`graphlift_runtime::reference`), so every op has exactly one definition of its meaning
//! and at most one faster implementation, tested against it.

mod convolution;
mod exp;
mod matmul;
mod normalize;
mod reduce;
mod rows;

use graphlift_ir::{Node, Op};
use graphlift_runtime::reference::evaluate_node;
use graphlift_runtime::{RuntimeError, Tensor};

use crate::parallel::Parallel;

/// Evaluates `node` on `inputs`: with a native kernel where there is one (`MatMul`, 2-D
/// `Convolution`, reductions over trailing axes, last-axis `Softmax` and `LayerNorm`, on
/// `f32`/`f64`), else with the reference kernel.
///
/// `seeded[0]`, when given, is a buffer for this node's result (the caller's output tensor or
/// a recycled intermediate); `MatMul` and `Convolution` write into it instead of
/// allocating.
///
/// # Errors
/// As [`evaluate_node`].
pub(crate) fn evaluate(
    node: &Node,
    inputs: &[&Tensor],
    seeded: Vec<Option<Tensor>>,
    parallel: &Parallel,
) -> Result<Vec<Tensor>, RuntimeError> {
    let native = match (node.op(), inputs) {
        (Op::MatMul, [a, b]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            matmul::matmul(a.data(), a.shape(), b.data(), b.shape(), out, parallel)
        }
        (Op::Reduce(r), [x]) => reduce::reduce(x.data(), x.shape(), r),
        (Op::Softmax(axis), [x]) => normalize::softmax(x.data(), x.shape(), *axis, parallel),
        (Op::LayerNorm(l), [x, g, b]) => {
            normalize::layer_norm(x.data(), x.shape(), g.data(), b.data(), l, parallel)
        }
        (Op::Convolution(c), [x, f]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            convolution::convolution(x.data(), x.shape(), f.data(), f.shape(), c, out, parallel)
        }
        _ => None,
    };
    match native {
        Some(data) => Ok(vec![Tensor::from_data(
            data,
            node.output_type().shape.clone(),
        )?]),
        None => evaluate_node(node, inputs),
    }
}
