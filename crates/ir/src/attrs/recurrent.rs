//! The attributes of the recurrent sequence ops ([`crate::Op::Recurrent`]: nGraph's and
//! OpenVINO's `RNNSequence`, `GRUSequence`, `LSTMSequence`; ONNX `RNN`, `GRU`, `LSTM`): the
//! cell, direction, activations, clip and layout of one whole recurrence, so a backend can
//! run it as one kernel instead of one node per time step.

use serde::{Deserialize, Serialize};

/// Which recurrent cell, with its gates stacked in `W`, `R` and `B` in ONNX's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RecurrentCell {
    /// `Ht = f(Xt·Wᵀ + Ht-1·Rᵀ + Wb + Rb)`: one gate.
    Rnn,
    /// Gates `z`, `r`, `h` (update, reset, candidate).
    Gru,
    /// Gates `i`, `o`, `f`, `c` (input, output, forget, cell candidate).
    Lstm,
}

impl RecurrentCell {
    /// The number of gates `G` stacked in `W` `[dirs, G·h, input]` and `R` `[dirs, G·h, h]`.
    pub fn gates(self) -> usize {
        match self {
            RecurrentCell::Rnn => 1,
            RecurrentCell::Gru => 3,
            RecurrentCell::Lstm => 4,
        }
    }

    /// The activations one direction takes (`f` for RNN; `f, g` for GRU; `f, g, h` for LSTM).
    pub fn activations_per_direction(self) -> usize {
        match self {
            RecurrentCell::Rnn => 1,
            RecurrentCell::Gru => 2,
            RecurrentCell::Lstm => 3,
        }
    }

    /// The op's inputs: `X, W, R, B, sequence_lens, initial_h`, and for LSTM `initial_c, P`.
    pub fn inputs(self) -> usize {
        if self == RecurrentCell::Lstm {
            8
        } else {
            6
        }
    }

    /// The op's outputs: `Y, Y_h`, and for LSTM `Y_c`.
    pub fn outputs(self) -> usize {
        if self == RecurrentCell::Lstm {
            3
        } else {
            2
        }
    }
}

/// Which way the recurrence runs over the sequence (ONNX `direction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RecurrentDirection {
    /// From step 0 up.
    Forward,
    /// From each batch entry's last step down.
    Reverse,
    /// Both, forward first (`dirs = 2`).
    Bidirectional,
}

impl RecurrentDirection {
    /// The number of directions `dirs` (1 or 2).
    pub fn count(self) -> usize {
        if self == RecurrentDirection::Bidirectional {
            2
        } else {
            1
        }
    }

    /// Whether direction `d` (`0..count()`) runs backwards in time.
    pub fn is_reverse(self, d: usize) -> bool {
        self == RecurrentDirection::Reverse || d == 1
    }
}

/// An activation function of the recurrent ops with its `alpha` and `beta` (ONNX's list,
/// the spec's defaults filled in by the importer).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum RecurrentActivation {
    /// `max(x, 0)`.
    Relu,
    /// `tanh(x)`.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `alpha · x + beta`.
    Affine(f64, f64),
    /// `x` for `x >= 0`, else `alpha · x`.
    LeakyRelu(f64),
    /// `x` for `x > alpha`, else 0.
    ThresholdedRelu(f64),
    /// `alpha · tanh(beta · x)`.
    ScaledTanh(f64, f64),
    /// `clamp(alpha · x + beta, 0, 1)`.
    HardSigmoid(f64, f64),
    /// `x` for `x >= 0`, else `alpha · (e^x - 1)`.
    Elu(f64),
    /// `x / (1 + |x|)`.
    Softsign,
    /// `ln(1 + e^x)`.
    Softplus,
}

impl RecurrentActivation {
    /// The function at `x`, in `f64` (the definition the reference kernel uses).
    pub fn apply(self, x: f64) -> f64 {
        use RecurrentActivation as A;
        match self {
            A::Relu => {
                if x < 0.0 {
                    0.0
                } else {
                    x
                }
            }
            A::Tanh => x.tanh(),
            A::Sigmoid => {
                if x >= 0.0 {
                    1.0 / (1.0 + (-x).exp())
                } else {
                    let e = x.exp();
                    e / (1.0 + e)
                }
            }
            A::Affine(a, b) => a * x + b,
            A::LeakyRelu(a) => {
                if x >= 0.0 {
                    x
                } else {
                    a * x
                }
            }
            A::ThresholdedRelu(a) => {
                if x > a {
                    x
                } else {
                    0.0
                }
            }
            A::ScaledTanh(a, b) => a * (b * x).tanh(),
            A::HardSigmoid(a, b) => (a * x + b).clamp(0.0, 1.0),
            A::Elu(a) => {
                if x >= 0.0 {
                    x
                } else {
                    a * x.exp_m1()
                }
            }
            A::Softsign => x / (1.0 + x.abs()),
            A::Softplus => {
                // ln(1 + e^x) without overflow: x + ln(1 + e^-x) for large x.
                if x > 0.0 {
                    x + (-x).exp().ln_1p()
                } else {
                    x.exp().ln_1p()
                }
            }
        }
    }

