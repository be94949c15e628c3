//! The transforms of audio front ends (opset 17 on): `DFT` and `STFT` as products with
//! constant cosine and sine matrices (a direct transform, `O(n²)` per signal: exact to the
//! rounding of its sums, and one GEMM for every frame at once). Their constant tables
//! (windows, mel filter banks) are in [`super::spectral_tables`].

use std::f64::consts::PI;

use graphlift_ir::{BinaryOp, ElementType, Op, Output, Shape, TensorData};

use super::layout::{dims, slice_range};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// Which transform [`transform`] computes along its axis, of length `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `X[k] = Σ x[t] e^(-2πikt/n)`, all `n` bins or (`onesided`) the first `n / 2 + 1`.
    Forward { onesided: bool },
    /// `x[t] = (1/n) Σ X[k] e^(2πikt/n)`, complex to complex.
    Inverse,
    /// The real signal of `n` samples whose spectrum's first `n / 2 + 1` bins are given
    /// (numpy's `irfft`: the other bins are their conjugates; the imaginary parts of bin 0
    /// and, for even `n`, bin `n / 2` are ignored).
    InverseOnesided,
}

/// The transform of `x` (`f32` or `f64`, `[.., L, .., C]` with `C` 1 for real or 2 for
/// complex values, `L` at `axis < rank - 1`) along `axis` with length `n`: the signal is
/// truncated or zero-padded to the `n` (or, for [`Kind::InverseOnesided`], `n / 2 + 1`)
/// values the transform reads. Gives `[.., K, .., 2]` (`[.., n, .., 1]` for
/// [`Kind::InverseOnesided`]).
fn transform(
    e: &mut NodeEmitter<'_>,
    x: Output,
    axis: usize,
    n: usize,
    kind: Kind,
) -> Result<Output, OnnxError> {
    let d = dims(e, x)?;
    let r = d.len();
    let (l, c) = (d[axis], d[r - 1]);
    let et = e.et(x)?;
    // The axes other than `axis` and the complex one, then `axis`: rows of samples.
    let mut perm: Vec<usize> = (0..r - 1).filter(|&a| a != axis).collect();
    perm.push(axis);
    perm.push(r - 1);
    let rows: usize = perm[..r - 2].iter().map(|&a| d[a]).product();
    let read = match kind {
        Kind::InverseOnesided => n / 2 + 1,
        _ => n,
    };
    let m = l.min(read);
    let moved = e.op(Op::Transpose(perm.clone()), &[x])?;
    // Part `p` (0 real, 1 imaginary) as `[rows, m]`.
    let samples = slice_range(e, moved, r - 2, 0, m)?;
    let part = |e: &mut NodeEmitter<'_>, p: usize| -> Result<Output, OnnxError> {
        let v = slice_range(e, samples, r - 1, p, 1)?;
        e.op(Op::Reshape(Shape::new([rows, m])), &[v])
    };
    let re = part(e, 0)?;
    let im = if c == 2 { Some(part(e, 1)?) } else { None };
    let bins = match kind {
        Kind::Forward { onesided: true } => n / 2 + 1,
        _ => n,
    };
    // Matrices [m, bins] of cos(2πkt/n) and sin(2πkt/n), each sample `t` (a row) against
    // each bin `k` (a column), with the kind's signs and scale:
    // re_out = re · P + im · Q, im_out = im · P + re · R.
    let scale = |k: usize| match kind {
        Kind::Forward { .. } => 1.0,
        Kind::Inverse => 1.0 / n as f64,
        // Bins 1 to (n - 1) / 2 stand for their conjugates too.
        Kind::InverseOnesided => {
            if k == 0 || 2 * k == n {
                1.0 / n as f64
            } else {
                2.0 / n as f64
            }
        }
    };
    let table = |f: fn(f64) -> f64, sign: f64| -> Vec<f64> {
        let mut v = Vec::with_capacity(m * bins);
        for t in 0..m {
            for k in 0..bins {
                // Input index `t` is a bin and output `k` a sample for the inverses.
                let (bin, sample) = match kind {
                    Kind::Forward { .. } => (k, t),
                    _ => (t, k),
                };
                let angle = 2.0 * PI * ((bin * sample) % n.max(1)) as f64 / n as f64;
                v.push(sign * scale(bin) * f(angle));
            }
        }
        v
    };
    let forward = matches!(kind, Kind::Forward { .. });
    let s = if forward { 1.0 } else { -1.0 };
    let matrix = |e: &mut NodeEmitter<'_>, values: Vec<f64>| {
        let c = e.constant(TensorData::F64(values), Shape::new([m, bins]))?;
        e.convert(c, et)
    };
    let p = matrix(e, table(f64::cos, 1.0))?;
    let q = matrix(e, table(f64::sin, s))?;
    let product = |e: &mut NodeEmitter<'_>, a: Output, b: Output| e.op(Op::MatMul, &[a, b]);
    let mut re_out = product(e, re, p)?;
    if let Some(im) = im {
        let t = product(e, im, q)?;
        re_out = e.binary(BinaryOp::Add, re_out, t)?;
    }
    let mut out_parts = vec![re_out];
    if kind != Kind::InverseOnesided {
        let rq = matrix(e, table(f64::sin, -s))?;
        let mut im_out = product(e, re, rq)?;
        if let Some(im) = im {
            let t = product(e, im, p)?;
            im_out = e.binary(BinaryOp::Add, im_out, t)?;
        }
        out_parts.push(im_out);
    }
    // Back to [.., bins, .., parts].
    let mut moved_dims: Vec<usize> = perm[..r - 2].iter().map(|&a| d[a]).collect();
    moved_dims.push(bins);
    moved_dims.push(1);
    let parts = out_parts
        .into_iter()
        .map(|v| e.op(Op::Reshape(Shape::new(moved_dims.clone())), &[v]))
        .collect::<Result<Vec<_>, _>>()?;
    let joined = if parts.len() == 1 {
        parts[0]
    } else {
        e.op(Op::Concat(r - 1), &parts)?
    };
    let mut back = vec![0; r];
    for (i, &a) in perm.iter().enumerate() {
        back[a] = i;
    }
    e.op(Op::Transpose(back), &[joined])
}

