//! The operations a node can perform, named after nGraph's (`Add`, `Multiply`, `Select`,
//! `Convert`, `Broadcast`, ...), with their meaning defined by the reference interpreter.

use std::fmt;
use std::sync::Arc;

use crate::attrs::{
    ArgOp, ArgReduction, Attention, Convolution, ConvolutionBackprop, CumSum, Distribution,
    GridSample, LayerNorm, Pad, PadMode, QuantizedMatMul, RandomFill, RecurrentSequence, ReduceOp,
    Reduction, Resize, ScatterAdd, ScatterReduction, SliceAxis, TopK, Window,
};
use crate::{ElementType, Function, Shape, TensorData};

mod display;

/// Elementwise ops of one operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    /// `-x` (numeric).
    Negative,
    /// `|x|` (numeric).
    Abs,
    /// `max(x, 0)` (numeric).
    Relu,
    /// `e^x` (float).
    Exp,
    /// Natural logarithm (float).
    Log,
    /// Square root (float).
    Sqrt,
    /// Hyperbolic tangent (float).
    Tanh,
    /// Logistic function `1 / (1 + e^-x)` (float).
    Sigmoid,
    /// Gauss error function (float).
    Erf,
    /// `e^x − 1`, accurate near 0 (float; C99 `expm1`).
    Expm1,
    /// `ln(1 + x)`, accurate near 0 (float; C99 `log1p`).
    Log1p,
    /// Sine, `x` in radians (float).
    Sin,
    /// Cosine, `x` in radians (float).
    Cos,
    /// Tangent, `x` in radians (float).
    Tan,
    /// Arcsine, in `[-π/2, π/2]`; NaN outside `[-1, 1]` (float).
    Asin,
    /// Arccosine, in `[0, π]`; NaN outside `[-1, 1]` (float).
    Acos,
    /// Arctangent, in `[-π/2, π/2]` (float).
    Atan,
    /// Hyperbolic sine (float).
    Sinh,
    /// Hyperbolic cosine (float).
    Cosh,
    /// Inverse hyperbolic sine (float).
    Asinh,
    /// Inverse hyperbolic cosine; NaN below 1 (float).
    Acosh,
    /// Inverse hyperbolic tangent; `±inf` at `±1`, NaN outside `[-1, 1]` (float).
    Atanh,
    /// Round toward -inf (numeric; identity on integers).
    Floor,
    /// Round toward +inf (numeric; identity on integers).
    Ceil,
    /// Round to nearest, ties to even (numeric; identity on integers).
    Round,
    /// -1, 0 or 1 by the sign of x (numeric).
    Sign,
    /// Logical negation (bool); bitwise complement on integers (ONNX `BitwiseNot`).
    Not,
}

/// Elementwise ops of two operands of one element type and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BinaryOp {
    /// `a + b` (numeric).
    Add,
    /// `a - b` (numeric).
    Subtract,
    /// `a * b` (numeric).
    Multiply,
    /// `a / b` (numeric; integers truncate toward zero).
    Divide,
    /// Larger of the two (numeric).
    Maximum,
    /// Smaller of the two (numeric).
    Minimum,
    /// `a ^ b` (numeric).
    Power,
    /// The remainder of the division truncated toward zero, with the sign of `a` (numeric;
    /// C `fmod`, nGraph `Mod`, ONNX `Mod` with `fmod = 1`): exact on floats (`x mod 0`,
    /// `±inf mod y` are NaN, `x mod ±inf = x`); on integers `x mod 0 = 0` (numpy) and
    /// `MIN mod -1 = 0`.
    Mod,
    /// The remainder of the division rounded toward -inf, with the sign of `b` (numeric;
    /// Python's and numpy's `%`, nGraph `FloorMod`, ONNX `Mod` with `fmod = 0`): `Mod`'s
    /// remainder plus `b` where the two differ in sign; a zero remainder of floats takes
    /// `b`'s sign (numpy); on integers `x mod 0 = 0`.
    FloorMod,
    /// Logical and (bool); bitwise on integers (ONNX `BitwiseAnd`).
    And,
    /// Logical or (bool); bitwise on integers (ONNX `BitwiseOr`).
    Or,
    /// Logical exclusive or (bool); bitwise on integers (ONNX `BitwiseXor`).
    Xor,
}

