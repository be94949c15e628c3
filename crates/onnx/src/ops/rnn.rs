//! The recurrent operators `RNN`, `GRU` and `LSTM` (ONNX opsets 7 and 14; the older
//! versions where their attributes agree), unrolled at import into existing IR ops.
//!
//! Design: shapes are static in graphlift, so the sequence length is known at import and the
//! recurrence unrolls. Per direction, the input projection of the whole sequence is one
//! `MatMul` `[seq·batch, input] × [input, G·hidden]` with the biases `Wb + Rb` added once;
//! each time step is one `MatMul` `[batch, hidden] × [hidden, G·hidden]` (two for GRU, whose
//! candidate gate multiplies by the reset gate before or after its product) followed by the
//! gate maths, elementwise ops that subgraph extraction fuses into JIT kernels around the
//! GEMMs. No new IR op, no new reference kernel: the unrolled graph means what the spec's
//! equations say, and autodiff differentiates it with the existing rules.
//!
//! `sequence_lens` must be known at import (an initializer, or a graph input whose value the
//! caller gives: [`OnnxError::RunTimeOperand`]); for a batch entry of length `L`, steps
//! `L..` leave the state as it is and write zeros to `Y` (a `Select` against a constant
//! mask), and the reverse direction runs over that entry's own first `L` steps backwards (a
//! `Gather` of the projected rows by a constant permutation, and the same permutation, an
//! involution, puts `Y` back in time order).
//!
//! Attributes: `hidden_size` (or from `R`), `direction` (`forward`, `reverse`,
//! `bidirectional`), `layout` (0: `[seq, batch, ..]`, 1: `[batch, seq, ..]`), `activations`
//! with `activation_alpha` / `activation_beta` (consumed in order by the activations that take
//! them, the spec's defaults otherwise), `clip` (the gate pre-activations clamped to
//! `[-clip, clip]`, as onnxruntime does), LSTM's `input_forget` (`f = 1 - i`) and peepholes
//! `P`, GRU's `linear_before_reset`. Outputs `Y`, `Y_h` and (LSTM) `Y_c`.
//!
//! `com.microsoft.DynamicQuantizeLSTM` (onnxruntime's contrib operator, version 1) is `LSTM`
//! with 8-bit weights given transposed (`W` `[dirs, input, 4h]`, `R` `[dirs, h, 4h]`) and
//! their scales and zero points (inputs 8 to 11: per direction `[dirs]`, or per column
//! `[dirs, 4h]`): each of its products quantizes its FLOAT operand dynamically and multiplies
//! in integers ([`dynamic_quantized_matmul`]), as onnxruntime's kernel does.

use graphlift_ir::{BinaryOp, ElementType, Op, Output, Shape, TensorData, UnaryOp};

use super::activation::{
    elu_of, hard_sigmoid, leaky_relu_of, softplus, softsign, thresholded_relu_of,
};
use super::integer::{dynamic_quantized_matmul, QuantizedMatrix};
use super::layout::{dims, reshape_to as reshape, slice_range};
use super::{float, In};
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

mod activations;
mod cells;
mod quantized;

use activations::{activate, activations, Activation};
use cells::{gru_step, lstm_step};
pub(super) use quantized::Form;
use quantized::{product, quantized, Matrix};

/// Which recurrent cell.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Cell {
    /// `RNN`: `H = f(X·Wᵀ + H·Rᵀ + Wb + Rb)`.
    Rnn,
    /// `GRU`: gates `z`, `r`, `h`.
    Gru,
    /// `LSTM`: gates `i`, `o`, `f`, `c`.
    Lstm,
}

impl Cell {
    /// The number of gates stacked in `W` and `R`.
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }

    /// The default activations of one direction.
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// What one node asks for, checked.
struct Spec {
    cell: Cell,
    et: ElementType,
    seq: usize,
    batch: usize,
    hidden: usize,
    directions: usize,
    /// Forward only, reverse only, or both (forward first).
    reverse_only: bool,
    layout: i64,
    activations: Vec<Activation>,
    clip: Option<f64>,
    input_forget: bool,
    linear_before_reset: bool,
    /// Each batch entry's length, when some entry is shorter than `seq`.
    lengths: Option<Vec<usize>>,
}

/// Checks that `v` has extents `want`.
fn expect_dims(
    e: &NodeEmitter<'_>,
    v: Output,
    want: &[usize],
    what: &str,
) -> Result<(), OnnxError> {
    let d = dims(e, v)?;
    if d != want {
        return Err(e.shape_error(format!("{what} has shape {d:?}, expected {want:?}")));
    }
    Ok(())
}

