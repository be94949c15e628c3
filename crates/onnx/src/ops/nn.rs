//! Neural-network operators that are not elementwise and not windowed: `MatMul`, `Gemm`,
//! `BatchNormalization`, `Softmax`, `LogSoftmax`, `LayerNormalization`, the `Reduce*`
//! family, `ArgMax`/`ArgMin` and `CumSum`.

use graphlift_ir::{CompareOp, ElementType, LayerNorm, Op, Output, ReduceOp, Reduction, Shape};

use super::layout::{axes, axes_operand, axis, dims, reshape_to as reshape};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `MatMul` (numpy `matmul`): a 1-D operand is a row (first) or column (second) vector whose
/// axis is removed from the result; batch axes broadcast.
pub(super) fn matmul(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (mut a, mut b) = (e.input(ins, 0)?, e.input(ins, 1)?);
    e.same_type(&[a, b])?;
    let (da, db) = (dims(e, a)?, dims(e, b)?);
    if da.is_empty() || db.is_empty() {
        return Err(e.shape_error("MatMul operands must have rank >= 1".into()));
    }
    if da.len() == 1 {
        a = reshape(e, a, vec![1, da[0]])?;
    }
    if db.len() == 1 {
        b = reshape(e, b, vec![db[0], 1])?;
    }
    let y = e.op(Op::MatMul, &[a, b])?;
    let full = dims(e, y)?;
    let (batch, mn) = full.split_at(full.len() - 2);
    let mut out = batch.to_vec();
    if da.len() > 1 {
        out.push(mn[0]);
    }
    if db.len() > 1 {
        out.push(mn[1]);
    }
    reshape(e, y, out)
}

/// `BatchNormalization` in inference mode (`training_mode` must be 0; the running-stat
/// outputs are not produced).
pub(super) fn batch_norm(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 5, 5)?;
    if e.attr_i64("training_mode")?.unwrap_or(0) != 0 {
        return Err(e.unsupported("training_mode = 1 (graphlift runs inference only)"));
    }
    if e.attr_i64("spatial")?.unwrap_or(1) != 1 {
        return Err(e.unsupported("spatial = 0 (only spatial = 1)"));
    }
    if e.node().output.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(e.unsupported("the running-statistics outputs (inference gives Y only)"));
    }
    let epsilon = f64::from(e.attr_f32("epsilon", 1e-5)?);
    let values = (0..5)
        .map(|i| e.input(ins, i))
        .collect::<Result<Vec<_>, _>>()?;
    e.op(Op::BatchNormInference(epsilon), &values)
}

/// `Softmax`: opset 13+ along `axis` (default -1); before, the input is coerced to 2-D at
/// `axis` (default 1) and normalised over the second axis.
pub(super) fn softmax(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let rank = d.len();
    if e.opset() >= 13 {
        let a = axis(e, e.attr_i64("axis")?.unwrap_or(-1), rank, "axis")?;
        return e.op(Op::Softmax(a), &[x]);
    }
    let a = e.attr_i64("axis")?.unwrap_or(1);
    let a = if a == rank as i64 {
        rank
    } else {
        axis(e, a, rank.max(1), "axis")?
    };
    let rows: usize = d[..a].iter().product();
    let cols: usize = d[a..].iter().product();
    let flat = reshape(e, x, vec![rows, cols])?;
    let y = e.op(Op::Softmax(1), &[flat])?;
    reshape(e, y, d)
}

/// `LayerNormalization` (opset 17): normalises over `axis..` (default -1) with `epsilon`
/// (default 1e-5); `B` is optional; the `Mean` and `InvStdDev` outputs are not produced.
pub(super) fn layer_norm(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 3)?;
    if e.node().output.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(e.unsupported("the Mean and InvStdDev outputs (Y only)"));
    }
    let (x, scale) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let d = dims(e, x)?;
    let a = axis(e, e.attr_i64("axis")?.unwrap_or(-1), d.len(), "axis")?;
    let norm = Shape::new(&d[a..]);
    let scale = e.broadcast_to(scale, &norm)?;
    let bias = match ins.get(2).copied().flatten() {
        Some(b) => e.broadcast_to(b, &norm)?,
        None => {
            let zero = e.scalar_like(x, 0.0)?;
            e.broadcast_to(zero, &norm)?
        }
    };
    let l = LayerNorm {
        axis: a,
        epsilon: f64::from(e.attr_f32("epsilon", 1e-5)?),
    };
    e.op(Op::LayerNorm(l), &[x, scale, bias])
}

/// `ReduceSum`, `ReduceMean`, `ReduceMax`, `ReduceMin`, `ReduceProd`: `axes` is an input
/// from opset 13 (`ReduceSum`) or 18 (the others), an attribute before; `keepdims`
/// (default 1); no axes reduces everything unless `noop_with_empty_axes` = 1. `ReduceMax`
/// and `ReduceMin` of BOOL (opset 20) are "any" and "all" (false and true when empty).
pub(super) fn reduce(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    op: ReduceOp,
) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 2)?;
    let x = e.input(ins, 0)?;
    let rank = dims(e, x)?.len();
    let since = if op == ReduceOp::Sum { 13 } else { 18 };
    let list = axes_operand(e, ins, since)?.unwrap_or_default();
    let keep_dims = e.attr_i64("keepdims")?.unwrap_or(1) != 0;
    let reduced = if list.is_empty() {
        if e.attr_i64("noop_with_empty_axes")?.unwrap_or(0) != 0 {
            return Ok(x);
        }
        (0..rank).collect()
    } else {
        axes(e, &list, rank, "axes")?
    };
    let r = Reduction {
        op,
        axes: reduced,
        keep_dims,
    };
    if e.et(x)? == ElementType::Bool && matches!(op, ReduceOp::Max | ReduceOp::Min) {
        // Opset 20's BOOL max (any) and min (all), over 0/1 integers: `> 0` maps the
        // empty reduction's MIN to false and MAX to true.
        let ints = e.convert(x, ElementType::I32)?;
        let y = e.op(Op::Reduce(r), &[ints])?;
        let zero = e.scalar(ElementType::I32, 0.0)?;
        return e.compare(CompareOp::Greater, y, zero);
    }
    e.op(Op::Reduce(r), &[x])
}
