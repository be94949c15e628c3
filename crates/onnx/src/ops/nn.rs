//! Neural-network operators that are not elementwise and not windowed: `MatMul`, `Gemm`,
//! `BatchNormalization`, `Softmax`, `LogSoftmax`, `Hardmax`, `LayerNormalization`,
//! `ArgMax`/`ArgMin` and `CumSum` (the `Reduce*` family is `reduce.rs`'s).

use graphlift_ir::{
    ArgOp, ArgReduction, BinaryOp, CompareOp, CumSum, ElementType, LayerNorm, Op, Output, ReduceOp,
    Reduction, Shape, TensorData, UnaryOp,
};

use super::layout::{axis, dims, reshape_to as reshape};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `MatMul` (numpy `matmul`): a 1-D operand is a row (first) or column (second) vector whose
/// axis is removed from the result; batch axes broadcast.
pub(super) fn matmul(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (a, b) = (e.input(ins, 0)?, e.input(ins, 1)?);
    matmul_of(e, a, b)
}

/// `a @ b` with numpy `matmul`'s rules (see [`matmul`]), on operands of one element type.
pub(super) fn matmul_of(
    e: &mut NodeEmitter<'_>,
    mut a: Output,
    mut b: Output,
) -> Result<Output, OnnxError> {
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
    along_axis(e, ins, |e, x, a| e.op(Op::Softmax(a), &[x]))
}

/// `LogSoftmax` (axis rules as [`softmax`]), in the stable form
/// `x - max - log(sum(exp(x - max)))` over the axis.
pub(super) fn log_softmax(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    along_axis(e, ins, |e, x, a| {
        e.require(x, ElementType::is_float, "a float")?;
        let shape = e.ty(x)?.shape;
        let over = |op| {
            Op::Reduce(Reduction {
                op,
                axes: vec![a],
                keep_dims: true,
            })
        };
        let max = e.op(over(ReduceOp::Max), &[x])?;
        let max = e.broadcast_to(max, &shape)?;
        let shifted = e.binary(BinaryOp::Subtract, x, max)?;
        let exp = e.unary(UnaryOp::Exp, shifted)?;
        let sum = e.op(over(ReduceOp::Sum), &[exp])?;
        let log = e.unary(UnaryOp::Log, sum)?;
        e.binary(BinaryOp::Subtract, shifted, log)
    })
}

/// `Hardmax` (opsets 1, 11, 13; FLOAT16, FLOAT, DOUBLE, and BFLOAT16 from 13; axis rules as
/// [`softmax`]): 1 at the first maximum of each slice along the axis, 0 elsewhere, in `x`'s
/// shape and type. The `ArgMax` of the axis (kept) compared with the positions along it.
pub(super) fn hardmax(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    along_axis(e, ins, |e, x, a| {
        let t = e.require(x, ElementType::is_float, "a float")?;
        let d = dims(e, x)?;
        if d.contains(&0) {
            return Ok(x);
        }
        let first = ArgReduction {
            op: ArgOp::Max,
            axis: a,
            keep_dims: true,
            select_last_index: false,
        };
        let picked = e.op(Op::ArgReduce(first), &[x])?;
        let mut along = vec![1; d.len()];
        along[a] = d[a];
        let positions = (0..d[a] as i64).collect();
        let positions = e.constant(TensorData::I64(positions), Shape::new(along))?;
        let hit = e.compare(CompareOp::Equal, picked, positions)?;
        e.convert(hit, t)
    })
}

/// Applies `f(x, axis)` as `Softmax` and `LogSoftmax` define their axis: from opset 13
/// `axis` (default -1) of `x`; before, `x` coerced to 2-D at `axis` (default 1, may equal
/// the rank) and the op over its second axis, reshaped back.
fn along_axis(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    f: impl FnOnce(&mut NodeEmitter<'_>, Output, usize) -> Result<Output, OnnxError>,
) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let rank = d.len();
    if e.opset() >= 13 {
        let a = axis(e, e.attr_i64("axis")?.unwrap_or(-1), rank, "axis")?;
        return f(e, x, a);
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
    let y = f(e, flat, 1)?;
    reshape(e, y, d)
}

/// `Gemm`: `alpha · A' · B' + beta · C` with `A'` = `A` `[M, K]` (or its transpose with
/// `transA`), `B'` = `B` `[K, N]` (or its transpose with `transB`), and the optional `C`
/// broadcast to `[M, N]`; `alpha` and `beta` default to 1.
pub(super) fn gemm(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 3)?;
    let (mut a, mut b) = (e.input(ins, 0)?, e.input(ins, 1)?);
    e.same_type(&[a, b])?;
    for (v, what) in [(a, "A"), (b, "B")] {
        let d = dims(e, v)?;
        if d.len() != 2 {
            return Err(e.shape_error(format!("{what} must be a matrix, has shape {d:?}")));
        }
    }
    if e.attr_i64("transA")?.unwrap_or(0) != 0 {
        a = e.op(Op::Transpose(vec![1, 0]), &[a])?;
    }
    if e.attr_i64("transB")?.unwrap_or(0) != 0 {
        b = e.op(Op::Transpose(vec![1, 0]), &[b])?;
    }
    let mut y = e.op(Op::MatMul, &[a, b])?;
    let alpha = f64::from(e.attr_f32("alpha", 1.0)?);
    if alpha != 1.0 {
        y = e.mul_scalar(y, alpha)?;
    }
    let Some(mut c) = e.optional_input(ins, 2) else {
        return Ok(y);
    };
    let beta = f64::from(e.attr_f32("beta", 1.0)?);
    if beta != 1.0 {
        c = e.mul_scalar(c, beta)?;
    }
    let shape = e.ty(y)?.shape;
    let c_shape = e.ty(c)?.shape;
    if !c_shape.broadcasts_to(&shape) {
        return Err(e.shape_error(format!("C {c_shape} does not broadcast to {shape}")));
    }
    e.binary(BinaryOp::Add, y, c)
}