fn spec(e: &NodeEmitter<'_>, ins: In<'_>, cell: Cell, form: Form) -> Result<Spec, OnnxError> {
    let (x, w, r) = (e.input(ins, 0)?, e.input(ins, 1)?, e.input(ins, 2)?);
    let et = e.require(x, float, "a float")?;
    match form {
        Form::Float => {
            e.same_type(&[x, w, r])?;
        }
        Form::DynamicQuantized => {
            e.require(x, |t| t == ElementType::F32, "a FLOAT")?;
            e.require(
                w,
                |t| matches!(t, ElementType::U8 | ElementType::I8),
                "UINT8 or INT8",
            )?;
            e.same_type(&[w, r])?;
        }
    }
    let layout = e.attr_i64("layout")?.unwrap_or(0);
    if layout != 0 && layout != 1 {
        return Err(e.attribute_error("layout", format!("must be 0 or 1, is {layout}")));
    }
    let (reverse_only, directions) = e.attr_choice(
        "direction",
        "forward",
        &[
            ("forward", (false, 1)),
            ("reverse", (true, 1)),
            ("bidirectional", (false, 2)),
        ],
    )?;
    let xd = dims(e, x)?;
    if xd.len() != 3 {
        return Err(e.shape_error(format!("X must have rank 3, has shape {xd:?}")));
    }
    let (seq, batch, input) = if layout == 0 {
        (xd[0], xd[1], xd[2])
    } else {
        (xd[1], xd[0], xd[2])
    };
    let rd = dims(e, r)?;
    // The axis of R that is `h` long.
    let h_axis = if form == Form::Float { 2 } else { 1 };
    let hidden = match e.attr_i64("hidden_size")? {
        Some(h) => usize::try_from(h)
            .ok()
            .filter(|&h| h > 0)
            .ok_or_else(|| e.attribute_error("hidden_size", format!("must be positive, is {h}")))?,
        None => *rd
            .get(h_axis)
            .filter(|_| rd.len() == 3)
            .ok_or_else(|| e.shape_error(format!("R must have rank 3, has shape {rd:?}")))?,
    };
    let g = cell.gates() * hidden;
    if form == Form::Float {
        expect_dims(e, w, &[directions, g, input], "W")?;
        expect_dims(e, r, &[directions, g, hidden], "R")?;
    } else {
        expect_dims(e, w, &[directions, input, g], "W")?;
        expect_dims(e, r, &[directions, hidden, g], "R")?;
    }
    let clip = match e.attr_f32_opt("clip")? {
        Some(c) if c > 0.0 => Some(f64::from(c)),
        Some(c) => return Err(e.attribute_error("clip", format!("must be positive, is {c}"))),
        None => None,
    };
    let flag = |name: &str| -> Result<bool, OnnxError> {
        match e.attr_i64(name)?.unwrap_or(0) {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(e.attribute_error(name, format!("must be 0 or 1, is {v}"))),
        }
    };
    let lengths = match e.optional_input(ins, 4) {
        None => None,
        Some(v) => {
            let list = e.constant_ints(v, "input 4 (`sequence_lens`)")?;
            let ok = list.len() == batch
                && list
                    .iter()
                    .all(|&l| l >= 1 && usize::try_from(l).is_ok_and(|l| l <= seq));
            if !ok {
                return Err(e.shape_error(format!(
                    "sequence_lens {list:?} must hold one length in 1..={seq} per batch entry \
                     ({batch})"
                )));
            }
            let lengths: Vec<usize> = list.iter().map(|&l| l as usize).collect();
            lengths.iter().any(|&l| l < seq).then_some(lengths)
        }
    };
    Ok(Spec {
        cell,
        et,
        seq,
        batch,
        hidden,
        directions,
        reverse_only,
        layout,
        activations: activations(e, cell, directions)?,
        clip,
        input_forget: cell == Cell::Lstm && flag("input_forget")?,
        linear_before_reset: cell == Cell::Gru && flag("linear_before_reset")?,
        lengths,
    })
}

