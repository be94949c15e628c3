//! Reading the activation that ends a Conv + BatchNorm + activation block, in the forms the
//! ONNX importer writes each exporter's activation as (`crates/onnx/src/ops/activation.rs`):
//!
//! ```text
//! Relu         Relu(y)
//! Sigmoid      Sigmoid(y)
//! Clip(lo,hi)  Minimum(Maximum(y, lo), hi)            (ONNX Clip; ReLU6 is Clip(0, 6))
//! HardSigmoid  Maximum(Minimum(y * a + b, 1), 0)      (ONNX HardSigmoid)
//! HardSwish    y * HardSigmoid(y; 1/6, 1/2)           (ONNX HardSwish, PyTorch's Hardswish)
//!              y * Clip(y + 3, 0, 6) / 6              (PaddlePaddle's hard_swish written out)
//! SiLU         y * Sigmoid(y)                         (Sigmoid·x, either order)
//! ```
//!
//! Each reading records the nodes it walks, so the walk can account for the whole scope.

use graphlift_ir::{BinaryOp, Op, Output, UnaryOp};

use super::dataflow::{either, mismatch, Walk};
use crate::scope_fusion::StructureMismatch;

type Res<T> = Result<T, StructureMismatch>;

/// An activation as read: its operand and its name for reports.
pub(crate) struct Activation {
    /// The value the activation is applied to.
    pub input: Output,
    /// `Relu`, `Clip(0, 6)`, `HardSwish`, ... (with its constants).
    pub name: String,
}

/// The activation computing `out` (see the module documentation).
///
/// # Errors
/// A [`StructureMismatch`] naming the op at `out` when no form fits.
pub(crate) fn activation(w: &mut Walk<'_>, out: Output) -> Res<Activation> {
    let op = w.op_of(out)?;
    let forms: &[Reader] = match op {
        Op::Unary(UnaryOp::Relu) => &[relu],
        Op::Unary(UnaryOp::Sigmoid) => &[sigmoid],
        Op::Binary(BinaryOp::Minimum) => &[clip],
        Op::Binary(BinaryOp::Maximum) => &[hard_sigmoid, clip],
        Op::Binary(BinaryOp::Multiply) => &[swish],
        Op::Binary(BinaryOp::Divide) => &[paddle_hard_swish],
        _ => &[],
    };
    let mark = w.mark();
    let mut first = None;
    for read in forms {
        match read(w, out) {
            Ok(a) => return Ok(a),
            Err(e) => {
                w.reset(mark);
                first.get_or_insert(e);
            }
        }
    }
    Err(first.unwrap_or_else(|| {
        StructureMismatch::new(format!(
            "the block's output is computed by {}, not Relu, Sigmoid, Clip, HardSigmoid, \
             HardSwish or SiLU",
            op.type_name()
        ))
    }))
}

