//! The recurrent sequence ops (`Op::Recurrent`: `RNNSequence`, `GRUSequence`,
//! `LSTMSequence`) on `f32`, one kernel per op instead of one node per time step: per
//! direction the input projection of every step is one GEMM (`[rows, input] · Wᵀ`, the
//! biases that add outside the recurrence folded in once), then each step multiplies the
//! state by the recurrent weights and runs the gate maths in place, with the vector
//! library's `sigmoid` and `tanh` on the gate strips, into scratch allocated once per
//! direction. Constant weights come packed from compile time (`super::packed::prepare`:
//! `Wᵀ` above `Rᵀ` in microkernel panels), so the projection is a packed product and each
//! step's state product a packed one-row product that reads `R` once (`super::packed::gemv`);
//! weights computed at run time take the `gemm` crate (its GEMV on `R` viewed transposed,
//! nothing packed per call, as streaming models run a few steps per call). Bidirectional
//! ops run their two directions on two threads when the pool has them. Operands are checked
//! by the reference's `recurrent_operands`; anything it refuses, and other element types, go
//! to the reference kernel.

use std::ops::Range;

use gemm::Parallelism;
use graphlift_ir::{RecurrentActivation, RecurrentCell, RecurrentSequence, Shape, TensorData};
use graphlift_runtime::reference::{recurrent_operands, RecurrentLayout};
use graphlift_runtime::Tensor;

use super::gemm_call::{gemm_into, Strided};
use super::packed::{gemv, product, Lhs, PackedWeights, Rhs, Side};
use crate::parallel::{for_each, Parallel};
use crate::veclib::{VecFn, MAX_PARAMS};

/// `Y`, `Y_h` and (LSTM) `Y_c` of `r` on `inputs` (see `graphlift_ir::Op::Recurrent`), or
/// `None` when this kernel does not apply (not `f32`, or operands the reference refuses:
/// it then reports the error). `packed`, the op's constant `W` and `R` packed when the
/// executable was compiled (`super::packed::prepare`: per direction `Wᵀ` above `Rᵀ`),
/// runs the input projection and every step's state product on the packed path; without
/// it (or when it does not match the operands) the `gemm` crate runs them.
pub(super) fn recurrent(
    r: &RecurrentSequence,
    inputs: &[&Tensor],
    parallel: &Parallel,
    packed: Option<&PackedWeights>,
) -> Option<Vec<Tensor>> {
    let operands: Vec<_> = inputs.iter().map(|t| (t.data(), t.shape())).collect();
    let (layout, types, lengths) = recurrent_operands(r, &operands).ok()?;
    let f = |k: usize| inputs.get(k).and_then(|t| t.data().as_slice::<f32>());
    let input = inputs[0].shape().dims()[2];
    let gates = r.cell.gates() * r.hidden_size;
    let packed = packed.filter(|w| {
        w.side() == Side::Right
            && w.input() == 1
            && w.extents() == (layout.dirs, input + r.hidden_size, gates)
    });
    let op = Problem {
        r,
        layout,
        input,
        packed,
        lengths: &lengths,
        x: f(0)?,
        w: f(1)?,
        rw: f(2)?,
        b: f(3)?,
        h0: f(5)?,
        c0: if r.cell == RecurrentCell::Lstm {
            f(6)?
        } else {
            &[]
        },
        p: if r.cell == RecurrentCell::Lstm {
            f(7)?
        } else {
            &[]
        },
    };
    // Two directions run on two threads (the caller takes part). A single direction runs on
    // one: splitting each step's product in two (DeepFilterNet's h = 256) cost as much in
    // fork-joins as it saved.
    let mut runs: Vec<Option<Run>> = (0..layout.dirs).map(|_| None).collect();
    match parallel.team_of(2, 1) {
        Some(team) if layout.dirs == 2 => {
            for_each(team, runs.iter_mut().enumerate(), |(d, slot)| {
                *slot = Some(op.direction(d));
            });
        }
        _ => {
            for (d, slot) in runs.iter_mut().enumerate() {
                *slot = Some(op.direction(d));
            }
        }
    }
    let runs: Vec<Run> = runs.into_iter().collect::<Option<_>>()?;
    let h = r.hidden_size;
    let (seq, batch) = (layout.seq, layout.batch);
    let mut y = vec![0f32; seq * layout.dirs * batch * h];
    let mut yh = vec![0f32; layout.dirs * batch * h];
    let mut yc = vec![0f32; if op.c0.is_empty() { 0 } else { yh.len() }];
    for (d, run) in runs.iter().enumerate() {
        for t in 0..seq {
            for b in 0..batch {
                let from = &run.y[(t * batch + b) * h..][..h];
                y[layout.y_row(t, d, b) * h..][..h].copy_from_slice(from);
            }
        }
        for b in 0..batch {
            let row = layout.state_row(d, b) * h;
            yh[row..row + h].copy_from_slice(&run.h[b * h..(b + 1) * h]);
            if !yc.is_empty() {
                yc[row..row + h].copy_from_slice(&run.c[b * h..(b + 1) * h]);
            }
        }
    }
    let mut outs = vec![(y, &types[0].shape), (yh, &types[1].shape)];
    if let Some(t) = types.get(2) {
        outs.push((yc, &t.shape));
    }
    outs.into_iter()
        .map(|(v, s): (Vec<f32>, &Shape)| Tensor::from_data(TensorData::F32(v), s.clone()).ok())
        .collect()
}

