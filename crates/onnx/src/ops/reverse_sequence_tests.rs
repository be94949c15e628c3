//! `ReverseSequence`: both axis orders, lengths given at run time (clamped when out of
//! range), an inner feature axis, on both backends; named errors.

use graphlift_ir::TensorData;

use super::one_node::{model, run_both, tensor, values, Operand::*};
use crate::proto::data_type::{FLOAT, INT64};
use crate::tests::{attr_i, err};

#[test]
fn each_batch_entry_reverses_its_own_prefix() {
    // x [T = 4, B = 3, F = 2] with x[t, b, f] = 10 t + b + 0.5 f; lengths 4, 1, 2.
    let x: Vec<f64> = (0..24)
        .map(|i| (10 * (i / 6) + (i / 2) % 3) as f64 + 0.5 * (i % 2) as f64)
        .collect();
    let m = model(
        "ReverseSequence",
        10,
        vec![Input("x", FLOAT, &[4, 3, 2]), Input("lens", INT64, &[3])],
        &["y"],
        vec![],
    );
    let lens = |v: Vec<i64>| tensor(TensorData::I64(v), &[3]);
    let xs = || {
        tensor(
            TensorData::F32(x.iter().map(|&v| v as f32).collect()),
            &[4, 3, 2],
        )
    };
    let y = values(&run_both(&m, &[xs(), lens(vec![4, 1, 2])])[0]);
    // The time index each output position reads, per batch entry.
    let read = [[3, 2, 1, 0], [0, 1, 2, 3], [1, 0, 2, 3]];
    for t in 0..4 {
        for b in 0..3 {
            for f in 0..2 {
                let want = x[(read[b][t] * 3 + b) * 2 + f];
                assert_eq!(y[(t * 3 + b) * 2 + f], want, "t {t} b {b} f {f}");
            }
        }
    }
    // Lengths beyond the time axis (or below 0) are clamped: all reversed, none.
    let y = values(&run_both(&m, &[xs(), lens(vec![9, -1, 0])])[0]);
    assert_eq!(y[0], x[18], "b 0 reversed in full");
    assert_eq!(y[2], x[2], "b 1 as it is");
    // Batch first: x [B = 2, T = 3].
    let m = model(
        "ReverseSequence",
        10,
        vec![Input("x", FLOAT, &[2, 3]), Input("lens", INT64, &[2])],
        &["y"],
        vec![attr_i("batch_axis", 0), attr_i("time_axis", 1)],
    );
    let x2 = tensor(TensorData::F32(vec![1., 2., 3., 4., 5., 6.]), &[2, 3]);
    let y = values(&run_both(&m, &[x2, tensor(TensorData::I64(vec![2, 3]), &[2])])[0]);
    assert_eq!(y, [2., 1., 3., 6., 5., 4.]);
}

#[test]
fn bad_axes_and_lengths_are_errors_naming_the_node() {
    let bad_axes = model(
        "ReverseSequence",
        10,
        vec![Input("x", FLOAT, &[2, 3]), Input("lens", INT64, &[3])],
        &["y"],
        vec![attr_i("batch_axis", 1), attr_i("time_axis", 1)],
    );
    let e = err(&bad_axes).to_string();
    assert!(
        e.contains("ReverseSequence `n0`") && e.contains("batch_axis"),
        "{e}"
    );
    let short = model(
        "ReverseSequence",
        10,
        vec![Input("x", FLOAT, &[2, 3]), Input("lens", INT64, &[2])],
        &["y"],
        vec![],
    );
    let e = err(&short).to_string();
    assert!(
        e.contains("ReverseSequence `n0`") && e.contains("sequence_lens"),
        "{e}"
    );
}
