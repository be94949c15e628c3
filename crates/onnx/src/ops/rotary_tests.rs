//! Unit tests of `RotaryEmbedding`: rotations by multiples of a quarter turn (cos and sin of
//! 0, 1 and -1) on INTERPRETER and CPU-JIT: halves and interleaved pairs, a 4-D input whose
//! sequence is its third axis, a 3-D input with position ids and a partial rotation, and an
//! error naming the node.

use graphlift_ir::TensorData;
use graphlift_runtime::Tensor;

use super::one_node::{f32s, model, run_both, tensor, values, Operand, Operand::*};
use crate::proto::data_type::{FLOAT, INT64};
use crate::proto::AttributeProto;
use crate::tests::attr_i;

fn f32_init(name: &'static str, v: &[f32], dims: &'static [usize]) -> Operand {
    Init(name, TensorData::F32(v.to_vec()), dims)
}

/// `RotaryEmbedding` at opset 23 of a FLOAT graph input `x` and the caches (and position
/// ids) given.
fn rope(
    x: &'static [i64],
    caches: Vec<Operand>,
    attrs: Vec<AttributeProto>,
) -> crate::proto::ModelProto {
    let mut operands = vec![Input("x", FLOAT, x)];
    operands.extend(caches);
    model("RotaryEmbedding", 23, operands, &["y"], attrs)
}

fn assert_values(t: &Tensor, want: &[f64]) {
    assert_eq!(values(t), want);
}

#[test]
fn rotates_the_halves_or_the_interleaved_pairs() {
    // cos = [0, 1], sin = [1, 0]: the first pair turns a quarter, the second stays.
    let caches = || {
        vec![
            f32_init("cos", &[0., 1.], &[1, 1, 2]),
            f32_init("sin", &[1., 0.], &[1, 1, 2]),
        ]
    };
    let x = || f32s(&[1., 2., 3., 4.], &[1, 1, 1, 4]);
    // Halves: x1 = [1, 2], x2 = [3, 4].
    let m = rope(&[1, 1, 1, 4], caches(), vec![]);
    assert_values(&run_both(&m, &[x()])[0], &[-3., 2., 1., 4.]);
    // Pairs: x1 = [1, 3], x2 = [2, 4].
    let m = rope(&[1, 1, 1, 4], caches(), vec![attr_i("interleaved", 1)]);
    assert_values(&run_both(&m, &[x()])[0], &[-2., 1., 3., 4.]);
}

#[test]
fn a_4d_input_takes_each_tokens_angle_from_its_third_axis() {
    // Token 0 stays, token 1 turns a quarter; two heads.
    let m = rope(
        &[1, 2, 2, 2],
        vec![
            f32_init("cos", &[1., 0.], &[1, 2, 1]),
            f32_init("sin", &[0., 1.], &[1, 2, 1]),
        ],
        vec![],
    );
    let x = f32s(&[1., 2., 3., 4., 5., 6., 7., 8.], &[1, 2, 2, 2]);
    assert_values(&run_both(&m, &[x])[0], &[1., 2., -4., 3., 5., 6., -8., 7.]);
}

#[test]
fn position_ids_pick_cache_rows_and_a_partial_rotation_passes_the_rest() {
    // Rows: position 0 stays, 1 turns a quarter, 2 a half. Tokens at positions 2 and 1;
    // rotary_embedding_dim 2 of head size 4, two heads in a 3-D input.
    let m = rope(
        &[1, 2, 8],
        vec![
            f32_init("cos", &[1., 0., -1.], &[3, 1]),
            f32_init("sin", &[0., 1., 0.], &[3, 1]),
            Input("pos", INT64, &[1, 2]),
        ],
        vec![attr_i("num_heads", 2), attr_i("rotary_embedding_dim", 2)],
    );
    let x: Vec<f64> = (1..=16).map(f64::from).collect();
    let pos = tensor(TensorData::I64(vec![2, 1]), &[1, 2]);
    let y = &run_both(&m, &[f32s(&x, &[1, 2, 8]), pos])[0];
    assert_eq!(y.shape().dims(), &[1, 2, 8]);
    let want = [
        -1., -2., 3., 4., -5., -6., 7., 8., -10., 9., 11., 12., -14., 13., 15., 16.,
    ];
    assert_values(y, &want);
}

#[test]
fn an_odd_rotary_embedding_dim_is_an_error_naming_the_node() {
    let m = rope(
        &[1, 1, 1, 4],
        vec![
            f32_init("cos", &[1.], &[1, 1, 1]),
            f32_init("sin", &[0.], &[1, 1, 1]),
        ],
        vec![attr_i("rotary_embedding_dim", 3)],
    );
    let Err(e) = crate::import_model(&m) else {
        panic!("rotary_embedding_dim 3 imports");
    };
    let e = e.to_string();
    assert!(
        e.contains("RotaryEmbedding `n0`") && e.contains("rotary_embedding_dim"),
        "{e}"
    );
}
