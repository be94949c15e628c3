//! The recurrent operators `RNN`, `GRU` and `LSTM` (ONNX opsets 7 and 14; the older
//! versions where their attributes agree), each imported as one recurrent sequence op
//! ([`Op::Recurrent`]: nGraph's `RNNSequence`, `GRUSequence`, `LSTMSequence`), which the
//! INTERPRETER runs by the spec's equations step by step and CPU-JIT as one native kernel
//! (one GEMM for the input projection of all steps, then a fused step per time step).
//!
//! The op takes every operand: the importer gives the spec's defaults for those a node
//! leaves out (zero biases, states and peepholes; every batch entry the full sequence).
//! `sequence_lens` may be known at import (checked then: each length in `1..=seq`) or a
//! value computed at run time (checked by the kernels).
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
//! in integers ([`dynamic_quantized_matmul`]), as onnxruntime's kernel does. It is unrolled at
//! import by the op's own decomposition ([`graphlift_ir::unroll`], which autodiff uses too)
//! with those products in place of the float ones; its `sequence_lens` must be known at
//! import.

use std::sync::Arc;

pub(super) use graphlift_ir::RecurrentCell as Cell;
use graphlift_ir::{
    ElementType, Op, Output, RecurrentActivation, RecurrentDirection, RecurrentSequence, Shape,
    TensorData,
};

use super::layout::dims;
use super::{float, In};
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

mod activations;
mod quantized;

use activations::activations;
pub(super) use quantized::Form;

/// What one node asks for, checked.
struct Spec {
    cell: Cell,
    et: ElementType,
    seq: usize,
    batch: usize,
    hidden: usize,
    directions: usize,
    input: usize,
    /// The op's attributes.
    op: RecurrentSequence,
    /// `sequence_lens`: its values when known at import, else the run-time value.
    lengths: Lengths,
}

/// A node's `sequence_lens`.
enum Lengths {
    /// Every entry runs the whole sequence.
    Full,
    /// Known at import (each in `1..=seq`).
    Known(Vec<usize>),
    /// Computed at run time (`i32` or `i64` `[batch]`; the kernels check the values).
    RunTime(Output),
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
    let direction = e.attr_choice(
        "direction",
        "forward",
        &[
            ("forward", RecurrentDirection::Forward),
            ("reverse", RecurrentDirection::Reverse),
            ("bidirectional", RecurrentDirection::Bidirectional),
        ],
    )?;
    let directions = direction.count();
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
        None => Lengths::Full,
        Some(v) if form == Form::Float && e.constant_value(v).is_none() => {
            e.require(
                v,
                |t| matches!(t, ElementType::I32 | ElementType::I64),
                "INT32 or INT64",
            )?;
            expect_dims(e, v, &[batch], "sequence_lens")?;
            Lengths::RunTime(v)
        }
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
            if lengths.iter().any(|&l| l < seq) {
                Lengths::Known(lengths)
            } else {
                Lengths::Full
            }
        }
    };
    let op = RecurrentSequence {
        cell,
        direction,
        hidden_size: hidden,
        activations: activations(e, cell, directions)?,
        clip,
        input_forget: cell == Cell::Lstm && flag("input_forget")?,
        linear_before_reset: cell == Cell::Gru && flag("linear_before_reset")?,
        batch_major: layout == 1,
    };
    Ok(Spec {
        cell,
        et,
        seq,
        batch,
        hidden,
        directions,
        input,
        op,
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
/// out of range; [`OnnxError::TypeMismatch`] for weights, scales, zero points or
/// `sequence_lens` of other types; [`OnnxError::RunTimeOperand`] when `DynamicQuantizeLSTM`'s
/// `sequence_lens` is a graph input not given at import.
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
    let x = e.input(ins, 0)?;
    let (dirs, batch, hidden) = (s.directions, s.batch, s.hidden);
    let state_dims = s.op.state_dims(batch);
    let state = |e: &mut NodeEmitter<'_>, i: usize, what: &str| -> Result<_, OnnxError> {
        let Some(v) = e.optional_input(ins, i) else {
            return Ok(None);
        };
        e.same_type(&[x, v])?;
        expect_dims(e, v, &state_dims, what)?;
        Ok(Some(v))
    };
    let initial_h = state(e, 5, "initial_h")?;
    let lstm = cell == Cell::Lstm;
    let initial_c = if lstm {
        state(e, 6, "initial_c")?
    } else {
        None
    };
    let b = e.optional_input(ins, 3);
    if let Some(b) = b {
        e.same_type(&[x, b])?;
        expect_dims(e, b, &[dirs, 2 * cell.gates() * hidden], "B")?;
    }
    let p = if lstm { e.optional_input(ins, 7) } else { None };
    if let Some(p) = p {
        e.same_type(&[x, p])?;
        expect_dims(e, p, &[dirs, 3 * hidden], "P")?;
    }
    if form == Form::DynamicQuantized {
        let lengths = match &s.lengths {
            Lengths::Known(l) => Some(l.clone()),
            _ => None,
        };
        let operands = graphlift_ir::unroll::UnrollOperands {
            x,
            element_type: s.et,
            extents: (s.seq, batch, s.input),
            b,
            lengths,
            initial_h,
            initial_c,
            p,
        };
        let mut g = quantized::QuantizedGraph { e, ins, s: &s };
        return graphlift_ir::unroll::unroll(&mut g, &s.op, &operands);
    }
    // The spec's defaults for the operands the node leaves out.
    let (w, r) = (e.input(ins, 1)?, e.input(ins, 2)?);
    let zeros = |e: &mut NodeEmitter<'_>, dims: Vec<usize>| -> Result<Output, OnnxError> {
        let zero = e.scalar(s.et, 0.0)?;
        e.broadcast_to(zero, &Shape::new(dims))
    };
    let b = match b {
        Some(b) => b,
        None => zeros(e, vec![dirs, 2 * cell.gates() * hidden])?,
    };
    let lens = match &s.lengths {
        Lengths::RunTime(v) => *v,
        Lengths::Known(l) => e.constant(
            TensorData::I64(l.iter().map(|&l| l as i64).collect()),
            Shape::new([batch]),
        )?,
        Lengths::Full => e.constant(
            TensorData::I64(vec![s.seq as i64; batch]),
            Shape::new([batch]),
        )?,
    };
    let h0 = match initial_h {
        Some(v) => v,
        None => zeros(e, state_dims.to_vec())?,
    };
    let mut operands = vec![x, w, r, b, lens, h0];
    if lstm {
        let c0 = match initial_c {
            Some(v) => v,
            None => zeros(e, state_dims.to_vec())?,
        };
        let p = match p {
            Some(p) => p,
            None => zeros(e, vec![dirs, 3 * hidden])?,
        };
        operands.extend([c0, p]);
    }
    let y = e.op(Op::Recurrent(Arc::new(s.op.clone())), &operands)?;
    Ok((0..cell.outputs())
        .map(|k| Output::new(y.node, k))
        .collect())
}
