//! Unit tests of the importers of issue 28's first operators: small hand-computed cases on
//! the reference interpreter, and clear errors (never panics) for bad nodes.

use graphlift_ir::{Shape, TensorData};
use graphlift_runtime::Tensor;
use prost::Message;

use crate::proto::*;
use crate::tests::{attr_f, attr_i, attr_s, err, f32s, model_opset, node, run, vi};
use crate::{import_model_bytes_with, ImportOptions, OnnxError};

use crate::tests::attr_ints;

pub(super) fn ints_init(name: &str, v: &[i64]) -> TensorProto {
    crate::tensor_to_proto(name, &TensorData::I64(v.to_vec()), &Shape::new([v.len()]))
}

pub(super) fn floats_init(name: &str, v: &[f32], dims: &[usize]) -> TensorProto {
    crate::tensor_to_proto(name, &TensorData::F32(v.to_vec()), &Shape::new(dims))
}

/// A one-node model on FLOAT `x` of `dims` with initializers, at `opset`.
pub(super) fn one_node(
    op: &str,
    inputs: &[&str],
    attrs: Vec<AttributeProto>,
    dims: &[i64],
    inits: Vec<TensorProto>,
    opset: i64,
) -> ModelProto {
    let mut m = model_opset(
        vec![node(op, "n0", inputs, &["y"], attrs)],
        vec![vi("x", data_type::FLOAT, dims)],
        vec![],
        opset,
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer = inits;
        g.output = vec![ValueInfoProto {
            name: "y".into(),
            ..Default::default()
        }];
    }
    m
}

pub(super) fn x(v: &[f32], dims: &[usize]) -> Tensor {
    Tensor::from_data(TensorData::F32(v.to_vec()), Shape::new(dims)).unwrap()
}

#[test]
fn resize_nearest_and_linear() {
    let scales = floats_init("scales", &[1.0, 2.0], &[2]);
    let m = one_node(
        "Resize",
        &["x", "", "scales"],
        vec![attr_s("coordinate_transformation_mode", "asymmetric")],
        &[1, 2],
        vec![scales.clone()],
        13,
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[1., 3.], &[1, 2])])[0]),
        [1., 1., 3., 3.]
    );
    let m = one_node(
        "Resize",
        &["x", "", "scales"],
        vec![
            attr_s("mode", "linear"),
            attr_s("coordinate_transformation_mode", "align_corners"),
        ],
        &[1, 2],
        vec![floats_init("scales", &[1.0, 1.5], &[2])],
        13,
    );
    assert_eq!(f32s(&run(&m, vec![x(&[1., 3.], &[1, 2])])[0]), [1., 2., 3.]);
}

#[test]
fn resize_errors_name_the_attribute_or_the_input() {
    let scales = floats_init("scales", &[1.0, 2.0], &[2]);
    let bad_mode = one_node(
        "Resize",
        &["x", "", "scales"],
        vec![attr_s("mode", "bilinear")],
        &[1, 2],
        vec![scales.clone()],
        13,
    );
    let e = err(&bad_mode);
    assert!(
        matches!(&e, OnnxError::BadAttribute { attribute, .. } if attribute == "mode"),
        "{e}"
    );
    assert!(e.to_string().contains("nearest, linear, cubic"), "{e}");
    let antialias = one_node(
        "Resize",
        &["x", "", "scales"],
        vec![attr_i("antialias", 1)],
        &[1, 2],
        vec![scales],
        18,
    );
    assert!(matches!(err(&antialias), OnnxError::BadAttribute { .. }));
    let neither = one_node("Resize", &["x", ""], vec![], &[1, 2], vec![], 13);
    assert!(err(&neither).to_string().contains("exactly one of"));
    // Scales given by a graph input: named, and importable once its value is given.
    let mut m = one_node("Resize", &["x", "", "s"], vec![], &[1, 2], vec![], 13);
    if let Some(g) = m.graph.as_mut() {
        g.input.push(vi("s", data_type::FLOAT, &[2]));
    }
    let e = err(&m);
    assert!(
        matches!(&e, OnnxError::RunTimeOperand { input, .. } if input == "s"),
        "{e}"
    );
    assert!(e.is_unsupported());
    let mut options = ImportOptions::default();
    let s = Tensor::from_data(TensorData::F32(vec![1.0, 2.0]), Shape::new([2])).unwrap();
    options.input_values.insert("s".into(), s);
    let imported = import_model_bytes_with(&m.encode_to_vec(), &options).unwrap();
    assert_eq!(imported.inputs.len(), 1);
    assert_eq!(imported.outputs[0].tensor_type.shape.dims(), [1, 4]);
    // A value of another type than the input's is refused.
    let wrong = Tensor::from_data(TensorData::I64(vec![1, 2]), Shape::new([2])).unwrap();
    options.input_values.insert("s".into(), wrong);
    let e = import_model_bytes_with(&m.encode_to_vec(), &options).unwrap_err();
    assert!(matches!(e, OnnxError::TypeMismatch { .. }), "{e}");
}

