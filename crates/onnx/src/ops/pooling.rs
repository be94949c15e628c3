//! Pooling: `MaxPool` (one `MaxPool`), `AveragePool` (a depthwise `Convolution` with ones
//! divided by the window counts), `LpPool` (the same window sums of `|x|^p`, then the `p`-th
//! root), `GlobalMaxPool`, `GlobalAveragePool` and `GlobalLpPool` (reductions). Its
//! inverse, `MaxUnpool`, is in [`super::unpool`].

use graphlift_ir::{
    BinaryOp, CompareOp, Convolution, ElementType, Op, Output, ReduceOp, Reduction, Shape,
    TensorData, UnaryOp, Window,
};

use super::conv::window;
use super::layout::dims;
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `MaxPool`: `kernel_shape` (required), `strides`, `dilations`, `pads`/`auto_pad` and
/// `ceil_mode` (rounding the output extent up, by padding the end), on floats and (through
/// `f32`, exactly) INT8 and UINT8. The optional `Indices` output (opset 8 on) is
/// [`Op::MaxPoolIndices`]: the flat index into `X` of each window's maximum, row-major, or
/// with `storage_order` = 1 column-major over the spatial axes (batch and channel still
/// leading, as onnxruntime numbers them).
pub(super) fn max_pool(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Vec<Output>, OnnxError> {
    e.arity(ins, 1, 1)?;
    let column_major = e.attr_i64("storage_order")?.unwrap_or(0) != 0;
    let x = e.input(ins, 0)?;
    let et = e.ty(x)?.element_type;
    let dx = dims(e, x)?;
    let (w, _) = pool_window(e, &dx)?;
    let wide = match et {
        _ if et.is_float() => x,
        // INT8 and UINT8 (opset 12 on): every value is exact in f32, and so is their
        // maximum, so the float MaxPool between two conversions is the integer one.
        ElementType::I8 | ElementType::U8 => e.convert(x, ElementType::F32)?,
        _ => {
            return Err(OnnxError::UnsupportedElementType {
                at: e.at(),
                data_type: crate::tensor::data_type_name(crate::tensor::onnx_data_type(et)),
            })
        }
    };
    let y = e.op(Op::MaxPool(w.clone()), &[wide])?;
    let y = e.convert(y, et)?;
    if e.node().output.get(1).is_none_or(String::is_empty) {
        return Ok(vec![y]);
    }
    let indices = e.op(Op::MaxPoolIndices(w), &[wide])?;
    let indices = if column_major {
        column_major_indices(e, indices, &dx)?
    } else {
        indices
    };
    Ok(vec![y, indices])
}

/// Row-major flat indices `i` into `[N, C, D1..Dk]` renumbered column-major over the
/// spatial axes (`D1` fastest), the leading `N · C` planes unchanged; `-1` stays `-1`.
fn column_major_indices(
    e: &mut NodeEmitter<'_>,
    i: Output,
    dx: &[usize],
) -> Result<Output, OnnxError> {
    let spatial = &dx[2..];
    let plane: usize = spatial.iter().product();
    let shape = e.ty(i)?.shape;
    let k = |e: &mut NodeEmitter<'_>, v: usize| -> Result<Output, OnnxError> {
        let c = e.scalar(ElementType::I64, v as f64)?;
        e.broadcast_to(c, &shape)
    };
    let size = k(e, plane)?;
    let planes = e.binary(BinaryOp::Divide, i, size)?;
    let mut renumbered = e.binary(BinaryOp::Multiply, planes, size)?;
    let within = e.binary(BinaryOp::Mod, i, size)?;
    let (mut row_stride, mut column_stride) = (plane, 1);
    for &d in spatial {
        row_stride /= d.max(1);
        let (rs, ds) = (k(e, row_stride)?, k(e, d)?);
        let at = e.binary(BinaryOp::Divide, within, rs)?;
        let at = e.binary(BinaryOp::Mod, at, ds)?;
        let cs = k(e, column_stride)?;
        let term = e.binary(BinaryOp::Multiply, at, cs)?;
        renumbered = e.binary(BinaryOp::Add, renumbered, term)?;
        column_stride *= d;
    }
    let zero = k(e, 0)?;
    let missing = e.compare(CompareOp::Less, i, zero)?;
    e.select(missing, i, renumbered)
}

