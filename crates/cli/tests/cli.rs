//! The `graphlift` command end to end: exit codes, inputs, --expect, --output-dir.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use graphlift::{Shape, TensorData};
use graphlift_onnx::encode_tensor_proto;
use graphlift_onnx::prost::Message;
use graphlift_onnx::proto::{
    data_type, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeDimension,
    TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};

fn graphlift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_graphlift"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("graphlift-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// y = exp(relu(x)) - x over f32[5].
fn write_model(dir: &Path) -> PathBuf {
    let value = |name: &str| ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: data_type::FLOAT,
                shape: Some(TensorShapeProto {
                    dim: vec![TensorShapeDimension {
                        dim_value: Some(5),
                        ..Default::default()
                    }],
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let node = |op: &str, ins: &[&str], out: &str| NodeProto {
        op_type: op.into(),
        name: format!("{op}_{out}"),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: vec![out.into()],
        ..Default::default()
    };
    let model = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            name: "g".into(),
            node: vec![
                node("Relu", &["x"], "r"),
                node("Exp", &["r"], "e"),
                node("Sub", &["e", "x"], "y"),
            ],
            input: vec![value("x")],
            output: vec![value("y")],
            ..Default::default()
        }),
        ..Default::default()
    };
    let path = dir.join("model.onnx");
    std::fs::write(&path, model.encode_to_vec()).unwrap();
    path
}

