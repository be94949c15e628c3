//! Unit tests of the recurrent importers (`RNN`, `GRU`, `LSTM`): hand-computed one-unit
//! cases on the reference interpreter, and clear errors for bad nodes.

use prost::Message;

use super::tests::{floats_init, ints_init, x};
use crate::proto::*;
use crate::tests::{attr_i, attr_s, err, f32s, model_opset, node, run, vi};
use crate::OnnxError;
use graphlift_ir::{Shape, TensorData};
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};

/// A one-node model of `op` on FLOAT `x` `[seq, batch, 1]` with `inputs` after `x` from
/// initializers, giving `outputs`.
fn recurrent(
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
    x_dims: &[i64],
    inits: Vec<TensorProto>,
) -> ModelProto {
    let mut m = model_opset(
        vec![node(op, "cell", inputs, outputs, attrs)],
        vec![vi("x", data_type::FLOAT, x_dims)],
        vec![],
        14,
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer = inits;
        g.output = outputs
            .iter()
            .filter(|o| !o.is_empty())
            .map(|o| ValueInfoProto {
                name: o.to_string(),
                ..Default::default()
            })
            .collect();
    }
    m
}

fn close(got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((f64::from(*g) - w).abs() < 1e-6, "{got:?} vs {want:?}");
    }
}

/// RNN with W = R = 0.5, Wb = 0.1, Rb = 0.2: `h = tanh(0.5 x + 0.5 h + 0.3)`.
fn rnn_inits() -> Vec<TensorProto> {
    vec![
        floats_init("w", &[0.5], &[1, 1, 1]),
        floats_init("r", &[0.5], &[1, 1, 1]),
        floats_init("b", &[0.1, 0.2], &[1, 2]),
    ]
}

#[test]
fn rnn_forward_reverse_and_ragged_reverse() {
    let fwd = recurrent(
        "RNN",
        &["x", "w", "r", "b"],
        &["y", "y_h"],
        vec![attr_i("hidden_size", 1)],
        &[2, 1, 1],
        rnn_inits(),
    );
    let out = run(&fwd, vec![x(&[1., 2.], &[2, 1, 1])]);
    close(
        &f32s(&out[0]),
        &[0.664_036_770_267_849_1, 0.926_348_482_876_311_9],
    );
    close(&f32s(&out[1]), &[0.926_348_482_876_311_9]);
    assert_eq!(out[0].shape().dims(), [2, 1, 1, 1]);
    let rev = recurrent(
        "RNN",
        &["x", "w", "r", "b"],
        &["y", "y_h"],
        vec![attr_s("direction", "reverse")],
        &[2, 1, 1],
        rnn_inits(),
    );
    let out = run(&rev, vec![x(&[1., 2.], &[2, 1, 1])]);
    close(
        &f32s(&out[0]),
        &[0.842_829_054_171_032_8, 0.861_723_159_313_306_3],
    );
    close(&f32s(&out[1]), &[0.842_829_054_171_032_8]);
    // Batch entry 1 has length 1: its step 0 alone, zeros after, the state held.
    let mut inits = rnn_inits();
    inits.push(crate::tensor_to_proto(
        "lens",
        &graphlift_ir::TensorData::I32(vec![2, 1]),
        &graphlift_ir::Shape::new([2]),
    ));
    let ragged = recurrent(
        "RNN",
        &["x", "w", "r", "b", "lens"],
        &["y", "y_h"],
        vec![attr_s("direction", "reverse")],
        &[2, 2, 1],
        inits,
    );
    let out = run(&ragged, vec![x(&[1., 3., 2., 4.], &[2, 2, 1])]);
    close(
        &f32s(&out[0]),
        &[
            0.842_829_054_171_032_8,
            0.946_806_012_846_268_3,
            0.861_723_159_313_306_3,
            0.0,
        ],
    );
    close(
        &f32s(&out[1]),
        &[0.842_829_054_171_032_8, 0.946_806_012_846_268_3],
    );
}

#[test]
fn gru_linear_before_reset_moves_the_reset() {
    // W (z r h) = 0.5 -0.5 1, R = 0.2 0.3 0.4, Rbh = 0.3, initial h 0.5, x = 1.
    for (lbr, want) in [(0, 0.635_199_548_694_254_1), (1, 0.618_947_582_310_109_5)] {
        let m = recurrent(
            "GRU",
            &["x", "w", "r", "b", "", "h0"],
            &["", "y_h"],
            vec![attr_i("linear_before_reset", lbr)],
            &[1, 1, 1],
            vec![
                floats_init("w", &[0.5, -0.5, 1.0], &[1, 3, 1]),
                floats_init("r", &[0.2, 0.3, 0.4], &[1, 3, 1]),
                floats_init("b", &[0., 0., 0., 0., 0., 0.3], &[1, 6]),
                floats_init("h0", &[0.5], &[1, 1, 1]),
            ],
        );
        close(&f32s(&run(&m, vec![x(&[1.], &[1, 1, 1])])[0]), &[want]);
    }
}

