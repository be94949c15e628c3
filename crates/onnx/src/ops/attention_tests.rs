//! Unit tests of `Attention`: hand-checkable cases (scores of 0 or `ln 3`, one key per
//! query, uniform weights over the keys a query sees) on INTERPRETER and CPU-JIT: the
//! default scale, grouped-query heads in 3-D and 4-D, causal masking with a KV cache, a
//! fully masked row, softcap and the four score outputs, opset 24's padding, half inputs
//! with a FLOAT softmax, an empty batch, and errors naming the node.

use graphlift_ir::{ElementType, TensorData};

use super::one_node::{close, f32s, model, run_both, tensor, values, Operand, Operand::*};
use crate::proto::data_type::{BOOL, FLOAT, FLOAT16, INT64};
use crate::proto::AttributeProto;
use crate::tests::{attr_f, attr_i};

/// `Attention` at opset 23 on FLOAT graph inputs `q`, `k`, `v` of the given shapes, then
/// `extra` operands.
fn attention(
    shapes: [&'static [i64]; 3],
    extra: Vec<Operand>,
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> crate::proto::ModelProto {
    let mut operands = vec![
        Input("q", FLOAT, shapes[0]),
        Input("k", FLOAT, shapes[1]),
        Input("v", FLOAT, shapes[2]),
    ];
    operands.extend(extra);
    model("Attention", 23, operands, outputs, attrs)
}

#[test]
fn default_scale_is_one_over_the_root_of_the_head_size() {
    // Head size 4: scale 1/2, so q·k1 · 1/2 = ln 3 and the weights are 1/4, 3/4.
    let h = 3f64.ln() / 2.0;
    let m = attention(
        [&[1, 1, 1, 4], &[1, 1, 2, 4], &[1, 1, 2, 1]],
        vec![],
        &["y"],
        vec![],
    );
    let q = f32s(&[1.0; 4], &[1, 1, 1, 4]);
    let k = f32s(&[0., 0., 0., 0., h, h, h, h], &[1, 1, 2, 4]);
    let v = f32s(&[4., 8.], &[1, 1, 2, 1]);
    close(&run_both(&m, &[q, k, v])[0], &[7.0]);
}

#[test]
fn grouped_query_heads_read_the_key_value_head_of_their_group() {
    // 4 query heads, 2 key/value heads, one key: query head h takes value head h / 2.
    let m = attention(
        [&[1, 4, 1, 1], &[1, 2, 1, 1], &[1, 2, 1, 2]],
        vec![],
        &["y"],
        vec![],
    );
    let q = f32s(&[1., 2., 3., 4.], &[1, 4, 1, 1]);
    let k = f32s(&[1., 1.], &[1, 2, 1, 1]);
    let v = f32s(&[1., 2., 3., 4.], &[1, 2, 1, 2]);
    close(
        &run_both(&m, &[q, k, v])[0],
        &[1., 2., 1., 2., 3., 4., 3., 4.],
    );
    // The same in 3-D: [B, S, heads · head_size], heads merged back in order.
    let m = attention(
        [&[1, 1, 4], &[1, 1, 2], &[1, 1, 4]],
        vec![],
        &["y"],
        vec![attr_i("q_num_heads", 4), attr_i("kv_num_heads", 2)],
    );
    let q = f32s(&[1., 2., 3., 4.], &[1, 1, 4]);
    let k = f32s(&[1., 1.], &[1, 1, 2]);
    let v = f32s(&[1., 2., 3., 4.], &[1, 1, 4]);
    close(
        &run_both(&m, &[q, k, v])[0],
        &[1., 2., 1., 2., 3., 4., 3., 4.],
    );
}

#[test]
fn causal_with_a_past_sees_the_cache_and_the_keys_up_to_its_own_position() {
    // Zero queries: uniform weights over the keys each query sees. One past key, two new:
    // query 0 is at position 1 and sees keys 0, 1; query 1 sees keys 0, 1, 2.
    let past = |name| Input(name, FLOAT, &[1, 1, 1, 1]);
    let m = attention(
        [&[1, 1, 2, 1], &[1, 1, 2, 1], &[1, 1, 2, 1]],
        vec![Skip, past("pk"), past("pv")],
        &["y", "present_key", "present_value"],
        vec![attr_i("is_causal", 1), attr_f("scale", 1.0)],
    );
    let out = run_both(
        &m,
        &[
            f32s(&[0., 0.], &[1, 1, 2, 1]),
            f32s(&[5., 6.], &[1, 1, 2, 1]),
            f32s(&[6., 9.], &[1, 1, 2, 1]),
            f32s(&[4.], &[1, 1, 1, 1]),
            f32s(&[3.], &[1, 1, 1, 1]),
        ],
    );
    close(&out[0], &[4.5, 6.0]);
    close(&out[1], &[4., 5., 6.]);
    close(&out[2], &[3., 6., 9.]);
    assert_eq!(out[1].shape().dims(), &[1, 1, 3, 1]);
}

#[test]
fn a_boolean_mask_attends_where_true_and_a_fully_masked_row_is_nan() {
    let m = attention(
        [&[1, 1, 2, 1], &[1, 1, 2, 1], &[1, 1, 2, 1]],
        vec![Input("mask", BOOL, &[2, 2])],
        &["y"],
        vec![],
    );
    let zeros = || f32s(&[0., 0.], &[1, 1, 2, 1]);
    let mask = tensor(TensorData::Bool(vec![false, true, false, false]), &[2, 2]);
    let y = &run_both(
        &m,
        &[zeros(), zeros(), f32s(&[2., 3.], &[1, 1, 2, 1]), mask],
    )[0];
    close(y, &[3., f64::NAN]);
}

#[test]
fn softcap_then_bias_then_softmax_with_each_score_output() {
    // Scores q·k = [2, -2]; softcap 1 gives ±tanh 2; the mask adds [0, -1].
    let t = 2f64.tanh();
    let biased = [t, -t - 1.0];
    let e = [biased[0].exp(), biased[1].exp()];
    let probs = [e[0] / (e[0] + e[1]), e[1] / (e[0] + e[1])];
    let wants: [&[f64]; 4] = [&[2., -2.], &[t, -t], &biased, &probs];
    for (mode, want) in wants.into_iter().enumerate() {
        let m = attention(
            [&[1, 1, 1, 1], &[1, 1, 2, 1], &[1, 1, 2, 1]],
            vec![Input("mask", FLOAT, &[1, 2])],
            &["y", "present_key", "present_value", "qk"],
            vec![
                attr_f("scale", 1.0),
                attr_f("softcap", 1.0),
                attr_i("qk_matmul_output_mode", mode as i64),
            ],
        );
        let out = run_both(
            &m,
            &[
                f32s(&[2.], &[1, 1, 1, 1]),
                f32s(&[1., -1.], &[1, 1, 2, 1]),
                f32s(&[10., 20.], &[1, 1, 2, 1]),
                f32s(&[0., -1.], &[1, 2]),
            ],
        );
        close(&out[0], &[10. * probs[0] + 20. * probs[1]]);
        close(&out[1], &[1., -1.]);
        close(&out[3], want);
    }
}

#[test]
fn opset_24_pads_a_short_mask_and_masks_the_padding_keys() {
    // Two batches of three keys; nonpad lengths 1 and 3; the mask covers two keys, so the
    // third is masked by the padding of the mask in both batches.
    let operands = vec![
        Input("q", FLOAT, &[2, 1, 1, 1]),
        Input("k", FLOAT, &[2, 1, 3, 1]),
        Input("v", FLOAT, &[2, 1, 3, 1]),
        Input("mask", FLOAT, &[1, 2]),
        Skip,
        Skip,
        Input("nonpad", INT64, &[2]),
    ];
    let m = model("Attention", 24, operands, &["y"], vec![]);
    let y = &run_both(
        &m,
        &[
            f32s(&[0., 0.], &[2, 1, 1, 1]),
            f32s(&[0.; 6], &[2, 1, 3, 1]),
            f32s(&[1., 2., 3., 4., 6., 100.], &[2, 1, 3, 1]),
            f32s(&[0., 0.], &[1, 2]),
            tensor(TensorData::I64(vec![1, 3]), &[2]),
        ],
    )[0];
    close(y, &[1., 5.]);
}

#[test]
fn half_inputs_with_a_float_softmax_agree_with_float() {
    let h = 3f64.ln() / 2.0;
    let (q, k, v) = ([1.0; 4], [0., 0., 0., 0., h, h, h, h], [4., 8.]);
    let half = |x: &[f64], dims: &[usize]| tensor(TensorData::from_f64(ElementType::F16, x), dims);
    let m = model(
        "Attention",
        23,
        vec![
            Input("q", FLOAT16, &[1, 1, 1, 4]),
            Input("k", FLOAT16, &[1, 1, 2, 4]),
            Input("v", FLOAT16, &[1, 1, 2, 1]),
        ],
        &["y"],
        vec![attr_i("softmax_precision", i64::from(FLOAT))],
    );
    let y = &run_both(
        &m,
        &[
            half(&q, &[1, 1, 1, 4]),
            half(&k, &[1, 1, 2, 4]),
            half(&v, &[1, 1, 2, 1]),
        ],
    )[0];
    assert_eq!(y.element_type(), ElementType::F16);
    assert!(
        (values(y)[0] - 7.0).abs() <= 8.0 / 1024.0,
        "{:?}",
        values(y)
    );
}

#[test]
fn inconsistent_heads_and_bad_attributes_are_errors_naming_the_node() {
    let cases = [
        (
            attention(
                [&[1, 3, 1, 2], &[1, 2, 1, 2], &[1, 2, 1, 2]],
                vec![],
                &["y"],
                vec![],
            ),
            "not a multiple",
        ),
        (
            attention([&[1, 1, 4], &[1, 1, 4], &[1, 1, 4]], vec![], &["y"], vec![]),
            "q_num_heads",
        ),
        (
            attention(
                [&[1, 1, 1, 2], &[1, 1, 1, 2], &[1, 1, 1, 2]],
                vec![Skip, Input("pk", FLOAT, &[1, 1, 1, 2])],
                &["y"],
                vec![],
            ),
            "past_value",
        ),
        (
            attention(
                [&[1, 1, 1, 2], &[1, 1, 1, 2], &[1, 1, 1, 2]],
                vec![],
                &["y"],
                vec![attr_i("softmax_precision", i64::from(INT64))],
            ),
            "softmax_precision",
        ),
    ];
    for (m, says) in cases {
        let Err(e) = crate::import_model(&m) else {
            panic!("a model that must fail ({says}) imports");
        };
        let e = e.to_string();
        assert!(e.contains("Attention `n0`") && e.contains(says), "{e}");
    }
}

#[test]
fn an_empty_batch_with_causal_masking_gives_an_empty_output() {
    let m = attention(
        [&[0, 2, 3, 4], &[0, 2, 5, 4], &[0, 2, 5, 6]],
        vec![],
        &["y"],
        vec![attr_i("is_causal", 1)],
    );
    let empty = |dims: &[usize]| tensor(TensorData::F32(vec![]), dims);
    let out = run_both(
        &m,
        &[
            empty(&[0, 2, 3, 4]),
            empty(&[0, 2, 5, 4]),
            empty(&[0, 2, 5, 6]),
        ],
    );
    assert_eq!(out[0].shape().dims(), &[0, 2, 3, 6]);
}