    /// Its alpha and beta are finite (an attribute check).
    fn is_finite(self) -> bool {
        use RecurrentActivation as A;
        match self {
            A::Affine(a, b) | A::ScaledTanh(a, b) | A::HardSigmoid(a, b) => {
                a.is_finite() && b.is_finite()
            }
            A::LeakyRelu(a) | A::ThresholdedRelu(a) | A::Elu(a) => a.is_finite(),
            _ => true,
        }
    }
}

/// A whole recurrence over a sequence (see [`crate::Op::Recurrent`] for the operands and the
/// equations; ONNX `RNN`/`GRU`/`LSTM` opset 14, the attributes normalised).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecurrentSequence {
    /// The cell.
    pub cell: RecurrentCell,
    /// Forward, reverse or both.
    pub direction: RecurrentDirection,
    /// `h`, the width of the hidden state (`>= 1`).
    pub hidden_size: usize,
    /// [`RecurrentCell::activations_per_direction`] functions for each direction, the
    /// forward direction's first (ONNX `activations`: `f, g, h` per direction).
    pub activations: Vec<RecurrentActivation>,
    /// When set (finite, `> 0`), every gate's pre-activation is clamped to `[-clip, clip]`
    /// before its activation (not the `h(Ct)` of LSTM), as onnxruntime does.
    pub clip: Option<f64>,
    /// LSTM only: the forget gate is `1 - i` (ONNX `input_forget`).
    pub input_forget: bool,
    /// GRU only: the reset gate multiplies `Ht-1·Rhᵀ + Rbh` instead of `Ht-1` (ONNX
    /// `linear_before_reset`).
    pub linear_before_reset: bool,
    /// `false`: ONNX layout 0, `X` `[seq, batch, input]`, `Y` `[seq, dirs, batch, h]`, states
    /// `[dirs, batch, h]`; `true`: layout 1, `X` `[batch, seq, input]`, `Y`
    /// `[batch, seq, dirs, h]`, states `[batch, dirs, h]`.
    pub batch_major: bool,
}

impl RecurrentSequence {
    /// The operands' names, in operand order (ONNX's input names; an LSTM has all eight, the
    /// other cells the first six).
    pub const OPERANDS: [&'static str; 8] = [
        "X",
        "W",
        "R",
        "B",
        "sequence_lens",
        "initial_h",
        "initial_c",
        "P",
    ];

    /// The nGraph/OpenVINO name of the op: `RNNSequence`, `GRUSequence` or `LSTMSequence`.
    pub fn type_name(&self) -> &'static str {
        match self.cell {
            RecurrentCell::Rnn => "RNNSequence",
            RecurrentCell::Gru => "GRUSequence",
            RecurrentCell::Lstm => "LSTMSequence",
        }
    }

    /// Direction `d`'s activations.
    pub fn activations_of(&self, d: usize) -> &[RecurrentActivation] {
        let per = self.cell.activations_per_direction();
        self.activations.get(d * per..(d + 1) * per).unwrap_or(&[])
    }

    /// `(seq, batch)` of an `X` of extents `x` (`[seq, batch, input]`, or
    /// `[batch, seq, input]` when batch-major); `None` unless `x` has rank 3.
    pub fn seq_batch(&self, x: &[usize]) -> Option<(usize, usize)> {
        match *x {
            [a, b, _] if self.batch_major => Some((b, a)),
            [a, b, _] => Some((a, b)),
            _ => None,
        }
    }

    /// The extents of a state (`initial_h`, `Y_h`, ...) for `batch`.
    pub fn state_dims(&self, batch: usize) -> [usize; 3] {
        let (dirs, h) = (self.direction.count(), self.hidden_size);
        if self.batch_major {
            [batch, dirs, h]
        } else {
            [dirs, batch, h]
        }
    }

    /// The extents of `Y` for `seq` and `batch`.
    pub fn y_dims(&self, seq: usize, batch: usize) -> [usize; 4] {
        let (dirs, h) = (self.direction.count(), self.hidden_size);
        if self.batch_major {
            [batch, seq, dirs, h]
        } else {
            [seq, dirs, batch, h]
        }
    }

    /// Checks the attributes on their own.
    ///
    /// # Errors
    /// A message naming the attribute that is out of range.
    pub fn check(&self) -> Result<(), String> {
        if self.hidden_size == 0 {
            return Err("hidden_size must be at least 1".into());
        }
        let want = self.cell.activations_per_direction() * self.direction.count();
        if self.activations.len() != want {
            return Err(format!(
                "takes {want} activations, has {}",
                self.activations.len()
            ));
        }
        if let Some(a) = self.activations.iter().find(|a| !a.is_finite()) {
            return Err(format!(
                "activation {a:?} has a parameter that is not finite"
            ));
        }
        if let Some(c) = self.clip {
            if !(c.is_finite() && c > 0.0) {
                return Err(format!("clip must be finite and positive, is {c}"));
            }
        }
        if self.input_forget && self.cell != RecurrentCell::Lstm {
            return Err("input_forget is an LSTM attribute".into());
        }
        if self.linear_before_reset && self.cell != RecurrentCell::Gru {
            return Err("linear_before_reset is a GRU attribute".into());
        }
        Ok(())
    }
}