#[test]
fn lstm_with_peepholes_and_initial_state() {
    // W (i o f c) = 0.5 0.6 0.7 0.8, R = 0.1 0.2 0.3 0.4, P (i o f) = 0.1 0.2 0.3.
    let m = recurrent(
        "LSTM",
        &["x", "w", "r", "", "", "h0", "c0", "p"],
        &["y", "y_h", "y_c"],
        vec![],
        &[1, 1, 1],
        vec![
            floats_init("w", &[0.5, 0.6, 0.7, 0.8], &[1, 4, 1]),
            floats_init("r", &[0.1, 0.2, 0.3, 0.4], &[1, 4, 1]),
            floats_init("h0", &[0.5], &[1, 1, 1]),
            floats_init("c0", &[0.25], &[1, 1, 1]),
            floats_init("p", &[0.1, 0.2, 0.3], &[1, 3]),
        ],
    );
    let out = run(&m, vec![x(&[1.], &[1, 1, 1])]);
    close(&f32s(&out[0]), &[0.406_091_014_496_593_1]);
    close(&f32s(&out[1]), &[0.406_091_014_496_593_1]);
    close(&f32s(&out[2]), &[0.666_371_308_031_409_5]);
}

#[test]
fn bad_recurrent_nodes_are_named_errors() {
    let bad = |attrs: Vec<AttributeProto>, extra: Option<TensorProto>| {
        let mut inits = rnn_inits();
        let mut inputs = vec!["x", "w", "r", "b"];
        if let Some(t) = extra {
            inputs.push("lens");
            inits.push(t);
        }
        let m = recurrent("RNN", &inputs, &["y"], attrs, &[2, 1, 1], inits);
        let e = err(&m);
        assert!(e.to_string().contains("cell"), "{e}");
        e
    };
    let e = bad(vec![attr_s("direction", "sideways")], None);
    assert!(
        matches!(&e, OnnxError::BadAttribute { attribute, .. } if attribute == "direction"),
        "{e}"
    );
    let acts = AttributeProto {
        name: "activations".into(),
        r#type: attribute_type::STRINGS,
        strings: vec![b"Swish".to_vec()],
        ..Default::default()
    };
    let e = bad(vec![acts], None);
    assert!(e.to_string().contains("Swish"), "{e}");
    let e = bad(vec![attr_i("hidden_size", 2)], None);
    assert!(matches!(e, OnnxError::ShapeMismatch { .. }), "{e}");
    let e = bad(vec![], Some(ints_init("lens", &[3])));
    assert!(e.to_string().contains("sequence_lens"), "{e}");
    let e = bad(vec![attr_i("layout", 2)], None);
    assert!(matches!(e, OnnxError::BadAttribute { .. }), "{e}");
    // sequence_lens from a graph input is read at run time; a length out of range is an
    // error of the call naming it.
    let mut m = recurrent(
        "RNN",
        &["x", "w", "r", "b", "lens"],
        &["y"],
        vec![],
        &[2, 1, 1],
        rnn_inits(),
    );
    if let Some(g) = m.graph.as_mut() {
        g.input.push(vi("lens", data_type::INT32, &[1]));
    }
    let lens = |l: i32| Tensor::from_data(TensorData::I32(vec![l]), Shape::new([1])).unwrap();
    let out = run(&m, vec![x(&[1., 2.], &[2, 1, 1]), lens(1)]);
    close(&f32s(&out[0]), &[0.664_036_770_267_849_1, 0.0]);
    let imported = crate::import_model_bytes(&m.encode_to_vec()).unwrap();
    let exe = InterpreterBackend.compile(&imported.function).unwrap();
    let e = exe.run(&[x(&[1., 2.], &[2, 1, 1]), lens(3)]).unwrap_err();
    assert!(e.to_string().contains("sequence_lens"), "{e}");
}

/// `DynamicQuantizeLSTM` (com.microsoft) with one unit: 8-bit weights `[1, 1, 4]` (gates
/// `i o f c` along the last axis) as `w` and `r`, their scales and zero points.
fn quantized_lstm(w: TensorProto, r: TensorProto, quant: Vec<TensorProto>) -> ModelProto {
    let mut inits = vec![w, r];
    inits.extend(quant);
    let mut m = recurrent(
        "DynamicQuantizeLSTM",
        &[
            "x", "w", "r", "", "", "", "", "", "w_scale", "w_zp", "r_scale", "r_zp",
        ],
        &["y", "y_h", "y_c"],
        vec![attr_i("hidden_size", 1)],
        &[2, 1, 1],
        inits,
    );
    if let Some(g) = m.graph.as_mut() {
        g.node[0].domain = crate::MICROSOFT_DOMAIN.into();
    }
    m
}

