//! Neural-network operators that are not elementwise: `MatMul`, `Conv`,
//! `BatchNormalization`, `MaxPool`, `GlobalAveragePool`, `Softmax`, `LayerNormalization`
//! and the `Reduce*` family.

use graphlift_ir::{
    CompareOp, Convolution, ElementType, LayerNorm, Op, Output, ReduceOp, Reduction, Shape, Window,
};

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

/// The window attributes shared by `Conv` and `MaxPool` for an input of spatial extents
/// `input` and a window of `kernel`: `strides`, `dilations`, `pads` (begins then ends) or
/// `auto_pad` (`NOTSET`, `VALID`, `SAME_UPPER`, `SAME_LOWER`).
fn window(e: &NodeEmitter<'_>, input: &[usize], kernel: Vec<usize>) -> Result<Window, OnnxError> {
    let n = input.len();
    let list = |name: &str, default: usize| -> Result<Vec<usize>, OnnxError> {
        match e.attr_ints(name)? {
            None => Ok(vec![default; n]),
            Some(v) => v
                .iter()
                .map(|&x| usize::try_from(x))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| e.attribute_error(name, format!("{v:?} has a negative entry"))),
        }
    };
    let strides = list("strides", 1)?;
    let dilations = list("dilations", 1)?;
    let pads = match e.attr_ints("pads")? {
        None => vec![0; 2 * n],
        Some(_) => list("pads", 0)?,
    };
    for (name, v, want) in [
        ("strides", &strides, n),
        ("dilations", &dilations, n),
        ("pads", &pads, 2 * n),
    ] {
        if v.len() != want {
            return Err(e.attribute_error(
                name,
                format!("has {} entries for {n} spatial axes", v.len()),
            ));
        }
    }
    let (mut pads_begin, mut pads_end) = (pads[..n].to_vec(), pads[n..].to_vec());
    let auto_pad = e
        .attr_string("auto_pad")?
        .unwrap_or_else(|| "NOTSET".into());
    match auto_pad.as_str() {
        "NOTSET" => {}
        "VALID" => {
            pads_begin = vec![0; n];
            pads_end = vec![0; n];
        }
        "SAME_UPPER" | "SAME_LOWER" => {
            for a in 0..n {
                let out = input[a].div_ceil(strides[a].max(1));
                let reach = dilations[a] * (kernel[a].max(1) - 1) + 1;
                let total = ((out.max(1) - 1) * strides[a] + reach).saturating_sub(input[a]);
                let small = total / 2;
                let (b, t) = if auto_pad == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                };
                pads_begin[a] = b;
                pads_end[a] = t;
            }
        }
        other => {
            return Err(e.attribute_error("auto_pad", format!("unknown value {other:?}")));
        }
    }
    Ok(Window {
        shape: kernel,
        strides,
        dilations,
        pads_begin,
        pads_end,
    })
}

/// `Conv`: input `X` `[N, C, D..]`, filter `W` `[M, C / group, K..]`, optional bias `B`
/// `[M]` (added as a broadcast `Add`).
pub(super) fn conv(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 3)?;
    let (x, w) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let (dx, dw) = (dims(e, x)?, dims(e, w)?);
    if dx.len() < 3 || dw.len() != dx.len() {
        return Err(e.shape_error(format!(
            "X {dx:?} and W {dw:?} must both be [_, _, D1, ...] of one rank >= 3"
        )));
    }
    let kernel = dw[2..].to_vec();
    if let Some(k) = e.attr_ints("kernel_shape")? {
        if k.iter().map(|&v| v as usize).ne(kernel.iter().copied()) {
            return Err(e.attribute_error(
                "kernel_shape",
                format!("{k:?} differs from W's spatial shape {kernel:?}"),
            ));
        }
    }
    let group = e.attr_i64("group")?.unwrap_or(1);
    let groups = usize::try_from(group)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| e.attribute_error("group", format!("{group} must be >= 1")))?;
    let c = Convolution {
        window: window(e, &dx[2..], kernel)?,
        groups,
    };
    let y = e.op(Op::Convolution(c), &[x, w])?;
    match ins.get(2).copied().flatten() {
        None => Ok(y),
        Some(b) => {
            let m = dw[0];
            let mut per_channel = vec![1; dx.len()];
            per_channel[1] = m;
            let b = reshape(e, b, per_channel)?;
            let shape = e.ty(y)?.shape;
            let b = e.broadcast_to(b, &shape)?;
            e.op(Op::Binary(graphlift_ir::BinaryOp::Add), &[y, b])
        }
    }
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

/// `MaxPool`: `kernel_shape` (required), `strides`, `dilations`, `pads`/`auto_pad` and
/// `ceil_mode` (rounding the output extent up, by padding the end); the `Indices` output and
/// `storage_order` = 1 are not supported.
pub(super) fn max_pool(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    if e.node().output.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(e.unsupported("the Indices output"));
    }
    if e.attr_i64("storage_order")?.unwrap_or(0) != 0 {
        return Err(e.unsupported("storage_order = 1"));
    }
    let x = e.input(ins, 0)?;
    let dx = dims(e, x)?;
    if dx.len() < 3 {
        return Err(e.shape_error(format!("X {dx:?} must be [N, C, D1, ...]")));
    }
    let Some(k) = e.attr_ints("kernel_shape")? else {
        return Err(e.attribute_error("kernel_shape", "is required".into()));
    };
    let kernel = k
        .iter()
        .map(|&v| usize::try_from(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| e.attribute_error("kernel_shape", format!("{k:?} has a negative entry")))?;
    if kernel.len() != dx.len() - 2 {
        return Err(e.attribute_error(
            "kernel_shape",
            format!(
                "has {} entries for {} spatial axes",
                kernel.len(),
                dx.len() - 2
            ),
        ));
    }
    let mut w = window(e, &dx[2..], kernel)?;
    if e.attr_i64("ceil_mode")?.unwrap_or(0) != 0 {
        // Validates the window first (its errors name the axis).
        w.output_extents(&dx[2..]).map_err(|m| e.shape_error(m))?;
        for a in 0..w.shape.len() {
            let (input, s) = (dx[2 + a], w.strides[a]);
            let padded = input + w.pads_begin[a] + w.pads_end[a];
            let reach = w.dilations[a] * (w.shape[a] - 1) + 1;
            let mut out = (padded - reach).div_ceil(s) + 1;
            // ONNX drops a last window that would start in the end padding.
            if (out - 1) * s >= input + w.pads_begin[a] {
                out -= 1;
            }
            // Pad the end (padding never wins a max) so that rounding down gives `out`.
            w.pads_end[a] += ((out - 1) * s + reach).saturating_sub(padded);
        }
    }
    e.op(Op::MaxPool(w), &[x])
}

/// `GlobalAveragePool`: the mean over every spatial axis, kept as extent 1.
pub(super) fn global_average_pool(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let rank = dims(e, x)?.len();
    if rank < 3 {
        return Err(e.shape_error(format!("X must be [N, C, D1, ...], has rank {rank}")));
    }
    let r = Reduction {
        op: ReduceOp::Mean,
        axes: (2..rank).collect(),
        keep_dims: true,
    };
    e.op(Op::Reduce(r), &[x])
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
