//! Activation and arithmetic ONNX ops lowered to elementwise IR: the ReLU family, ELU,
//! SELU, CELU, HardSigmoid, Softplus, GELU, Swish, Shrink, Pow, the variadic
//! Sum/Max/Min/Mean and Clip.

use crate::emit::NodeEmitter;
use crate::error::OnnxError;
use graphlift_ir::{BinaryOp, CompareOp, ElementType, Op, Output, UnaryOp};
use std::f64::consts::{FRAC_1_SQRT_2, PI};

use super::*;

/// `Reciprocal`: `1 / x`.
pub(super) fn reciprocal(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let one = e.scalar_like(x, 1.0)?;
    e.binary(BinaryOp::Divide, one, x)
}

/// `LeakyRelu`: `x < 0 ? alpha * x : x` (alpha defaults to 0.01).
pub(super) fn leaky_relu(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let alpha = e.attr_f32("alpha", 0.01)?;
    leaky_relu_of(e, x, f64::from(alpha))
}

/// `x < 0 ? alpha * x : x`.
pub(super) fn leaky_relu_of(
    e: &mut NodeEmitter<'_>,
    x: Output,
    alpha: f64,
) -> Result<Output, OnnxError> {
    let zero = e.scalar_like(x, 0.0)?;
    let neg = e.compare(CompareOp::Less, x, zero)?;
    let ax = e.mul_scalar(x, alpha)?;
    e.select(neg, ax, x)
}

/// `PRelu`: `x < 0 ? slope * x : x`, `slope` broadcast unidirectionally to `x`.
pub(super) fn prelu(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (x, slope) = (e.input(ins, 0)?, e.input(ins, 1)?);
    e.require(x, numeric, "a numeric")?;
    e.same_type(&[x, slope])?;
    let xs = e.ty(x)?.shape;
    let ss = e.ty(slope)?.shape;
    if !ss.broadcasts_to(&xs) {
        return Err(e.shape_error(format!(
            "slope of shape {ss} does not broadcast to the input's shape {xs} (unidirectional)"
        )));
    }
    let zero = e.scalar_like(x, 0.0)?;
    let neg = e.compare(CompareOp::Less, x, zero)?;
    let sx = e.binary(BinaryOp::Multiply, slope, x)?;
    e.select(neg, sx, x)
}

/// `ThresholdedRelu`: `x > alpha ? x : 0` (alpha defaults to 1).
pub(super) fn thresholded_relu(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let alpha = e.attr_f32("alpha", 1.0)?;
    thresholded_relu_of(e, x, f64::from(alpha))
}

/// `x > alpha ? x : 0`.
pub(super) fn thresholded_relu_of(
    e: &mut NodeEmitter<'_>,
    x: Output,
    alpha: f64,
) -> Result<Output, OnnxError> {
    let a = e.scalar_like(x, alpha)?;
    let above = e.compare(CompareOp::Greater, x, a)?;
    let zero = e.scalar_like(x, 0.0)?;
    e.select(above, x, zero)
}

/// `Elu`: `x < 0 ? alpha * (exp(x) - 1) : x` (alpha defaults to 1).
pub(super) fn elu(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let alpha = e.attr_f32("alpha", 1.0)?;
    elu_of(e, x, f64::from(alpha))
}

/// `x < 0 ? alpha * (exp(x) - 1) : x`.
pub(super) fn elu_of(e: &mut NodeEmitter<'_>, x: Output, alpha: f64) -> Result<Output, OnnxError> {
    let zero = e.scalar_like(x, 0.0)?;
    let neg = e.compare(CompareOp::Less, x, zero)?;
    let ex = e.unary(UnaryOp::Exp, x)?;
    let em1 = e.add_scalar(ex, -1.0)?;
    let scaled = e.mul_scalar(em1, alpha)?;
    e.select(neg, scaled, x)
}

/// `Softsign`: `x / (1 + |x|)`.
pub(super) fn softsign(e: &mut NodeEmitter<'_>, x: Output) -> Result<Output, OnnxError> {
    let a = e.unary(UnaryOp::Abs, x)?;
    let d = e.add_scalar(a, 1.0)?;
    e.binary(BinaryOp::Divide, x, d)
}

