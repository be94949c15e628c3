//! Reference kernels: what every op means, in plain Rust. The INTERPRETER runs them node by
//! node, CPU-JIT runs them for nodes outside fused kernels, and every JIT kernel is checked
//! against them; the edge-case semantics are listed on [`evaluate_node`].

mod arg_reduce;
mod arith;
mod attention;
mod broadcast;
mod compress;
mod conv_integer;
mod cum_sum;
mod elementwise;
mod grid_sample;
mod layout;
mod matmul;
mod non_max_suppression;
mod non_zero;
mod normalize;
mod pad;
mod quantized;
mod random;
mod recurrent;
mod reduce;
mod resize;
mod scatter;
mod strings;
mod top_k;
mod widen;
mod window;
mod window_backprop;

use std::collections::HashMap;

use graphlift_ir::{Function, Node, Op, Output, TensorData};

use crate::state::Variables;
use crate::trace::{CallRecorder, StepKind};
use crate::{RuntimeError, Tensor};

pub use arg_reduce::arg_reduce;
pub use arith::Arith;
pub use attention::{attention, Operand};
pub use broadcast::broadcast;
pub use compress::{compress, compress_positions};
pub use conv_integer::convolution_integer;
pub use cum_sum::cum_sum;
pub use elementwise::{
    binary, binary_f32, binary_f64, compare, convert, select, unary, unary_f32, unary_f64,
};
pub use grid_sample::grid_sample;
pub use layout::{concat, gather, gathered_rows, scatter_add, slice, transpose};
pub use matmul::{batch_offsets, matmul};
pub use non_max_suppression::{non_max_suppression, BoxEncoding, Suppression};
pub use non_zero::non_zero;
pub use normalize::{batch_norm, layer_norm, softmax};
pub use pad::{pad, source_index};
pub use quantized::{pack_vnni, quantize_u8, quantized_matmul};
pub use random::random;
pub use recurrent::{recurrent, recurrent_operands, RecurrentLayout};
pub use reduce::reduce;
pub use resize::{axis_taps, is_identity_axis, resize, AxisTaps};
pub use scatter::scatter_nd;
pub use top_k::top_k;
pub use window::{convolution, max_pool, max_pool_indices};
pub use window_backprop::{
    convolution_backprop_data, convolution_backprop_filters, max_pool_backprop,
};

