//! The native recurrent kernel against the reference (the definition) over random ops:
//! every cell, direction and layout, clip, `input_forget`, `linear_before_reset`, every
//! activation, ragged lengths, hidden sizes from 1 to past four panels of the packed state
//! product, the weights plain and packed, one and two threads.

use graphlift_ir::{
    RecurrentActivation as A, RecurrentCell, RecurrentDirection, RecurrentSequence, Shape,
    TensorData,
};
use graphlift_runtime::{reference, Tensor};
use graphlift_testkit::uniform;
use proptest::prelude::*;

use super::recurrent;
use crate::native::packed::recurrent_weights;
use crate::parallel::{Parallel, ThreadConfig};

const ACTS: [A; 11] = [
    A::Relu,
    A::Tanh,
    A::Sigmoid,
    A::Affine(0.5, 0.1),
    A::LeakyRelu(0.1),
    A::ThresholdedRelu(0.2),
    A::ScaledTanh(0.9, 1.1),
    A::HardSigmoid(0.2, 0.5),
    A::Elu(0.7),
    A::Softsign,
    A::Softplus,
];

/// `(seq, batch, input, h)`.
type Extents = (usize, usize, usize, usize);

fn tensor(dims: &[usize], seed: u32, scale: f32) -> Tensor {
    let n = dims.iter().product();
    let x: Vec<f32> = uniform(n, seed).into_iter().map(|v| v * scale).collect();
    Tensor::from_data(TensorData::F32(x), Shape::new(dims)).unwrap()
}

/// The operands of `r` for `extents`, `lengths` and random data.
fn operands(
    r: &RecurrentSequence,
    (seq, batch, input, h): Extents,
    lengths: &[i64],
) -> Vec<Tensor> {
    let dirs = r.direction.count();
    let g = r.cell.gates() * h;
    let x = if r.batch_major {
        [batch, seq, input]
    } else {
        [seq, batch, input]
    };
    let state = r.state_dims(batch);
    let mut t = vec![
        tensor(&x, 1, 2.0),
        tensor(&[dirs, g, input], 2, 0.8),
        tensor(&[dirs, g, h], 3, 0.8),
        tensor(&[dirs, 2 * g], 4, 0.5),
        Tensor::from_data(TensorData::I64(lengths.to_vec()), Shape::new([batch])).unwrap(),
        tensor(&state, 5, 1.0),
    ];
    if r.cell == RecurrentCell::Lstm {
        t.push(tensor(&state, 6, 1.0));
        t.push(tensor(&[dirs, 3 * h], 7, 0.5));
    }
    t
}

/// Checks the native kernel against the reference, with the weights as plain operands and
/// packed as `prepare` packs constant weights: within `2e-5`, or `1e-4` where an activation
/// is unbounded (`Relu` as a gate lets the state grow step by step, and the `f32` roundings
/// with it: an LSTM of `Relu` and `LeakyRelu` over three steps drifts `2.1e-5`).
fn check(r: &RecurrentSequence, e: Extents, lengths: &[i64], threads: usize) {
    let unbounded = r.activations.iter().any(|a| {
        matches!(
            a,
            A::Relu
                | A::LeakyRelu(_)
                | A::ThresholdedRelu(_)
                | A::Affine(..)
                | A::Elu(_)
                | A::Softplus
        )
    });
    check_within(r, e, lengths, threads, if unbounded { 1e-4 } else { 2e-5 });
}

/// As [`check`], within `tol` relative to `1 + |reference|`.
fn check_within(r: &RecurrentSequence, e: Extents, lengths: &[i64], threads: usize, tol: f64) {
    let ins = operands(r, e, lengths);
    let refs: Vec<&Tensor> = ins.iter().collect();
    let ops: Vec<_> = ins.iter().map(|t| (t.data(), t.shape())).collect();
    let want = reference::recurrent(r, &ops).unwrap();
    let parallel = Parallel::new(ThreadConfig::with_threads(threads));
    let packed = recurrent_weights(r, &ins[1], &ins[2]).expect("the weights pack");
    for packed in [None, Some(&packed)] {
        let got = recurrent(r, &refs, &parallel, packed).expect("the native kernel applies");
        assert_eq!(got.len(), want.len());
        let packed = packed.is_some();
        for (k, (g, (w, shape))) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.shape(), shape, "output {k}");
            for i in 0..w.len() {
                let (g, w) = (g.data().get_f64(i).unwrap(), w.get_f64(i).unwrap());
                assert!(
                    (g - w).abs() <= tol * (1.0 + w.abs()),
                    "{r:?} {e:?} lengths {lengths:?}, {threads} threads, packed {packed}: \
                     output {k}[{i}] {g} vs {w}"
                );
            }
        }
    }
}

/// The cells and directions the property tests draw from, by index.
const CELLS: [RecurrentCell; 3] = [RecurrentCell::Rnn, RecurrentCell::Gru, RecurrentCell::Lstm];
const DIRECTIONS: [RecurrentDirection; 3] = [
    RecurrentDirection::Forward,
    RecurrentDirection::Reverse,
    RecurrentDirection::Bidirectional,
];

