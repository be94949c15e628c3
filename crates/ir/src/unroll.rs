//! The unrolled form of a recurrent sequence op ([`crate::Op::Recurrent`]): per direction the
//! input projection of all steps as one product, then per time step a slice, the recurrent
//! product and the gate maths as plain elementwise ops. It means what the op means, in ops
//! that have adjoints, so autodiff differentiates a recurrent op through it, and the ONNX
//! importer builds `DynamicQuantizeLSTM` (whose products are quantized) with it. One
//! decomposition, written against [`UnrollGraph`] so each caller adds nodes its own way.

use crate::{
    BinaryOp, CompareOp, ElementType, Op, Output, RecurrentActivation, RecurrentCell,
    RecurrentSequence, Shape, SliceAxis, TensorData, UnaryOp,
};

/// Where the unrolled nodes go, and how a product with a weight matrix is made.
pub trait UnrollGraph {
    /// The graph's error.
    type Error;
    /// A weight matrix `[K, N]` of one direction, oriented to multiply from the right.
    type Matrix;
    /// Adds a node of `op` on `inputs` (operands of equal shapes where the op says so).
    fn op(&mut self, op: Op, inputs: &[Output]) -> Result<Output, Self::Error>;
    /// Adds a constant.
    fn constant(&mut self, data: TensorData, shape: Shape) -> Result<Output, Self::Error>;
    /// Direction `d`'s input weight `[input, G·h]` and recurrent weight `[h, G·h]`.
    fn weights(&mut self, d: usize) -> Result<(Self::Matrix, Self::Matrix), Self::Error>;
    /// `a · m` for `a` `[rows, K]`.
    fn product(&mut self, a: Output, m: &Self::Matrix) -> Result<Output, Self::Error>;
    /// The columns `start..start + len` of `m` (GRU multiplies its candidate gate apart).
    fn columns(
        &mut self,
        m: &Self::Matrix,
        start: usize,
        len: usize,
    ) -> Result<Self::Matrix, Self::Error>;
}

/// The operands of one unrolled recurrence, in the op's layout (see [`crate::Op::Recurrent`];
/// the weights come from [`UnrollGraph::weights`]).
#[derive(Debug, Clone)]
pub struct UnrollOperands {
    /// `X`.
    pub x: Output,
    /// `X`'s element type.
    pub element_type: ElementType,
    /// `(seq, batch, input)`.
    pub extents: (usize, usize, usize),
    /// `B` `[dirs, 2·G·h]`, or none (zeros).
    pub b: Option<Output>,
    /// Each batch entry's length (`1..=seq`), or none when every entry runs all steps.
    pub lengths: Option<Vec<usize>>,
    /// `initial_h`, or none (zeros).
    pub initial_h: Option<Output>,
    /// `initial_c` (LSTM), or none (zeros).
    pub initial_c: Option<Output>,
    /// `P` `[dirs, 3·h]` (LSTM), or none (no peepholes).
    pub p: Option<Output>,
}