/// One op's operands, checked.
struct Problem<'a> {
    r: &'a RecurrentSequence,
    layout: RecurrentLayout,
    input: usize,
    /// Per direction `Wᵀ` above `Rᵀ`, packed, when the weights are constants.
    packed: Option<&'a PackedWeights>,
    lengths: &'a [usize],
    x: &'a [f32],
    w: &'a [f32],
    rw: &'a [f32],
    b: &'a [f32],
    h0: &'a [f32],
    c0: &'a [f32],
    p: &'a [f32],
}

/// One direction's results: `y` `[seq, batch, h]` in time order, the final `h` and `c`
/// `[batch, h]`.
struct Run {
    y: Vec<f32>,
    h: Vec<f32>,
    c: Vec<f32>,
}

/// Scratch of one batch entry's step: pre-activations and activated gates `[G·h]`.
struct Scratch {
    pre: Vec<f32>,
    post: Vec<f32>,
    tmp: Vec<f32>,
}

impl Problem<'_> {
    /// Runs direction `d` over the sequence.
    fn direction(&self, d: usize) -> Run {
        let (r, l) = (self.r, self.layout);
        let h = r.hidden_size;
        let gates = r.cell.gates() * h;
        let rows = l.seq * l.batch;
        let lbr = r.linear_before_reset;
        // The input projection of every step, with Wb + Rb (but GRU's Rbh with
        // linear_before_reset, which the reset gate scales).
        let mut proj = vec![0f32; rows * gates];
        self.project(d, &mut proj);
        let bias = &self.b[d * 2 * gates..(d + 1) * 2 * gates];
        let (wb, rb) = bias.split_at(gates);
        let add: Vec<f32> = (0..gates)
            .map(|k| wb[k] + if lbr && k >= 2 * h { 0.0 } else { rb[k] })
            .collect();
        for row in proj.chunks_exact_mut(gates) {
            for (p, a) in row.iter_mut().zip(&add) {
                *p += a;
            }
        }
        let rbh = &rb[gates - h..];
        let peep = if self.p.is_empty() {
            &[][..]
        } else {
            &self.p[d * 3 * h..(d + 1) * 3 * h]
        };
        let mut hs = vec![0f32; l.batch * h];
        let mut cs = vec![0f32; if self.c0.is_empty() { 0 } else { l.batch * h }];
        for b in 0..l.batch {
            let row = l.state_row(d, b) * h;
            hs[b * h..(b + 1) * h].copy_from_slice(&self.h0[row..row + h]);
            if !cs.is_empty() {
                cs[b * h..(b + 1) * h].copy_from_slice(&self.c0[row..row + h]);
            }
        }
        let mut y = vec![0f32; rows * h];
        let mut s = Scratch {
            pre: vec![0f32; gates],
            post: vec![0f32; gates],
            tmp: vec![0f32; gates],
        };
        let acts = r.activations_of(d);
        let reverse = r.direction.is_reverse(d);
        let mut hr = vec![0f32; gates];
        for step in 0..l.seq {
            for (b, &len) in self.lengths.iter().enumerate() {
                if step >= len {
                    continue;
                }
                let t = if reverse { len - 1 - step } else { step };
                let xp = &proj[l.x_row(t, b) * gates..][..gates];
                let hb = &mut hs[b * h..(b + 1) * h];
                // Ht-1·Rᵀ: every gate, or GRU's z and r without linear_before_reset (its
                // candidate multiplies rt ⊙ Ht-1 below).
                let cols = if r.cell == RecurrentCell::Gru && !lbr {
                    2 * h
                } else {
                    gates
                };
                self.state_product(d, hb, 0..cols, &mut hr[..cols]);
                match r.cell {
                    RecurrentCell::Rnn => {
                        add_into(xp, &hr, &mut s.pre);
                        gate(r, acts[0], &mut s.pre, hb);
                    }
                    RecurrentCell::Gru => {
                        self.gru(d, acts, xp, &mut hr, rbh, hb, &mut s);
                    }
                    RecurrentCell::Lstm => {
                        let cb = &mut cs[b * h..(b + 1) * h];
                        self.lstm(acts, xp, &hr, peep, hb, cb, &mut s);
                    }
                }
                y[(t * l.batch + b) * h..][..h].copy_from_slice(hb);
            }
        }
        Run { y, h: hs, c: cs }
    }

    /// The input projection of direction `d`: `proj` `[seq · batch, G·h]` (rows in `X`'s
    /// order) `= X · Wᵀ`.
    fn project(&self, d: usize, proj: &mut [f32]) {
        let (input, gates) = (self.input, self.r.cell.gates() * self.r.hidden_size);
        let rows = self.layout.seq * self.layout.batch;
        if let Some(w) = self.packed {
            let x = Lhs::Strided {
                data: self.x,
                rs: input,
                ks: 1,
            };
            let w = Rhs::PackedRows {
                w,
                matrix: d,
                first: 0,
            };
            if product((proj, gates), x, w, (rows, input, gates), false) {
                return;
            }
        }
        let w = &self.w[d * gates * input..(d + 1) * gates * input];
        gemm_into(
            (proj, Strided::row_major(rows, gates)),
            (self.x, Strided::row_major(rows, input)),
            (
                w,
                Strided {
                    rows: input,
                    cols: gates,
                    row_stride: 1,
                    col_stride: input,
                },
            ),
            1.0,
            None,
            Parallelism::None,
        );
    }

    /// `out = v · R_dᵀ[.., cols]`: the state `v` (`h`) times the recurrent weights of
    /// direction `d`, gate columns `cols` (`out.len() == cols.len()`).
    fn state_product(&self, d: usize, v: &[f32], cols: Range<usize>, out: &mut [f32]) {
        let h = v.len();
        if let Some(w) = self.packed {
            if gemv(w, d, self.input, v, cols.clone(), out) {
                return;
            }
        }
        let gates = self.r.cell.gates() * h;
        let rd = &self.rw[d * gates * h..(d + 1) * gates * h];
        recurrent_product(&rd[cols.start * h..], v, out);
    }

    /// One GRU step of one batch entry of direction `d`: `hr` holds `Ht-1·Rᵀ` (all gates
    /// with linear_before_reset, else `z` and `r` only); `hb` becomes `Ht`.
    #[allow(clippy::too_many_arguments)]
    fn gru(
        &self,
        d: usize,
        acts: &[RecurrentActivation],
        xp: &[f32],
        hr: &mut [f32],
        rbh: &[f32],
        hb: &mut [f32],
        s: &mut Scratch,
    ) {
        let r = self.r;
        let h = r.hidden_size;
        add_into(&xp[..2 * h], &hr[..2 * h], &mut s.pre[..2 * h]);
        let (zr, cand) = s.post.split_at_mut(2 * h);
        gate(r, acts[0], &mut s.pre[..2 * h], zr);
        let (z, rg) = zr.split_at(h);
        if r.linear_before_reset {
            for j in 0..h {
                s.pre[2 * h + j] = xp[2 * h + j] + rg[j] * (hr[2 * h + j] + rbh[j]);
            }
        } else {
            // (rt ⊙ Ht-1)·Rhᵀ: the candidate's rows of R.
            for j in 0..h {
                s.tmp[j] = rg[j] * hb[j];
            }
            let hh = &mut hr[2 * h..];
            self.state_product(d, &s.tmp[..h], 2 * h..3 * h, hh);
            for j in 0..h {
                s.pre[2 * h + j] = xp[2 * h + j] + hh[j];
            }
        }
        gate(r, acts[1], &mut s.pre[2 * h..], cand);
        for j in 0..h {
            hb[j] = (1.0 - z[j]) * cand[j] + z[j] * hb[j];
        }
    }

    /// One LSTM step of one batch entry (gates `i o f c`, peepholes `i o f` when `peep` is
    /// not empty); `hb`, `cb` become `Ht`, `Ct`.
    #[allow(clippy::too_many_arguments)]
    fn lstm(
        &self,
        acts: &[RecurrentActivation],
        xp: &[f32],
        hr: &[f32],
        peep: &[f32],
        hb: &mut [f32],
        cb: &mut [f32],
        s: &mut Scratch,
    ) {
        let r = self.r;
        let h = r.hidden_size;
        add_into(xp, hr, &mut s.pre);
        if !peep.is_empty() {
            for j in 0..h {
                s.pre[j] += peep[j] * cb[j];
                s.pre[2 * h + j] += peep[2 * h + j] * cb[j];
            }
        }
        let (io, fc) = s.post.split_at_mut(2 * h);
        let (i, o) = io.split_at_mut(h);
        let (f, c) = fc.split_at_mut(h);
        gate(r, acts[0], &mut s.pre[..h], i);
        if r.input_forget {
            for (f, i) in f.iter_mut().zip(i.iter()) {
                *f = 1.0 - i;
            }
        } else {
            gate(r, acts[0], &mut s.pre[2 * h..3 * h], f);
        }
        gate(r, acts[1], &mut s.pre[3 * h..], c);
        for j in 0..h {
            cb[j] = f[j] * cb[j] + i[j] * c[j];
        }
        if !peep.is_empty() {
            for j in 0..h {
                s.pre[h + j] += peep[h + j] * cb[j];
            }
        }
        gate(r, acts[0], &mut s.pre[h..2 * h], o);
        activate(acts[2], cb, &mut s.tmp[..h]);
        for j in 0..h {
            hb[j] = o[j] * s.tmp[j];
        }
    }
}