/// Elementwise comparisons; the result is `Bool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CompareOp {
    /// `a == b`.
    Equal,
    /// `a != b`.
    NotEqual,
    /// `a < b`.
    Less,
    /// `a <= b`.
    LessEq,
    /// `a > b`.
    Greater,
    /// `a >= b`.
    GreaterEq,
}

/// A fused kernel: a region of elementwise nodes gathered by subgraph extraction.
///
/// `body` is a small [`Function`]: its parameters are the region's live-ins in the order of
/// the fused node's inputs, its results are the region's values used outside it in the order
/// of the fused node's outputs. Body nodes keep the names, tags and creation sites of the
/// nodes they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedKernel {
    /// The region, as a Function of live-ins to kernel outputs.
    pub body: Function,
}

/// A variable: a tensor that keeps its value from one call of an Executable to the next
/// (Nervana Graph's `variable`; TensorFlow's resource variable, OpenVINO's `Variable`).
///
/// The `Op::Variable` node stands for the storage, not for a value: nodes read it through
/// [`Op::ReadVariable`] and write it through [`Op::Assign`], and its users are only those
/// (at input 0). Its name is the node's name; its element type and shape are the node's
/// output type, which is the initializer's result type.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// The initial value: a Function of no parameters and one result (constants, fills,
    /// any ops but variables, reads and assigns). A backend evaluates it with the reference
    /// interpreter when it compiles the Function and again on `reset_variables`, so a
    /// variable starts bit-identical on every backend.
    pub initializer: Function,
}

