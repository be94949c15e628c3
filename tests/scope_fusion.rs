//! Scope fusion end to end: ONNX models with PyTorch-style and TensorFlow-style scope names
//! give the same outputs with scope fusion on and off on both backends, a look-alike scope
//! is refused with its reason, and a user pass registered from outside the crates replaces
//! a built-in one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use graphlift::jit::CpuJitBackend;
use graphlift::onnx::import_model;
use graphlift::onnx::proto::*;

#[path = "support/onnx_graph.rs"]
mod onnx_graph;
use graphlift::passes::scope_fusion::{
    FusionScopesResult, Scope, ScopeBasePass, ScopeFeature, ScopeFusionPatterns, ScopeGraph,
    SoftmaxPass, StructureMismatch,
};
use graphlift::passes::{ScopeFusion, ScopeFusionRegistry};
use onnx_graph::{init, init_i64, ints, vi, Nodes};

use graphlift::{Backend, Executable, Function, Tensor, TensorData};

const B: i64 = 2;
const S: i64 = 3;
const H: i64 = 8;

/// LayerNorm written out (scope `ln`, TF names when `tf`), then Softmax written out (scope
/// `sm`); `swap` centres as `mean - x` (a look-alike: same names and op counts).
fn model(ln: &str, sm: &str, tf: bool, swap: bool) -> ModelProto {
    let mut n = Nodes::new(if tf { ":0" } else { "_output_0" });
    let p = |s: &str, t: &str| format!("{ln}/{}", if tf { t } else { s });
    let mean = n.add(
        "ReduceMean",
        &p("ReduceMean", "moments/mean"),
        &["x"],
        vec![ints("axes", &[-1])],
    );
    let centred: [&str; 2] = if swap { [&mean, "x"] } else { ["x", &mean] };
    let d = n.add("Sub", &p("Sub", "moments/sub"), &centred, vec![]);
    let sq = if tf {
        n.add(
            "Mul",
            &p("", "moments/SquaredDifference"),
            &[&d, &d],
            vec![],
        )
    } else {
        n.add("Pow", &p("Pow", ""), &[&d, "two"], vec![])
    };
    let var = n.add(
        "ReduceMean",
        &p("ReduceMean_1", "moments/variance"),
        &[&sq],
        vec![ints("axes", &[-1])],
    );
    let ve = n.add("Add", &p("Add", "batchnorm/add"), &[&var, "eps"], vec![]);
    let std = n.add("Sqrt", &p("Sqrt", "batchnorm/Sqrt"), &[&ve], vec![]);
    let norm = n.add("Div", &p("Div", "batchnorm/truediv"), &[&d, &std], vec![]);
    let scaled = n.add("Mul", &p("Mul", "batchnorm/mul"), &[&norm, "gamma"], vec![]);
    let y = n.add(
        "Add",
        &p("Add_1", "batchnorm/add_1"),
        &[&scaled, "beta"],
        vec![],
    );
    let m = n.add(
        "ReduceMax",
        &format!("{sm}/ReduceMax"),
        &[&y],
        vec![ints("axes", &[2])],
    );
    let z = n.add("Sub", &format!("{sm}/Sub"), &[&y, &m], vec![]);
    let e = n.add("Exp", &format!("{sm}/Exp"), &[&z], vec![]);
    // ReduceSum takes its axes as an input from opset 13.
    let s = n.add(
        "ReduceSum",
        &format!("{sm}/ReduceSum"),
        &[&e, "last"],
        vec![],
    );
    let out = n.add("Div", &format!("{sm}/Div"), &[&e, &s], vec![]);
    let gamma: Vec<f32> = (0..H).map(|i| 0.5 + i as f32 * 0.25).collect();
    let beta: Vec<f32> = (0..H).map(|i| i as f32 * 0.1 - 0.3).collect();
    let xi = vi("x", &[B, S, H]);
    n.model(
        vec![xi],
        vec![vi(&out, &[B, S, H])],
        vec![
            init("two", &[], vec![2.0]),
            init("eps", &[], vec![1e-5]),
            init("gamma", &[H], gamma),
            init("beta", &[H], beta),
            init_i64("last", &[2]),
        ],
    )
}

const PT_LN: &str = "/encoder/layer.0/attention/output/LayerNorm";
const PT_SM: &str = "/encoder/layer.0/attention/self/Softmax";
const TF_LN: &str = "bert/encoder/layer_0/attention/output/LayerNorm";
const TF_SM: &str = "bert/encoder/layer_0/attention/self/Softmax";

fn import(m: &ModelProto) -> Function {
    import_model(m).unwrap().function
}

fn input() -> Vec<Tensor> {
    let data: Vec<f32> = (0..B * S * H)
        .map(|i| ((i * 13 % 17) as f32 - 8.0) * 0.3)
        .collect();
    vec![Tensor::from_data(TensorData::F32(data), [B as usize, S as usize, H as usize]).unwrap()]
}

fn run(exe: &dyn Executable) -> Vec<f32> {
    let out = exe.run(&input()).unwrap();
    out[0].data().as_slice::<f32>().unwrap().to_vec()
}

fn assert_close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-5, "{x} vs {y}");
    }
}

fn no_scope_fusion() -> ScopeFusionRegistry {
    let mut r = ScopeFusionRegistry::builtin();
    r.disable("layer_norm").unwrap().disable("softmax").unwrap();
    r
}

