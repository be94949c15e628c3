//! The `conv_bn_activation` scope fusion pass end to end: ONNX Conv + BatchNormalization +
//! activation blocks with PyTorch-style (`/features/0/0/Conv`) and PaddlePaddle-style
//! (`conv2_expand/conv2d_0.tmp_0`, a `ConvBNLayer`'s name over Paddle's tensor names) scopes
//! fuse into the folded form and agree with the unfused graph on both backends; a
//! look-alike (the batch normalisation over another axis) is refused with its reason; the
//! PP-OCR classifier agrees with and without the pass.

use graphlift::jit::CpuJitBackend;
use graphlift::onnx::proto::*;
use graphlift::onnx::{import_model, import_model_file_with, ImportOptions};
use graphlift::passes::{ScopeFusion, ScopeFusionRegistry};
use graphlift::{Backend, Executable, Function, Tensor, TensorData};

#[path = "support/onnx_graph.rs"]
mod onnx_graph;
use onnx_graph::{init, ints, vi, Nodes};

#[path = "support/model_files.rs"]
mod model_files;
use model_files::{models_dir, read_npy};

/// The activations exporters write after a batch normalisation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Act {
    Relu,
    Relu6,
    /// ONNX `HardSwish` (PyTorch's `nn.Hardswish`, opset 14).
    HardSwish,
    /// PaddlePaddle's `y * Clip(y + 3, 0, 6) / 6`.
    PaddleHardSwish,
    /// `y * Sigmoid(y)`.
    Silu,
}

/// Node names of one block: PyTorch's module paths or Paddle's tensor names under the
/// layer's name.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Names {
    PyTorch,
    Paddle,
}

impl Names {
    /// The block's scope as the report names it.
    fn scope(self) -> &'static str {
        match self {
            Names::PyTorch => "features/0",
            Names::Paddle => "conv2_expand",
        }
    }

    /// The name of the block's node `pt` (PyTorch) or `pd` (Paddle).
    fn of(self, pt: &str, pd: &str) -> String {
        match self {
            Names::PyTorch => format!("/features/0/{pt}"),
            Names::Paddle => format!("conv2_expand/{pd}"),
        }
    }
}

const C: i64 = 3;
const M: i64 = 4;
/// Equal to `M`, so the look-alike's transposed value has `M` channels too.
const HW: i64 = 4;

fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 7 + seed * 3) % 13) as f32 - 6.0) * scale)
        .collect()
}

/// `x [1, C, HW, HW]` -> Conv 3x3 (pads 1) -> [Transpose(0, 2, 1, 3) when `look_alike`]
/// -> BatchNormalization -> `act`, then a `Mul` by 2 outside the block.
fn block(names: Names, act: Act, look_alike: bool) -> ModelProto {
    let mut n = Nodes::new(match names {
        Names::PyTorch => "_output_0",
        Names::Paddle => ".tmp_0",
    });
    let conv = n.add(
        "Conv",
        &names.of("0/Conv", "conv2d_0"),
        &["x", "w"],
        vec![ints("pads", &[1, 1, 1, 1]), ints("kernel_shape", &[3, 3])],
    );
    let bn_in = if look_alike {
        n.add(
            "Transpose",
            &names.of("1/Transpose", "transpose_0"),
            &[&conv],
            vec![ints("perm", &[0, 2, 1, 3])],
        )
    } else {
        conv
    };
    let y = n.add(
        "BatchNormalization",
        &names.of("1/BatchNormalization", "batch_norm_0"),
        &[&bn_in, "scale", "bias", "mean", "var"],
        vec![],
    );
    let a = |s: &str| names.of(&format!("2/{s}"), &format!("act_0/{s}"));
    let out = match act {
        Act::Relu => n.add("Relu", &a("Relu"), &[&y], vec![]),
        Act::Relu6 => n.add("Clip", &a("Clip"), &[&y, "zero", "six"], vec![]),
        Act::HardSwish => n.add("HardSwish", &a("HardSwish"), &[&y], vec![]),
        Act::PaddleHardSwish => {
            let s = n.add("Add", &a("Add"), &[&y, "three"], vec![]);
            let c = n.add("Clip", &a("Clip"), &[&s, "zero", "six"], vec![]);
            let p = n.add("Mul", &a("Mul"), &[&y, &c], vec![]);
            n.add("Div", &a("Div"), &[&p, "six"], vec![])
        }
        Act::Silu => {
            let s = n.add("Sigmoid", &a("Sigmoid"), &[&y], vec![]);
            n.add("Mul", &a("Mul"), &[&y, &s], vec![])
        }
    };
    n.add("Mul", "head/Mul", &[&out, "two"], vec![]);
    if let Some(last) = n.nodes.last_mut() {
        last.output = vec!["z".into()];
    }
    let m = M as usize;
    let scalar = |name: &str, v: f32| init(name, &[], vec![v]);
    n.model(
        vec![vi("x", &[1, C, HW, HW])],
        vec![vi("z", &[1, M, HW, HW])],
        vec![
            init("w", &[M, C, 3, 3], values((M * C * 9) as usize, 1, 0.05)),
            init("scale", &[M], vec![1.5, -0.5, 0.8, 2.0][..m].to_vec()),
            init("bias", &[M], vec![0.25, 2.0, -1.0, 0.1][..m].to_vec()),
            init("mean", &[M], vec![0.1, -3.0, 0.4, 0.0][..m].to_vec()),
            init("var", &[M], vec![0.5, 2.0, 1.0, 0.01][..m].to_vec()),
            scalar("zero", 0.0),
            scalar("three", 3.0),
            scalar("six", 6.0),
            scalar("two", 2.0),
        ],
    )
}

