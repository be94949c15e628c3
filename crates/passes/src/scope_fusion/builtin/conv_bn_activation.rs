//! The built-in `conv_bn_activation` pass: a convolution block as exporters write it, one
//! scope holding
//!
//! ```text
//! y   = Convolution(x, W)                      (ONNX Conv without bias)
//! z   = BatchNormInference(y, scale, bias, mean, variance)   (ONNX BatchNormalization)
//! out = act(z)                                 (Relu, Sigmoid, Clip, HardSigmoid,
//!                                               HardSwish, SiLU: see `activation.rs`)
//! ```
//!
//! (PyTorch's `/features/0/0/Conv`, `/features/0/1/BatchNormalization`,
//! `/features/0/2/HardSwish` under scope `features/0`; a PaddlePaddle `ConvBNLayer`'s
//! `conv2d` / `batch_norm` / `hard_swish` under its layer name), with `W` and the four
//! statistics constant.
//!
//! **What it becomes, and why no new op.** The block is rewritten into its folded form
//! `act(Convolution(x, W') + b')` (the batch normalisation folded into the filter and a
//! per-channel bias, as [`crate::BatchNormFolding`] does, by the same arithmetic): the
//! fused node is that bias `Add`, named after the scope and recorded as one fused scope;
//! the activation's nodes, verified, stay as they are. CPU-JIT already runs this form as
//! one native step: subgraph extraction puts the bias `Add` and the activation into one
//! fused kernel, and the plan runs that kernel in the native convolution's output loop
//! (`crates/jit/src/backend/epilogue.rs`); the interpreter runs the same nodes. A
//! `ConvBiasActivation` IR op would buy no speed over that and cost a reference kernel, a
//! native step, an adjoint, JSON and tracing for each backend, so none is added. What the
//! pass adds over the folding pass alone is CANN's contract: the block is named, verified
//! as a whole (a look-alike, e.g. a batch normalisation over another axis behind a
//! `Transpose`, is refused with its reason) and reported by `explain`.

use std::sync::Arc;

use graphlift_ir::{BinaryOp, Op, Output, Shape, TensorData};

use super::activation::activation;
use super::dataflow::{mismatch, Walk};
use crate::batch_norm_folding::fold;
use crate::scope_fusion::{
    Count, FusedInput, FusionScopesResult, Scope, ScopeBasePass, ScopeFusionPatterns, ScopeGraph,
    ScopePattern, StructureMismatch,
};

/// The `conv_bn_activation` scope fusion pass (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct ConvBnActivationPass;

type Res<T> = Result<T, StructureMismatch>;

impl ScopeBasePass for ConvBnActivationPass {
    fn pass_name(&self) -> &str {
        "conv_bn_activation"
    }

    fn define_patterns(&self) -> ScopeFusionPatterns {
        vec![vec![ScopePattern::new("ConvBnActivation")
            .op_type("Convolution", Count::Exactly(1))
            .op_type("BatchNormInference", Count::Exactly(1))]]
    }

    fn generate_fusion_result(
        &self,
        scope: &Scope,
        graph: &ScopeGraph<'_>,
    ) -> Res<Vec<FusionScopesResult>> {
        let mut w = Walk::new(scope, graph);
        let out = w.output()?;
        let act = activation(&mut w, out)?;
        let bn = w.compute(act.input, "the activation's operand")?;
        let Op::BatchNormInference(epsilon) = *bn.op() else {
            return Walk::wrong(bn, "the activation's operand", "BatchNormInference");
        };
        let conv = w.compute(bn.inputs()[0], "the batch normalisation's input")?;
        let Op::Convolution(c) = conv.op() else {
            return Walk::wrong(conv, "the batch normalisation's input", "Convolution");
        };
        let filter = constant(&w, conv.inputs()[1], "filter")?;
        let mut stats = Vec::with_capacity(4);
        for (i, what) in ["scale", "bias", "mean", "variance"].iter().enumerate() {
            stats.push(constant(&w, bn.inputs()[i + 1], what)?);
        }
        let Some((folded, bias)) = fold(
            &filter,
            [&stats[0], &stats[1], &stats[2], &stats[3]],
            epsilon,
        ) else {
            return mismatch(format!(
                "the filter and statistics are not float constants of {} output channels",
                stats[0].len()
            ));
        };
        let x = conv.inputs()[0];
        w.keep(x);
        let filter_shape = Shape::new(w.dims(conv.inputs()[1])?);
        let out_dims = w.dims(bn.inputs()[0])?;
        let mut per_channel = vec![1; out_dims.len()];
        per_channel[1] = bias.len();
        let (conv_id, bn_id) = (conv.id(), bn.id());
        let inner = w.finish("Conv + BatchNorm + activation")?;
        let inner = inner
            .into_iter()
            .filter(|&id| id == conv_id || id == bn_id)
            .collect();
        let window = &c.window;
        Ok(vec![FusionScopesResult {
            name: scope.name().to_string(),
            op: Op::Binary(BinaryOp::Add),
            inputs: vec![
                FusedInput::Node(
                    Op::Convolution(c.clone()),
                    vec![
                        FusedInput::Value(x),
                        FusedInput::Constant(folded, filter_shape),
                    ],
                ),
                FusedInput::Node(
                    Op::Broadcast(Shape::new(out_dims)),
                    vec![FusedInput::Constant(bias, Shape::new(per_channel))],
                ),
            ],
            outputs: vec![Output::from(bn_id)],
            description: format!(
                "Convolution {:?} (strides {:?}, groups {}) + BatchNorm (epsilon {epsilon:e}) \
                 folded into its filter and a per-channel bias Add + {} (kept): the bias Add \
                 and the activation run in the native convolution's output loop",
                window.shape, window.strides, c.groups, act.name
            ),
            inner_nodes: inner,
        }])
    }
}

/// The data of the Constant producing `o`.
fn constant(w: &Walk<'_>, o: Output, what: &str) -> Res<Arc<TensorData>> {
    let n = w.node(o)?;
    match n.op() {
        Op::Constant(d) => Ok(Arc::clone(d)),
        op => mismatch(format!(
            "the {what} is `{}` ({}), not a constant",
            n.name(),
            op.type_name()
        )),
    }
}
