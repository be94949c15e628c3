//! The built-in `layer_norm` pass: LayerNorm written out, as TF/Keras and PyTorch before
//! opset 17 export it, becomes one `Op::LayerNorm` (ONNX `LayerNormalization`):
//!
//! ```text
//! mean = ReduceMean(x, axes, keep)   d = x - mean
//! var  = ReduceMean(d ^ 2 | d * d, axes, keep)
//! y    = d / Sqrt(var + eps) [* scale] [+ bias]
//! ```
//!
//! with `axes` the last axes of `x`, `eps` a scalar constant, and `scale`, `bias` constant
//! over the leading axes (absent ones become ones and zeros).

use graphlift_ir::{BinaryOp, ElementType, LayerNorm, Op, Output, Shape, TensorData, UnaryOp};

use super::dataflow::{either, mismatch, Walk};
use crate::scope_fusion::{
    Count, FusedInput, FusionScopesResult, Scope, ScopeBasePass, ScopeFusionPatterns, ScopeGraph,
    ScopePattern, StructureMismatch,
};

/// The `layer_norm` scope fusion pass (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct LayerNormPass;

type Res<T> = Result<T, StructureMismatch>;

/// The normalisation `(x - mean) / sqrt(var + eps)` as matched.
struct Normalized {
    x: Output,
    first_axis: usize,
    epsilon: f64,
}

impl ScopeBasePass for LayerNormPass {
    fn pass_name(&self) -> &str {
        "layer_norm"
    }

    fn define_patterns(&self) -> ScopeFusionPatterns {
        vec![vec![ScopePattern::new("LayerNorm")
            .op_type("ReduceMean", Count::Exactly(2))
            .op_type("Subtract", Count::Exactly(1))
            .op_type("Sqrt", Count::Exactly(1))
            .op_type("Divide", Count::Exactly(1))]]
    }

    fn generate_fusion_result(
        &self,
        scope: &Scope,
        graph: &ScopeGraph<'_>,
    ) -> Res<Vec<FusionScopesResult>> {
        let mut w = Walk::new(scope, graph);
        let out = w.output()?;
        // y = core [+ bias], core = norm [* scale]: try each operand order.
        let (norm, scale, bias) = affine(&mut w, out)?;
        let f = w.function();
        let x_type = f
            .output_type(norm.x)
            .map_err(|e| StructureMismatch::new(e.to_string()))?
            .clone();
        if !matches!(x_type.element_type, ElementType::F32 | ElementType::F64) {
            return mismatch(format!("x is {x_type}, not a float tensor"));
        }
        let want = Shape::new(&x_type.shape.dims()[norm.first_axis..]);
        let scale = param(&mut w, scale, 1.0, &want, x_type.element_type, "scale")?;
        let bias = param(&mut w, bias, 0.0, &want, x_type.element_type, "bias")?;
        let inner = w.finish("LayerNorm")?;
        Ok(vec![FusionScopesResult {
            name: scope.name().to_string(),
            op: Op::LayerNorm(LayerNorm {
                axis: norm.first_axis,
                epsilon: norm.epsilon,
            }),
            inputs: vec![FusedInput::Value(norm.x), scale, bias],
            outputs: vec![out],
            description: format!(
                "LayerNorm over axes {}.. of {x_type}, epsilon {:e}",
                norm.first_axis, norm.epsilon
            ),
            inner_nodes: inner,
        }])
    }
}

/// `out` as `norm [* scale] [+ bias]`.
fn affine(w: &mut Walk<'_>, out: Output) -> Res<(Normalized, Option<Output>, Option<Output>)> {
    let first = match w.op_of(out)? {
        Op::Binary(BinaryOp::Add) => {
            let (a, b) = w.binary(out, BinaryOp::Add, "the output")?;
            return either(w, a, b, scaled).map(|((n, s), bias)| (n, s, Some(bias)));
        }
        _ => scaled(w, out),
    };
    first.map(|(n, s)| (n, s, None))
}

/// `core` as `norm [* scale]`.
fn scaled(w: &mut Walk<'_>, core: Output) -> Res<(Normalized, Option<Output>)> {
    if let Op::Binary(BinaryOp::Multiply) = w.op_of(core)? {
        let (a, b) = w.binary(core, BinaryOp::Multiply, "the scaled value")?;
        return either(w, a, b, normalized).map(|(n, s)| (n, Some(s)));
    }
    normalized(w, core).map(|n| (n, None))
}