/// The window of `MaxPool` and `AveragePool` over `X` of extents `dx`: `kernel_shape`
/// (required), `strides`, `dilations`, `pads`/`auto_pad`, and `ceil_mode`, which rounds the
/// output extent up (dropping a last window that would start in the end padding, as ONNX
/// does) by padding the end. Also returns the end padding as the model gave it, before
/// `ceil_mode` extended it.
fn pool_window(e: &NodeEmitter<'_>, dx: &[usize]) -> Result<(Window, Vec<usize>), OnnxError> {
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
    // Validates the window first (its errors name the axis).
    w.output_extents(&dx[2..]).map_err(|m| e.shape_error(m))?;
    let asked = w.pads_end.clone();
    if e.attr_i64("ceil_mode")?.unwrap_or(0) != 0 {
        for a in 0..w.shape.len() {
            let (input, s) = (dx[2 + a], w.strides[a]);
            let padded = input + w.pads_begin[a] + w.pads_end[a];
            let reach = w.dilations[a] * (w.shape[a] - 1) + 1;
            let mut out = (padded - reach).div_ceil(s) + 1;
            // ONNX drops a last window that would start in the end padding.
            if (out - 1) * s >= input + w.pads_begin[a] {
                out -= 1;
            }
            // Pad the end so that rounding down gives `out`.
            w.pads_end[a] += ((out - 1) * s + reach).saturating_sub(padded);
        }
    }
    Ok((w, asked))
}

/// `AveragePool`: the window of [`pool_window`] (with `dilations` from opset 19), each
/// output the mean of the input elements under its window: with `count_include_pad` = 1
/// the explicit (or `auto_pad`) padding counts as zeros, the padding `ceil_mode` adds never
/// counts. Computed as a depthwise `Convolution` with a filter of ones (the window sums)
/// divided by the constant count of each window (NaN for a window of padding only).
pub(super) fn average_pool(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    e.require(x, ElementType::is_float, "a float")?;
    let dx = dims(e, x)?;
    let (w, asked) = pool_window(e, &dx)?;
    let out = w.output_extents(&dx[2..]).map_err(|m| e.shape_error(m))?;
    let include_pad = e.attr_i64("count_include_pad")?.unwrap_or(0) != 0;
    // Per axis, how many taps of each output position land where they count.
    let counts: Vec<Vec<f64>> = (0..out.len())
        .map(|a| {
            let (input, pb) = (dx[2 + a] as i64, w.pads_begin[a] as i64);
            let (lo, hi) = if include_pad {
                (-pb, input + asked[a] as i64)
            } else {
                (0, input)
            };
            (0..out[a])
                .map(|o| {
                    (0..w.shape[a])
                        .map(|k| (o * w.strides[a] + k * w.dilations[a]) as i64 - pb)
                        .filter(|p| (lo..hi).contains(p))
                        .count() as f64
                })
                .collect()
        })
        .collect();
    let mut count = vec![1.0f64];
    for per_axis in &counts {
        count = count
            .iter()
            .flat_map(|&c| per_axis.iter().map(move |&k| c * k))
            .collect();
    }
    let et = e.et(x)?;
    let sums = window_sums(e, x, dx[1], w)?;
    let mut count_shape = vec![1, 1];
    count_shape.extend(&out);
    let count = match et {
        ElementType::F32 => TensorData::F32(count.iter().map(|&c| c as f32).collect()),
        _ => TensorData::F64(count),
    };
    let count = e.constant(count, Shape::new(count_shape))?;
    e.binary(BinaryOp::Divide, sums, count)
}