/// `out = a + b`.
fn add_into(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = x + y;
    }
}

/// `dst = act(clip(pre))` (`pre` is clipped in place).
fn gate(r: &RecurrentSequence, act: RecurrentActivation, pre: &mut [f32], dst: &mut [f32]) {
    if let Some(c) = r.clip {
        let c = c as f32;
        for x in pre.iter_mut() {
            *x = x.clamp(-c, c);
        }
    }
    activate(act, pre, dst);
}

/// `dst = act(src)`: the vector library's `sigmoid` and `tanh` (16 lanes where the host has
/// AVX-512), the others element by element from their `f64` definition.
fn activate(act: RecurrentActivation, src: &[f32], dst: &mut [f32]) {
    match act {
        RecurrentActivation::Sigmoid => VecFn::Sigmoid.map(src, dst, [0.0; MAX_PARAMS]),
        RecurrentActivation::Tanh => VecFn::Tanh.map(src, dst, [0.0; MAX_PARAMS]),
        other => {
            for (d, &x) in dst.iter_mut().zip(src) {
                *d = other.apply(f64::from(x)) as f32;
            }
        }
    }
}

/// `out = v · rowsᵀ` for `rows` `[out.len(), v.len()]` row-major (ONNX's `R`): the GEMM
/// call's GEMV on the transposed view, nothing packed per call (packing `Rᵀ` once per call
/// was slower on the zoo's few-step streaming calls).
fn recurrent_product(rows: &[f32], v: &[f32], out: &mut [f32]) {
    let (n, h) = (out.len(), v.len());
    let Some(rows) = rows.get(..n * h) else {
        return;
    };
    gemm_into(
        (out, Strided::row_major(1, n)),
        (v, Strided::row_major(1, h)),
        (
            rows,
            Strided {
                rows: h,
                cols: n,
                row_stride: 1,
                col_stride: h,
            },
        ),
        1.0,
        None,
        Parallelism::None,
    );
}

#[cfg(test)]
mod tests;