/// `RNN`, `GRU` or `LSTM`, or with [`Form::DynamicQuantized`] `DynamicQuantizeLSTM` (see the
/// module's documentation): the outputs `Y`, `Y_h` and, for `LSTM`, `Y_c`.
///
/// # Errors
/// [`OnnxError::BadAttribute`] for a bad `direction`, `layout`, `clip`, `hidden_size`,
/// activation name or count; [`OnnxError::ShapeMismatch`] when `X`, `W`, `R`, `B`, the initial
/// states, `P`, the scales or zero points do not have the spec's shapes or `sequence_lens` is
/// out of range; [`OnnxError::TypeMismatch`] for weights, scales or zero points of other
/// types; [`OnnxError::RunTimeOperand`] when `sequence_lens` is a graph input not given at
/// import.
pub(super) fn recurrent(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    cell: Cell,
    form: Form,
) -> Result<Vec<Output>, OnnxError> {
    match (form, cell) {
        (Form::Float, Cell::Lstm) => e.arity(ins, 3, 8)?,
        (Form::Float, _) => e.arity(ins, 3, 6)?,
        (Form::DynamicQuantized, _) => e.arity(ins, 12, 12)?,
    }
    let s = spec(e, ins, cell, form)?;
    let (x, w, r) = (e.input(ins, 0)?, e.input(ins, 1)?, e.input(ins, 2)?);
    let (dirs, batch, hidden) = (s.directions, s.batch, s.hidden);
    // Everything inside runs in layout 0: X [seq, batch, input], states [dirs, batch, hidden].
    let x = if s.layout == 1 {
        e.op(Op::Transpose(vec![1, 0, 2]), &[x])?
    } else {
        x
    };
    let state = |e: &mut NodeEmitter<'_>, i: usize, what: &str| -> Result<_, OnnxError> {
        let Some(v) = e.optional_input(ins, i) else {
            return Ok(None);
        };
        e.same_type(&[x, v])?;
        let want = if s.layout == 1 {
            [batch, dirs, hidden]
        } else {
            [dirs, batch, hidden]
        };
        expect_dims(e, v, &want, what)?;
        let v = if s.layout == 1 {
            e.op(Op::Transpose(vec![1, 0, 2]), &[v])?
        } else {
            v
        };
        Ok(Some(v))
    };
    let initial_h = state(e, 5, "initial_h")?;
    let initial_c = if cell == Cell::Lstm {
        state(e, 6, "initial_c")?
    } else {
        None
    };
    let b = e.optional_input(ins, 3);
    if let Some(b) = b {
        e.same_type(&[x, b])?;
        expect_dims(e, b, &[dirs, 2 * cell.gates() * hidden], "B")?;
    }
    let p = if cell == Cell::Lstm {
        e.optional_input(ins, 7)
    } else {
        None
    };
    if let Some(p) = p {
        e.same_type(&[x, p])?;
        expect_dims(e, p, &[dirs, 3 * hidden], "P")?;
    }
    let per = cell.default_activations().len();
    let mut ys = Vec::with_capacity(dirs);
    let mut hs = Vec::with_capacity(dirs);
    let mut cs = Vec::with_capacity(dirs);
    for d in 0..dirs {
        let reverse = s.reverse_only || d == 1;
        let pick = |e: &mut NodeEmitter<'_>, v: Option<Output>| -> Result<_, OnnxError> {
            let Some(v) = v else { return Ok(None) };
            let one = slice_range(e, v, 0, d, 1)?;
            let rest = dims(e, one)?[1..].to_vec();
            reshape(e, one, rest).map(Some)
        };
        let (w, r) = match form {
            Form::Float => {
                let w = pick(e, Some(w))?.unwrap_or(w);
                let r = pick(e, Some(r))?.unwrap_or(r);
                (
                    Matrix::Float(transposed(e, w)?),
                    Matrix::Float(transposed(e, r)?),
                )
            }
            Form::DynamicQuantized => (
                quantized(e, ins, &s, [1, 8, 9], d)?,
                quantized(e, ins, &s, [2, 10, 11], d)?,
            ),
        };
        let weights = Weights {
            w,
            r,
            b: pick(e, b)?,
            p: pick(e, p)?,
        };
        let h0 = pick(e, initial_h)?;
        let c0 = pick(e, initial_c)?;
        let acts = &s.activations[d * per..(d + 1) * per];
        let run = direction(e, &s, x, &weights, h0, c0, acts, reverse)?;
        ys.push(run.y);
        hs.push(run.h);
        cs.extend(run.c);
    }
    // Y [seq, dirs, batch, hidden], Y_h and Y_c [dirs, batch, hidden].
    let mut y_parts = Vec::with_capacity(dirs);
    for y in ys {
        y_parts.push(reshape(e, y, vec![s.seq, 1, batch, hidden])?);
    }
    let y = join(e, &y_parts, 1)?;
    let mut outputs = vec![y];
    for finals in [hs, cs] {
        if finals.is_empty() {
            continue;
        }
        let mut parts = Vec::with_capacity(dirs);
        for v in finals {
            parts.push(reshape(e, v, vec![1, batch, hidden])?);
        }
        outputs.push(join(e, &parts, 0)?);
    }
    if s.layout == 1 {
        outputs[0] = e.op(Op::Transpose(vec![2, 0, 1, 3]), &[outputs[0]])?;
        for v in &mut outputs[1..] {
            *v = e.op(Op::Transpose(vec![1, 0, 2]), &[*v])?;
        }
    }
    Ok(outputs)
}