#[test]
fn pad_modes_and_negative_pads() {
    let pad = |mode: &str, pads: &[i64], opset| {
        let attrs = vec![attr_s("mode", mode)];
        one_node(
            "Pad",
            &["x", "pads"],
            attrs,
            &[3],
            vec![ints_init("pads", pads)],
            opset,
        )
    };
    let input = || vec![x(&[1., 2., 3.], &[3])];
    assert_eq!(
        f32s(&run(&pad("reflect", &[2, 1], 13), input())[0]),
        [3., 2., 1., 2., 3., 2.]
    );
    assert_eq!(
        f32s(&run(&pad("edge", &[1, 1], 13), input())[0]),
        [1., 1., 2., 3., 3.]
    );
    assert_eq!(
        f32s(&run(&pad("wrap", &[1, 0], 19), input())[0]),
        [3., 1., 2., 3.]
    );
    // A negative pad crops first: [2, 3] then one zero before.
    assert_eq!(
        f32s(&run(&pad("constant", &[-1, 0], 13), input())[0]),
        [2., 3.]
    );
    assert_eq!(
        f32s(&run(&pad("constant", &[1, -2], 13), input())[0]),
        [0., 1.]
    );
    let e = err(&pad("wrap", &[1, 0], 18));
    assert!(
        matches!(&e, OnnxError::BadAttribute { attribute, .. } if attribute == "mode"),
        "{e}"
    );
    assert!(matches!(
        err(&pad("constant", &[1], 13)),
        OnnxError::ShapeMismatch { .. }
    ));
    assert!(matches!(
        err(&pad("edge", &[-4, 0], 13)),
        OnnxError::ShapeMismatch { .. }
    ));
}

#[test]
fn conv_transpose_spreads_each_input_over_a_window() {
    // x [1, 2] with w [10, 1], stride 2: [10, 1, 20, 2].
    let w = floats_init("w", &[10., 1.], &[1, 1, 2]);
    let m = one_node(
        "ConvTranspose",
        &["x", "w"],
        vec![attr_ints("strides", &[2])],
        &[1, 1, 2],
        vec![w.clone()],
        13,
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[1., 2.], &[1, 1, 2])])[0]),
        [10., 1., 20., 2.]
    );
    // output_padding adds a zero at the end; pads remove from both ends.
    let m = one_node(
        "ConvTranspose",
        &["x", "w"],
        vec![
            attr_ints("strides", &[2]),
            attr_ints("output_padding", &[1]),
            attr_ints("pads", &[1, 0]),
        ],
        &[1, 1, 2],
        vec![w.clone()],
        13,
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[1., 2.], &[1, 1, 2])])[0]),
        [1., 20., 2., 0.]
    );
    // W whose first axis is not X's channel count.
    let bad = floats_init("w", &[1.; 4], &[2, 1, 2]);
    let m = one_node(
        "ConvTranspose",
        &["x", "w"],
        vec![],
        &[1, 1, 2],
        vec![bad],
        13,
    );
    assert!(matches!(err(&m), OnnxError::ShapeMismatch { .. }));
}

#[test]
fn average_pool_counts_padding_as_asked() {
    let pool = |include: i64| {
        let attrs = vec![
            attr_ints("kernel_shape", &[2]),
            attr_ints("pads", &[1, 1]),
            attr_i("count_include_pad", include),
        ];
        one_node("AveragePool", &["x"], attrs, &[1, 1, 4], vec![], 13)
    };
    let input = || vec![x(&[1., 2., 3., 4.], &[1, 1, 4])];
    assert_eq!(f32s(&run(&pool(0), input())[0]), [1., 1.5, 2.5, 3.5, 4.]);
    assert_eq!(f32s(&run(&pool(1), input())[0]), [0.5, 1.5, 2.5, 3.5, 2.]);
    let m = one_node("AveragePool", &["x"], vec![], &[1, 1, 4], vec![], 13);
    assert!(matches!(err(&m), OnnxError::BadAttribute { .. }));
}