fn write_pb(dir: &Path, name: &str, v: Vec<f32>) -> PathBuf {
    let path = dir.join(name);
    let shape = Shape::new([v.len()]);
    std::fs::write(
        &path,
        encode_tensor_proto(name, &TensorData::F32(v), &shape),
    )
    .unwrap();
    path
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn default_model_runs_and_passes_its_own_check() {
    for backend in ["CPU-JIT", "INTERPRETER"] {
        let o = graphlift(&["run", "--backend", backend]);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(
            t.contains("output 0 `Y`: f32[8] = [1, 36, 6, 55, 3, 55, 105, 171]"),
            "{t}"
        );
        assert!(t.contains("expect 1: ok"), "{t}");
    }
    let t = text(&graphlift(&["run"]));
    assert!(t.contains("fused kernels: 1"), "{t}");
    assert!(t.contains("onnx:Relu:relu"), "{t}");
}

#[test]
fn model_with_inputs_expect_and_output_dir() {
    let dir = scratch("run");
    let model = write_model(&dir);
    let x = vec![-2.0f32, -0.5, 0.0, 0.5, 2.0];
    let y: Vec<f32> = x
        .iter()
        .map(|&v| (f64::from(v.max(0.0)).exp() - f64::from(v)) as f32)
        .collect();
    let input = write_pb(&dir, "x.pb", x);
    let good = write_pb(&dir, "y.pb", y.clone());
    let mut wrong = y;
    wrong[3] += 1.0;
    let bad = write_pb(&dir, "bad.pb", wrong);
    let out_dir = dir.join("out");
    let (m, i, g, b, od) = (
        model.to_str().unwrap(),
        input.to_str().unwrap(),
        good.to_str().unwrap(),
        bad.to_str().unwrap(),
        out_dir.to_str().unwrap(),
    );

    let o = graphlift(&["run", m, "--input", i, "--expect", g, "--output-dir", od]);
    assert!(o.status.success(), "{}", text(&o));
    let npy = std::fs::read(out_dir.join("output_0.npy")).unwrap();
    assert!(npy.starts_with(b"\x93NUMPY"), "a numpy file");

    let o = graphlift(&["run", m, "--input", i, "--expect", b]);
    assert!(!o.status.success());
    assert!(text(&o).contains("MISMATCH"), "{}", text(&o));

    let o = graphlift(&["run", m]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("takes 1 input(s) (x: f32[5]), 0 given"),
        "{}",
        text(&o)
    );

    let o = graphlift(&["run", dir.join("missing.onnx").to_str().unwrap()]);
    assert!(!o.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_saved_function_runs_several_calls_with_its_node_names() {
    use graphlift::{ElementType::F32, FunctionBuilder};
    let dir = scratch("json");
    let b = FunctionBuilder::new("saved");
    let x = b.parameter("x", F32, [5]);
    let f = b.finish(&[(x * 2.0).relu().named("twice_relu")]).unwrap();
    let path = dir.join("f.json");
    f.save_json(&path).unwrap();
    let x = vec![-2.0f32, -0.5, 0.0, 0.5, 2.0];
    let input = write_pb(&dir, "x.pb", x);
    let want = write_pb(&dir, "y.pb", vec![0.0, 0.0, 0.0, 1.0, 4.0]);
    let (p, i, w) = (
        path.to_str().unwrap(),
        input.to_str().unwrap(),
        want.to_str().unwrap(),
    );
    let o = graphlift(&["run", p, "--input", i, "--expect", w, "--calls", "3"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for call in 1..=3 {
        assert!(t.contains(&format!("call {call}: output 0 `")), "{t}");
    }
    assert!(t.contains("expect 0: ok"), "{t}");
    // A saved Function has static shapes: --shape is a usage error, and so is --calls 0.
    let o = graphlift(&["run", p, "--input", i, "--shape", "x=5"]);
    assert!(
        !o.status.success() && text(&o).contains("static shapes"),
        "{}",
        text(&o)
    );
    assert!(!graphlift(&["run", p, "--input", i, "--calls", "0"])
        .status
        .success());
}

#[test]
fn a_saved_function_prints_its_variables_after_each_call() {
    use graphlift::{ElementType::F32, FunctionBuilder};
    let dir = scratch("json-state");
    // count = count + 1; acc = acc * 2 + count (after the assign): results count, acc.
    let b = FunctionBuilder::new("counter");
    let count = b.variable("count", b.scalar(F32, 0.0));
    let acc = b.variable("acc", b.constant(vec![0.5f32, -1.0], [2]));
    b.assign(count, count + 1.0);
    b.assign(acc, acc * 2.0 + count.broadcast_to([2]));
    let f = b.finish(&[count]).unwrap();
    let path = dir.join("counter.json");
    f.save_json(&path).unwrap();
    let p = path.to_str().unwrap();
    let o = graphlift(&["run", p, "--backend", "INTERPRETER", "--calls", "3"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for (call, acc) in [(1, "[2, -1]"), (2, "[6, 0]"), (3, "[15, 3]")] {
        let output = t
            .lines()
            .find(|l| l.starts_with(&format!("call {call}: output 0 `")))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(output.ends_with(&format!(": f32[] = [{call}]")), "{t}");
        assert!(
            t.contains(&format!(
                "call {call}: variable 0 `count`: f32[] = [{call}]"
            )),
            "{t}"
        );
        assert!(
            t.contains(&format!("call {call}: variable 1 `acc`: f32[2] = {acc}")),
            "{t}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn garbage_model_is_an_error_not_a_crash() {
    let dir = scratch("garbage");
    let p = dir.join("junk.onnx");
    std::fs::write(&p, [0xffu8, 0x01, 0x02, 0x99, 0x10]).unwrap();
    let o = graphlift(&["run", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("graphlift: error:"), "{}", text(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_expr_follows_the_peers_protocol() {
    for e in ["E1", "E2", "E3", "E4"] {
        let o = graphlift(&["bench-expr", e, "2048"]);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        let line = t
            .lines()
            .rfind(|l| l.starts_with("ns_per_element="))
            .expect("the line");
        let v: f64 = line["ns_per_element=".len()..].parse().expect("a float");
        assert!(v.is_finite() && v > 0.0, "{line}");
    }
    let o = graphlift(&["bench-expr", "E4", "1000"]);
    assert!(!o.status.success(), "E4 needs N % 1024 == 0");

    // Any expression as an ONNX file: y = exp(relu(x)) - x over 5 elements.
    let dir = scratch("bench_expr_onnx");
    let model = write_model(&dir);
    let m = model.to_str().unwrap();
    let o = graphlift(&["bench-expr", m, "5"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ns_per_element="), "{}", text(&o));
    let o = graphlift(&["bench-expr", m, "6"]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("N is 6, the first output has 5 elements"),
        "{}",
        text(&o)
    );
}

#[test]
fn run_trace_writes_chrome_json_with_kernel_slices_holding_their_ops() {
    let dir = scratch("trace");
    let path = dir.join("run.trace.json");
    let p = path.to_str().unwrap();
    let o = graphlift(&["run", "--trace", p]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("trace: "), "{t}");
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, [std::ffi::OsString::from("run.trace.json")]);

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    assert!(events.iter().all(|e| e["ph"] == "X"));
    let slice = |e: &serde_json::Value| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
    let kernel = events
        .iter()
        .find(|e| e["cat"] == "jit_kernel")
        .expect("a kernel slice");
    let (kts, kdur) = slice(kernel);
    assert!(kernel["args"]["provenance"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "onnx:Relu:relu"));
    let ops: Vec<_> = events.iter().filter(|e| e["cat"] == "fused").collect();
    assert!(ops.len() >= 4, "{ops:?}");
    for op in &ops {
        let (ts, dur) = slice(op);
        assert!(
            ts >= kts && ts + dur <= kts + kdur + 1e-6,
            "{op} not in {kernel}"
        );
        assert_eq!(op["args"]["estimated"], true);
        assert!(op["args"]["outputs"][0]
            .as_str()
            .unwrap()
            .starts_with("f32"));
    }

    // INTERPRETER steps are slices of their own, inside the call's slice.
    let o = graphlift(&["run", "--backend", "INTERPRETER", "--trace", p]);
    assert!(o.status.success(), "{}", text(&o));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let call = events.iter().find(|e| e["cat"] == "call").unwrap();
    let (cts, cdur) = slice(call);
    let steps: Vec<_> = events
        .iter()
        .filter(|e| e["cat"] == "interpreted")
        .collect();
    assert!(steps.len() >= 4);
    assert!(steps.iter().all(|e| {
        let (ts, dur) = slice(e);
        ts >= cts && ts + dur <= cts + cdur + 1e-6
    }));
}

#[test]
fn run_trace_to_an_unwritable_path_is_an_error() {
    let dir = scratch("trace-bad");
    let path = dir.join("no-such-dir").join("t.json");
    let o = graphlift(&["run", "--trace", path.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(text(&o).contains("no-such-dir"), "{}", text(&o));
}

#[test]
fn accuracy_prints_a_row_per_function_within_bounds() {
    let out = graphlift(&["accuracy", "--step", "65537"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("every 65537-th f32 bit pattern (65536 inputs per function)"));
    for f in [
        "Exp", "Expm1", "Log", "Log1p", "Tanh", "Sigmoid", "Erf", "Sin", "Cos", "Tan", "Asin",
        "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {f} |")))
            .unwrap_or_else(|| panic!("no row for {f}:\n{stdout}"));
        assert!(row.ends_with("| all hold |"), "{row}");
    }
}

#[test]
fn accuracy_names_an_unknown_function() {
    let out = graphlift(&["accuracy", "--step", "65537", "tanh", "coth"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown function `coth`"), "{stderr}");
    assert!(
        stderr.contains("Exp, Expm1, Log, Log1p, Tanh, Sigmoid, Erf, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh"),
        "{stderr}"
    );
}

#[test]
fn accuracy_f64_refuses_a_function_without_inline_f64_code() {
    let out = graphlift(&["accuracy", "--f64", "--per-binade", "1", "sin"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Sin has no inline f64 code"), "{stderr}");
    assert!(
        stderr.contains("Exp, Expm1, Log, Log1p, Tanh, Sigmoid, Erf"),
        "{stderr}"
    );
}

/// The `f32` elements of a `.npy` file written by `graphlift` (version 1 header).
fn read_npy_f32(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.starts_with(b"\x93NUMPY"), "a numpy file");
    let header = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    bytes[10 + header..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn grad_writes_the_gradient_of_an_output_sum() {
    // y = exp(relu(x)) - x: d sum(y) / dx = exp(x) - 1 where x > 0, -1 where x < 0.
    let dir = scratch("grad");
    let model = write_model(&dir);
    let x = vec![-2.0f32, -0.5, 0.25, 0.5, 2.0];
    let input = write_pb(&dir, "x.pb", x.clone());
    let out_dir = dir.join("grads");
    let (m, i, od) = (
        model.to_str().unwrap(),
        input.to_str().unwrap(),
        out_dir.to_str().unwrap(),
    );
    for backend in ["CPU-JIT", "INTERPRETER"] {
        let o = graphlift(&[
            "grad",
            m,
            "--wrt",
            "x",
            "--input",
            i,
            "--output-dir",
            od,
            "--backend",
            backend,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(
            text(&o).contains("grad_0.npy: d sum(y) / d x: f32[5]"),
            "{}",
            text(&o)
        );
        let got = read_npy_f32(&out_dir.join("grad_0.npy"));
        for (g, &v) in got.iter().zip(&x) {
            let want = if v > 0.0 {
                f64::from(v).exp() - 1.0
            } else {
                -1.0
            };
            assert!(
                (f64::from(*g) - want).abs() < 1e-6,
                "{backend}: {g} vs {want}"
            );
        }
    }
    let o = graphlift(&["grad", m, "--wrt", "nope", "--input", i, "--output-dir", od]);
    assert!(!o.status.success());
    assert!(
        text(&o).contains("--wrt `nope`: no graph input or initializer"),
        "{}",
        text(&o)
    );
    let o = graphlift(&[
        "grad",
        m,
        "--wrt",
        "x",
        "--of",
        "z",
        "--input",
        i,
        "--output-dir",
        od,
    ]);
    assert!(
        text(&o).contains("--of `z`: the model has no such output"),
        "{}",
        text(&o)
    );

    // `bench` and `explain` take the same gradient Function with --wrt.
    let o = graphlift(&["bench", m, "--input", i, "--runs", "2", "--wrt", "x"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("gradient of sum(y) w.r.t. x"),
        "{}",
        text(&o)
    );
    let o = graphlift(&["explain", m, "--wrt", "x"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("deriv:"), "{}", text(&o));
    let o = graphlift(&["explain", m, "--wrt", "nope"]);
    assert!(
        text(&o).contains("--wrt `nope`: no graph input or initializer"),
        "{}",
        text(&o)
    );
}

/// `graphlift run` of a model with a `NonZero` over a computed value: it runs in stages
/// (the node between two compiled parts) on both backends and gives the indices.
#[test]
fn a_model_with_a_data_dependent_shape_runs_in_stages() {
    let dir = scratch("stages");
    let model = write_model(&dir);
    let mut m = ModelProto::decode(std::fs::read(&model).unwrap().as_slice()).unwrap();
    let g = m.graph.as_mut().unwrap();
    // idx = NonZero(relu(x)): the positions of the positive elements.
    g.node.push(NodeProto {
        op_type: "NonZero".into(),
        name: "nz".into(),
        input: vec!["r".into()],
        output: vec!["idx".into()],
        ..Default::default()
    });
    g.output = vec![ValueInfoProto {
        name: "idx".into(),
        ..Default::default()
    }];
    std::fs::write(&model, m.encode_to_vec()).unwrap();
    let input = write_pb(&dir, "x.pb", vec![-2.0, -0.5, 0.0, 0.5, 2.0]);
    let want = dir.join("idx.pb");
    let indices = TensorData::I64(vec![3, 4]);
    std::fs::write(
        &want,
        encode_tensor_proto("idx", &indices, &Shape::new([1, 2])),
    )
    .unwrap();
    for backend in ["CPU-JIT", "INTERPRETER"] {
        let (mp, i, w) = (
            model.to_str().unwrap(),
            input.to_str().unwrap(),
            want.to_str().unwrap(),
        );
        let o = graphlift(&["run", mp, "--backend", backend, "--input", i, "--expect", w]);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(t.contains("stages: NonZero `nz`"), "{t}");
        assert!(t.contains("expect 0: ok"), "{t}");
        let o = graphlift(&[
            "run",
            mp,
            "--backend",
            backend,
            "--input",
            i,
            "--trace",
            "t.json",
        ]);
        assert!(!o.status.success());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
