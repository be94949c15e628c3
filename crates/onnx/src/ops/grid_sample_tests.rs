//! `GridSample` and `AffineGrid`: a spatial transformer on both backends, the element types
//! (half floats through `f32`, integers in `nearest` mode), and named errors.

use graphlift_ir::{ElementType, Shape, TensorData};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};
use prost::Message;

use crate::proto::*;
use crate::tests::{attr_i, attr_s, err, model_opset, node, vi};
use crate::{import_model_bytes, onnx_data_type, tensor_to_proto, OnnxError};

/// `m` run on `inputs` on CPU-JIT and the INTERPRETER, which must agree exactly; output 0.
fn both(m: &ModelProto, inputs: &[Tensor]) -> TensorData {
    let imported = import_model_bytes(&m.encode_to_vec()).unwrap();
    let backends: [Box<dyn Backend>; 2] =
        [Box::new(InterpreterBackend), Box::new(CpuJitBackend::new())];
    let outs: Vec<TensorData> = backends
        .iter()
        .map(|b| {
            b.compile(&imported.function).unwrap().run(inputs).unwrap()[0]
                .data()
                .clone()
        })
        .collect();
    assert_eq!(format!("{:?}", outs[0]), format!("{:?}", outs[1]));
    outs[0].clone()
}

/// `Y = GridSample(X, grid)` (node `gs`) at `opset`, `X` of type `t` `[1, 1, 2, 3]` and the
/// grid FLOAT `[1, 1, 3, 2]` graph inputs.
fn sample_model(t: ElementType, opset: i64, attrs: Vec<AttributeProto>) -> ModelProto {
    let mut m = model_opset(
        vec![node("GridSample", "gs", &["X", "grid"], &["Y"], attrs)],
        vec![
            vi("X", onnx_data_type(t), &[1, 1, 2, 3]),
            vi("grid", data_type::FLOAT, &[1, 1, 3, 2]),
        ],
        vec![],
        opset,
    );
    m.graph.as_mut().unwrap().output = vec![ValueInfoProto {
        name: "Y".into(),
        ..Default::default()
    }];
    m
}

/// `[[0, 1, 2], [3, 4, 5]]` as `t`, and the grid of the two corners and the centre.
fn image_and_grid(t: ElementType) -> [Tensor; 2] {
    let x: Vec<f64> = (0..6).map(f64::from).collect();
    let x = Tensor::from_data(TensorData::from_f64(t, &x), Shape::new([1, 1, 2, 3])).unwrap();
    let grid = vec![-1.0f32, -1.0, 1.0, 1.0, 0.0, 0.0];
    [x, Tensor::from_vec(grid, [1, 1, 3, 2]).unwrap()]
}

#[test]
fn every_float_type_samples_in_its_precision_and_integers_copy_in_nearest_mode() {
    let aligned = || vec![attr_i("align_corners", 1)];
    for t in [
        ElementType::F32,
        ElementType::F64,
        ElementType::F16,
        ElementType::BF16,
    ] {
        let y = both(&sample_model(t, 16, aligned()), &image_and_grid(t));
        assert_eq!(y.element_type(), t);
        let v: Vec<f64> = (0..y.len()).filter_map(|i| y.get_f64(i)).collect();
        assert_eq!(v, [0.0, 5.0, 2.5], "{t}");
    }
    let mut nearest = aligned();
    nearest.push(attr_s("mode", "nearest"));
    for t in [ElementType::I32, ElementType::U8, ElementType::I64] {
        let y = both(&sample_model(t, 20, nearest.clone()), &image_and_grid(t));
        assert_eq!(y, TensorData::from_f64(t, &[0.0, 5.0, 1.0]), "{t}");
    }
    // Interpolating integers is left undefined by the spec: refused, naming the node.
    let e = err(&sample_model(ElementType::I32, 20, aligned()));
    assert!(matches!(e, OnnxError::UnsupportedFeature { .. }), "{e}");
    assert!(e.to_string().contains("GridSample `gs`"), "{e}");
}

#[test]
fn an_identity_affine_grid_makes_a_transformer_that_copies() {
    // AffineGrid(theta = identity, size) then GridSample: each output element samples the
    // centre of the same input element (both without aligned corners).
    let theta = TensorData::F32(vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    let size = TensorData::I64(vec![1, 2, 3, 4]);
    let mut m = model_opset(
        vec![
            node("AffineGrid", "ag", &["theta", "size"], &["grid"], vec![]),
            node("GridSample", "gs", &["X", "grid"], &["Y"], vec![]),
        ],
        vec![vi("X", data_type::FLOAT, &[1, 2, 3, 4])],
        vec![],
        20,
    );
    let g = m.graph.as_mut().unwrap();
    g.initializer = vec![
        tensor_to_proto("theta", &theta, &Shape::new([1, 2, 3])),
        tensor_to_proto("size", &size, &Shape::new([4])),
    ];
    g.output = vec![ValueInfoProto {
        name: "Y".into(),
        ..Default::default()
    }];
    let x: Vec<f32> = (0..24).map(|v| v as f32 * 0.5 - 3.0).collect();
    let y = both(&m, &[Tensor::from_vec(x.clone(), [1, 2, 3, 4]).unwrap()]);
    let TensorData::F32(y) = y else {
        panic!("not f32")
    };
    for (a, b) in y.iter().zip(&x) {
        assert!((a - b).abs() < 1e-5, "{y:?}");
    }
}

#[test]
fn malformed_nodes_are_errors_naming_the_node() {
    let cases = [
        // `linear` is opset 20's name; opset 16 says `bilinear`.
        (
            sample_model(ElementType::F32, 16, vec![attr_s("mode", "linear")]),
            "mode",
        ),
        (
            sample_model(ElementType::F32, 20, vec![attr_s("padding_mode", "wrap")]),
            "padding_mode",
        ),
    ];
    for (m, says) in &cases {
        let e = err(m).to_string();
        assert!(e.contains("GridSample `gs`") && e.contains(says), "{e}");
    }
    // A grid whose last axis does not match X's spatial rank.
    let mut m = sample_model(ElementType::F32, 20, vec![]);
    m.graph.as_mut().unwrap().input[1] = vi("grid", data_type::FLOAT, &[1, 1, 3, 3]);
    let e = err(&m).to_string();
    assert!(
        e.contains("GridSample `gs`") && e.contains("grid [1, 1, 3, 3]"),
        "{e}"
    );
    // A 3-D volume before opset 20.
    let mut m = sample_model(ElementType::F32, 16, vec![]);
    let g = m.graph.as_mut().unwrap();
    g.input[0] = vi("X", data_type::FLOAT, &[1, 1, 2, 2, 2]);
    g.input[1] = vi("grid", data_type::FLOAT, &[1, 1, 1, 1, 3]);
    assert!(err(&m).to_string().contains("[N, C, H, W]"));
    // AffineGrid: theta that does not fit size.
    let mut m = model_opset(
        vec![node(
            "AffineGrid",
            "ag",
            &["theta", "size"],
            &["grid"],
            vec![],
        )],
        vec![vi("theta", data_type::FLOAT, &[1, 3, 4])],
        vec![],
        20,
    );
    let size = TensorData::I64(vec![1, 2, 3, 4]);
    m.graph.as_mut().unwrap().initializer = vec![tensor_to_proto("size", &size, &Shape::new([4]))];
    let e = err(&m).to_string();
    assert!(
        e.contains("AffineGrid `ag`") && e.contains("theta [1, 3, 4]"),
        "{e}"
    );
}