/// The sum of each window `w` of `x` (`channels` channels), padding adding nothing: a
/// depthwise `Convolution` with a filter of ones.
fn window_sums(
    e: &mut NodeEmitter<'_>,
    x: Output,
    channels: usize,
    w: Window,
) -> Result<Output, OnnxError> {
    let mut filter_shape = vec![channels, 1];
    filter_shape.extend(&w.shape);
    let ones = e.scalar_like(x, 1.0)?;
    let ones = e.broadcast_to(ones, &Shape::new(filter_shape))?;
    let c = Convolution {
        window: w,
        groups: channels,
    };
    e.op(Op::Convolution(c), &[x, ones])
}

/// `LpPool` (opsets 11 and 18; `dilations` and `ceil_mode` from 18, accepted earlier as
/// [`pool_window`] reads them): the window of [`pool_window`], each output
/// `(Σ |x|^p)^(1/p)` over the input elements under its window (padding adds nothing), `p`
/// (default 2) a positive integer. `p` = 1 and 2 are computed as `Σ |x|` and `sqrt(Σ x²)`.
pub(super) fn lp_pool(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    e.require(x, ElementType::is_float, "a float")?;
    let dx = dims(e, x)?;
    let p = lp_norm_order(e)?;
    let (w, _) = pool_window(e, &dx)?;
    let powered = lp_powers(e, x, p)?;
    let sums = window_sums(e, powered, dx[1], w)?;
    lp_root(e, sums, p)
}

/// `GlobalLpPool` (opsets 2 and 22): `(Σ |x|^p)^(1/p)` over every spatial axis, kept as
/// extent 1.
pub(super) fn global_lp_pool(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    e.require(x, ElementType::is_float, "a float")?;
    let p = lp_norm_order(e)?;
    let powered = lp_powers(e, x, p)?;
    let sums = global_pool(e, &[Some(powered)], ReduceOp::Sum)?;
    lp_root(e, sums, p)
}

/// The `p` attribute (default 2): a positive integer.
fn lp_norm_order(e: &NodeEmitter<'_>) -> Result<i64, OnnxError> {
    let p = e.attr_i64("p")?.unwrap_or(2);
    if p < 1 {
        return Err(e.attribute_error("p", format!("{p} is not a positive order")));
    }
    Ok(p)
}

/// `|x|^p` (`x²` for 2).
fn lp_powers(e: &mut NodeEmitter<'_>, x: Output, p: i64) -> Result<Output, OnnxError> {
    match p {
        2 => e.binary(BinaryOp::Multiply, x, x),
        _ => {
            let a = e.unary(UnaryOp::Abs, x)?;
            if p == 1 {
                return Ok(a);
            }
            let k = e.scalar_like(a, p as f64)?;
            let k = e.broadcast_to(k, &e.ty(a)?.shape)?;
            e.binary(BinaryOp::Power, a, k)
        }
    }
}

/// `s^(1/p)` (`sqrt(s)` for 2).
fn lp_root(e: &mut NodeEmitter<'_>, s: Output, p: i64) -> Result<Output, OnnxError> {
    match p {
        1 => Ok(s),
        2 => e.unary(UnaryOp::Sqrt, s),
        _ => {
            let k = e.scalar_like(s, 1.0 / p as f64)?;
            let k = e.broadcast_to(k, &e.ty(s)?.shape)?;
            e.binary(BinaryOp::Power, s, k)
        }
    }
}

/// `GlobalMaxPool`: the maximum over every spatial axis, kept as extent 1.
pub(super) fn global_max_pool(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    global_pool(e, ins, ReduceOp::Max)
}

/// `GlobalAveragePool`: the mean over every spatial axis, kept as extent 1.
pub(super) fn global_average_pool(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
) -> Result<Output, OnnxError> {
    global_pool(e, ins, ReduceOp::Mean)
}

/// A reduction of `X` `[N, C, D..]` over every spatial axis, kept as extent 1.
fn global_pool(e: &mut NodeEmitter<'_>, ins: In<'_>, op: ReduceOp) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let rank = dims(e, x)?.len();
    if rank < 3 {
        return Err(e.shape_error(format!("X must be [N, C, D1, ...], has rank {rank}")));
    }
    let r = Reduction {
        op,
        axes: (2..rank).collect(),
        keep_dims: true,
    };
    e.op(Op::Reduce(r), &[x])
}