/// What a node computes.
///
/// Every elementwise op takes operands of one shape; numpy broadcasting is explicit, through
/// an [`Op::Broadcast`] node that the builder and the importers insert. What each op
/// computes, edge cases included, is defined by the reference interpreter in
/// `graphlift-runtime`.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A graph input; its type is fixed when it is created.
    Parameter,
    /// A constant tensor (shape on the node's output type).
    Constant(Arc<TensorData>),
    /// A graph output: passes its one input through.
    Result,
    /// Elementwise op of one operand.
    Unary(UnaryOp),
    /// Elementwise op of two operands.
    Binary(BinaryOp),
    /// Elementwise comparison.
    Compare(CompareOp),
    /// `cond ? a : b` elementwise; `cond` is `Bool`.
    Select,
    /// Elementwise conversion to another element type.
    Convert(ElementType),
    /// Numpy broadcast of the input to the given shape (axes aligned at the right).
    Broadcast(Shape),
    /// A fused kernel with any number of inputs and outputs.
    FusedKernel(Arc<FusedKernel>),
    /// The same elements in row-major order under a new shape of equal element count
    /// (nGraph `Reshape` without a permutation; ONNX `Reshape`, `Squeeze`, `Unsqueeze`,
    /// `Flatten`).
    Reshape(Shape),
    /// Permutes the axes: output axis `i` is input axis `perm[i]` (ONNX `Transpose`).
    Transpose(Vec<usize>),
    /// A strided slice, one [`SliceAxis`] per input axis (ONNX `Slice`, normalised).
    Slice(Vec<SliceAxis>),
    /// `x` (input 0) padded before, after and between its elements along each axis
    /// ([`Pad`]; XLA `Pad`, ONNX `Pad`): in [`PadMode::Constant`] with the scalar `value`
    /// (input 1, of `x`'s element type), in the other modes (one operand) with elements of `x`.
    Pad(Pad),
    /// Joins its inputs (one or more, equal element types, equal extents except on the axis)
    /// along an axis (ONNX `Concat`).
    Concat(usize),
    /// `Gather(axis)` of `data` `[d0, .., d(axis), ..]` by integer `indices` of shape `I`:
    /// output shape `d[..axis] ++ I ++ d[axis+1..]`. A negative index counts from the end
    /// (ONNX); an index out of `[-d(axis), d(axis))` is an error at run time.
    Gather(usize),
    /// A reduction over axes (ONNX `ReduceSum`, `ReduceMean`, ..., `GlobalAveragePool`).
    Reduce(Reduction),
    /// The `i64` index of the largest or smallest element along one axis of a numeric
    /// tensor ([`ArgReduction`]; ONNX `ArgMax`, `ArgMin`).
    ArgReduce(ArgReduction),
    /// The `i64` indices of the `k` largest or smallest elements along one axis of a numeric
    /// tensor, most extreme first, ties to the lower index ([`TopK`]; ONNX `TopK`'s second
    /// output, the first being the input gathered at them).
    TopK(TopK),
    /// The running sum of a numeric tensor along one axis, of the input's shape and element
    /// type ([`CumSum`]: inclusive or exclusive, forward or reverse; ONNX `CumSum`, nGraph's
    /// `CumSum`): an O(n) sequential scan of each lane, in the element type.
    CumSum(CumSum),
    /// Interpolation of an `f32`/`f64` tensor to new extents ([`Resize`]; ONNX `Resize`).
    Resize(Resize),
    /// Sampling of `x` `[N, C, D..]` at the normalised positions `grid` `[N, O.., r]`,
    /// giving `[N, C, O..]` ([`GridSample`]; ONNX `GridSample`, PyTorch's `grid_sample`).
    GridSample(GridSample),
    /// Matrix product of `a` `[..., M, K]` and `b` `[..., K, N]` giving `[..., M, N]`; both
    /// ranks are at least 2 and the batch axes `...` broadcast as numpy's `matmul` does.
    MatMul,
    /// The integer matrix product of a quantized activation and INT8 weights, dequantized
    /// (nGraph's `QuantizedDot`, onnxruntime's `MatMulIntegerToFloat` with the activation's
    /// `QuantizeLinear` folded in). Operands: `x` FLOAT `[..., M, K]`; `w` INT8
    /// `[ceil(K / 4), N, 4]`, the weight matrix `W` `[K, N]` in VNNI layout
    /// (`w[k / 4, n, k % 4] = W[k, n]`, zero beyond `K`; four `k` values per 32-bit lane);
    /// `offset` INT32 `[N]`; `scale` FLOAT `[N]`. With `a` the UINT8 quantization of `x`
    /// ([`QuantizedMatMul`]):
    ///
    /// ```text
    /// acc[.., m, n] = offset[n] + Σ_k a[.., m, k] · W[k, n]      (INT32, wrapping)
    /// y[.., m, n]   = f32(acc[.., m, n]) · scale[n]               (FLOAT [..., M, N])
    /// ```
    ///
    /// The QDQ lowering pass makes it from `DequantizeLinear(QuantizeLinear(x)) @
    /// DequantizeLinear(W)`: `offset[n] = -zp_x · Σ_k W[k, n]` carries the zero points and
    /// `scale[n] = x_scale · w_scale[n]`.
    QuantizedMatMul(QuantizedMatMul),
    /// Softmax along one axis, `exp(x - max) / sum(exp(x - max))` (ONNX `Softmax`, opset 13).
    Softmax(usize),
    /// Layer normalisation of `x` over the axes `axis..` with `scale` and `bias` of shape
    /// `x.shape[axis..]`: `(x - mean) / sqrt(var + epsilon) * scale + bias`, biased variance
    /// (ONNX `LayerNormalization`'s first output).
    LayerNorm(LayerNorm),
    /// Multi-head scaled dot-product attention with the head split and merge absorbed
    /// ("Attention Is All You Need", §3.2.2; the `softmax(Q·Kᵀ·scale + mask)·V` core of
    /// ONNX `com.microsoft.MultiHeadAttention` and PyTorch's `scaled_dot_product_attention`),
    /// on operands `q` `[B, Sq, H·D]`, `k` `[B, Sk, H·D]`, `v` `[B, Sk, H·Dv]` and an
    /// optional additive `mask` (input 3) of `q`'s element type whose shape broadcasts
    /// (numpy, right-aligned, rank ≤ 4) to `[B, H, Sq, Sk]`; `H` is [`Attention::heads`].
    /// With `q_h`, `k_h`, `v_h` the columns `h·D..(h+1)·D` (`h·Dv..` for `v`) of batch `b`:
    ///
    /// ```text
    /// out[b, :, h·Dv..(h+1)·Dv] = softmax_rows(q_h · k_hᵀ · scale + mask[b, h]) · v_h
    /// ```
    ///
    /// giving `[B, Sq, H·Dv]` (heads merged back, as the exporters' Transpose + Reshape do).
    /// `f32` or `f64`. A row whose scores are all `-inf` is NaN, as `Softmax` gives.
    ///
    /// The boundary: the Q/K/V projections stay outside (plain `MatMul` + bias that run on
    /// the GEMM with fused epilogues), and so does the output projection; inside is what
    /// gains from one kernel: the head split and merge (read and written in place, never
    /// transposed copies) and the `[B, H, Sq, Sk]` scores, of which a kernel need hold only
    /// one head's rows at a time. Scope fusion's `attention` pass makes it from exporters'
    /// written-out blocks (CANN's scope fusion). It has no adjoint yet: `deriv` through it is
    /// an error naming the op (gradients are built on the imported graph, before scope
    /// fusion, which refuses a block whose inner values the backward pass reads).
    Attention(Attention),
    /// A whole recurrence over a sequence, one node per ONNX `RNN`, `GRU` or `LSTM` node
    /// (nGraph's and OpenVINO's `RNNSequence`, `GRUSequence`, `LSTMSequence`;
    /// [`RecurrentSequence`] holds the cell, direction, activations, clip and layout).
    ///
    /// Operands, in ONNX's order and all present (an importer supplies the defaults): `X`
    /// `[seq, batch, input]` (layout 0), `W` `[dirs, G·h, input]`, `R` `[dirs, G·h, h]`, `B`
    /// `[dirs, 2·G·h]` (`Wb` then `Rb`), `sequence_lens` `[batch]` (`i32` or `i64`, each in
    /// `1..=seq`, read at run time), `initial_h` `[dirs, batch, h]`, and for LSTM
    /// `initial_c` `[dirs, batch, h]` and the peepholes `P` `[dirs, 3·h]` (`i o f`), every
    /// float operand of `X`'s float type; `G` is [`crate::RecurrentCell::gates`]. Outputs:
    /// `Y` `[seq, dirs, batch, h]`, `Y_h` `[dirs, batch, h]` and for LSTM `Y_c`; with
    /// [`RecurrentSequence::batch_major`] (layout 1) `X`, `Y` and the states have their
    /// first two axes swapped.
    ///
    /// Each direction runs the ONNX equations step by step (`f g h` its activations, `⊙` the
    /// elementwise product, the gate parts of `W`, `R`, `Wb`, `Rb` in ONNX's gate order):
    ///
    /// ```text
    /// RNN:  Ht = f(Xt·Wᵀ + Ht-1·Rᵀ + Wb + Rb)
    /// GRU:  zt = f(Xt·Wzᵀ + Ht-1·Rzᵀ + Wbz + Rbz)      rt = f(... r ...)
    ///       ht = g(Xt·Whᵀ + (rt ⊙ Ht-1)·Rhᵀ + Rbh + Wbh)        (linear_before_reset = 0)
    ///       ht = g(Xt·Whᵀ + rt ⊙ (Ht-1·Rhᵀ + Rbh) + Wbh)        (linear_before_reset = 1)
    ///       Ht = (1 - zt) ⊙ ht + zt ⊙ Ht-1
    /// LSTM: it = f(Xt·Wiᵀ + Ht-1·Riᵀ + Pi ⊙ Ct-1 + Wbi + Rbi)
    ///       ft = f(Xt·Wfᵀ + Ht-1·Rfᵀ + Pf ⊙ Ct-1 + Wbf + Rbf)   (1 - it with input_forget)
    ///       ct = g(Xt·Wcᵀ + Ht-1·Rcᵀ + Wbc + Rbc)
    ///       Ct = ft ⊙ Ct-1 + it ⊙ ct
    ///       ot = f(Xt·Woᵀ + Ht-1·Roᵀ + Po ⊙ Ct + Wbo + Rbo)
    ///       Ht = ot ⊙ h(Ct)
    /// ```
    ///
    /// with each gate's pre-activation clamped to `[-clip, clip]` when the op clips. A batch
    /// entry of length `L` runs steps `0..L` (a reverse direction `L-1` down to 0); `Y` is 0
    /// at its steps `L..`, and `Y_h`, `Y_c` are its states after its own last step.
    Recurrent(Arc<RecurrentSequence>),
    /// A 2-D (or N-D) convolution of `x` `[N, C, D..]` with a filter `[M, C / groups, K..]`;
    /// no bias (importers add one as a broadcast `Add`).
    Convolution(Convolution),
    /// The integer convolution of 8-bit operands (ONNX `ConvInteger`, opset 10): `x`
    /// `[N, C, D..]` UINT8 or INT8, its zero point `x_zero_point` (of `x`'s type, one
    /// element), the filter `w` `[M, C / groups, K..]` UINT8 or INT8 and its zero point
    /// `w_zero_point` (of `w`'s type, one element or `[M]`, one per output channel), in that
    /// order; INT32 `[N, M, O..]` under [`Convolution`]'s window and groups:
    ///
    /// ```text
    /// y[n, m, o..] = Σ_{c, k..} (x[n, c, i..] - x_zero_point) · (w[m, c, k..] - w_zero_point[m])
    /// ```
    ///
    /// summed in wrapping INT32 over the taps inside `x` (padding holds the zero point, so
    /// adds nothing).
    ConvolutionInteger(Convolution),
    /// Batch normalisation in inference mode of `x` `[N, C, ..]` with per-channel `scale`,
    /// `bias`, `mean` and `variance` (each `[C]`), the attribute being `epsilon`:
    /// `(x - mean) / sqrt(variance + epsilon) * scale + bias` (nGraph
    /// `BatchNormInference`).
    BatchNormInference(f64),
    /// Max pooling of `x` `[N, C, D..]` over a window; padding never wins (it acts as
    /// `-inf`).
    MaxPool(Window),
    /// The adjoint of a [`Op::Convolution`] with respect to its data (nGraph's
    /// `ConvolutionBackpropData`; ONNX `ConvTranspose` with the forward's strides, dilations,
    /// pads and groups and the output shape given): `dy` `[N, M, O..]` and the filter
    /// `[M, C / groups, K..]` give `dx` of the forward data's shape `[N, C, D..]`
    /// ([`ConvolutionBackprop::shape`]), each `dy` element spread over the window that made it.
    ConvolutionBackpropData(ConvolutionBackprop),
    /// The adjoint of a [`Op::Convolution`] with respect to its filter (nGraph's
    /// `ConvolutionBackpropFilters`): the data `x` `[N, C, D..]` and `dy` `[N, M, O..]` give
    /// the filter's adjoint `[M, C / groups, K..]` ([`ConvolutionBackprop::shape`]), the
    /// correlation of `dy` with the windows of `x` summed over the batch.
    ConvolutionBackpropFilters(ConvolutionBackprop),
    /// The adjoint of a [`Op::MaxPool`] over the same window: `x` `[N, C, D..]` and `dy` of
    /// the pooled shape give `dx` of `x`'s shape, each `dy` element added at the position of
    /// its window's maximum; of equal maxima the first in row-major window order takes it
    /// (a NaN, the maximum it makes, too), and padding never does (nGraph's
    /// `MaxPoolBackprop`).
    MaxPoolBackprop(Window),
    /// Where each window's maximum of a [`Op::MaxPool`] over the same window is: `x`
    /// `[N, C, D..]` (float) gives `i64` of the pooled shape, the flat row-major index into
    /// all of `x` (batch and channel included, as ONNX `MaxPool`'s `Indices` output and
    /// nGraph's `MaxPool` v8 give it) of the element [`Op::MaxPoolBackprop`] picks: the
    /// first of equal maxima in row-major window order (a NaN, the maximum it makes, too),
    /// never padding; `-1` for a window wholly in padding.
    MaxPoolIndices(Window),
    /// A variable's storage ([`Variable`]): no inputs, one output of the variable's type,
    /// used only by `ReadVariable` and `Assign` (at input 0).
    Variable(Arc<Variable>),
    /// The value of variable `input 0` when this node runs (TensorFlow's `ReadVariableOp`);
    /// control dependencies order it against the variable's assigns.
    ReadVariable,
    /// `updates` (input 0) added into zeros at the positions `Gather(axis)` would read with
    /// `indices` (input 1): the adjoint of `Gather` ([`ScatterAdd`]).
    ScatterAdd(ScatterAdd),
    /// A copy of `data` (input 0, shape `D`) with slices replaced by or combined with
    /// `updates` (input 2) at positions `indices` (input 1, `i32`/`i64` of shape `[I.., q]`,
    /// `q <= rank D`): for each index tuple `i..`, the slice `data[indices[i.., 0], ..,
    /// indices[i.., q-1], ..]` (shape `D[q..]`) becomes `combine(slice, updates[i.., ..])`,
    /// `updates` having shape `[I.., D[q..]]` and `data`'s element type; tuples are applied
    /// in row-major order, so of repeated positions with [`ScatterReduction::None`] the last
    /// wins, and the other reductions accumulate ([`ScatterReduction`]). A negative index
    /// counts from the end of its axis; one outside `[-d, d)` is an error at run time (ONNX
    /// `ScatterND`; `ScatterElements` is this with one full index tuple per update element).
    /// A reduction other than `None` needs a numeric type.
    ScatterNd(ScatterReduction),
    /// Pseudo-random numbers from a seed ([`RandomFill`]; ONNX `RandomUniform`,
    /// `RandomNormal`): no inputs, the same values on every call.
    Random(Arc<RandomFill>),
    /// Writes `input 1` into the whole of variable `input 0` (same element type and shape)
    /// when this node runs; its output is the value written (Nervana Graph's `assign`).
    Assign,
    /// Control flow with sub-Function bodies: ONNX `If`, `Loop`, `Scan`
    /// ([`crate::control_flow`]: operands, bodies, outputs, specialised bodies).
    ControlFlow(Arc<crate::control_flow::ControlFlow>),
}

