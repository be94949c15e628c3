//! The unrolled form of a recurrent sequence op ([`crate::Op::Recurrent`]): per direction the
//! input projection of all steps as one product, then per time step a slice, the recurrent
//! product and the gate maths as plain elementwise ops. It means what the op means, in ops
//! that have adjoints, so autodiff differentiates a recurrent op through it, and the ONNX
//! importer builds `DynamicQuantizeLSTM` (whose products are quantized) with it. One
//! decomposition, written against [`UnrollGraph`] so each caller adds nodes its own way.

use crate::{
    BinaryOp, ElementType, Op, Output, RecurrentCell, RecurrentSequence, Shape, SliceAxis,
    TensorData, UnaryOp,
};

mod body;
mod cells;

pub use body::decomposition;

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
}