/// `Selu`: `x > 0 ? gamma * x : gamma * (alpha * exp(x) - alpha)`, with the spec's
/// defaults alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875.
pub(super) fn selu(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let alpha = f64::from(e.attr_f32("alpha", 1.673_263_2)?);
    let gamma = f64::from(e.attr_f32("gamma", 1.050_701)?);
    let zero = e.scalar_like(x, 0.0)?;
    let pos = e.compare(CompareOp::Greater, x, zero)?;
    let gx = e.mul_scalar(x, gamma)?;
    let ex = e.unary(UnaryOp::Exp, x)?;
    let aex = e.mul_scalar(ex, alpha)?;
    let shifted = e.add_scalar(aex, -alpha)?;
    let neg = e.mul_scalar(shifted, gamma)?;
    e.select(pos, gx, neg)
}

/// `Celu`: `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))` (alpha defaults to 1).
pub(super) fn celu(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let alpha = f64::from(e.attr_f32("alpha", 1.0)?);
    if alpha == 0.0 {
        return Err(e.attribute_error("alpha", "must not be 0".into()));
    }
    let pos = e.unary(UnaryOp::Relu, x)?;
    let xa = e.mul_scalar(x, 1.0 / alpha)?;
    let ex = e.unary(UnaryOp::Exp, xa)?;
    let em1 = e.add_scalar(ex, -1.0)?;
    let scaled = e.mul_scalar(em1, alpha)?;
    let zero = e.scalar_like(x, 0.0)?;
    let neg = e.binary(BinaryOp::Minimum, zero, scaled)?;
    e.binary(BinaryOp::Add, pos, neg)
}

/// `max(0, min(1, alpha * x + beta))`.
pub(super) fn hard_sigmoid(
    e: &mut NodeEmitter<'_>,
    x: Output,
    alpha: f64,
    beta: f64,
) -> Result<Output, OnnxError> {
    let ax = e.mul_scalar(x, alpha)?;
    let lin = e.add_scalar(ax, beta)?;
    let one = e.scalar_like(x, 1.0)?;
    let upper = e.binary(BinaryOp::Minimum, lin, one)?;
    let zero = e.scalar_like(x, 0.0)?;
    e.binary(BinaryOp::Maximum, upper, zero)
}

/// `Softplus`: `log(1 + exp(x))`, as [`graphlift_ir::expansion::softplus`] computes it.
pub(super) fn softplus(e: &mut NodeEmitter<'_>, x: Output) -> Result<Output, OnnxError> {
    graphlift_ir::expansion::softplus(e, x)
}

/// `Gelu` (opset 20): `approximate="none"`: `0.5 x (1 + erf(x / sqrt 2))`;
/// `approximate="tanh"`: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
pub(super) fn gelu(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let approximate = e
        .attr_string("approximate")?
        .unwrap_or_else(|| "none".into());
    let inner = match approximate.as_str() {
        "none" => {
            let s = e.mul_scalar(x, FRAC_1_SQRT_2)?;
            e.unary(UnaryOp::Erf, s)?
        }
        "tanh" => {
            let x2 = e.binary(BinaryOp::Multiply, x, x)?;
            let x3 = e.binary(BinaryOp::Multiply, x2, x)?;
            let c = e.mul_scalar(x3, 0.044_715)?;
            let sum = e.binary(BinaryOp::Add, x, c)?;
            let s = e.mul_scalar(sum, (2.0 / PI).sqrt())?;
            e.unary(UnaryOp::Tanh, s)?
        }
        other => {
            return Err(e.attribute_error(
                "approximate",
                format!("must be \"none\" or \"tanh\", is {other:?}"),
            ))
        }
    };
    let p1 = e.add_scalar(inner, 1.0)?;
    let hx = e.mul_scalar(x, 0.5)?;
    e.binary(BinaryOp::Multiply, hx, p1)
}

/// `Swish` (opset 24): `x · sigmoid(alpha · x)` (`alpha` defaults to 1), FLOAT16, FLOAT,
/// DOUBLE or BFLOAT16.
pub(super) fn swish(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let x = float_input(e, ins)?;
    let alpha = f64::from(e.attr_f32("alpha", 1.0)?);
    let ax = if alpha == 1.0 {
        x
    } else {
        e.mul_scalar(x, alpha)?
    };
    let s = e.unary(UnaryOp::Sigmoid, ax)?;
    e.binary(BinaryOp::Multiply, x, s)
}