fn eight_bit(name: &str, data: TensorData, dims: &[usize]) -> TensorProto {
    crate::tensor_to_proto(name, &data, &Shape::new(dims))
}

#[test]
fn dynamic_quantize_lstm_is_lstm_of_the_dequantized_weights() {
    // With equal inputs (one quantization level each) and a one-unit state, the dynamic
    // quantization of `x` and `h` is exact, so the integer products equal the float ones.
    let float = recurrent(
        "LSTM",
        &["x", "w", "r"],
        &["y", "y_h", "y_c"],
        vec![],
        &[2, 1, 1],
        vec![
            floats_init("w", &[0.64, -0.32, 1.27, 0.1], &[1, 4, 1]),
            floats_init("r", &[0.3, 0.5, -0.7, 0.9], &[1, 4, 1]),
        ],
    );
    let xs = || vec![x(&[1.0, 1.0], &[2, 1, 1])];
    let want = run(&float, xs());
    // INT8 per tensor, zero points 0.
    let per_tensor = quantized_lstm(
        eight_bit("w", TensorData::I8(vec![64, -32, 127, 10]), &[1, 1, 4]),
        eight_bit("r", TensorData::I8(vec![30, 50, -70, 90]), &[1, 1, 4]),
        vec![
            floats_init("w_scale", &[0.01], &[1]),
            eight_bit("w_zp", TensorData::I8(vec![0]), &[1]),
            floats_init("r_scale", &[0.01], &[1]),
            eight_bit("r_zp", TensorData::I8(vec![0]), &[1]),
        ],
    );
    // UINT8 per column, zero points 128 and 100.
    let per_column = quantized_lstm(
        eight_bit("w", TensorData::U8(vec![192, 96, 255, 138]), &[1, 1, 4]),
        eight_bit("r", TensorData::U8(vec![115, 125, 65, 190]), &[1, 1, 4]),
        vec![
            floats_init("w_scale", &[0.01; 4], &[1, 4]),
            eight_bit("w_zp", TensorData::U8(vec![128; 4]), &[1, 4]),
            floats_init("r_scale", &[0.02, 0.02, 0.02, 0.01], &[1, 4]),
            eight_bit("r_zp", TensorData::U8(vec![100; 4]), &[1, 4]),
        ],
    );
    for m in [per_tensor, per_column] {
        let got = run(&m, xs());
        for (g, w) in got.iter().zip(&want) {
            let w: Vec<f64> = f32s(w).iter().map(|&v| f64::from(v)).collect();
            close(&f32s(g), &w);
        }
        // Not a degenerate state: the second step used R.
        assert!(f32s(&got[0])[1] != f32s(&got[0])[0], "{got:?}");
    }
}

#[test]
fn bad_dynamic_quantize_lstm_nodes_are_named_errors() {
    let w = || eight_bit("w", TensorData::I8(vec![1, 2, 3, 4]), &[1, 1, 4]);
    let r = || eight_bit("r", TensorData::I8(vec![1, 2, 3, 4]), &[1, 1, 4]);
    let quant = |scale: TensorProto, zp: TensorProto| {
        vec![
            scale,
            zp,
            floats_init("r_scale", &[0.5], &[1]),
            eight_bit("r_zp", TensorData::I8(vec![0]), &[1]),
        ]
    };
    let check = |m: ModelProto, want: &str| {
        let e = err(&m);
        let msg = e.to_string();
        assert!(msg.contains("cell") && msg.contains(want), "{msg}");
    };
    // A zero point of another type than its weight.
    check(
        quantized_lstm(
            w(),
            r(),
            quant(
                floats_init("w_scale", &[0.5], &[1]),
                eight_bit("w_zp", TensorData::U8(vec![0]), &[1]),
            ),
        ),
        "zero point",
    );
    // A per-column scale of the wrong length.
    check(
        quantized_lstm(
            w(),
            r(),
            quant(
                floats_init("w_scale", &[0.5; 3], &[1, 3]),
                eight_bit("w_zp", TensorData::I8(vec![0; 3]), &[1, 3]),
            ),
        ),
        "scale (input 8)",
    );
    // A scale of zero.
    check(
        quantized_lstm(
            w(),
            r(),
            quant(
                floats_init("w_scale", &[0.0], &[1]),
                eight_bit("w_zp", TensorData::I8(vec![0]), &[1]),
            ),
        ),
        "scale",
    );
    // Float weights where 8-bit ones belong.
    check(
        quantized_lstm(
            floats_init("w", &[1.0; 4], &[1, 1, 4]),
            r(),
            quant(
                floats_init("w_scale", &[0.5], &[1]),
                eight_bit("w_zp", TensorData::I8(vec![0]), &[1]),
            ),
        ),
        "UINT8 or INT8",
    );
}
