//! Derivatives through the recurrent sequence ops (issue 25): `RNNSequence`,
//! `GRUSequence` and `LSTMSequence` differentiate through their unrolled form
//! (`graphlift::ir::unroll`), checked against central finite differences of the op itself in
//! f64 on both backends, for every operand (data, weights, biases, initial states,
//! peepholes), both directions, both layouts and ragged lengths; a run-time
//! `sequence_lens` is a named error.

#[path = "support/gradient_check.rs"]
mod gradient_check;
use gradient_check::{check, weighted_sum, Input};

use graphlift::ir::{
    Output, RecurrentActivation as A, RecurrentCell, RecurrentDirection, RecurrentSequence,
};
use graphlift::{ElementType, FunctionBuilder, IrError, Op, Shape, TensorData, Value};

fn input(k: usize, dims: &[usize]) -> Input {
    let n = dims.iter().product();
    let v = (0..n)
        .map(|i| ((k * 7919 + i * 104_729 + 13) % 1000) as f64 / 1000.0 - 0.5)
        .collect();
    (dims.to_vec(), v)
}

/// The op's operands for `seq`, `batch`, `input` (the lengths are a constant in the graph).
fn operands(r: &RecurrentSequence, seq: usize, batch: usize, width: usize) -> Vec<Input> {
    let (dirs, h) = (r.direction.count(), r.hidden_size);
    let g = r.cell.gates() * h;
    let x = if r.batch_major {
        [batch, seq, width]
    } else {
        [seq, batch, width]
    };
    let state = r.state_dims(batch);
    let mut ins = vec![
        input(0, &x),
        input(1, &[dirs, g, width]),
        input(2, &[dirs, g, h]),
        input(3, &[dirs, 2 * g]),
        input(4, &state),
    ];
    if r.cell == RecurrentCell::Lstm {
        ins.push(input(5, &state));
        ins.push(input(6, &[dirs, 3 * h]));
    }
    ins
}

/// `weighted(Y) + weighted(Y_h) (+ weighted(Y_c))` of `r` on `ps` with `lengths`.
fn outputs<'b>(
    b: &'b FunctionBuilder,
    r: &RecurrentSequence,
    ps: &[Value<'b>],
    lengths: &[i64],
) -> Value<'b> {
    let lens = b.constant(
        TensorData::I64(lengths.to_vec()),
        Shape::new([lengths.len()]),
    );
    let mut args = ps[..4].to_vec();
    args.push(lens);
    args.extend_from_slice(&ps[4..]);
    let y = b.op(Op::Recurrent(r.clone().into()), &args);
    let node = y.output().expect("the op builds").node;
    let mut c = weighted_sum(b, y);
    for k in 1..r.cell.outputs() {
        c = c + weighted_sum(b, b.value_of(Output::new(node, k)));
    }
    c
}

fn op(cell: RecurrentCell, direction: RecurrentDirection, acts: &[A]) -> RecurrentSequence {
    let acts = std::iter::repeat_n(acts, direction.count())
        .flatten()
        .copied()
        .collect();
    RecurrentSequence {
        cell,
        direction,
        hidden_size: 3,
        activations: acts,
        clip: None,
        input_forget: false,
        linear_before_reset: false,
        batch_major: false,
    }
}

#[test]
fn rnn_gru_and_lstm_gradients_match_finite_differences() {
    let mut cases = vec![
        op(RecurrentCell::Rnn, RecurrentDirection::Reverse, &[A::Tanh]),
        op(
            RecurrentCell::Gru,
            RecurrentDirection::Bidirectional,
            &[A::Sigmoid, A::Tanh],
        ),
        op(
            RecurrentCell::Lstm,
            RecurrentDirection::Forward,
            &[A::Sigmoid, A::Tanh, A::Softsign],
        ),
    ];
    let mut gru_lbr = cases[1].clone();
    gru_lbr.linear_before_reset = true;
    gru_lbr.batch_major = true;
    cases.push(gru_lbr);
    let mut lstm_bi = op(
        RecurrentCell::Lstm,
        RecurrentDirection::Bidirectional,
        &[A::Sigmoid, A::Tanh, A::Tanh],
    );
    lstm_bi.input_forget = true;
    cases.push(lstm_bi);
    for r in &cases {
        for lengths in [[3, 3], [3, 1]] {
            let name = format!("{}_{:?}_{lengths:?}", r.type_name(), r.direction);
            check(&name, &operands(r, 3, 2, 2), |b, ps| {
                outputs(b, r, ps, &lengths)
            });
        }
    }
}

#[test]
fn run_time_sequence_lens_have_no_adjoint() {
    let r = op(RecurrentCell::Rnn, RecurrentDirection::Forward, &[A::Tanh]);
    let b = FunctionBuilder::new("rnn");
    let ps: Vec<Value> = operands(&r, 2, 1, 2)
        .iter()
        .enumerate()
        .map(|(k, (d, _))| b.parameter(&format!("x{k}"), ElementType::F64, d.clone()))
        .collect();
    let lens = b.parameter("lens", ElementType::I64, [1]);
    let y = b.op(
        Op::Recurrent(r.into()),
        &[ps[0], ps[1], ps[2], ps[3], lens, ps[4]],
    );
    let c = gradient_check::sum_all(y);
    let d = b.deriv(c, ps[1]);
    let e = b.finish(&[d]).unwrap_err();
    assert!(
        matches!(&e, IrError::Derivative { message, .. } if message.contains("RNNSequence") && message.contains("sequence_lens")),
        "{e}"
    );
}
