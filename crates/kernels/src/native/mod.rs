//! Native kernels: the CPU-JIT backend's implementations of the ops not fused into JIT
//! kernels. An op without one runs the reference kernel (`graphlift_runtime::reference`), so
//! every op has one definition of its meaning and at most one faster version, tested against it.

mod arg_reduce;
mod attention;
mod batch_norm;
mod concat;
mod conv_channels;
mod conv_dense;
mod conv_geometry;
mod conv_integer;
mod convert;
mod convolution;
mod convolution_backprop;
#[cfg(test)]
mod convolution_cases;
mod depthwise;
mod depthwise_avx2;
mod depthwise_avx512;
mod depthwise_lanes;
mod depthwise_shift;
mod depthwise_tiles;
mod epilogue;
mod gather;
mod gemm_call;
mod int_avx2;
mod lanes;
mod matmul;
mod matmul_integer;
mod matmul_narrow;
mod narrow_vnni;
mod normalize;
mod packed;
mod pad;
mod phases;
mod pooling;
mod quantized_matmul;
mod recurrent;
mod reduce;
mod resize;
mod resize_taps;
mod rows;
mod scratch;
mod slice;
mod transpose;
mod whole_image;

use graphlift_ir::{ElementType, Node, Op, ResizeMode, TensorData};
use graphlift_runtime::reference::evaluate_node;
use graphlift_runtime::{RuntimeError, Tensor};

use crate::parallel::Parallel;
pub use epilogue::{Block, Epilogue};
pub use packed::{prepare, PackedWeights, Side};

/// Evaluates `node` on `inputs`: with a native kernel where there is one (`MatMul`, 2-D
/// `Convolution` (and 1-D, as 2-D over a unit height), 1-D/2-D `ConvolutionInteger`,
/// `QuantizedMatMul` and the convolution's 2-D adjoints
/// `ConvolutionBackpropData` and `ConvolutionBackpropFilters`, 2-D `MaxPool` and
/// `MaxPoolBackprop`, `Resize` (nearest-neighbour, linear and cubic), `Concat`, `Transpose`,
/// `Gather` and `Slice` with positive steps (every element type), `Convert` between `f32` and the
/// half types, reductions over trailing axes, last-axis `Softmax`, `LayerNorm` over
/// trailing axes, `BatchNormInference`, `Attention`, on `f32`/`f64`; the recurrent sequence
/// ops and last-axis `ArgMax`/`ArgMin` on `f32`), else with the reference kernel.
///
/// `seeded[0]`, when given, is a buffer for this node's result (the caller's output tensor or
/// a recycled intermediate); the ops of [`writes_into_seed`] write into it where it has the
/// result's type instead of allocating.
///
/// # Errors
/// As [`evaluate_node`].
pub fn evaluate(
    node: &Node,
    inputs: &[&Tensor],
    seeded: Vec<Option<Tensor>>,
    parallel: &Parallel,
) -> Result<Vec<Tensor>, RuntimeError> {
    evaluate_with_epilogue(node, inputs, seeded, parallel, None, None).map(|(outs, _)| outs)
}