/// A float signal in the type its transform computes in: `f32` and `f64` as they are, half
/// floats through `f32`.
fn compute_type(e: &NodeEmitter<'_>, x: Output) -> Result<ElementType, OnnxError> {
    match e.et(x)? {
        t @ (ElementType::F32 | ElementType::F64) => Ok(t),
        t if t.is_float() => Ok(ElementType::F32),
        t => Err(e.type_error(format!(
            "{} transforms float signals, got {t}",
            e.node().op_type
        ))),
    }
}

/// One non-negative integer from a constant scalar operand.
pub(super) fn constant_count(
    e: &NodeEmitter<'_>,
    v: Output,
    what: &str,
) -> Result<usize, OnnxError> {
    match e.constant_ints(v, what)?[..] {
        [k] => usize::try_from(k).map_err(|_| e.shape_error(format!("{what} is {k}, not a count"))),
        ref other => Err(e.shape_error(format!("{what} must be one value, got {other:?}"))),
    }
}

/// `DFT` (opsets 17 and 20): the discrete Fourier transform of `input` `[.., L, .., C]`
/// (`C` = 1 real, 2 complex; float) along `axis` (an attribute, default 1, before opset 20;
/// an optional constant input, default -2, from it; never the last axis) with length
/// `dft_length` (a constant, default `L`, or `2 (L - 1)` for a one-sided inverse):
/// `inverse` = 0 gives `n` bins (`onesided`: `n / 2 + 1`), `inverse` = 1 the signal scaled
/// by `1 / n`, and with `onesided` the real signal of a one-sided spectrum (`irfft`).
///
/// # Errors
/// Named errors for a non-float input, a last extent other than 1 or 2, an axis out of
/// range or on the complex axis, or a `dft_length` or `axis` that is not a constant.
pub(super) fn dft(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, if e.opset() >= 20 { 3 } else { 2 })?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let r = d.len();
    if r < 2 || !(1..=2).contains(&d[r - 1]) {
        return Err(e.shape_error(format!(
            "input {d:?} must end in 1 (real) or 2 (complex) values"
        )));
    }
    let raw = if e.opset() >= 20 {
        match e.optional_input(ins, 2) {
            Some(a) => match e.constant_ints(a, "input 2 (`axis`)")?[..] {
                [a] => a,
                ref other => {
                    return Err(e.shape_error(format!("axis must be one value, got {other:?}")))
                }
            },
            None => -2,
        }
    } else {
        e.attr_i64("axis")?.unwrap_or(1)
    };
    let axis = usize::try_from(if raw < 0 { raw + r as i64 } else { raw })
        .ok()
        .filter(|&a| a < r - 1)
        .ok_or_else(|| e.shape_error(format!("axis {raw} is not a signal axis of rank {r}")))?;
    let inverse = e.attr_i64("inverse")?.unwrap_or(0) != 0;
    let onesided = e.attr_i64("onesided")?.unwrap_or(0) != 0;
    let kind = match (inverse, onesided) {
        (false, onesided) => Kind::Forward { onesided },
        (true, false) => Kind::Inverse,
        (true, true) => Kind::InverseOnesided,
    };
    let n = match e.optional_input(ins, 1) {
        Some(v) => constant_count(e, v, "input 1 (`dft_length`)")?,
        None if kind == Kind::InverseOnesided => 2 * d[axis].saturating_sub(1),
        None => d[axis],
    };
    if n == 0 {
        return Err(e.shape_error(format!("a transform of length 0 along axis {axis}")));
    }
    let et = e.et(x)?;
    let wide = e.convert(x, compute_type(e, x)?)?;
    let y = transform(e, wide, axis, n, kind)?;
    e.convert(y, et)
}