/// `Shrink` (opset 9): `x < -lambd ? x + bias : x > lambd ? x - bias : 0` (`lambd` 0.5 and
/// `bias` 0 by default), of any numeric type: floats compute in their type, integers in
/// DOUBLE converted back (truncated, saturated), as ONNX's reference does.
pub(super) fn shrink(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    e.require(x, numeric, "a numeric")?;
    let lambd = f64::from(e.attr_f32("lambd", 0.5)?);
    let bias = f64::from(e.attr_f32("bias", 0.0)?);
    in_float(e, x, |e, x| {
        let below = e.scalar_like(x, -lambd)?;
        let above = e.scalar_like(x, lambd)?;
        let low = e.compare(CompareOp::Less, x, below)?;
        let high = e.compare(CompareOp::Greater, x, above)?;
        let raised = e.add_scalar(x, bias)?;
        let lowered = e.add_scalar(x, -bias)?;
        let zero = e.scalar_like(x, 0.0)?;
        let upper = e.select(high, lowered, zero)?;
        e.select(low, raised, upper)
    })
}

/// `Pow`: the result has the base's element type. A float base takes the exponent converted
/// to its type; an integer base with a float exponent is computed in DOUBLE and converted
/// back (truncating, as numpy's `power(...).astype(base)`); integer base and exponent of
/// different widths are computed in INT64 and converted back (wrapping).
pub(super) fn pow(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let (x, y) = two_inputs(e, ins)?;
    let tx = e.require(x, numeric, "a numeric")?;
    let ty = e.require(y, numeric, "a numeric")?;
    if tx == ty {
        return e.binary(BinaryOp::Power, x, y);
    }
    if tx.is_float() {
        let y = e.convert(y, tx)?;
        return e.binary(BinaryOp::Power, x, y);
    }
    let wide = if ty.is_float() {
        ElementType::F64
    } else {
        ElementType::I64
    };
    let xw = e.convert(x, wide)?;
    let yw = e.convert(y, wide)?;
    let p = e.binary(BinaryOp::Power, xw, yw)?;
    e.convert(p, tx)
}

/// `Max`, `Min`, `Sum`: a fold over one or more inputs of one type, broadcast together.
pub(super) fn variadic(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    op: BinaryOp,
) -> Result<Output, OnnxError> {
    e.arity(ins, 1, usize::MAX)?;
    let values = (0..ins.len())
        .map(|i| e.input(ins, i))
        .collect::<Result<Vec<_>, _>>()?;
    e.same_type(&values)?;
    e.require(values[0], numeric, "a numeric")?;
    let values = e.broadcast_all(&values)?;
    let mut acc = values[0];
    for &v in &values[1..] {
        acc = e.op(Op::Binary(op), &[acc, v])?;
    }
    Ok(acc)
}

/// `Mean`: the sum of the inputs divided by their count.
pub(super) fn mean(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, usize::MAX)?;
    let x = e.input(ins, 0)?;
    e.require(x, float, "a float")?;
    let sum = variadic(e, ins, BinaryOp::Add)?;
    if ins.len() == 1 {
        return Ok(sum);
    }
    let n = e.scalar_like(sum, ins.len() as f64)?;
    e.binary(BinaryOp::Divide, sum, n)
}

/// `Clip`: `min(max(x, lo), hi)` (so `hi` wins when `lo > hi`, as numpy's `clip`). Opset
/// 11+: `lo` and `hi` are optional inputs of `x`'s type that broadcast to `x`; before: FLOAT
/// attributes `min` and `max`. An absent bound does not clip.
pub(super) fn clip(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let (lo, hi);
    let x;
    if e.opset() >= 11 {
        e.arity(ins, 1, 3)?;
        x = e.input(ins, 0)?;
        e.require(x, numeric, "a numeric")?;
        lo = ins.get(1).copied().flatten();
        hi = ins.get(2).copied().flatten();
        let xs = e.ty(x)?.shape;
        for (bound, which) in [(lo, "min"), (hi, "max")] {
            if let Some(b) = bound {
                e.same_type(&[x, b])?;
                let bs = e.ty(b)?.shape;
                if !bs.broadcasts_to(&xs) {
                    return Err(e.shape_error(format!(
                        "{which} of shape {bs} does not broadcast to the input's shape {xs}"
                    )));
                }
            }
        }
    } else {
        e.arity(ins, 1, 1)?;
        x = e.input(ins, 0)?;
        e.require(x, float, "a float")?;
        lo = match e.attr_f32_opt("min")? {
            Some(v) => Some(e.scalar_like(x, f64::from(v))?),
            None => None,
        };
        hi = match e.attr_f32_opt("max")? {
            Some(v) => Some(e.scalar_like(x, f64::from(v))?),
            None => None,
        };
    }
    let mut y = x;
    if let Some(lo) = lo {
        y = e.binary(BinaryOp::Maximum, y, lo)?;
    }
    if let Some(hi) = hi {
        y = e.binary(BinaryOp::Minimum, y, hi)?;
    }
    Ok(y)
}