/// As [`evaluate`], and when `epilogue` is given and the node is a `MatMul` or 1-D/2-D
/// `Convolution` with a native kernel, the epilogue runs on each block of the result as soon
/// as the block is written (see [`Epilogue`]). The `bool` tells whether it ran: when it is
/// `false` (a reference kernel ran), the caller runs the epilogue's work over the whole
/// result itself. `packed`, the weights [`prepare`] made for this node when the executable
/// was compiled, runs its `f32` products on the packed path.
///
/// # Errors
/// As [`evaluate_node`].
pub fn evaluate_with_epilogue(
    node: &Node,
    inputs: &[&Tensor],
    seeded: Vec<Option<Tensor>>,
    parallel: &Parallel,
    epilogue: Option<Epilogue<'_>>,
    packed: Option<&PackedWeights>,
) -> Result<(Vec<Tensor>, bool), RuntimeError> {
    if let Op::Recurrent(r) = node.op() {
        if let Some(outs) = recurrent::recurrent(r, inputs, parallel, packed) {
            return Ok((outs, false));
        }
    }
    let native = match (node.op(), inputs) {
        (Op::MatMul, [a, b]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            matmul::matmul(
                (a.data(), a.shape()),
                (b.data(), b.shape()),
                out,
                parallel,
                epilogue,
                packed,
            )
        }
        (Op::QuantizedMatMul(q), [x, w, offset, scale]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            let operands = [*x, *w, *offset, *scale];
            quantized_matmul::quantized_matmul(q, operands, out, parallel, (epilogue, packed))
        }
        (Op::Reduce(r), [x]) => reduce::reduce(x.data(), x.shape(), r),
        (Op::ArgReduce(r), [x]) => arg_reduce::arg_reduce(x.data(), x.shape(), r),
        (Op::Softmax(axis), [x]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            normalize::softmax(x.data(), x.shape(), *axis, parallel, out)
        }
        (Op::BatchNormInference(epsilon), [x, scale, bias, mean, var]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            let params = [*scale, *bias, *mean, *var];
            batch_norm::batch_norm(x, params, *epsilon, out, parallel)
        }
        (Op::LayerNorm(l), [x, g, b]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            normalize::layer_norm(x.data(), x.shape(), g.data(), b.data(), l, parallel, out)
        }
        (Op::Attention(a), [q, k, v, mask @ ..]) if mask.len() <= 1 => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            let mask = mask.first().map(|m| operand(m));
            attention::attention(operand(q), operand(k), operand(v), mask, a, out, parallel)
        }
        (Op::Convolution(c), [x, f]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            convolution::convolution(x, f, c, out, parallel, (epilogue, packed))
        }
        (Op::ConvolutionInteger(c), [x, xz, w, wz]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            conv_integer::convolution_integer(c, [x, xz, w, wz], out, parallel, packed)
        }
        (Op::ConvolutionBackpropData(b), [dy, f]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            convolution_backprop::convolution_backprop_data(dy, f, b, out, parallel)
        }
        (Op::MaxPoolBackprop(w), [x, dy]) => pooling::max_pool_backprop(x, dy, w, parallel),
        (Op::MaxPool(w), [x]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            pooling::max_pool(x, w, out, parallel)
        }
        (Op::Resize(r), [x]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            match r.mode {
                ResizeMode::Nearest(_) => resize::resize_nearest(x, r, out, parallel),
                _ => resize_taps::resize_taps(x, r, out, parallel),
            }
        }
        (Op::Transpose(perm), [x]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            transpose::transpose(x, perm, out, parallel)
        }
        (Op::Slice(axes), [x]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            slice::slice(x, axes, out, parallel)
        }
        (Op::Gather(axis), [x, indices]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            gather::gather(x, indices, *axis, out)
        }
        (Op::Concat(axis), parts) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            concat::concat(parts, *axis, out, parallel)
        }
        (Op::Pad(p), [x, value @ ..]) if value.len() <= 1 => {
            pad::pad(x.data(), x.shape(), value.first().map(|v| v.data()), p)
        }
        (Op::Convert(to), [x]) => convert::convert(x.data(), *to),
        (Op::Reshape(_), [x]) => {
            // The same elements: copied into the seeded buffer where it has their type and
            // count (no allocation, no fresh pages), else cloned.
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            let copied = out.and_then(|mut d| d.copy_from(x.data()).then_some(d));
            Some(copied.unwrap_or_else(|| x.data().clone()))
        }
        (Op::ConvolutionBackpropFilters(b), [x, dy]) => {
            let out = seeded.into_iter().next().flatten().map(Tensor::into_data);
            convolution_backprop::convolution_backprop_filters(x, dy, b, out, parallel)
        }
        _ => None,
    };
    let ran = native.is_some()
        && matches!(
            node.op(),
            Op::MatMul | Op::Convolution(_) | Op::QuantizedMatMul(_)
        );
    match native {
        Some(data) => Ok((
            vec![Tensor::from_data(data, node.output_type().shape.clone())?],
            ran && epilogue.is_some(),
        )),
        None => Ok((evaluate_node(node, inputs)?, false)),
    }
}

/// Whether [`evaluate_with_epilogue`] writes `node`'s result into the seeded buffer it is
/// handed rather than into one of its own, so that a caller gains by handing it a recycled
/// one. (A native kernel that declines its inputs falls back on the reference kernel, which
/// allocates: correct, only without the reuse.)
pub fn writes_into_seed(node: &Node) -> bool {
    matches!(
        node.op(),
        Op::MatMul
            | Op::QuantizedMatMul(_)
            | Op::Softmax(_)
            | Op::BatchNormInference(_)
            | Op::LayerNorm(_)
            | Op::Attention(_)
            | Op::Convolution(_)
            | Op::ConvolutionInteger(_)
            | Op::ConvolutionBackpropData(_)
            | Op::ConvolutionBackpropFilters(_)
            | Op::MaxPool(_)
            | Op::Resize(_)
            | Op::Transpose(_)
            | Op::Slice(_)
            | Op::Gather(_)
            | Op::Concat(_)
            | Op::Reshape(_)
    )
}

/// The buffer a native kernel writes its result into: `seeded` (the caller's output tensor
/// or a recycled intermediate, see [`evaluate`]) when it holds `len` elements of
/// `element_type`, else `len` new zeros.
fn result_buffer(seeded: Option<TensorData>, element_type: ElementType, len: usize) -> TensorData {
    match seeded {
        Some(d) if d.element_type() == element_type && d.len() == len => d,
        _ => TensorData::zeros(element_type, len),
    }
}

/// A tensor as a reference kernel's operand.
fn operand(t: &Tensor) -> graphlift_runtime::reference::Operand<'_> {
    (t.data(), t.shape())
}