/// Evaluates one node on its input tensors.
///
/// Parameters and Results are not evaluated here (the caller binds them); a fused kernel is
/// evaluated by interpreting its body.
///
/// # Semantics
///
/// Floating point follows IEEE 754 in the element type; `f16` and `bf16` are computed in
/// `f32` and rounded once per op (to nearest even), as ONNX defines them, and their
/// reductions, MatMul and the other compute kernels in `f64`, rounded once. Integers of
/// every width are two's complement (signed) or unsigned and wrap in their type. The edge
/// cases are chosen once, here, and the JIT follows them:
///
/// | op | edge case | result |
/// |---|---|---|
/// | `Add`, `Subtract`, `Multiply`, `Negative`, `Abs` on integers | overflow | wraps (two's complement); `Abs(MIN) = MIN` |
/// | `Divide` on integers | rounding | truncates toward zero (C, ONNX) |
/// | `Divide` on integers | `x / 0` | `0` (never traps) |
/// | `Divide` on integers | `MIN / -1` | `MIN` (wraps) |
/// | `Power` on integers | `b < 0` | `1` if `a == 1`; `±1` by parity if `a == -1`; else `0` |
/// | `Power` on integers | overflow | wraps (exponentiation by squaring) |
/// | `Mod` (truncated, C `fmod`) on floats | | Rust's `%`, exact: `x mod 0` and `±inf mod y` are NaN, `x mod ±inf = x`, the sign of `x` |
/// | `FloorMod` (floored, numpy `mod`) on floats | | `Mod`'s remainder `+ b` where it and `b` differ in sign; a zero remainder takes `b`'s sign |
/// | `Mod`, `FloorMod` on integers | `x mod 0` / `MIN mod -1` | `0` / `0` (numpy; never traps) |
/// | `Maximum`, `Minimum` on floats | a NaN operand | NaN (numpy's `maximum`); `max(-0, +0) = +0`, `min(-0, +0) = -0` |
/// | `Relu` on floats | | `x < 0 ? 0 : x`: `Relu(NaN) = NaN`, `Relu(-0) = -0` |
/// | `Sign` on floats | | `1` for `x > 0`, `-1` for `x < 0`, `x` itself for ±0 and NaN |
/// | `Floor`, `Ceil`, `Round`, `Sign`, `Relu` on integers | | identity (rounding) / `signum` / `max(x, 0)` |
/// | `Abs`, `Relu`, `Sign`, `Negative` on unsigned integers | | identity / identity / 0 or 1 / wraps (`-1u8 = 255`) |
/// | `Round` | ties | to even (`2.5 -> 2`, `-0.5 -> -0`), as ONNX and numpy |
/// | `Exp`, `Log`, `Sqrt`, `Tanh`, `Sigmoid`, `Erf`, `Expm1`, `Log1p`, the trigonometric and hyperbolic functions, `Power` on `f32` | | computed in `f64`, rounded once to `f32` (the most accurate reference) |
/// | `Sin`, `Cos`, `Tan`, `Asin`, `Acos`, `Atan`, `Sinh`, `Cosh`, `Asinh`, `Acosh`, `Atanh` | | Rust's `f64` functions (the C library's): `sin(±inf)`, `cos(±inf)`, `tan(±inf)` NaN; `asin`, `acos` NaN outside `[-1, 1]`; `acosh(x < 1)` NaN; `atanh(±1) = ±inf`, NaN outside `[-1, 1]`; odd ones keep the sign of zero |
/// | `Sigmoid` | | `1/(1+e^-x)` for `x >= 0`, `e^x/(1+e^x)` otherwise (no overflow); in `[0, 1]` |
/// | `Log` | `x = 0` / `x < 0` | `-inf` / NaN |
/// | `Expm1`, `Log1p` | | Rust's `exp_m1` / `ln_1p` (C99 `expm1` / `log1p`): `Expm1(-inf) = -1`, `Log1p(-1) = -inf`, `Log1p(x < -1) = NaN`, both keep the sign of zero |
/// | `Sqrt` | `x < 0` | NaN (`Sqrt(-0) = -0`) |
/// | `CumSum` | order, overflow, `f16`/`bf16` | one `Add` at a time in the scan direction (an infinity or NaN reaches only later sums); integers wrap; half sums rounded at every step; an inclusive scan starts with the element itself (`-0` stays `-0`) |
/// | compares on floats | NaN operand | false, except `NotEqual`: true |
/// | compares on bool | | `false < true` |
/// | `Convert` float to integer | fraction, out of range, NaN | truncates toward zero, saturates to MIN/MAX, NaN -> 0 (Rust's `as`) |
/// | `Convert` integer to narrower integer | | keeps the low bits (wraps) |
/// | `Convert` to `bool` | | `x != 0` (NaN -> true) |
/// | `Convert` from `bool` | | `0` or `1` |
/// | `Convert` `f64` to `f32`, integer to float | | round to nearest even |
/// | `Convert` to `f16`/`bf16` | | round to nearest even, overflow to ±inf; from `f64` directly, from the other types through `f32` (ONNX `Cast`) |
/// | `Convert` to a float8 type or FLOAT4E2M1 | out of range, ±inf, NaN | round to nearest even, saturate to ±the largest finite value, NaN to the format's NaN (ONNX `Cast` with `saturate = 1`; `graphlift_ir::minifloat`) |
/// | `Convert` to FLOAT8E8M0 | fraction, zero, NaN | the `f32` exponent, rounded up, saturating at 2^127; zero to 2^-127; NaN/±inf to NaN (`round_mode = "up"`) |
/// | `Convert` to INT4/UINT4/INT2/UINT2 | fraction, out of range, NaN | truncates toward zero, keeps the low bits (wraps); NaN and ±inf -> 0 |
/// | `Convert` from a storage-only type | | its exact value, then as from `i8`/`u8`/`f32` |
///
/// # Errors
/// [`RuntimeError::Execution`] naming the node, its op and provenance when the inputs do not
/// fit the op.
pub fn evaluate_node(node: &Node, inputs: &[&Tensor]) -> Result<Vec<Tensor>, RuntimeError> {
    let fail = |message: String| RuntimeError::Execution {
        node: node.name().to_string(),
        op: node.op().to_string(),
        provenance: node.tags().iter().collect::<Vec<_>>().join(", "),
        message,
    };
    let want = node.inputs().len();
    if inputs.len() != want {
        return Err(fail(format!(
            "expected {want} inputs, got {}",
            inputs.len()
        )));
    }
    let out_shape = node.output_type().shape.clone();
    let data = |i: usize| inputs[i].data();
    let one = |d: Result<TensorData, String>| -> Result<Vec<Tensor>, RuntimeError> {
        let t = Tensor::from_data(d.map_err(&fail)?, out_shape.clone())?;
        Ok(vec![t])
    };
    match node.op() {
        Op::Parameter => Err(fail("a Parameter is bound by the caller".into())),
        Op::Variable(_) | Op::ReadVariable | Op::Assign => Err(fail(
            "state is evaluated by evaluate_function with the executable's variables".into(),
        )),
        Op::Result => Ok(vec![inputs[0].clone()]),
        Op::Constant(d) => one(Ok((**d).clone())),
        Op::Unary(u) => one(unary(*u, data(0))),
        Op::Binary(b) => one(binary(*b, data(0), data(1))),
        Op::Compare(c) => one(compare(*c, data(0), data(1))),
        Op::Select => one(select(data(0), data(1), data(2))),
        Op::Convert(to) => one(convert(data(0), *to)),
        Op::Broadcast(target) => one(broadcast(data(0), inputs[0].shape(), target)),
        Op::Reshape(_) => one(Ok(data(0).clone())),
        Op::Transpose(perm) => one(transpose(data(0), inputs[0].shape(), perm)),
        Op::Slice(axes) => one(slice(data(0), inputs[0].shape(), axes)),
        Op::Pad(p) => one(pad(
            data(0),
            inputs[0].shape(),
            inputs.get(1).map(|t| t.data()),
            p,
        )),
        Op::Concat(axis) => {
            let parts: Vec<_> = inputs.iter().map(|t| (t.data(), t.shape())).collect();
            one(concat(&parts, *axis))
        }
        Op::Gather(axis) => one(gather(data(0), inputs[0].shape(), data(1), *axis)),
        Op::ScatterAdd(s) => one(scatter_add(data(0), data(1), &s.shape, s.axis)),
        Op::ScatterNd(r) => one(scatter_nd(
            data(0),
            inputs[0].shape(),
            data(1),
            inputs[1].shape(),
            data(2),
            *r,
        )),
        Op::Reduce(r) => one(reduce(data(0), inputs[0].shape(), r)),
        Op::ArgReduce(r) => one(arg_reduce(data(0), inputs[0].shape(), r)),
        Op::TopK(t) => one(top_k(data(0), inputs[0].shape(), t)),
        Op::CumSum(c) => one(cum_sum(data(0), inputs[0].shape(), c)),
        Op::Resize(r) => one(resize(data(0), inputs[0].shape(), r)),
        Op::GridSample(g) => one(grid_sample(
            (data(0), inputs[0].shape()),
            (data(1), inputs[1].shape()),
            g,
        )),
        Op::MatMul => one(matmul(
            data(0),
            inputs[0].shape(),
            data(1),
            inputs[1].shape(),
        )),
        Op::QuantizedMatMul(q) => one(quantized_matmul(
            q,
            (data(0), inputs[0].shape()),
            (data(1), inputs[1].shape()),
            data(2),
            data(3),
        )),
        Op::Softmax(axis) => one(softmax(data(0), inputs[0].shape(), *axis)),
        Op::LayerNorm(l) => one(layer_norm(data(0), inputs[0].shape(), data(1), data(2), l)),
        Op::Attention(a) => {
            let operand = |i: usize| (inputs[i].data(), inputs[i].shape());
            let mask = (inputs.len() > 3).then(|| operand(3));
            one(attention(operand(0), operand(1), operand(2), mask, a))
        }
        Op::Recurrent(r) => {
            let operands: Vec<Operand<'_>> = inputs.iter().map(|t| (t.data(), t.shape())).collect();
            recurrent(r, &operands)
                .map_err(&fail)?
                .into_iter()
                .map(|(d, s)| Tensor::from_data(d, s))
                .collect()
        }
        Op::BatchNormInference(eps) => one(batch_norm(
            data(0),
            inputs[0].shape(),
            [data(1), data(2), data(3), data(4)],
            *eps,
        )),
        Op::Convolution(c) => one(convolution(
            data(0),
            inputs[0].shape(),
            data(1),
            inputs[1].shape(),
            c,
        )),
        Op::ConvolutionInteger(c) => one(convolution_integer(
            (data(0), inputs[0].shape()),
            data(1),
            (data(2), inputs[2].shape()),
            data(3),
            c,
        )),
        Op::MaxPool(w) => one(max_pool(data(0), inputs[0].shape(), w)),
        Op::MaxPoolIndices(w) => one(max_pool_indices(data(0), inputs[0].shape(), w)),
        Op::ConvolutionBackpropData(b) => one(convolution_backprop_data(
            data(0),
            inputs[0].shape(),
            data(1),
            inputs[1].shape(),
            b,
        )),
        Op::ConvolutionBackpropFilters(b) => one(convolution_backprop_filters(
            data(0),
            inputs[0].shape(),
            data(1),
            inputs[1].shape(),
            b,
        )),
        Op::MaxPoolBackprop(w) => one(max_pool_backprop(
            data(0),
            inputs[0].shape(),
            data(1),
            inputs[1].shape(),
            w,
        )),
        Op::Random(r) => one(random(r)),
        Op::FusedKernel(k) => {
            let owned: Vec<Tensor> = inputs.iter().map(|&t| t.clone()).collect();
            evaluate_function(&k.body, &owned)
        }
        Op::ControlFlow(cf) => crate::control_flow::execute(
            cf,
            node,
            inputs,
            &crate::control_flow::ReferenceBodies(cf),
        ),
    }
}