/// The op's outputs `Y`, `Y_h` and (LSTM) `Y_c`, unrolled into `g`.
///
/// # Errors
/// The graph's error from any node it adds (operands of the wrong shapes end there).
pub fn unroll<G: UnrollGraph>(
    g: &mut G,
    r: &RecurrentSequence,
    o: &UnrollOperands,
) -> Result<Vec<Output>, G::Error> {
    let (seq, batch, input) = o.extents;
    let (dirs, h) = (r.direction.count(), r.hidden_size);
    let mut u = Unroller {
        g,
        r,
        et: o.element_type,
        batch,
    };
    // Everything inside runs in layout 0: X [seq, batch, input], states [dirs, batch, h].
    let swap = |u: &mut Unroller<'_, G>, v: Option<Output>| match v {
        Some(v) if r.batch_major => u.g.op(Op::Transpose(vec![1, 0, 2]), &[v]).map(Some),
        v => Ok(v),
    };
    let x = swap(&mut u, Some(o.x))?.unwrap_or(o.x);
    let (h0, c0) = (swap(&mut u, o.initial_h)?, swap(&mut u, o.initial_c)?);
    let (mut ys, mut hs, mut cs) = (Vec::new(), Vec::new(), Vec::new());
    for d in 0..dirs {
        let pick = |u: &mut Unroller<'_, G>, v: Option<Output>, rest: Vec<usize>| match v {
            Some(v) => {
                let mut axes: Vec<SliceAxis> = std::iter::once(dirs)
                    .chain(rest.iter().copied())
                    .map(SliceAxis::full)
                    .collect();
                axes[0] = SliceAxis {
                    start: d,
                    len: 1,
                    step: 1,
                };
                let s = u.g.op(Op::Slice(axes), &[v])?;
                u.g.op(Op::Reshape(Shape::new(rest)), &[s]).map(Some)
            }
            None => Ok(None),
        };
        let gates = r.cell.gates() * h;
        let b = pick(&mut u, o.b, vec![2 * gates])?;
        let p = pick(&mut u, o.p, vec![3 * h])?;
        let h0 = pick(&mut u, h0, vec![batch, h])?;
        let c0 = pick(&mut u, c0, vec![batch, h])?;
        let run = u.direction(d, x, (seq, input), b, p, [h0, c0], o.lengths.as_deref())?;
        ys.push(u.g.op(Op::Reshape(Shape::new([seq, 1, batch, h])), &[run.0])?);
        hs.push(u.g.op(Op::Reshape(Shape::new([1, batch, h])), &[run.1])?);
        if let Some(c) = run.2 {
            cs.push(u.g.op(Op::Reshape(Shape::new([1, batch, h])), &[c])?);
        }
    }
    let mut outputs = vec![u.join(&ys, 1)?, u.join(&hs, 0)?];
    if !cs.is_empty() {
        outputs.push(u.join(&cs, 0)?);
    }
    if r.batch_major {
        outputs[0] = u.g.op(Op::Transpose(vec![2, 0, 1, 3]), &[outputs[0]])?;
        for v in &mut outputs[1..] {
            *v = u.g.op(Op::Transpose(vec![1, 0, 2]), &[*v])?;
        }
    }
    Ok(outputs)
}

/// The permutation of the `[seq·batch]` rows that runs each batch entry's first `L` steps
/// backwards and leaves the padding steps where they are (an involution).
pub fn reversal(seq: usize, lengths: &[usize]) -> Vec<i64> {
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

struct Unroller<'a, G: UnrollGraph> {
    g: &'a mut G,
    r: &'a RecurrentSequence,
    et: ElementType,
    batch: usize,
}

/// A direction's `Y` `[seq, batch, h]` in time order and its final `H` and `C`.
type Run = (Output, Output, Option<Output>);

