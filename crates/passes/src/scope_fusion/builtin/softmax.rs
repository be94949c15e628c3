//! The built-in `softmax` pass: Softmax written out becomes one `Op::Softmax` (ONNX
//! `Softmax`, opset 13) along its one reduced axis:
//!
//! ```text
//! e = Exp(x - ReduceMax(x, [a], keep))   or   e = Exp(x)
//! y = e / ReduceSum(e, [a], keep)
//! ```
//!
//! The form without the max subtraction computes the same function (it overflows sooner);
//! the fused op is the stable one.

use graphlift_ir::{BinaryOp, Op, Output, UnaryOp};

use super::dataflow::{mismatch, Walk};
use crate::scope_fusion::{
    Count, FusedInput, FusionScopesResult, Scope, ScopeBasePass, ScopeFusionPatterns, ScopeGraph,
    ScopePattern, StructureMismatch,
};

/// The `softmax` scope fusion pass (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct SoftmaxPass;

impl ScopeBasePass for SoftmaxPass {
    fn pass_name(&self) -> &str {
        "softmax"
    }

    fn define_patterns(&self) -> ScopeFusionPatterns {
        vec![vec![ScopePattern::new("Softmax")
            .op_type("Exp", Count::Exactly(1))
            .op_type("ReduceSum", Count::Exactly(1))
            .op_type("Divide", Count::Exactly(1))]]
    }

    fn generate_fusion_result(
        &self,
        scope: &Scope,
        graph: &ScopeGraph<'_>,
    ) -> Result<Vec<FusionScopesResult>, StructureMismatch> {
        let mut w = Walk::new(scope, graph);
        let out = w.output()?;
        let (x, axis) = written_out(&mut w, out)?;
        let t = w
            .function()
            .output_type(x)
            .map_err(|e| StructureMismatch::new(e.to_string()))?
            .clone();
        if !t.element_type.is_float() {
            return mismatch(format!("x is {t}, not a float tensor"));
        }
        let inner = w.finish("Softmax")?;
        Ok(vec![FusionScopesResult {
            name: scope.name().to_string(),
            op: Op::Softmax(axis),
            inputs: vec![FusedInput::Value(x)],
            outputs: vec![out],
            description: format!("Softmax along axis {axis} of {t}"),
            inner_nodes: inner,
        }])
    }
}

/// `x` and the axis of `y = softmax(x, axis)` written out (see the module documentation),
/// inside the walk's scope; the other scope passes' check of a Softmax.
pub(super) fn written_out(
    w: &mut Walk<'_>,
    y: Output,
) -> Result<(Output, usize), StructureMismatch> {
    let (e, sum) = w.binary(y, BinaryOp::Divide, "the softmax")?;
    let (r_sum, e2) = w.reduce(sum, "the divisor", "ReduceSum")?;
    w.same(e, e2, "the value divided and the one summed")?;
    let z = w.unary(e, UnaryOp::Exp, "the numerator")?;
    let axis = match r_sum.axes.as_slice() {
        [a] => *a,
        axes => return mismatch(format!("the sum is over axes {axes:?}, not one axis")),
    };
    Ok((centred(w, z, axis)?, axis))
}

/// `x` of `z = x - ReduceMax(x, [axis], keep)` when `z` is that (inside the scope), else `z`.
fn centred(w: &mut Walk<'_>, z: Output, axis: usize) -> Result<Output, StructureMismatch> {
    if !matches!(w.op_of(z)?, Op::Binary(BinaryOp::Subtract)) {
        return Ok(z);
    }
    let mark = w.mark();
    let (x, m) = w.binary(z, BinaryOp::Subtract, "the exponent")?;
    if !matches!(w.op_of(m)?, Op::Reduce(_)) {
        w.reset(mark);
        return Ok(z);
    }
    let (r_max, x2) = w.reduce(m, "the subtracted maximum", "ReduceMax")?;
    w.same(x, x2, "the value centred and the one maximised")?;
    if r_max.axes != [axis] {
        return mismatch(format!(
            "the maximum is over axes {:?}, the sum over [{axis}]",
            r_max.axes
        ));
    }
    Ok(x)
}