#[test]
fn split_gemm_arg_max_and_log_softmax() {
    let mut m = one_node(
        "Split",
        &["x", "split"],
        vec![],
        &[5],
        vec![ints_init("split", &[2, 3])],
        13,
    );
    if let Some(g) = m.graph.as_mut() {
        g.node[0].output = vec!["a".into(), "b".into()];
        g.output = ["a", "b"]
            .iter()
            .map(|n| ValueInfoProto {
                name: (*n).into(),
                ..Default::default()
            })
            .collect();
    }
    let out = run(&m, vec![x(&[1., 2., 3., 4., 5.], &[5])]);
    assert_eq!(
        (f32s(&out[0]), f32s(&out[1])),
        (vec![1., 2.], vec![3., 4., 5.])
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer = vec![ints_init("split", &[2, 2])];
    }
    assert!(matches!(err(&m), OnnxError::ShapeMismatch { .. }));

    // Gemm: 2 · xᵀ · b + 3 · c with x [2, 1].
    let b = floats_init("b", &[1., 2.], &[2, 1]);
    let c = floats_init("c", &[1.], &[1]);
    let m = one_node(
        "Gemm",
        &["x", "b", "c"],
        vec![
            attr_i("transA", 1),
            attr_f("alpha", 2.0),
            attr_f("beta", 3.0),
        ],
        &[2, 1],
        vec![b, c],
        13,
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[3., 4.], &[2, 1])])[0]),
        [2. * 11. + 3.]
    );

    let m = one_node(
        "ArgMax",
        &["x"],
        vec![attr_i("axis", -1), attr_i("select_last_index", 1)],
        &[2, 2],
        vec![],
        13,
    );
    let out = run(&m, vec![x(&[5., 5., 1., 2.], &[2, 2])]);
    assert_eq!(out[0].read::<i64>().unwrap(), [1, 1]);
    let m = one_node(
        "ArgMin",
        &["x"],
        vec![attr_i("axis", 2)],
        &[2, 2],
        vec![],
        13,
    );
    assert!(matches!(err(&m), OnnxError::BadAttribute { .. }));

    // Stable at large magnitudes: log_softmax([1000, 0]) = [0, -1000].
    let m = one_node("LogSoftmax", &["x"], vec![], &[2], vec![], 13);
    assert_eq!(f32s(&run(&m, vec![x(&[1000., 0.], &[2])])[0]), [0., -1000.]);
}

#[test]
fn rearrangements_and_predicates() {
    let m = one_node(
        "Tile",
        &["x", "r"],
        vec![],
        &[2],
        vec![ints_init("r", &[2])],
        13,
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[1., 2.], &[2])])[0]),
        [1., 2., 1., 2.]
    );
    let m = one_node(
        "DepthToSpace",
        &["x"],
        vec![attr_i("blocksize", 2), attr_s("mode", "CRD")],
        &[1, 4, 1, 1],
        vec![],
        13,
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[1., 2., 3., 4.], &[1, 4, 1, 1])])[0]),
        [1., 2., 3., 4.]
    );
    let m = one_node("SpaceToDepth", &["x"], vec![], &[1, 1, 2, 2], vec![], 13);
    assert!(matches!(err(&m), OnnxError::BadAttribute { .. }));
    let m = one_node(
        "Trilu",
        &["x"],
        vec![attr_i("upper", 0)],
        &[2, 2],
        vec![],
        14,
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[1., 2., 3., 4.], &[2, 2])])[0]),
        [1., 0., 3., 4.]
    );
    let m = one_node(
        "CumSum",
        &["x", "a"],
        vec![attr_i("exclusive", 1)],
        &[3],
        vec![ints_init("a", &[0])],
        14,
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[1., 2., 3.], &[3])])[0]),
        [0., 1., 3.]
    );
    let m = one_node(
        "IsInf",
        &["x"],
        vec![attr_i("detect_negative", 0)],
        &[3],
        vec![],
        13,
    );
    let out = run(
        &m,
        vec![x(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN], &[3])],
    );
    assert_eq!(out[0].read::<bool>().unwrap(), [true, false, false]);
    let m = one_node("IsNaN", &["x"], vec![], &[2], vec![], 13);
    let out = run(&m, vec![x(&[f32::NAN, 1.0], &[2])]);
    assert_eq!(out[0].read::<bool>().unwrap(), [true, false]);
}

#[test]
fn mod_truncated_or_floored() {
    let m = |fmod: i64, elem: i32| {
        let mut m = model_opset(
            vec![node(
                "Mod",
                "md",
                &["a", "b"],
                &["y"],
                vec![attr_i("fmod", fmod)],
            )],
            vec![vi("a", elem, &[4]), vi("b", elem, &[1])],
            vec![],
            13,
        );
        if let Some(g) = m.graph.as_mut() {
            g.output = vec![ValueInfoProto {
                name: "y".into(),
                ..Default::default()
            }];
        }
        m
    };
    let ints = |v: &[i64], dims: &[usize]| {
        Tensor::from_data(TensorData::I64(v.to_vec()), Shape::new(dims)).unwrap()
    };
    let a = ints(&[7, -7, 6, 0], &[4]);
    let out = run(&m(0, data_type::INT64), vec![a.clone(), ints(&[-3], &[1])]);
    assert_eq!(out[0].read::<i64>().unwrap(), [-2, -1, 0, 0]);
    let out = run(&m(1, data_type::INT64), vec![a, ints(&[-3], &[1])]);
    assert_eq!(out[0].read::<i64>().unwrap(), [1, -1, 0, 0]);
    let out = run(
        &m(1, data_type::FLOAT),
        vec![x(&[5.5, -5.5, 1.0, 0.25], &[4]), x(&[2.0], &[1])],
    );
    assert_eq!(f32s(&out[0]), [1.5, -1.5, 1.0, 0.25]);
    assert!(matches!(
        err(&m(0, data_type::FLOAT)),
        OnnxError::BadAttribute { .. }
    ));
    assert!(matches!(
        err(&m(2, data_type::INT64)),
        OnnxError::BadAttribute { .. }
    ));
    assert!(matches!(
        err(&m(1, data_type::BOOL)),
        OnnxError::TypeMismatch { .. }
    ));
}