/// `Concat` along `axis`, or the value itself when there is one.
fn join(e: &mut NodeEmitter<'_>, parts: &[Output], axis: usize) -> Result<Output, OnnxError> {
    match parts {
        [one] => Ok(*one),
        _ => e.op(Op::Concat(axis), parts),
    }
}

/// One direction's weights: `w` `[input, G·h]` and `r` `[h, G·h]` (transposed, to multiply
/// from the right), `b` `[2·G·h]`, `p` `[3·h]`.
struct Weights {
    w: Matrix,
    r: Matrix,
    b: Option<Output>,
    p: Option<Output>,
}

/// One direction's results: `y` `[seq, batch, h]` in time order, the final `h` and `c`.
struct Run {
    y: Output,
    h: Output,
    c: Option<Output>,
}

/// The permutation of the `[seq·batch]` rows that runs each batch entry's first `L` steps
/// backwards and leaves the padding steps where they are (an involution).
fn reversal(seq: usize, lengths: &[usize]) -> Vec<i64> {
    let batch = lengths.len();
    let mut rows = Vec::with_capacity(seq * batch);
    for step in 0..seq {
        for (b, &len) in lengths.iter().enumerate() {
            let t = if step < len { len - 1 - step } else { step };
            rows.push((t * batch + b) as i64);
        }
    }
    rows
}

/// Rows of `v` `[seq, batch, n]` permuted by [`reversal`].
fn permute_steps(
    e: &mut NodeEmitter<'_>,
    v: Output,
    seq: usize,
    lengths: &[usize],
) -> Result<Output, OnnxError> {
    let d = dims(e, v)?;
    let flat = reshape(e, v, vec![seq * lengths.len(), d[2]])?;
    let rows = e.constant(
        TensorData::I64(reversal(seq, lengths)),
        Shape::new([seq * lengths.len()]),
    )?;
    let g = e.op(Op::Gather(0), &[flat, rows])?;
    reshape(e, g, d)
}

/// `clamp(x, -clip, clip)` when the node clips.
fn clipped(e: &mut NodeEmitter<'_>, s: &Spec, x: Output) -> Result<Output, OnnxError> {
    let Some(c) = s.clip else { return Ok(x) };
    let lo = e.scalar(s.et, -c)?;
    let hi = e.scalar(s.et, c)?;
    let y = e.binary(BinaryOp::Maximum, x, lo)?;
    e.binary(BinaryOp::Minimum, y, hi)
}

/// `act(clip(x))`.
fn gate(
    e: &mut NodeEmitter<'_>,
    s: &Spec,
    act: Activation,
    x: Output,
) -> Result<Output, OnnxError> {
    let x = clipped(e, s, x)?;
    activate(e, act, x)
}

/// The columns `k·h..(k+1)·h` of `v` `[batch, G·h]`.
fn part(e: &mut NodeEmitter<'_>, v: Output, k: usize, h: usize) -> Result<Output, OnnxError> {
    let rank = dims(e, v)?.len();
    slice_range(e, v, rank - 1, k * h, h)
}

/// `vᵀ` of a matrix.
fn transposed(e: &mut NodeEmitter<'_>, v: Output) -> Result<Output, OnnxError> {
    e.op(Op::Transpose(vec![1, 0]), &[v])
}