/// `ArgMax` / `ArgMin`: `axis` (default 0, may be negative), `keepdims` (default 1),
/// `select_last_index` (opset 12, default 0); INT64 indices.
pub(super) fn arg_reduce(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    op: ArgOp,
) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    e.require(x, ElementType::is_numeric, "a numeric")?;
    let d = dims(e, x)?;
    let a = axis(e, e.attr_i64("axis")?.unwrap_or(0), d.len(), "axis")?;
    if d[a] == 0 {
        return Err(e.shape_error(format!("axis {a} of {d:?} is empty: no element to pick")));
    }
    let r = ArgReduction {
        op,
        axis: a,
        keep_dims: e.attr_i64("keepdims")?.unwrap_or(1) != 0,
        select_last_index: e.attr_i64("select_last_index")?.unwrap_or(0) != 0,
    };
    e.op(Op::ArgReduce(r), &[x])
}

/// `CumSum` (opsets 11 and 14): the running sum of a numeric `x` (any rank >= 1, any numeric
/// element type) along `axis` (input 1: a constant 0-D or one-element integer tensor, negative
/// counting from the end), including each element or, with `exclusive = 1`, only those
/// before it, from the end of the axis with `reverse = 1`; of `x`'s shape and type, as one
/// [`Op::CumSum`] (an O(n) scan, so an infinity or NaN reaches only later sums).
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] for a scalar `x` or an axis of other than one value;
/// [`OnnxError::BadAttribute`] for an axis out of `[-rank, rank)` or a mistyped `exclusive`
/// or `reverse`; [`OnnxError::TypeMismatch`] for a non-numeric `x` or a non-integer axis;
/// [`OnnxError::RunTimeOperand`] (or `UnsupportedFeature`) for an axis computed at run time.
pub(super) fn cum_sum(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let x = e.input(ins, 0)?;
    e.require(x, ElementType::is_numeric, "a numeric")?;
    let rank = dims(e, x)?.len();
    let list = e.constant_ints(e.input(ins, 1)?, "input 1 (`axis`)")?;
    let [raw] = list[..] else {
        return Err(e.shape_error(format!("axis {list:?} must be one value")));
    };
    if rank == 0 {
        return Err(e.shape_error("CumSum of a scalar".into()));
    }
    let c = CumSum {
        axis: axis(e, raw, rank, "axis")?,
        exclusive: e.attr_i64("exclusive")?.unwrap_or(0) != 0,
        reverse: e.attr_i64("reverse")?.unwrap_or(0) != 0,
    };
    e.op(Op::CumSum(c), &[x])
}

/// `LayerNormalization` (opset 17): normalises over `axis..` (default -1) with `epsilon`
/// (default 1e-5); `B` is optional; the `Mean` and `InvStdDev` outputs are not produced.
pub(super) fn layer_norm(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Vec<Output>, OnnxError> {
    e.arity(ins, 2, 3)?;
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
    let y = e.op(Op::LayerNorm(l), &[x, scale, bias])?;
    if e.node().output.iter().skip(1).all(|o| o.is_empty()) {
        return Ok(vec![y]);
    }
    let [mean, inv_std_dev] = layer_norm_statistics(e, x, &l)?;
    Ok(vec![y, mean, inv_std_dev])
}

/// `LayerNormalization`'s optional outputs `Mean` and `InvStdDev` of `x` over the axes
/// `l.axis..` (kept, of extent 1), computed in the `stash_type` (FLOAT by default, or `x`'s
/// own type): `mean = ReduceMean(x)`, `1 / sqrt(ReduceMean((x - mean)²) + epsilon)`.
fn layer_norm_statistics(
    e: &mut NodeEmitter<'_>,
    x: Output,
    l: &LayerNorm,
) -> Result<[Output; 2], OnnxError> {
    let stash = e.attr_float_type("stash_type")?.unwrap_or(ElementType::F32);
    let x = e.convert(x, stash)?;
    let rank = dims(e, x)?.len();
    let mean_of = |e: &mut NodeEmitter<'_>, v: Output| {
        let r = Reduction {
            op: ReduceOp::Mean,
            axes: (l.axis..rank).collect(),
            keep_dims: true,
        };
        e.op(Op::Reduce(r), &[v])
    };
    let mean = mean_of(e, x)?;
    let centred = e.binary(BinaryOp::Subtract, x, mean)?;
    let squared = e.binary(BinaryOp::Multiply, centred, centred)?;
    let variance = mean_of(e, squared)?;
    let eps = e.scalar(stash, l.epsilon)?;
    let shifted = e.binary(BinaryOp::Add, variance, eps)?;
    let std_dev = e.unary(UnaryOp::Sqrt, shifted)?;
    let one = e.scalar(stash, 1.0)?;
    let inv = e.binary(BinaryOp::Divide, one, std_dev)?;
    Ok([mean, inv])
}
