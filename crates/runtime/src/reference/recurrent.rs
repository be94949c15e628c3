//! The recurrent sequence ops (`Op::Recurrent`: `RNNSequence`, `GRUSequence`,
//! `LSTMSequence`), the definition: the ONNX equations step by step for each direction and
//! batch entry, in `f64`, each output rounded once (see `graphlift_ir::Op::Recurrent`).

use graphlift_ir::{
    infer_output_types, Op, RecurrentActivation, RecurrentCell, RecurrentSequence, Shape,
    TensorData, TensorType,
};

use super::attention::Operand;
use super::widen::{float_operand, integers, narrow};

/// Where the elements of `X`, the states and `Y` lie in the op's layout (0 or 1), for
/// `seq`, `batch`, `dirs` and a row width: the flat index of the row's first element.
#[derive(Debug, Clone, Copy)]
pub struct RecurrentLayout {
    /// Steps.
    pub seq: usize,
    /// Batch entries.
    pub batch: usize,
    /// Directions.
    pub dirs: usize,
    /// Layout 1 (`[batch, seq, ..]`).
    pub batch_major: bool,
}

impl RecurrentLayout {
    /// Row `(t, b)` of `X` (`[seq, batch, ·]` or `[batch, seq, ·]`).
    pub fn x_row(&self, t: usize, b: usize) -> usize {
        if self.batch_major {
            b * self.seq + t
        } else {
            t * self.batch + b
        }
    }

    /// Row `(d, b)` of a state (`[dirs, batch, h]` or `[batch, dirs, h]`).
    pub fn state_row(&self, d: usize, b: usize) -> usize {
        if self.batch_major {
            b * self.dirs + d
        } else {
            d * self.batch + b
        }
    }

    /// Row `(t, d, b)` of `Y` (`[seq, dirs, batch, h]` or `[batch, seq, dirs, h]`).
    pub fn y_row(&self, t: usize, d: usize, b: usize) -> usize {
        if self.batch_major {
            (b * self.seq + t) * self.dirs + d
        } else {
            (t * self.dirs + d) * self.batch + b
        }
    }
}

/// Checks the operands against the op (as inference does) and reads `sequence_lens`:
/// the layout, the output types and each entry's length.
///
/// # Errors
/// A message when the operands' types do not fit the op, or a length is outside `1..=seq`.
pub fn recurrent_operands(
    r: &RecurrentSequence,
    inputs: &[Operand<'_>],
) -> Result<(RecurrentLayout, Vec<TensorType>, Vec<usize>), String> {
    let types: Vec<TensorType> = inputs
        .iter()
        .map(|(d, s)| TensorType::new(d.element_type(), (*s).clone()))
        .collect();
    let outs = infer_output_types(&Op::Recurrent(r.clone().into()), &types)?.to_vec();
    let x = inputs[0].1.dims();
    let (seq, batch) = r.seq_batch(x).ok_or("X must have rank 3")?;
    let lens = integers(inputs[4].0).ok_or("sequence_lens must be integers")?;
    if lens.len() != batch {
        return Err(format!(
            "sequence_lens has {} values for {batch} entries",
            lens.len()
        ));
    }
    let lengths = lens
        .iter()
        .map(|&l| usize::try_from(l).ok().filter(|&l| (1..=seq).contains(&l)))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| {
            format!("sequence_lens {lens:?} must hold one length in 1..={seq} per batch entry")
        })?;
    let layout = RecurrentLayout {
        seq,
        batch,
        dirs: r.direction.count(),
        batch_major: r.batch_major,
    };
    Ok((layout, outs, lengths))
}

/// `act(clip(x))`.
fn gate(r: &RecurrentSequence, act: RecurrentActivation, x: f64) -> f64 {
    let x = match r.clip {
        Some(c) => x.clamp(-c, c),
        None => x,
    };
    act.apply(x)
}