/// `y` as `(x - mean) / sqrt(var + eps)` over the last axes of `x`.
fn normalized(w: &mut Walk<'_>, y: Output) -> Res<Normalized> {
    let (d, std) = w.binary(y, BinaryOp::Divide, "the normalised value")?;
    let v = w.unary(std, UnaryOp::Sqrt, "the divisor")?;
    let (var, eps) = w.binary(v, BinaryOp::Add, "the square root's operand")?;
    let mark = w.mark();
    let (var, epsilon) = match w.scalar(eps, "epsilon") {
        Ok(e) => (var, e),
        Err(_) => {
            w.reset(mark);
            (eps, w.scalar(var, "epsilon")?)
        }
    };
    if !epsilon.is_finite() || epsilon < 0.0 {
        return mismatch(format!("epsilon {epsilon} is not a finite value >= 0"));
    }
    let (r_var, sq) = w.reduce(var, "the variance", "ReduceMean")?;
    let d2 = match w.op_of(sq)? {
        Op::Binary(BinaryOp::Multiply) => {
            let (a, b) = w.binary(sq, BinaryOp::Multiply, "the square")?;
            w.same(a, b, "the square's operands")?;
            a
        }
        _ => {
            let (a, two) = w.binary(sq, BinaryOp::Power, "the square")?;
            let p = w.scalar(two, "the exponent")?;
            if p != 2.0 {
                return mismatch(format!("the exponent is {p}, not 2"));
            }
            a
        }
    };
    w.same(d, d2, "the centred value divided and the one squared")?;
    let (x, mean) = w.binary(d, BinaryOp::Subtract, "the centred value")?;
    let (r_mean, x2) = w.reduce(mean, "the mean", "ReduceMean")?;
    w.same(x, x2, "the value centred and the one averaged")?;
    if r_mean.axes != r_var.axes {
        return mismatch(format!(
            "the mean reduces axes {:?}, the variance {:?}",
            r_mean.axes, r_var.axes
        ));
    }
    let rank = w
        .function()
        .output_type(x)
        .map_err(|e| StructureMismatch::new(e.to_string()))?
        .shape
        .rank();
    let axes = &r_mean.axes;
    let first_axis = rank.saturating_sub(axes.len());
    if axes.is_empty() || *axes != (first_axis..rank).collect::<Vec<_>>() {
        return mismatch(format!(
            "the reductions are over axes {axes:?}, not the last axes of a rank-{rank} value"
        ));
    }
    Ok(Normalized {
        x,
        first_axis,
        epsilon,
    })
}

/// LayerNorm's `scale` or `bias` input of shape `want`: `value` looked through its
/// broadcasts, reshaped or broadcast to `want` when it is constant over the leading axes,
/// or `fill` everywhere when absent.
fn param(
    w: &mut Walk<'_>,
    value: Option<Output>,
    fill: f64,
    want: &Shape,
    et: ElementType,
    what: &str,
) -> Res<FusedInput> {
    let Some(v) = value else {
        let n = want
            .element_count()
            .map_err(|e| StructureMismatch::new(e.to_string()))?;
        let data = match et {
            ElementType::F64 => TensorData::F64(vec![fill; n]),
            _ => TensorData::F32(vec![fill as f32; n]),
        };
        return Ok(FusedInput::Constant(data, want.clone()));
    };
    let v = w.strip(v)?;
    let t = w
        .function()
        .output_type(v)
        .map_err(|e| StructureMismatch::new(e.to_string()))?;
    if t.element_type != et {
        return mismatch(format!("the {what} is {t}, not {et}"));
    }
    let dims = t.shape.dims();
    let trimmed: Vec<usize> = dims.iter().copied().skip_while(|&d| d == 1).collect();
    let fits = trimmed.len() <= want.rank()
        && trimmed
            .iter()
            .rev()
            .zip(want.dims().iter().rev())
            .all(|(&a, &b)| a == b || a == 1);
    if !fits {
        return mismatch(format!(
            "the {what} {t} varies over axes that LayerNorm does not normalise ({want})"
        ));
    }
    Ok(if t.shape == *want {
        FusedInput::Value(v)
    } else if trimmed.as_slice() == want.dims() {
        FusedInput::Reshape(v, want.clone())
    } else if dims.len() <= want.rank() {
        FusedInput::Broadcast(v, want.clone())
    } else {
        return mismatch(format!(
            "the {what} {t} needs a reshape and a broadcast to become {want}"
        ));
    })
}