#[test]
fn pytorch_and_tensorflow_scopes_fuse_and_agree_on_both_backends() {
    for (ln, sm, tf) in [(PT_LN, PT_SM, false), (TF_LN, TF_SM, true)] {
        let f = import(&model(ln, sm, tf, false));
        let on = CpuJitBackend::new().compile_executable(&f).unwrap();
        let report = on.scope_fusion_report().unwrap();
        let fused: Vec<(&str, &str)> = report
            .fused
            .iter()
            .map(|s| (s.scope.as_str(), s.op_type.as_str()))
            .collect();
        let (ln, sm) = (ln.trim_start_matches('/'), sm.trim_start_matches('/'));
        assert_eq!(fused, [(ln, "LayerNorm"), (sm, "Softmax")], "{report}");
        let off = CpuJitBackend::new()
            .with_scope_fusion(no_scope_fusion())
            .compile_executable(&f)
            .unwrap();
        assert!(off.scope_fusion_report().unwrap().fused.is_empty());
        let want = run(&off);
        assert_close(&run(&on), &want);

        // The INTERPRETER runs no passes: it runs the fused function as given.
        let mut g = f.clone();
        ScopeFusion::default().fuse(&mut g).unwrap();
        let ops: Vec<&str> = g.nodes().map(|n| n.op().type_name()).collect();
        assert!(
            ops.contains(&"LayerNorm") && ops.contains(&"Softmax"),
            "{g}"
        );
        let interp = Backend::create("INTERPRETER").unwrap();
        assert_close(&run(&*interp.compile(&g).unwrap()), &want);
        assert_close(&run(&*interp.compile(&f).unwrap()), &want);
    }
}

#[test]
fn a_look_alike_scope_is_left_alone_and_the_report_says_why() {
    let f = import(&model(PT_LN, PT_SM, false, true));
    let mut g = f.clone();
    let report = ScopeFusion::default().fuse(&mut g).unwrap();
    let fused: Vec<&str> = report.fused.iter().map(|s| s.op_type.as_str()).collect();
    assert_eq!(fused, ["Softmax"], "{report}");
    let failed = report
        .failed
        .iter()
        .find(|x| x.scope == PT_LN.trim_start_matches('/'))
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(failed.pass, "layer_norm");
    assert!(failed.reason.contains("mean"), "{}", failed.reason);
    assert!(!g.nodes().any(|n| n.op().type_name() == "LayerNorm"));
    let interp = Backend::create("INTERPRETER").unwrap();
    let want = run(&*interp.compile(&f).unwrap());
    assert_close(&run(&*interp.compile(&g).unwrap()), &want);
}

/// A user pass from outside the crates: the built-in Softmax check, but only on scopes
/// whose name ends in `Softmax`, counting its calls.
struct NamedSoftmax(AtomicUsize);

impl ScopeBasePass for NamedSoftmax {
    fn pass_name(&self) -> &str {
        "softmax"
    }

    fn define_patterns(&self) -> ScopeFusionPatterns {
        let mut p = SoftmaxPass.define_patterns();
        for batch in &mut p {
            for pattern in batch.iter_mut() {
                pattern
                    .scopes
                    .push(ScopeFeature::NameSuffix("Softmax".into()));
            }
        }
        p
    }

    fn generate_fusion_result(
        &self,
        scope: &Scope,
        graph: &ScopeGraph<'_>,
    ) -> Result<Vec<FusionScopesResult>, StructureMismatch> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let mut results = SoftmaxPass.generate_fusion_result(scope, graph)?;
        for r in &mut results {
            r.description = format!("user: {}", r.description);
        }
        Ok(results)
    }
}

#[test]
fn a_user_pass_registered_from_outside_replaces_the_built_in_one() {
    let user = Arc::new(NamedSoftmax(AtomicUsize::new(0)));
    let mut registry = ScopeFusionRegistry::builtin();
    registry.register(user.clone());
    assert_eq!(
        registry.pass_names(),
        ["layer_norm", "softmax", "attention", "conv_bn_activation"],
        "same turn"
    );
    let f = import(&model(PT_LN, PT_SM, false, false));
    let exe = CpuJitBackend::new()
        .with_scope_fusion(registry.clone())
        .compile_executable(&f)
        .unwrap();
    let report = exe.scope_fusion_report().unwrap();
    let sm = report
        .fused
        .iter()
        .find(|s| s.op_type == "Softmax")
        .unwrap();
    assert!(sm.description.starts_with("user: "), "{report}");
    assert_eq!(
        user.0.load(Ordering::Relaxed),
        1,
        "only the scope named Softmax"
    );
    let node = exe.function().node_by_name(&sm.node);
    let history = node.map(|n| n.pass_history().to_vec()).unwrap_or_default();
    // Extraction may have moved the Softmax; when it is a graph node its history says who made it.
    if !history.is_empty() {
        assert_eq!(history[0], "scope_fusion:softmax");
    }
    let off = CpuJitBackend::new()
        .with_scope_fusion(no_scope_fusion())
        .compile_executable(&f)
        .unwrap();
    assert_close(&run(&exe), &run(&off));

    // Disabled by name, the user pass does not run either.
    registry.disable("softmax").unwrap();
    let mut g = f.clone();
    let report = ScopeFusion::new(registry).fuse(&mut g).unwrap();
    assert_eq!(report.disabled, ["softmax"]);
    assert_eq!(user.0.load(Ordering::Relaxed), 1);
}