impl Op {
    /// The op's type name as nGraph spells it (`Add`, `Relu`, `FusedKernel`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Op::Parameter => "Parameter",
            Op::Constant(_) => "Constant",
            Op::Result => "Result",
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Compare(c) => c.name(),
            Op::Select => "Select",
            Op::Convert(_) => "Convert",
            Op::Broadcast(_) => "Broadcast",
            Op::FusedKernel(_) => "FusedKernel",
            Op::Reshape(_) => "Reshape",
            Op::Transpose(_) => "Transpose",
            Op::Slice(_) => "Slice",
            Op::Pad(_) => "Pad",
            Op::Concat(_) => "Concat",
            Op::Gather(_) => "Gather",
            Op::Reduce(r) => match r.op {
                ReduceOp::Sum => "ReduceSum",
                ReduceOp::Mean => "ReduceMean",
                ReduceOp::Max => "ReduceMax",
                ReduceOp::Min => "ReduceMin",
                ReduceOp::Prod => "ReduceProd",
            },
            Op::ArgReduce(r) => match r.op {
                ArgOp::Max => "ArgMax",
                ArgOp::Min => "ArgMin",
            },
            Op::TopK(_) => "TopK",
            Op::CumSum(_) => "CumSum",
            Op::Resize(_) => "Resize",
            Op::GridSample(_) => "GridSample",
            Op::MatMul => "MatMul",
            Op::QuantizedMatMul(_) => "QuantizedMatMul",
            Op::Softmax(_) => "Softmax",
            Op::LayerNorm(_) => "LayerNorm",
            Op::Attention(_) => "Attention",
            Op::Recurrent(r) => r.type_name(),
            Op::Convolution(_) => "Convolution",
            Op::ConvolutionInteger(_) => "ConvolutionInteger",
            Op::BatchNormInference(_) => "BatchNormInference",
            Op::MaxPool(_) => "MaxPool",
            Op::ConvolutionBackpropData(_) => "ConvolutionBackpropData",
            Op::ConvolutionBackpropFilters(_) => "ConvolutionBackpropFilters",
            Op::MaxPoolBackprop(_) => "MaxPoolBackprop",
            Op::MaxPoolIndices(_) => "MaxPoolIndices",
            Op::Variable(_) => "Variable",
            Op::ReadVariable => "ReadVariable",
            Op::Assign => "Assign",
            Op::ScatterAdd(_) => "ScatterAdd",
            Op::ScatterNd(_) => "ScatterNd",
            Op::Random(r) => match r.distribution {
                Distribution::Uniform { .. } => "RandomUniform",
                Distribution::Normal { .. } => "RandomNormal",
            },
            Op::ControlFlow(c) => c.type_name(),
        }
    }

    /// `true` for ops that act on each element independently (unary, binary, compare,
    /// select, convert). Broadcast and Constant are not elementwise but may sit in a region.
    pub fn is_elementwise(&self) -> bool {
        matches!(
            self,
            Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Convert(_)
        )
    }

    /// `true` for the data-movement ops: `Broadcast`, `Reshape`, `Transpose`, `Slice`, `Pad`,
    /// `Concat` and `Gather`, each output element a copy of an input element (or of `Pad`'s
    /// value), so they are exact in every element type.
    pub fn moves_data(&self) -> bool {
        matches!(
            self,
            Op::Broadcast(_)
                | Op::Reshape(_)
                | Op::Transpose(_)
                | Op::Slice(_)
                | Op::Pad(_)
                | Op::Concat(_)
                | Op::Gather(_)
        )
    }

    /// `true` for the ops of state: `Variable`, `ReadVariable` and `Assign`. Passes never
    /// fold, merge or move them; their order is their control dependencies.
    pub fn is_stateful(&self) -> bool {
        matches!(self, Op::Variable(_) | Op::ReadVariable | Op::Assign)
    }
}