/// `Y`, `Y_h` and (LSTM) `Y_c` of the recurrent op `r` on its operands (see
/// `graphlift_ir::Op::Recurrent`), with their shapes.
///
/// # Errors
/// As [`recurrent_operands`].
pub fn recurrent(
    r: &RecurrentSequence,
    inputs: &[Operand<'_>],
) -> Result<Vec<(TensorData, Shape)>, String> {
    let (l, outs, lengths) = recurrent_operands(r, inputs)?;
    let names = ["X", "W", "R", "B", "", "initial_h", "initial_c", "P"];
    let mut v: Vec<Vec<f64>> = Vec::with_capacity(inputs.len());
    for (k, (d, s)) in inputs.iter().enumerate() {
        v.push(if k == 4 {
            Vec::new()
        } else {
            float_operand(d, s, names[k])?
        });
    }
    let input = inputs[0].1.dims()[2];
    let h = r.hidden_size;
    let gates = r.cell.gates() * h;
    let lstm = r.cell == RecurrentCell::Lstm;
    let mut y = vec![0f64; l.seq * l.dirs * l.batch * h];
    let mut yh = vec![0f64; l.dirs * l.batch * h];
    let mut yc = vec![0f64; if lstm { yh.len() } else { 0 }];
    for d in 0..l.dirs {
        let (w, rw) = (&v[1][d * gates * input..], &v[2][d * gates * h..]);
        let bias = &v[3][d * 2 * gates..(d + 1) * 2 * gates];
        let (wb, rb) = bias.split_at(gates);
        let acts = r.activations_of(d);
        for (b, &len) in lengths.iter().enumerate() {
            let row = l.state_row(d, b) * h;
            let mut hs = v[5][row..row + h].to_vec();
            let mut cs = if lstm {
                v[6][row..row + h].to_vec()
            } else {
                Vec::new()
            };
            for s in 0..len {
                let t = if r.direction.is_reverse(d) {
                    len - 1 - s
                } else {
                    s
                };
                let xt = &v[0][l.x_row(t, b) * input..][..input];
                // Xt·Wᵀ + Wb and Ht-1·Rᵀ + Rb, per gate row k.
                let xw: Vec<f64> = (0..gates)
                    .map(|k| dot(xt, &w[k * input..][..input]) + wb[k])
                    .collect();
                let hr: Vec<f64> = (0..gates)
                    .map(|k| dot(&hs, &rw[k * h..][..h]) + rb[k])
                    .collect();
                match r.cell {
                    RecurrentCell::Rnn => {
                        for j in 0..h {
                            hs[j] = gate(r, acts[0], xw[j] + hr[j]);
                        }
                    }
                    RecurrentCell::Gru => {
                        let z: Vec<f64> = (0..h).map(|j| gate(r, acts[0], xw[j] + hr[j])).collect();
                        let rr: Vec<f64> = (0..h)
                            .map(|j| gate(r, acts[0], xw[h + j] + hr[h + j]))
                            .collect();
                        let rh: Vec<f64> = (0..h).map(|j| rr[j] * hs[j]).collect();
                        let next: Vec<f64> = (0..h)
                            .map(|j| {
                                let k = 2 * h + j;
                                let cand = if r.linear_before_reset {
                                    rr[j] * hr[k]
                                } else {
                                    dot(&rh, &rw[k * h..][..h]) + rb[k]
                                };
                                let ht = gate(r, acts[1], xw[k] + cand);
                                (1.0 - z[j]) * ht + z[j] * hs[j]
                            })
                            .collect();
                        hs = next;
                    }
                    RecurrentCell::Lstm => {
                        let p = &v[7][d * 3 * h..(d + 1) * 3 * h];
                        for j in 0..h {
                            let pre = |g: usize| xw[g * h + j] + hr[g * h + j];
                            let i = gate(r, acts[0], pre(0) + p[j] * cs[j]);
                            let f = if r.input_forget {
                                1.0 - i
                            } else {
                                gate(r, acts[0], pre(2) + p[2 * h + j] * cs[j])
                            };
                            let c = f * cs[j] + i * gate(r, acts[1], pre(3));
                            let o = gate(r, acts[0], pre(1) + p[h + j] * c);
                            cs[j] = c;
                            hs[j] = o * acts[2].apply(c);
                        }
                    }
                }
                y[l.y_row(t, d, b) * h..][..h].copy_from_slice(&hs);
            }
            yh[row..row + h].copy_from_slice(&hs);
            if lstm {
                yc[row..row + h].copy_from_slice(&cs);
            }
        }
    }
    let et = inputs[0].0.element_type();
    let mut results = vec![(narrow(et, y), outs[0].shape.clone())];
    results.push((narrow(et, yh), outs[1].shape.clone()));
    if lstm {
        results.push((narrow(et, yc), outs[2].shape.clone()));
    }
    Ok(results)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