/// `STFT` (opset 17): the short-time Fourier transform of `signal` `[B, L, C]` (`C` = 1 real
/// or 2 complex) over frames of `frame_length` samples (a constant; default the `window`'s
/// length) every `frame_step` samples (a constant), each multiplied by `window` `[W]` (ones
/// when absent), gives `[B, frames, bins, 2]` with `frames = 1 + (L - frame_length) /
/// frame_step` and `bins = frame_length / 2 + 1` when `onesided` (default 1), else
/// `frame_length`.
///
/// # Errors
/// Named errors for shapes that do not fit, a window whose length is not `frame_length`,
/// a zero step, or a signal shorter than a frame.
pub(super) fn stft(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 4)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let [b, l, c] = d[..] else {
        return Err(e.shape_error(format!("signal {d:?} must be [batch, length, 1 or 2]")));
    };
    if !(1..=2).contains(&c) {
        return Err(e.shape_error(format!("signal {d:?} must end in 1 or 2 values")));
    }
    let step = constant_count(e, e.input(ins, 1)?, "input 1 (`frame_step`)")?;
    let window = e.optional_input(ins, 2);
    let window_len = match window {
        Some(w) => match dims(e, w)?[..] {
            [w] => Some(w),
            ref other => return Err(e.shape_error(format!("window {other:?} must be one axis"))),
        },
        None => None,
    };
    let frame = match e.optional_input(ins, 3) {
        Some(v) => constant_count(e, v, "input 3 (`frame_length`)")?,
        None => window_len.unwrap_or(l),
    };
    if window_len.is_some_and(|w| w != frame) {
        return Err(e.shape_error(format!(
            "window of {} samples for frames of {frame}",
            window_len.unwrap_or(0)
        )));
    }
    if step == 0 || frame == 0 || frame > l {
        return Err(e.shape_error(format!(
            "frames of {frame} samples every {step} over a signal of {l}"
        )));
    }
    let onesided = e.attr_i64("onesided")?.unwrap_or(1) != 0;
    let et = e.et(x)?;
    let compute = compute_type(e, x)?;
    let frames = 1 + (l - frame) / step;
    let at: Vec<i64> = (0..frames)
        .flat_map(|f| (0..frame).map(move |t| (f * step + t) as i64))
        .collect();
    let at = e.constant(TensorData::I64(at), Shape::new([frames, frame]))?;
    let wide = e.convert(x, compute)?;
    let mut framed = e.op(Op::Gather(1), &[wide, at])?;
    if let Some(w) = window {
        let w = e.convert(w, compute)?;
        let w = e.op(Op::Reshape(Shape::new([1, 1, frame, 1])), &[w])?;
        let w = e.broadcast_to(w, &Shape::new([b, frames, frame, c]))?;
        framed = e.binary(BinaryOp::Multiply, framed, w)?;
    }
    let y = transform(e, framed, 2, frame, Kind::Forward { onesided })?;
    e.convert(y, et)
}