/// Interprets a stateless `function` on `inputs` (one per parameter, types already
/// checked) and returns one tensor per result.
///
/// # Errors
/// [`RuntimeError::Ir`] for a cyclic function; [`RuntimeError::Execution`] from any node,
/// and for a function with variables (run those through an Executable).
pub fn evaluate_function(
    function: &Function,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>, RuntimeError> {
    evaluate_function_traced(function, inputs, None, None)
}

/// [`evaluate_function`] with the executable's `variables` (required when the function has
/// any), that reports every evaluated node to `recorder` (the INTERPRETER's tracing hook;
/// `None` when no tracer is alive).
///
/// Only live nodes run ([`Function::live_nodes`]), in topological order. A `ReadVariable`
/// gives the variable's value as the assigns that ran before it left it; an `Assign` writes
/// its value and passes it on. The writes reach `variables` only when every node has run,
/// so a failed call leaves them unchanged.
pub(crate) fn evaluate_function_traced(
    function: &Function,
    inputs: &[Tensor],
    variables: Option<&mut Variables>,
    mut recorder: Option<&mut CallRecorder>,
) -> Result<Vec<Tensor>, RuntimeError> {
    let mut values: HashMap<Output, Tensor> = HashMap::new();
    // Variable index -> the value this call has written.
    let mut written: HashMap<usize, Tensor> = HashMap::new();
    for (&p, t) in function.parameters().iter().zip(inputs) {
        values.insert(Output::new(p, 0), t.clone());
    }
    let live = function.live_nodes();
    for id in function.topological_order()? {
        let node = function.node(id)?;
        if matches!(node.op(), Op::Parameter | Op::Variable(_)) || !live[id.index()] {
            continue;
        }
        if matches!(node.op(), Op::ReadVariable | Op::Assign) {
            let started = recorder.as_deref().map(CallRecorder::step_start);
            let out = access_variable(node, variables.as_deref(), &mut written, &values)?;
            if let (Some(r), Some(start)) = (recorder.as_deref_mut(), started) {
                r.record(
                    node,
                    StepKind::Interpreted,
                    start,
                    std::slice::from_ref(&out),
                );
            }
            values.insert(Output::new(id, 0), out);
            continue;
        }
        let ins: Vec<&Tensor> = node
            .inputs()
            .iter()
            .map(|o| {
                values.get(o).ok_or_else(|| RuntimeError::Execution {
                    node: node.name().to_string(),
                    op: node.op().to_string(),
                    provenance: String::new(),
                    message: format!("input {o:?} was not computed"),
                })
            })
            .collect::<Result<_, _>>()?;
        let started = recorder.as_deref().map(CallRecorder::step_start);
        let outs = evaluate_node(node, &ins)?;
        if let (Some(r), Some(start)) = (recorder.as_deref_mut(), started) {
            r.record(node, StepKind::Interpreted, start, &outs);
        }
        for (i, t) in outs.into_iter().enumerate() {
            values.insert(Output::new(id, i), t);
        }
    }
    let outputs = function
        .results()
        .iter()
        .map(|&r| {
            values
                .remove(&Output::new(r, 0))
                .or_else(|| {
                    let src = function.result_source(r).ok()?;
                    values.get(&src).cloned()
                })
                .ok_or_else(|| RuntimeError::Compile {
                    function: function.name().to_string(),
                    message: format!("result {r} was not computed"),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(vars) = variables {
        for (k, t) in written {
            *vars.value_mut(k) = t;
        }
    }
    Ok(outputs)
}

/// Runs a `ReadVariable` or `Assign` node against the call's view of the variables: what
/// it has `written` so far over their values before the call.
fn access_variable(
    node: &Node,
    variables: Option<&Variables>,
    written: &mut HashMap<usize, Tensor>,
    values: &HashMap<Output, Tensor>,
) -> Result<Tensor, RuntimeError> {
    let fail = |message: &str| RuntimeError::Execution {
        node: node.name().to_string(),
        op: node.op().to_string(),
        provenance: node.tags().iter().collect::<Vec<_>>().join(", "),
        message: message.to_string(),
    };
    let vars = variables.ok_or_else(|| {
        fail("the function has variables: run it through an Executable, which owns them")
    })?;
    let k = node
        .inputs()
        .first()
        .and_then(|o| vars.index_of_node(o.node))
        .ok_or_else(|| fail("input 0 is not one of the executable's variables"))?;
    if matches!(node.op(), Op::Assign) {
        let value = node
            .inputs()
            .get(1)
            .and_then(|o| values.get(o))
            .ok_or_else(|| fail("the value was not computed"))?;
        written.insert(k, value.clone());
        return Ok(value.clone());
    }
    Ok(written.get(&k).unwrap_or_else(|| vars.value(k)).clone())
}
