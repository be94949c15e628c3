//! One time step of each gated cell: the gate maths around the step's products (GRU's
//! `z r h`, LSTM's `i o f c` with peepholes), elementwise ops that fuse into JIT kernels.

use super::*;

/// One GRU step: `hr` is `H·[Rz Rr]ᵀ`; returns the new `H`.
#[allow(clippy::too_many_arguments)]
pub(super) fn gru_step(
    e: &mut NodeEmitter<'_>,
    s: &Spec,
    acts: &[Activation],
    xs: Output,
    hr: Output,
    h_prev: Output,
    r_cand: Output,
    rbh: Option<Output>,
) -> Result<Output, OnnxError> {
    let h = s.hidden;
    let xz = part(e, xs, 0, h)?;
    let xr = part(e, xs, 1, h)?;
    let xh = part(e, xs, 2, h)?;
    let hz = part(e, hr, 0, h)?;
    let hrr = part(e, hr, 1, h)?;
    let zp = e.binary(BinaryOp::Add, xz, hz)?;
    let z = gate(e, s, acts[0], zp)?;
    let rp = e.binary(BinaryOp::Add, xr, hrr)?;
    let r = gate(e, s, acts[0], rp)?;
    let cand = if s.linear_before_reset {
        let mut hh = e.op(Op::MatMul, &[h_prev, r_cand])?;
        if let Some(rbh) = rbh {
            hh = e.binary(BinaryOp::Add, hh, rbh)?;
        }
        e.binary(BinaryOp::Multiply, r, hh)?
    } else {
        let rh = e.binary(BinaryOp::Multiply, r, h_prev)?;
        e.op(Op::MatMul, &[rh, r_cand])?
    };
    let hp = e.binary(BinaryOp::Add, xh, cand)?;
    let ht = gate(e, s, acts[1], hp)?;
    // (1 - z) ⊙ ht + z ⊙ H
    let one = e.scalar(s.et, 1.0)?;
    let keep = e.binary(BinaryOp::Subtract, one, z)?;
    let a = e.binary(BinaryOp::Multiply, keep, ht)?;
    let bz = e.binary(BinaryOp::Multiply, z, h_prev)?;
    e.binary(BinaryOp::Add, a, bz)
}

/// One LSTM step on the pre-activations `pre` `[batch, 4h]` (gates `i o f c`); returns the
/// new `H` and `C`.
pub(super) fn lstm_step(
    e: &mut NodeEmitter<'_>,
    s: &Spec,
    acts: &[Activation],
    pre: Output,
    c_prev: Output,
    peep: Option<&[Output; 3]>,
) -> Result<(Output, Output), OnnxError> {
    let h = s.hidden;
    let (f_act, g_act, h_act) = (acts[0], acts[1], acts[2]);
    // `x + p ⊙ c` with the peephole `p` (`[h]`, broadcast over the batch) when there is one.
    let peeped = |e: &mut NodeEmitter<'_>, x: Output, k: usize, c: Output| match peep {
        Some(p) => {
            let pc = e.binary(BinaryOp::Multiply, p[k], c)?;
            e.binary(BinaryOp::Add, x, pc)
        }
        None => Ok(x),
    };
    let ip = part(e, pre, 0, h)?;
    let ip = peeped(e, ip, 0, c_prev)?;
    let i = gate(e, s, f_act, ip)?;
    let f = if s.input_forget {
        let one = e.scalar(s.et, 1.0)?;
        e.binary(BinaryOp::Subtract, one, i)?
    } else {
        let fp = part(e, pre, 2, h)?;
        let fp = peeped(e, fp, 2, c_prev)?;
        gate(e, s, f_act, fp)?
    };
    let cp = part(e, pre, 3, h)?;
    let cand = gate(e, s, g_act, cp)?;
    let fc = e.binary(BinaryOp::Multiply, f, c_prev)?;
    let ic = e.binary(BinaryOp::Multiply, i, cand)?;
    let c = e.binary(BinaryOp::Add, fc, ic)?;
    let op = part(e, pre, 1, h)?;
    let op = peeped(e, op, 1, c)?;
    let o = gate(e, s, f_act, op)?;
    let hc = activate(e, h_act, c)?;
    let h_new = e.binary(BinaryOp::Multiply, o, hc)?;
    Ok((h_new, c))
}
