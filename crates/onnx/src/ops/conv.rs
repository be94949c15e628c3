//! Convolutions: `Conv` (one `Convolution` and a bias `Add`) and `ConvTranspose` (its
//! adjoint, `ConvolutionBackpropData`), and the window attributes they share with pooling.

use graphlift_ir::{BinaryOp, Convolution, ConvolutionBackprop, Op, Output, Shape, Window};

use super::layout::{dims, reshape_to as reshape};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// The window attributes shared by `Conv`, `MaxPool` and `AveragePool` for an input of spatial extents
/// `input` and a window of `kernel`: `strides`, `dilations`, `pads` (begins then ends) or
/// `auto_pad` (`NOTSET`, `VALID`, `SAME_UPPER`, `SAME_LOWER`).
pub(super) fn window(
    e: &NodeEmitter<'_>,
    input: &[usize],
    kernel: Vec<usize>,
) -> Result<Window, OnnxError> {
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
    let y = convolution_of(e, x, w)?;
    add_bias(e, y, e.optional_input(ins, 2))
}

/// The `Convolution` of `x` `[N, C, D..]` with the filter `w` `[M, C / group, K..]` under the
/// node's window attributes (`strides`, `dilations`, `pads`, `auto_pad`, `group`,
/// `kernel_shape`), as `Conv` and `ConvInteger` read them.
pub(super) fn convolution_of(
    e: &mut NodeEmitter<'_>,
    x: Output,
    w: Output,
) -> Result<Output, OnnxError> {
    let c = convolution_attrs(e, x, w)?;
    e.op(Op::Convolution(c), &[x, w])
}

/// The [`Convolution`] attributes (window and groups) of the node for data `x`
/// `[N, C, D..]` and filter `w` `[M, C / group, K..]`, as [`convolution_of`] reads them.
///
/// # Errors
/// Operands of other ranks, or attributes that do not fit them; each names the node.
pub(super) fn convolution_attrs(
    e: &mut NodeEmitter<'_>,
    x: Output,
    w: Output,
) -> Result<Convolution, OnnxError> {
    let (dx, dw) = (dims(e, x)?, dims(e, w)?);
    if dx.len() < 3 || dw.len() != dx.len() {
        return Err(e.shape_error(format!(
            "X {dx:?} and W {dw:?} must both be [_, _, D1, ...] of one rank >= 3"
        )));
    }
    let kernel = dw[2..].to_vec();
    check_kernel_shape(e, &kernel)?;
    Ok(Convolution {
        window: window(e, &dx[2..], kernel)?,
        groups: groups(e)?,
    })
}

/// `y` `[N, M, D..]` plus the per-channel bias `b` `[M]` (of `y`'s type), if given.
pub(super) fn add_bias(
    e: &mut NodeEmitter<'_>,
    y: Output,
    b: Option<Output>,
) -> Result<Output, OnnxError> {
    let Some(b) = b else {
        return Ok(y);
    };
    let dy = dims(e, y)?;
    let mut per_channel = vec![1; dy.len()];
    per_channel[1] = dy[1];
    let b = reshape(e, b, per_channel)?;
    let b = e.broadcast_to(b, &Shape::new(dy))?;
    e.op(Op::Binary(BinaryOp::Add), &[y, b])
}

/// The `group` attribute (default 1, at least 1).
fn groups(e: &NodeEmitter<'_>) -> Result<usize, OnnxError> {
    let group = e.attr_i64("group")?.unwrap_or(1);
    usize::try_from(group)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| e.attribute_error("group", format!("{group} must be >= 1")))
}

/// The `kernel_shape` attribute, when given, must be W's spatial shape.
fn check_kernel_shape(e: &NodeEmitter<'_>, kernel: &[usize]) -> Result<(), OnnxError> {
    if let Some(k) = e.attr_ints("kernel_shape")? {
        if k.iter().map(|&v| v as usize).ne(kernel.iter().copied()) {
            return Err(e.attribute_error(
                "kernel_shape",
                format!("{k:?} differs from W's spatial shape {kernel:?}"),
            ));
        }
    }
    Ok(())
}

/// An INTS attribute of one non-negative entry per spatial axis, or `default` everywhere.
fn per_axis(
    e: &NodeEmitter<'_>,
    name: &str,
    n: usize,
    default: i64,
) -> Result<Vec<i64>, OnnxError> {
    let v = e.attr_ints(name)?.unwrap_or_else(|| vec![default; n]);
    if v.len() != n || v.iter().any(|&x| x < 0) {
        return Err(e.attribute_error(name, format!("{v:?} must have {n} non-negative entries")));
    }
    Ok(v)
}