impl<G: UnrollGraph> Unroller<'_, G> {
    fn join(&mut self, parts: &[Output], axis: usize) -> Result<Output, G::Error> {
        match parts {
            [one] => Ok(*one),
            _ => self.g.op(Op::Concat(axis), parts),
        }
    }

    /// `x` `[.., n]` columns `k·w..(k+1)·w`.
    fn part(&mut self, x: Output, dims: &[usize], k: usize, w: usize) -> Result<Output, G::Error> {
        let mut axes: Vec<SliceAxis> = dims.iter().map(|&n| SliceAxis::full(n)).collect();
        if let Some(last) = axes.last_mut() {
            *last = SliceAxis {
                start: k * w,
                len: w,
                step: 1,
            };
        }
        self.g.op(Op::Slice(axes), &[x])
    }

    /// The scalar `c` broadcast to `shape`.
    fn filled(&mut self, c: f64, shape: &[usize]) -> Result<Output, G::Error> {
        let s = self
            .g
            .constant(TensorData::from_f64(self.et, &[c]), Shape::scalar())?;
        self.g.op(Op::Broadcast(Shape::new(shape)), &[s])
    }

    fn bin(&mut self, op: BinaryOp, a: Output, b: Output) -> Result<Output, G::Error> {
        self.g.op(Op::Binary(op), &[a, b])
    }

    fn un(&mut self, op: UnaryOp, a: Output) -> Result<Output, G::Error> {
        self.g.op(Op::Unary(op), &[a])
    }

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
    fn gate(&mut self, act: RecurrentActivation, x: Output) -> Result<Output, G::Error> {
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

    /// Runs direction `d` over the sequence.
    #[allow(clippy::too_many_arguments)]
    fn direction(
        &mut self,
        d: usize,
        x: Output,
        (seq, input): (usize, usize),
        b: Option<Output>,
        p: Option<Output>,
        [h0, c0]: [Option<Output>; 2],
        lengths: Option<&[usize]>,
    ) -> Result<Run, G::Error> {
        let (batch, h, cell) = (self.batch, self.r.hidden_size, self.r.cell);
        let gates = cell.gates() * h;
        let reverse = self.r.direction.is_reverse(d);
        let acts = self.r.activations_of(d).to_vec();
        let (w, r) = self.g.weights(d)?;
        // The input projection of every step at once, with the biases that add outside the
        // recurrence (all of Wb + Rb, but GRU's Rbh with linear_before_reset, which the reset
        // gate scales).
        let x2 = self
            .g
            .op(Op::Reshape(Shape::new([seq * batch, input])), &[x])?;
        let mut proj = self.g.product(x2, &w)?;
        let mut rbh = None;
        if let Some(b) = b {
            let wb = self.part(b, &[2 * gates], 0, gates)?;
            let mut rb = self.part(b, &[2 * gates], 1, gates)?;
            if self.r.linear_before_reset {
                let cand = self.part(rb, &[gates], 2, h)?;
                rbh = Some(self.g.op(Op::Broadcast(Shape::new([batch, h])), &[cand])?);
                let zr = self.part(rb, &[gates], 0, 2 * h)?;
                let zeros = self.filled(0.0, &[h])?;
                rb = self.g.op(Op::Concat(0), &[zr, zeros])?;
            }
            let bias = self.bin(BinaryOp::Add, wb, rb)?;
            let bias = self
                .g
                .op(Op::Broadcast(Shape::new([seq * batch, gates])), &[bias])?;
            proj = self.bin(BinaryOp::Add, proj, bias)?;
        }
        let mut proj = self
            .g
            .op(Op::Reshape(Shape::new([seq, batch, gates])), &[proj])?;
        if let (true, Some(l)) = (reverse, lengths) {
            proj = self.permute_steps(proj, seq, gates, l)?;
        }
        let (r_main, r_cand) = if cell == RecurrentCell::Gru {
            let zr = self.g.columns(&r, 0, 2 * h)?;
            (zr, Some(self.g.columns(&r, 2 * h, h)?))
        } else {
            (r, None)
        };
        let peep = match p {
            Some(p) => {
                let mut parts = [x; 3];
                for (k, part) in parts.iter_mut().enumerate() {
                    let pk = self.part(p, &[3 * h], k, h)?;
                    *part = self.g.op(Op::Broadcast(Shape::new([batch, h])), &[pk])?;
                }
                Some(parts)
            }
            None => None,
        };
        let zeros = self.filled(0.0, &[batch, h])?;
        let mut h_prev = h0.unwrap_or(zeros);
        let mut c_prev = c0.unwrap_or(zeros);
        let mut ys = Vec::with_capacity(seq);
        for step in 0..seq {
            let t = if reverse && lengths.is_none() {
                seq - 1 - step
            } else {
                step
            };
            let axes = vec![
                SliceAxis {
                    start: t,
                    len: 1,
                    step: 1,
                },
                SliceAxis::full(batch),
                SliceAxis::full(gates),
            ];
            let xs = self.g.op(Op::Slice(axes), &[proj])?;
            let xs = self.g.op(Op::Reshape(Shape::new([batch, gates])), &[xs])?;
            let hr = self.g.product(h_prev, &r_main)?;
            let (h_new, c_new) = match (cell, &r_cand) {
                (RecurrentCell::Gru, Some(rc)) => {
                    (self.gru_step(&acts, xs, hr, h_prev, rc, rbh)?, None)
                }
                (RecurrentCell::Lstm, _) => {
                    let pre = self.bin(BinaryOp::Add, xs, hr)?;
                    let (hn, cn) = self.lstm_step(&acts, pre, c_prev, peep.as_ref())?;
                    (hn, Some(cn))
                }
                _ => {
                    let pre = self.bin(BinaryOp::Add, xs, hr)?;
                    (self.gate(acts[0], pre)?, None)
                }
            };
            let y = match lengths {
                Some(l) => {
                    let live: Vec<bool> = l.iter().map(|&l| step < l).collect();
                    let m = self
                        .g
                        .constant(TensorData::Bool(live), Shape::new([batch, 1]))?;
                    let m = self.g.op(Op::Broadcast(Shape::new([batch, h])), &[m])?;
                    h_prev = self.g.op(Op::Select, &[m, h_new, h_prev])?;
                    if let Some(cn) = c_new {
                        c_prev = self.g.op(Op::Select, &[m, cn, c_prev])?;
                    }
                    self.g.op(Op::Select, &[m, h_new, zeros])?
                }
                None => {
                    h_prev = h_new;
                    c_prev = c_new.unwrap_or(c_prev);
                    h_new
                }
            };
            ys.push(self.g.op(Op::Reshape(Shape::new([1, batch, h])), &[y])?);
        }
        if reverse && lengths.is_none() {
            ys.reverse();
        }
        let mut y = self.join(&ys, 0)?;
        if let (true, Some(l)) = (reverse, lengths) {
            y = self.permute_steps(y, seq, h, l)?;
        }
        let c = (cell == RecurrentCell::Lstm).then_some(c_prev);
        Ok((y, h_prev, c))
    }

    /// Rows of `v` `[seq, batch, n]` permuted by [`reversal`].
    fn permute_steps(
        &mut self,
        v: Output,
        seq: usize,
        n: usize,
        lengths: &[usize],
    ) -> Result<Output, G::Error> {
        let rows = seq * lengths.len();
        let flat = self.g.op(Op::Reshape(Shape::new([rows, n])), &[v])?;
        let index = self
            .g
            .constant(TensorData::I64(reversal(seq, lengths)), Shape::new([rows]))?;
        let gathered = self.g.op(Op::Gather(0), &[flat, index])?;
        self.g.op(
            Op::Reshape(Shape::new([seq, lengths.len(), n])),
            &[gathered],
        )
    }

    /// One GRU step: `hr` is `H·[Rz Rr]ᵀ`; returns the new `H`.
    fn gru_step(
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
    fn lstm_step(
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

/// The op's unrolled form as a body [`crate::Function`] (named after the op): Parameters
/// `X, W, R, B, sequence_lens, initial_h` (and `initial_c, P`) of `inputs`' types, results
/// `Y, Y_h` (and `Y_c`). `lengths` are the values of `sequence_lens` (the unrolled form
/// needs them at build time; `None`: every entry runs all steps), the parameter being then
/// unused. Autodiff differentiates the op through it.
///
/// # Errors
/// [`crate::IrError`] when `inputs` do not fit the op (as inference says) or `lengths` are
/// out of `1..=seq`.
pub fn decomposition(
    r: &RecurrentSequence,
    inputs: &[crate::TensorType],
    lengths: Option<Vec<usize>>,
) -> Result<crate::Function, crate::IrError> {
    let op = Op::Recurrent(std::sync::Arc::new(r.clone()));
    let invalid = |message: String| crate::IrError::Invalid {
        function: r.type_name().to_string(),
        message,
    };
    crate::infer_output_types(&op, inputs).map_err(invalid)?;
    let mut f = crate::Function::new(r.type_name());
    let names = [
        "X",
        "W",
        "R",
        "B",
        "sequence_lens",
        "initial_h",
        "initial_c",
        "P",
    ];
    let mut params = Vec::with_capacity(inputs.len());
    for (name, t) in names.iter().zip(inputs) {
        let id = f.add_parameter(*name, t.element_type, t.shape.clone())?;
        params.push(Output::from(id));
    }
    let x = &inputs[0];
    let (seq, batch) = r.seq_batch(x.shape.dims()).unwrap_or_default();
    if let Some(l) = &lengths {
        if l.len() != batch || l.iter().any(|&l| l == 0 || l > seq) {
            return Err(invalid(format!(
                "sequence_lens {l:?} must hold one length in 1..={seq} per batch entry"
            )));
        }
    }
    let lstm = r.cell == RecurrentCell::Lstm;
    let operands = UnrollOperands {
        x: params[0],
        element_type: x.element_type,
        extents: (seq, batch, x.shape.dims()[2]),
        b: Some(params[3]),
        lengths: lengths.filter(|l| l.iter().any(|&l| l < seq)),
        initial_h: Some(params[5]),
        initial_c: lstm.then(|| params[6]),
        p: lstm.then(|| params[7]),
    };
    let mut g = Body {
        f: &mut f,
        w: params[1],
        r: params[2],
    };
    let outs = unroll(&mut g, r, &operands)?;
    for o in outs {
        f.add_result(o, None)?;
    }
    Ok(f)
}

/// [`UnrollGraph`] over a body Function with float weights `W`, `R` (Parameters).
struct Body<'a> {
    f: &'a mut crate::Function,
    w: Output,
    r: Output,
}

impl Body<'_> {
    /// Direction `d` of `m` `[dirs, N, K]`, transposed to `[K, N]`.
    fn oriented(&mut self, m: Output, d: usize) -> Result<Output, crate::IrError> {
        let dims = self.f.output_type(m)?.shape.dims().to_vec();
        let mut axes: Vec<SliceAxis> = dims.iter().map(|&n| SliceAxis::full(n)).collect();
        axes[0] = SliceAxis {
            start: d,
            len: 1,
            step: 1,
        };
        let s = self.op(Op::Slice(axes), &[m])?;
        let s = self.op(Op::Reshape(Shape::new(&dims[1..])), &[s])?;
        self.op(Op::Transpose(vec![1, 0]), &[s])
    }
}

impl UnrollGraph for Body<'_> {
    type Error = crate::IrError;
    type Matrix = Output;

    fn op(&mut self, op: Op, inputs: &[Output]) -> Result<Output, crate::IrError> {
        self.f.add_node(op, inputs).map(Output::from)
    }

    fn constant(&mut self, data: TensorData, shape: Shape) -> Result<Output, crate::IrError> {
        self.f.add_constant(data, shape).map(Output::from)
    }

    fn weights(&mut self, d: usize) -> Result<(Output, Output), crate::IrError> {
        let (w, r) = (self.w, self.r);
        Ok((self.oriented(w, d)?, self.oriented(r, d)?))
    }

    fn product(&mut self, a: Output, m: &Output) -> Result<Output, crate::IrError> {
        self.op(Op::MatMul, &[a, *m])
    }

    fn columns(&mut self, m: &Output, start: usize, len: usize) -> Result<Output, crate::IrError> {
        let dims = self.f.output_type(*m)?.shape.dims().to_vec();
        let axes = vec![
            SliceAxis::full(dims[0]),
            SliceAxis {
                start,
                len,
                step: 1,
            },
        ];
        self.op(Op::Slice(axes), &[*m])
    }
}
