//! The gate maths of the unrolled form: the activations (with clip) and one GRU or LSTM
//! step as elementwise ops around the step's products.

use super::{UnrollGraph, Unroller};
use crate::{BinaryOp, CompareOp, Op, Output, RecurrentActivation, UnaryOp};

impl<G: UnrollGraph> Unroller<'_, G> {
    /// `act(x)` for `x` `[batch, h]`.
    fn activate(&mut self, act: RecurrentActivation, x: Output) -> Result<Output, G::Error> {
        use RecurrentActivation as A;
        let shape = [self.batch, self.r.hidden_size];
        let scalar = |u: &mut Self, c: f64| u.filled(c, &shape);
        let select_nonneg = |u: &mut Self, x: Output, other: Output, strict: Option<f64>| {
            let (cmp, at) = match strict {
                Some(t) => (CompareOp::Greater, t),
                None => (CompareOp::GreaterEq, 0.0),
            };
            let t = u.filled(at, &shape)?;
            let m = u.g.op(Op::Compare(cmp), &[x, t])?;
            u.g.op(Op::Select, &[m, x, other])
        };
        match act {
            A::Relu => self.un(UnaryOp::Relu, x),
            A::Tanh => self.un(UnaryOp::Tanh, x),
            A::Sigmoid => self.un(UnaryOp::Sigmoid, x),
            A::Affine(a, b) => {
                let (a, b) = (scalar(self, a)?, scalar(self, b)?);
                let ax = self.bin(BinaryOp::Multiply, x, a)?;
                self.bin(BinaryOp::Add, ax, b)
            }
            A::LeakyRelu(a) => {
                let a = scalar(self, a)?;
                let ax = self.bin(BinaryOp::Multiply, x, a)?;
                select_nonneg(self, x, ax, None)
            }
            A::ThresholdedRelu(a) => {
                let zero = scalar(self, 0.0)?;
                select_nonneg(self, x, zero, Some(a))
            }
            A::ScaledTanh(a, b) => {
                let (a, b) = (scalar(self, a)?, scalar(self, b)?);
                let bx = self.bin(BinaryOp::Multiply, x, b)?;
                let t = self.un(UnaryOp::Tanh, bx)?;
                self.bin(BinaryOp::Multiply, t, a)
            }
            A::HardSigmoid(a, b) => {
                let (a, b) = (scalar(self, a)?, scalar(self, b)?);
                let (zero, one) = (scalar(self, 0.0)?, scalar(self, 1.0)?);
                let ax = self.bin(BinaryOp::Multiply, x, a)?;
                let y = self.bin(BinaryOp::Add, ax, b)?;
                let y = self.bin(BinaryOp::Maximum, y, zero)?;
                self.bin(BinaryOp::Minimum, y, one)
            }
            A::Elu(a) => {
                let a = scalar(self, a)?;
                let e = self.un(UnaryOp::Expm1, x)?;
                let ae = self.bin(BinaryOp::Multiply, e, a)?;
                select_nonneg(self, x, ae, None)
            }
            A::Softsign => {
                let one = scalar(self, 1.0)?;
                let ax = self.un(UnaryOp::Abs, x)?;
                let d = self.bin(BinaryOp::Add, ax, one)?;
                self.bin(BinaryOp::Divide, x, d)
            }
            A::Softplus => {
                // max(x, 0) + ln(1 + e^-|x|): no overflow for large x.
                let zero = scalar(self, 0.0)?;
                let pos = self.bin(BinaryOp::Maximum, x, zero)?;
                let ax = self.un(UnaryOp::Abs, x)?;
                let nx = self.un(UnaryOp::Negative, ax)?;
                let e = self.un(UnaryOp::Exp, nx)?;
                let l = self.un(UnaryOp::Log1p, e)?;
                self.bin(BinaryOp::Add, pos, l)
            }
        }
    }

    /// `act(clip(x))`.
    pub(super) fn gate(&mut self, act: RecurrentActivation, x: Output) -> Result<Output, G::Error> {
        let x = match self.r.clip {
            Some(c) => {
                let shape = [self.batch, self.r.hidden_size];
                let (lo, hi) = (self.filled(-c, &shape)?, self.filled(c, &shape)?);
                let x = self.bin(BinaryOp::Maximum, x, lo)?;
                self.bin(BinaryOp::Minimum, x, hi)?
            }
            None => x,
        };
        self.activate(act, x)
    }

    /// One GRU step: `hr` is `H·[Rz Rr]ᵀ`; returns the new `H`.
    pub(super) fn gru_step(
        &mut self,
        acts: &[RecurrentActivation],
        xs: Output,
        hr: Output,
        h_prev: Output,
        r_cand: &G::Matrix,
        rbh: Option<Output>,
    ) -> Result<Output, G::Error> {
        let (batch, h) = (self.batch, self.r.hidden_size);
        let (x_dims, hr_dims) = ([batch, 3 * h], [batch, 2 * h]);
        let (xz, xr, xh) = (
            self.part(xs, &x_dims, 0, h)?,
            self.part(xs, &x_dims, 1, h)?,
            self.part(xs, &x_dims, 2, h)?,
        );
        let (hz, hrr) = (
            self.part(hr, &hr_dims, 0, h)?,
            self.part(hr, &hr_dims, 1, h)?,
        );
        let zp = self.bin(BinaryOp::Add, xz, hz)?;
        let z = self.gate(acts[0], zp)?;
        let rp = self.bin(BinaryOp::Add, xr, hrr)?;
        let r = self.gate(acts[0], rp)?;
        let cand = if self.r.linear_before_reset {
            let mut hh = self.g.product(h_prev, r_cand)?;
            if let Some(rbh) = rbh {
                hh = self.bin(BinaryOp::Add, hh, rbh)?;
            }
            self.bin(BinaryOp::Multiply, r, hh)?
        } else {
            let rh = self.bin(BinaryOp::Multiply, r, h_prev)?;
            self.g.product(rh, r_cand)?
        };
        let hp = self.bin(BinaryOp::Add, xh, cand)?;
        let ht = self.gate(acts[1], hp)?;
        // (1 - z) ⊙ ht + z ⊙ H
        let one = self.filled(1.0, &[batch, h])?;
        let keep = self.bin(BinaryOp::Subtract, one, z)?;
        let a = self.bin(BinaryOp::Multiply, keep, ht)?;
        let bz = self.bin(BinaryOp::Multiply, z, h_prev)?;
        self.bin(BinaryOp::Add, a, bz)
    }

    /// One LSTM step on the pre-activations `pre` `[batch, 4h]` (gates `i o f c`); returns
    /// the new `H` and `C`.
    pub(super) fn lstm_step(
        &mut self,
        acts: &[RecurrentActivation],
        pre: Output,
        c_prev: Output,
        peep: Option<&[Output; 3]>,
    ) -> Result<(Output, Output), G::Error> {
        let (batch, h) = (self.batch, self.r.hidden_size);
        let dims = [batch, 4 * h];
        let (f_act, g_act, h_act) = (acts[0], acts[1], acts[2]);
        // `x + p ⊙ c` with the peephole `p` when there is one.
        let peeped = |u: &mut Self, x: Output, k: usize, c: Output| match peep {
            Some(p) => {
                let pc = u.bin(BinaryOp::Multiply, p[k], c)?;
                u.bin(BinaryOp::Add, x, pc)
            }
            None => Ok(x),
        };
        let ip = self.part(pre, &dims, 0, h)?;
        let ip = peeped(self, ip, 0, c_prev)?;
        let i = self.gate(f_act, ip)?;
        let f = if self.r.input_forget {
            let one = self.filled(1.0, &[batch, h])?;
            self.bin(BinaryOp::Subtract, one, i)?
        } else {
            let fp = self.part(pre, &dims, 2, h)?;
            let fp = peeped(self, fp, 2, c_prev)?;
            self.gate(f_act, fp)?
        };
        let cp = self.part(pre, &dims, 3, h)?;
        let cand = self.gate(g_act, cp)?;
        let fc = self.bin(BinaryOp::Multiply, f, c_prev)?;
        let ic = self.bin(BinaryOp::Multiply, i, cand)?;
        let c = self.bin(BinaryOp::Add, fc, ic)?;
        let op = self.part(pre, &dims, 1, h)?;
        let op = peeped(self, op, 1, c)?;
        let o = self.gate(f_act, op)?;
        let hc = self.activate(h_act, c)?;
        let h_new = self.bin(BinaryOp::Multiply, o, hc)?;
        Ok((h_new, c))
    }
}