/// `ConvTranspose`: `X` `[N, C, D..]`, `W` `[C, M / group, K..]`, optional bias `B` `[M]`;
/// the output `[N, M, O..]` spreads each input element over a window of the output, as the
/// ONNX reference implementation does: `O = stride · (D - 1) + output_padding +
/// dilation · (K - 1) + 1 - pads_begin - pads_end`, or `output_shape` when given (then, with
/// `auto_pad` `SAME_UPPER`/`SAME_LOWER` and no `pads`, the pads are the difference, split as
/// the spec says). It is the adjoint of the `Conv` with the same attributes from `[N, M, O..]`
/// to `[N, C, D..]`: one `ConvolutionBackpropData`, and, where the output reaches beyond the
/// positions any input element spreads to (a large `output_padding` or `output_shape`,
/// negative pads), zeros around it (`Pad`).
pub(super) fn conv_transpose(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 3)?;
    let (x, w) = (e.input(ins, 0)?, e.input(ins, 1)?);
    e.same_type(&[x, w])?;
    let (dx, dw) = (dims(e, x)?, dims(e, w)?);
    if dx.len() < 3 || dw.len() != dx.len() {
        return Err(e.shape_error(format!(
            "X {dx:?} and W {dw:?} must both be [_, _, D1, ...] of one rank >= 3"
        )));
    }
    let n = dx.len() - 2;
    let kernel = dw[2..].to_vec();
    check_kernel_shape(e, &kernel)?;
    let g = groups(e)?;
    if dw[0] != dx[1] || dx[1] % g != 0 {
        return Err(e.shape_error(format!(
            "W {dw:?} must be [C, M / group, ..] for X {dx:?} with group {g}"
        )));
    }
    let strides = per_axis(e, "strides", n, 1)?;
    let dilations = per_axis(e, "dilations", n, 1)?;
    let output_padding = per_axis(e, "output_padding", n, 0)?;
    if strides.contains(&0) || dilations.contains(&0) {
        return Err(e.attribute_error(
            "strides",
            format!("strides {strides:?} and dilations {dilations:?} must be >= 1"),
        ));
    }
    let reach: Vec<i64> = (0..n)
        .map(|a| dilations[a] * (kernel[a] as i64 - 1) + 1)
        .collect();
    // The extent the input elements spread over (with zero pads), per axis.
    let spread: Vec<i64> = (0..n)
        .map(|a| strides[a] * (dx[2 + a] as i64 - 1) + reach[a])
        .collect();
    let output_shape = match e.attr_ints("output_shape")? {
        // Some exporters write the whole shape [N, M, O..].
        Some(s) if s.len() == n + 2 => Some(s[2..].to_vec()),
        Some(s) if s.len() == n => Some(s),
        Some(s) => {
            return Err(e.attribute_error(
                "output_shape",
                format!("{s:?} has {} entries for {n} spatial axes", s.len()),
            ))
        }
        None => None,
    };
    let auto_pad = e.attr_choice(
        "auto_pad",
        "NOTSET",
        &[
            ("NOTSET", 0),
            ("VALID", 1),
            ("SAME_UPPER", 2),
            ("SAME_LOWER", 3),
        ],
    )?;
    let explicit = e.attr_ints("pads")?;
    let (begin, end, out): (Vec<i64>, Vec<i64>, Vec<i64>) = match explicit {
        None if auto_pad >= 2 => {
            let out = output_shape
                .unwrap_or_else(|| (0..n).map(|a| dx[2 + a] as i64 * strides[a]).collect());
            let total: Vec<i64> = (0..n)
                .map(|a| spread[a] + output_padding[a] - out[a])
                .collect();
            let half = |t: i64| t.div_euclid(2);
            let (b, e_): (Vec<i64>, Vec<i64>) = if auto_pad == 2 {
                total.iter().map(|&t| (half(t), t - half(t))).unzip()
            } else {
                total.iter().map(|&t| (t - half(t), half(t))).unzip()
            };
            (b, e_, out)
        }
        pads => {
            let pads = match pads {
                Some(p) if auto_pad == 0 => p,
                _ => vec![0; 2 * n],
            };
            if pads.len() != 2 * n {
                return Err(e.attribute_error(
                    "pads",
                    format!("has {} entries for {n} spatial axes", pads.len()),
                ));
            }
            let (b, e_) = (pads[..n].to_vec(), pads[n..].to_vec());
            let out = output_shape.unwrap_or_else(|| {
                (0..n)
                    .map(|a| spread[a] + output_padding[a] - b[a] - e_[a])
                    .collect()
            });
            (b, e_, out)
        }
    };
    // Output position o reads the spread at o + begin; positions outside [0, spread) are 0.
    let mut window = Window {
        shape: kernel,
        strides: strides.iter().map(|&v| v as usize).collect(),
        dilations: dilations.iter().map(|&v| v as usize).collect(),
        pads_begin: vec![0; n],
        pads_end: vec![0; n],
    };
    let mut zeros = graphlift_ir::Pad {
        low: vec![0; dx.len()],
        high: vec![0; dx.len()],
        interior: vec![0; dx.len()],
        mode: graphlift_ir::PadMode::Constant,
    };
    let mut core = vec![dx[0], dw[1] * g];
    for a in 0..n {
        if out[a] <= 0 {
            return Err(e.shape_error(format!(
                "spatial axis {a}: the output extent {} is not positive",
                out[a]
            )));
        }
        let low = (-begin[a]).max(0);
        let pb = begin[a].max(0);
        let rest = (out[a] - low).max(0);
        let covered = rest.min((spread[a] - pb).max(0));
        if covered == 0 {
            return Err(e.shape_error(format!(
                "spatial axis {a}: pads {begin:?}/{end:?} leave no output position that an                  input element reaches"
            )));
        }
        window.pads_begin[a] = pb as usize;
        window.pads_end[a] = (spread[a] - covered - pb) as usize;
        zeros.low[2 + a] = low as usize;
        zeros.high[2 + a] = (out[a] - low - covered) as usize;
        core.push(covered as usize);
    }
    let backprop = ConvolutionBackprop {
        convolution: Convolution { window, groups: g },
        shape: Shape::new(core),
    };
    let mut y = e.op(Op::ConvolutionBackpropData(backprop), &[x, w])?;
    if zeros.low.iter().chain(&zeros.high).any(|&v| v > 0) {
        let zero = e.scalar_like(y, 0.0)?;
        y = e.op(Op::Pad(zeros), &[y, zero])?;
    }
    add_bias(e, y, e.optional_input(ins, 2))
}