impl UnaryOp {
    /// The trigonometric and hyperbolic functions (ONNX `Sin` … `Atanh`), in [`UnaryOp::ALL`]'s order.
    pub const TRIG: [UnaryOp; 11] = [
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
    ];

    /// Every unary op.
    pub const ALL: [UnaryOp; 27] = [
        UnaryOp::Negative,
        UnaryOp::Abs,
        UnaryOp::Relu,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Erf,
        UnaryOp::Expm1,
        UnaryOp::Log1p,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Sign,
        UnaryOp::Not,
    ];

    /// nGraph-style name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Negative => "Negative",
            UnaryOp::Abs => "Abs",
            UnaryOp::Relu => "Relu",
            UnaryOp::Exp => "Exp",
            UnaryOp::Log => "Log",
            UnaryOp::Sqrt => "Sqrt",
            UnaryOp::Tanh => "Tanh",
            UnaryOp::Sigmoid => "Sigmoid",
            UnaryOp::Erf => "Erf",
            UnaryOp::Expm1 => "Expm1",
            UnaryOp::Log1p => "Log1p",
            UnaryOp::Sin => "Sin",
            UnaryOp::Cos => "Cos",
            UnaryOp::Tan => "Tan",
            UnaryOp::Asin => "Asin",
            UnaryOp::Acos => "Acos",
            UnaryOp::Atan => "Atan",
            UnaryOp::Sinh => "Sinh",
            UnaryOp::Cosh => "Cosh",
            UnaryOp::Asinh => "Asinh",
            UnaryOp::Acosh => "Acosh",
            UnaryOp::Atanh => "Atanh",
            UnaryOp::Floor => "Floor",
            UnaryOp::Ceil => "Ceil",
            UnaryOp::Round => "Round",
            UnaryOp::Sign => "Sign",
            UnaryOp::Not => "Not",
        }
    }

    /// Whether the op accepts operands of `t`.
    pub fn accepts(self, t: ElementType) -> bool {
        match self {
            UnaryOp::Not => t == ElementType::Bool || t.is_integer(),
            UnaryOp::Exp
            | UnaryOp::Log
            | UnaryOp::Sqrt
            | UnaryOp::Tanh
            | UnaryOp::Sigmoid
            | UnaryOp::Erf
            | UnaryOp::Expm1
            | UnaryOp::Log1p
            | UnaryOp::Sin
            | UnaryOp::Cos
            | UnaryOp::Tan
            | UnaryOp::Asin
            | UnaryOp::Acos
            | UnaryOp::Atan
            | UnaryOp::Sinh
            | UnaryOp::Cosh
            | UnaryOp::Asinh
            | UnaryOp::Acosh
            | UnaryOp::Atanh => t.is_float(),
            _ => t.is_numeric(),
        }
    }
}