fn op_strategy() -> impl Strategy<Value = RecurrentSequence> {
    (
        0..3usize,
        0..3usize,
        any::<bool>(),
        prop::option::of(0.5..3.0f64),
        any::<bool>(),
        prop::collection::vec(0..ACTS.len(), 6),
        1..7usize,
    )
        .prop_map(|(cell, dir, batch_major, clip, flag, acts, h)| {
            let (cell, direction) = (CELLS[cell], DIRECTIONS[dir]);
            let n = cell.activations_per_direction() * direction.count();
            RecurrentSequence {
                cell,
                direction,
                hidden_size: h,
                activations: acts[..n].iter().map(|&a| ACTS[a]).collect(),
                clip,
                input_forget: flag && cell == RecurrentCell::Lstm,
                linear_before_reset: flag && cell == RecurrentCell::Gru,
                batch_major,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn native_recurrent_matches_the_reference(
        r in op_strategy(),
        (seq, batch, input) in (1..5usize, 1..4usize, 1..6usize),
        lens in prop::collection::vec(0.0..1.0f64, 3),
        threads in 1..3usize,
    ) {
        let lengths: Vec<i64> = lens[..batch]
            .iter()
            .map(|&u| 1 + (u * seq as f64) as i64 % seq as i64)
            .collect();
        check(&r, (seq, batch, input, r.hidden_size), &lengths, threads);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Hidden sizes from 7 to 69 (one to six panels of the packed state product, with
    /// tails) under the default activations, which keep the state bounded, so the sums'
    /// rounding (`f32`, longer dot products) stays small.
    #[test]
    fn wide_recurrent_matches_the_reference(
        (cell, dir, flag, batch_major) in (0..3usize, 0..3usize, any::<bool>(), any::<bool>()),
        h in 7..70usize,
        (seq, batch, input) in (1..5usize, 1..3usize, 1..40usize),
        threads in 1..3usize,
    ) {
        let (cell, direction) = (CELLS[cell], DIRECTIONS[dir]);
        let per: &[A] = match cell {
            RecurrentCell::Rnn => &[A::Tanh],
            RecurrentCell::Gru => &[A::Sigmoid, A::Tanh],
            RecurrentCell::Lstm => &[A::Sigmoid, A::Tanh, A::Tanh],
        };
        let r = RecurrentSequence {
            cell,
            direction,
            hidden_size: h,
            activations: per.repeat(direction.count()),
            clip: None,
            input_forget: flag && cell == RecurrentCell::Lstm,
            linear_before_reset: flag && cell == RecurrentCell::Gru,
            batch_major,
        };
        let lengths = vec![seq as i64; batch];
        check_within(&r, (seq, batch, input, h), &lengths, threads, 1e-4);
    }
}

/// The common exported shape: PyTorch's GRU (linear_before_reset, bidirectional) and LSTM
/// at a width with whole 16-lane strips and a tail.
#[test]
fn wide_gru_and_lstm_match_the_reference() {
    for cell in [RecurrentCell::Gru, RecurrentCell::Lstm] {
        let acts = if cell == RecurrentCell::Gru {
            vec![A::Sigmoid, A::Tanh, A::Sigmoid, A::Tanh]
        } else {
            vec![A::Sigmoid, A::Tanh, A::Tanh, A::Sigmoid, A::Tanh, A::Tanh]
        };
        let r = RecurrentSequence {
            cell,
            direction: RecurrentDirection::Bidirectional,
            hidden_size: 37,
            activations: acts,
            clip: None,
            input_forget: false,
            linear_before_reset: cell == RecurrentCell::Gru,
            batch_major: false,
        };
        for threads in [1, 2] {
            check(&r, (9, 2, 20, 37), &[9, 4], threads);
        }
    }
}

/// Lengths out of range and other element types are left to the reference (which names the
/// error) rather than run.
#[test]
fn out_of_range_lengths_fall_back_to_the_reference() {
    let r = RecurrentSequence {
        cell: RecurrentCell::Rnn,
        direction: RecurrentDirection::Forward,
        hidden_size: 2,
        activations: vec![A::Tanh],
        clip: None,
        input_forget: false,
        linear_before_reset: false,
        batch_major: false,
    };
    let parallel = Parallel::new(ThreadConfig::with_threads(1));
    for bad in [0, 4] {
        let ins = operands(&r, (3, 1, 2, 2), &[bad]);
        let refs: Vec<&Tensor> = ins.iter().collect();
        assert!(recurrent(&r, &refs, &parallel, None).is_none());
        let ops: Vec<_> = ins.iter().map(|t| (t.data(), t.shape())).collect();
        let e = reference::recurrent(&r, &ops).unwrap_err();
        assert!(e.contains("sequence_lens"), "{e}");
    }
}