fn import(m: &ModelProto) -> Function {
    import_model(m).unwrap().function
}

fn run(exe: &dyn Executable, inputs: &[Tensor]) -> Vec<f32> {
    let out = exe.run(inputs).unwrap();
    out[0].data().as_slice::<f32>().unwrap().to_vec()
}

fn input() -> Vec<Tensor> {
    let n = (C * HW * HW) as usize;
    let x = TensorData::F32(values(n, 5, 0.4));
    vec![Tensor::from_data(x, [1, C as usize, HW as usize, HW as usize]).unwrap()]
}

fn assert_close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert!(
            (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
            "{what}: {x} vs {y}"
        );
    }
}

fn without_pass() -> ScopeFusionRegistry {
    let mut r = ScopeFusionRegistry::builtin();
    r.disable("conv_bn_activation").unwrap();
    r
}

#[test]
fn pytorch_and_paddle_blocks_fuse_and_agree_on_both_backends() {
    let x = input();
    for names in [Names::PyTorch, Names::Paddle] {
        for act in [
            Act::Relu,
            Act::Relu6,
            Act::HardSwish,
            Act::PaddleHardSwish,
            Act::Silu,
        ] {
            let what = format!("{names:?} {act:?}");
            let f = import(&block(names, act, false));
            let on = CpuJitBackend::new().compile_executable(&f).unwrap();
            let report = on.scope_fusion_report().unwrap();
            let fused: Vec<(&str, &str, &str)> = report
                .fused
                .iter()
                .map(|s| (s.scope.as_str(), s.pass.as_str(), s.op_type.as_str()))
                .collect();
            assert_eq!(
                fused,
                [(names.scope(), "conv_bn_activation", "Add")],
                "{what}: {report}"
            );
            let off = CpuJitBackend::new()
                .with_scope_fusion(without_pass())
                .compile_executable(&f)
                .unwrap();
            assert!(off.scope_fusion_report().unwrap().fused.is_empty());
            let want = run(&off, &x);
            assert_close(&run(&on, &x), &want, &what);

            // The INTERPRETER runs the function as given: fuse it here.
            let mut g = f.clone();
            ScopeFusion::default().fuse(&mut g).unwrap();
            g.validate().unwrap();
            let ops: Vec<&str> = g.nodes().map(|n| n.op().type_name()).collect();
            assert!(!ops.contains(&"BatchNormInference"), "{what}: {g}");
            let add = g
                .nodes()
                .find(|n| n.name() == names.scope())
                .unwrap_or_else(|| panic!("{what}: no fused node in {g}"));
            assert_eq!(add.pass_history(), ["scope_fusion:conv_bn_activation"]);
            let interp = Backend::create("INTERPRETER").unwrap();
            let fused_interp = run(&*interp.compile(&g).unwrap(), &x);
            assert_close(&fused_interp, &want, &what);
            assert_close(&run(&*interp.compile(&f).unwrap(), &x), &want, &what);
        }
    }
}

#[test]
fn a_batch_norm_over_another_axis_is_refused_with_its_reason() {
    let f = import(&block(Names::PyTorch, Act::Relu, true));
    let mut g = f.clone();
    let report = ScopeFusion::default().fuse(&mut g).unwrap();
    assert!(report.fused.is_empty(), "{report}");
    let failed = report
        .failed
        .iter()
        .find(|x| x.pass == "conv_bn_activation" && x.scope == "features/0")
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        failed.reason.contains("Transpose") && failed.reason.contains("not Convolution"),
        "{}",
        failed.reason
    );
    assert_eq!(g, f, "unchanged");
}

/// The PP-OCR text-direction classifier, imported with its test input's shape.
fn ppocr() -> (Function, Vec<Tensor>) {
    let dir = models_dir();
    let x = read_npy(&dir.join("ppocr_cls").join("input_0.npy"));
    let options = ImportOptions {
        ordered_input_shapes: vec![x.shape().dims().to_vec()],
        ..ImportOptions::default()
    };
    let path = dir.join("ch_ppocr_mobile_v2.0_cls_infer.onnx");
    (
        import_model_file_with(&path, &options).unwrap().function,
        vec![x],
    )
}

#[test]
fn ppocr_agrees_with_and_without_the_pass() {
    let (f, x) = ppocr();
    let on = CpuJitBackend::new().compile_executable(&f).unwrap();
    let report = on.scope_fusion_report().unwrap();
    // paddle2onnx wrote flat tensor names (`conv2d_55.tmp_0`) and unnamed nodes: no scope
    // holds a block, so nothing is fused (names propose; there are none to propose).
    assert!(report.fused.is_empty(), "{report}");
    let off = CpuJitBackend::new()
        .with_scope_fusion(without_pass())
        .compile_executable(&f)
        .unwrap();
    assert_close(&run(&on, &x), &run(&off, &x), "PP-OCR");
}
