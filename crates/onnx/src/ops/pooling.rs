//! Pooling: `MaxPool` (one `MaxPool`), `AveragePool` (a depthwise `Convolution` with ones
//! divided by the window counts), `GlobalMaxPool` and `GlobalAveragePool` (reductions).

use graphlift_ir::{
    BinaryOp, Convolution, ElementType, Op, Output, ReduceOp, Reduction, Shape, TensorData, Window,
};

use super::conv::window;
use super::layout::dims;
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `MaxPool`: `kernel_shape` (required), `strides`, `dilations`, `pads`/`auto_pad` and
/// `ceil_mode` (rounding the output extent up, by padding the end), on floats and (through
/// `f32`, exactly) INT8 and UINT8; the `Indices` output and `storage_order` = 1 are not
/// supported.
pub(super) fn max_pool(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    if e.node().output.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(e.unsupported("the Indices output"));
    }
    if e.attr_i64("storage_order")?.unwrap_or(0) != 0 {
        return Err(e.unsupported("storage_order = 1"));
    }
    let x = e.input(ins, 0)?;
    let et = e.ty(x)?.element_type;
    let dx = dims(e, x)?;
    let (w, _) = pool_window(e, &dx)?;
    match et {
        _ if et.is_float() => e.op(Op::MaxPool(w), &[x]),
        // INT8 and UINT8 (opset 12 on): every value is exact in f32, and so is their
        // maximum, so the float MaxPool between two conversions is the integer one.
        ElementType::I8 | ElementType::U8 => {
            let wide = e.convert(x, ElementType::F32)?;
            let y = e.op(Op::MaxPool(w), &[wide])?;
            e.convert(y, et)
        }
        _ => Err(OnnxError::UnsupportedElementType {
            at: e.at(),
            data_type: crate::tensor::data_type_name(crate::tensor::onnx_data_type(et)),
        }),
    }
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
    let channels = dx[1];
    let mut filter_shape = vec![channels, 1];
    filter_shape.extend(&w.shape);
    let et = e.et(x)?;
    let ones = e.scalar(et, 1.0)?;
    let ones = e.broadcast_to(ones, &Shape::new(filter_shape))?;
    let c = Convolution {
        window: w,
        groups: channels,
    };
    let sums = e.op(Op::Convolution(c), &[x, ones])?;
    let mut count_shape = vec![1, 1];
    count_shape.extend(&out);
    let count = match et {
        ElementType::F32 => TensorData::F32(count.iter().map(|&c| c as f32).collect()),
        _ => TensorData::F64(count),
    };
    let count = e.constant(count, Shape::new(count_shape))?;
    e.binary(BinaryOp::Divide, sums, count)
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
