//! `graphlift explain` end to end: the report, the DOT/JSON/SVG files, the Graphviz error.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use graphlift_onnx::prost::Message;
use graphlift_onnx::proto::{
    data_type, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeDimension,
    TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};

fn graphlift(args: &[&str], path_env: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_graphlift"));
    c.args(args);
    if let Some(p) = path_env {
        c.env("PATH", p);
    }
    c.output().expect("the binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("graphlift-explain-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// y = exp(relu(x)) - x (fuses) and w = relu(z) (alone), over f32[5].
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
                node("Relu", &["z"], "w"),
            ],
            input: vec![value("x"), value("z")],
            output: vec![value("y"), value("w")],
            ..Default::default()
        }),
        ..Default::default()
    };
    let path = dir.join("model.onnx");
    std::fs::write(&path, model.encode_to_vec()).unwrap();
    path
}

/// A small XML well-formedness check: the prolog (declaration, doctype, comments) is
/// skipped, every element is closed in order, and the root element's name is returned.
fn xml_root(text: &str) -> Result<String, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut root = None;
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        let (end_marker, skip) = if rest.starts_with("<!--") {
            ("-->", true)
        } else if rest.starts_with("<?") {
            ("?>", true)
        } else if rest.starts_with("<!") {
            (">", true)
        } else {
            (">", false)
        };
        let end = rest
            .find(end_marker)
            .ok_or_else(|| format!("unterminated markup at {:.40}", rest))?;
        let tag = &rest[1..end];
        rest = &rest[end + end_marker.len()..];
        if skip {
            continue;
        }
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '/')
            .collect();
        if tag.starts_with('/') {
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else {
            if stack.is_empty() {
                if root.is_some() {
                    return Err("two root elements".into());
                }
                root = Some(name.clone());
            }
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
    }
    if !stack.is_empty() {
        return Err(format!("unclosed elements {stack:?}"));
    }
    root.ok_or_else(|| "no element".into())
}

#[test]
fn explain_prints_pipeline_kernels_and_outside_nodes_and_writes_files() {
    let dir = scratch("files");
    let model = write_model(&dir);
    let (dot, json, svg) = (dir.join("g.dot"), dir.join("g.json"), dir.join("g.svg"));
    let out = graphlift(
        &[
            "explain",
            model.to_str().unwrap(),
            "--dot",
            dot.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ],
        None,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("`dot` command was not found"),
        "--svg needs Graphviz's `dot`, which ./scripts/test.sh installs: {stderr}"
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for needle in [
        "pass pipeline",
        "constant_folding",
        "subgraph_extraction",
        "scope fusion (0 fused):",
        "kernels (2):",
        "3 node(s)",
        "onnx:Relu:Relu_r",
        "onnx:Exp:Exp_e",
        "onnx:Sub:Sub_y",
        // A lone op is a kernel of its own on CPU-JIT (single-op kernels).
        "1 node(s)",
        "onnx:Relu:Relu_w",
        "outside kernels (0):",
    ] {
        assert!(
            stdout.contains(needle),
            "`{needle}` missing from:\n{stdout}"
        );
    }
    // Every kernel says which code it is: assembled code of the host's full width, or
    // Cranelift's and why not assembled (a host without AVX2).
    let code_lines = stdout
        .lines()
        .filter(|l| {
            l.contains("AVX-512 code: 16 f32 lanes")
                || l.contains("AVX2 code: 8 f32 lanes")
                || l.contains("Cranelift code, 4 lane(s) a vector; not assembled: ")
        })
        .count();
    assert_eq!(code_lines, 2, "{stdout}");
    let dot_text = std::fs::read_to_string(&dot).unwrap();
    assert!(dot_text.starts_with("digraph"), "{dot_text}");
    let json_text = std::fs::read_to_string(&json).unwrap();
    let back = graphlift::Function::from_json(&json_text).unwrap();
    assert!(back.nodes().any(|n| n.op().type_name() == "FusedKernel"));
    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(xml_root(&svg_text), Ok("svg".to_string()));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn explain_without_model_explains_the_default_model() {
    let out = graphlift(&["explain"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("embedded default"));
    assert!(stdout.contains("FusedKernel_0"));
}

#[test]
fn svg_without_graphviz_is_a_clear_error_and_writes_nothing() {
    let dir = scratch("nodot");
    let svg = dir.join("g.svg");
    let out = graphlift(
        &["explain", "--svg", svg.to_str().unwrap()],
        Some("/nonexistent-graphlift-test"),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Graphviz") && stderr.contains("`dot`"),
        "{stderr}"
    );
    assert!(!svg.exists());
}

#[test]
fn the_xml_check_rejects_broken_documents() {
    assert_eq!(xml_root("<?xml?><svg><g/></svg>"), Ok("svg".into()));
    assert!(xml_root("<svg><g></svg>").is_err());
    assert!(xml_root("<svg>").is_err());
}