type Reader = fn(&mut Walk<'_>, Output) -> Res<Activation>;

fn relu(w: &mut Walk<'_>, o: Output) -> Res<Activation> {
    let input = w.unary(o, UnaryOp::Relu, "the activation")?;
    Ok(Activation {
        input,
        name: "Relu".into(),
    })
}

fn sigmoid(w: &mut Walk<'_>, o: Output) -> Res<Activation> {
    let input = w.unary(o, UnaryOp::Sigmoid, "the activation")?;
    Ok(Activation {
        input,
        name: "Sigmoid".into(),
    })
}

/// The binary op `b` at `o` with one scalar-constant operand (either side): the other
/// operand and the constant.
fn with_scalar(w: &mut Walk<'_>, o: Output, b: BinaryOp, what: &str) -> Res<(Output, f64)> {
    let (a, c) = w.binary(o, b, what)?;
    let mark = w.mark();
    match w.scalar(c, what) {
        Ok(v) => Ok((a, v)),
        Err(e) if commutes(b) => {
            w.reset(mark);
            w.scalar(a, what).map(|v| (c, v)).map_err(|_| e)
        }
        Err(e) => Err(e),
    }
}

fn commutes(b: BinaryOp) -> bool {
    matches!(
        b,
        BinaryOp::Add | BinaryOp::Multiply | BinaryOp::Maximum | BinaryOp::Minimum
    )
}

/// `Minimum(Maximum(y, lo), hi)`: `y`, `lo`, `hi`.
fn clip_bounds(w: &mut Walk<'_>, o: Output) -> Res<(Output, f64, f64)> {
    let (inner, hi) = with_scalar(w, o, BinaryOp::Minimum, "the clip's upper bound")?;
    let (y, lo) = with_scalar(w, inner, BinaryOp::Maximum, "the clip's lower bound")?;
    if lo > hi {
        return mismatch(format!("the clip's bounds {lo} > {hi}"));
    }
    Ok((y, lo, hi))
}

fn clip(w: &mut Walk<'_>, o: Output) -> Res<Activation> {
    let (input, lo, hi) = clip_bounds(w, o)?;
    Ok(Activation {
        input,
        name: format!("Clip({lo}, {hi})"),
    })
}

/// `Maximum(Minimum(y * a + b, 1), 0)`: `y`, `a`, `b`.
fn hard_sigmoid_parts(w: &mut Walk<'_>, o: Output) -> Res<(Output, f64, f64)> {
    let (upper, zero) = with_scalar(w, o, BinaryOp::Maximum, "the hard sigmoid's floor")?;
    let (lin, one) = with_scalar(w, upper, BinaryOp::Minimum, "the hard sigmoid's ceiling")?;
    if zero != 0.0 || one != 1.0 {
        return mismatch(format!(
            "the hard sigmoid clips to [{zero}, {one}], not [0, 1]"
        ));
    }
    let (ax, beta) = with_scalar(w, lin, BinaryOp::Add, "the hard sigmoid's offset")?;
    let (y, alpha) = with_scalar(w, ax, BinaryOp::Multiply, "the hard sigmoid's slope")?;
    Ok((y, alpha, beta))
}

fn hard_sigmoid(w: &mut Walk<'_>, o: Output) -> Res<Activation> {
    let (input, alpha, beta) = hard_sigmoid_parts(w, o)?;
    Ok(Activation {
        input,
        name: format!("HardSigmoid(alpha {alpha}, beta {beta})"),
    })
}

/// `y * gate(y)`, the gate `Sigmoid` (SiLU) or `HardSigmoid(1/6, 1/2)` (HardSwish).
fn swish(w: &mut Walk<'_>, o: Output) -> Res<Activation> {
    let (a, b) = w.binary(o, BinaryOp::Multiply, "the activation")?;
    let ((gated, name), y) = either(w, a, b, gate)?;
    w.same(gated, y, "the gated value and the one it multiplies")?;
    Ok(Activation { input: y, name })
}

/// A swish gate at `g`: the value it reads and the activation it makes.
fn gate(w: &mut Walk<'_>, g: Output) -> Res<(Output, String)> {
    if let Op::Unary(UnaryOp::Sigmoid) = w.op_of(g)? {
        let y = w.unary(g, UnaryOp::Sigmoid, "the gate")?;
        return Ok((y, "SiLU (x·Sigmoid(x))".into()));
    }
    let (y, alpha, beta) = hard_sigmoid_parts(w, g)?;
    if (alpha - 1.0 / 6.0).abs() > 1e-6 || beta != 0.5 {
        return mismatch(format!(
            "the gate is HardSigmoid(alpha {alpha}, beta {beta}), not HardSwish's (1/6, 0.5)"
        ));
    }
    Ok((y, "HardSwish".into()))
}

/// PaddlePaddle's `y * Clip(y + 3, 0, 6) / 6`.
fn paddle_hard_swish(w: &mut Walk<'_>, o: Output) -> Res<Activation> {
    let (prod, six) = w.binary(o, BinaryOp::Divide, "the activation")?;
    let d = w.scalar(six, "the divisor")?;
    let (a, b) = w.binary(prod, BinaryOp::Multiply, "the divided product")?;
    let ((shifted, lo, hi), y) = either(w, a, b, clip_bounds)?;
    let (x, three) = with_scalar(w, shifted, BinaryOp::Add, "the clip's operand")?;
    w.same(x, y, "the clipped value and the one it multiplies")?;
    if (three, lo, hi, d) != (3.0, 0.0, 6.0, 6.0) {
        return mismatch(format!(
            "y * Clip(y + {three}, {lo}, {hi}) / {d} is not HardSwish's y * Clip(y + 3, 0, 6) / 6"
        ));
    }
    Ok(Activation {
        input: y,
        name: "HardSwish".into(),
    })
}