/// Runs one direction over the sequence.
#[allow(clippy::too_many_arguments)]
fn direction(
    e: &mut NodeEmitter<'_>,
    s: &Spec,
    x: Output,
    wt: &Weights,
    h0: Option<Output>,
    c0: Option<Output>,
    acts: &[Activation],
    reverse: bool,
) -> Result<Run, OnnxError> {
    let (seq, batch, h) = (s.seq, s.batch, s.hidden);
    let g = s.cell.gates() * h;
    let input = dims(e, x)?[2];
    // The input projection of every step at once, with the biases that add outside the
    // recurrence (all of Wb + Rb, but GRU's Rbh with linear_before_reset, which the reset
    // gate scales).
    let x2 = reshape(e, x, vec![seq * batch, input])?;
    let mut proj = product(e, x2, &wt.w)?;
    let mut rbh = None;
    if let Some(b) = wt.b {
        let wb = slice_range(e, b, 0, 0, g)?;
        let rb = slice_range(e, b, 0, g, g)?;
        let bias = if s.linear_before_reset {
            rbh = Some(slice_range(e, rb, 0, 2 * h, h)?);
            let rb_zr = slice_range(e, rb, 0, 0, 2 * h)?;
            let zero = e.scalar(s.et, 0.0)?;
            let zeros = e.broadcast_to(zero, &Shape::new([h]))?;
            let rb = e.op(Op::Concat(0), &[rb_zr, zeros])?;
            e.binary(BinaryOp::Add, wb, rb)?
        } else {
            e.binary(BinaryOp::Add, wb, rb)?
        };
        proj = e.binary(BinaryOp::Add, proj, bias)?;
    }
    let mut proj = reshape(e, proj, vec![seq, batch, g])?;
    let ragged = s.lengths.as_deref();
    if let (true, Some(lengths)) = (reverse, ragged) {
        proj = permute_steps(e, proj, seq, lengths)?;
    }
    // R split where GRU needs the candidate's product apart (GRU weights are float).
    let split;
    let (r_main, r_cand) = match &wt.r {
        Matrix::Float(r_t) if s.cell == Cell::Gru => {
            let zr = slice_range(e, *r_t, 1, 0, 2 * h)?;
            let cand = slice_range(e, *r_t, 1, 2 * h, h)?;
            split = Matrix::Float(zr);
            (&split, Some(cand))
        }
        r => (r, None),
    };
    let peep = match wt.p {
        Some(p) => Some([
            slice_range(e, p, 0, 0, h)?,
            slice_range(e, p, 0, h, h)?,
            slice_range(e, p, 0, 2 * h, h)?,
        ]),
        None => None,
    };
    let zero = e.scalar(s.et, 0.0)?;
    let zeros = e.broadcast_to(zero, &Shape::new([batch, h]))?;
    let mut h_prev = h0.unwrap_or(zeros);
    let mut c_prev = c0.unwrap_or(zeros);
    let mut ys = Vec::with_capacity(seq);
    for step in 0..seq {
        let t = if reverse && ragged.is_none() {
            seq - 1 - step
        } else {
            step
        };
        let xs = slice_range(e, proj, 0, t, 1)?;
        let xs = reshape(e, xs, vec![batch, g])?;
        let hr = product(e, h_prev, r_main)?;
        let (h_new, c_new) = match s.cell {
            Cell::Rnn => {
                let pre = e.binary(BinaryOp::Add, xs, hr)?;
                (gate(e, s, acts[0], pre)?, None)
            }
            Cell::Gru => {
                let Some(r_cand) = r_cand else {
                    return Err(e.type_error("GRU weights must be float".into()));
                };
                let new = gru_step(e, s, acts, xs, hr, h_prev, r_cand, rbh)?;
                (new, None)
            }
            Cell::Lstm => {
                let pre = e.binary(BinaryOp::Add, xs, hr)?;
                let (hn, cn) = lstm_step(e, s, acts, pre, c_prev, peep.as_ref())?;
                (hn, Some(cn))
            }
        };
        let mask = match ragged {
            Some(lengths) => {
                let live: Vec<bool> = lengths.iter().map(|&l| step < l).collect();
                let m = e.constant(TensorData::Bool(live), Shape::new([batch, 1]))?;
                Some(e.broadcast_to(m, &Shape::new([batch, h]))?)
            }
            None => None,
        };
        let y = match mask {
            Some(m) => {
                h_prev = e.select(m, h_new, h_prev)?;
                if let Some(cn) = c_new {
                    c_prev = e.select(m, cn, c_prev)?;
                }
                e.select(m, h_new, zeros)?
            }
            None => {
                h_prev = h_new;
                if let Some(cn) = c_new {
                    c_prev = cn;
                }
                h_new
            }
        };
        ys.push(reshape(e, y, vec![1, batch, h])?);
    }
    if reverse && ragged.is_none() {
        ys.reverse();
    }
    let mut y = join(e, &ys, 0)?;
    if let (true, Some(lengths)) = (reverse, ragged) {
        y = permute_steps(e, y, seq, lengths)?;
    }
    Ok(Run {
        y,
        h: h_prev,
        c: (s.cell == Cell::Lstm).then_some(c_prev),
    })
}