impl BinaryOp {
    /// Every binary op.
    pub const ALL: [BinaryOp; 12] = [
        BinaryOp::Add,
        BinaryOp::Subtract,
        BinaryOp::Multiply,
        BinaryOp::Divide,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Power,
        BinaryOp::Mod,
        BinaryOp::FloorMod,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
    ];

    /// nGraph-style name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "Add",
            BinaryOp::Subtract => "Subtract",
            BinaryOp::Multiply => "Multiply",
            BinaryOp::Divide => "Divide",
            BinaryOp::Maximum => "Maximum",
            BinaryOp::Minimum => "Minimum",
            BinaryOp::Power => "Power",
            BinaryOp::Mod => "Mod",
            BinaryOp::FloorMod => "FloorMod",
            BinaryOp::And => "And",
            BinaryOp::Or => "Or",
            BinaryOp::Xor => "Xor",
        }
    }

    /// Whether the op accepts operands of `t`.
    pub fn accepts(self, t: ElementType) -> bool {
        match self {
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                t == ElementType::Bool || t.is_integer()
            }
            _ => t.is_numeric(),
        }
    }
}

impl CompareOp {
    /// Whether the comparison takes operands of type `t`: every type but the storage-only
    /// ones, and only `Equal` and `NotEqual` for `String` (ONNX orders no strings).
    pub fn accepts(self, t: ElementType) -> bool {
        match t {
            ElementType::String => matches!(self, CompareOp::Equal | CompareOp::NotEqual),
            t => !t.is_storage_only(),
        }
    }

    /// Every comparison.
    pub const ALL: [CompareOp; 6] = [
        CompareOp::Equal,
        CompareOp::NotEqual,
        CompareOp::Less,
        CompareOp::LessEq,
        CompareOp::Greater,
        CompareOp::GreaterEq,
    ];

    /// nGraph-style name.
    pub fn name(self) -> &'static str {
        match self {
            CompareOp::Equal => "Equal",
            CompareOp::NotEqual => "NotEqual",
            CompareOp::Less => "Less",
            CompareOp::LessEq => "LessEq",
            CompareOp::Greater => "Greater",
            CompareOp::GreaterEq => "GreaterEq",
        }
    }
}
