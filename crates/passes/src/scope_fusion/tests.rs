//! Scope fusion on graphs built with exporters' names: the built-in passes fuse what they
//! should, keep the values, refuse look-alikes with a reason, and obey the registry.

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder, Op, ReduceOp, Reduction, Value};
use graphlift_runtime::Tensor;

use super::*;
use crate::testing::{count_op, eval};
use crate::{ExtractionConfig, PassManager};

fn reduce<'b>(x: Value<'b>, op: ReduceOp, axes: &[usize]) -> Value<'b> {
    x.builder().op(
        Op::Reduce(Reduction {
            op,
            axes: axes.to_vec(),
            keep_dims: true,
        }),
        &[x],
    )
}

/// PyTorch's LayerNorm before opset 17 under `prefix`, over the last axis of `[2, 3, 4]`;
/// `swap` centres as `mean - x` instead (same op counts, another computation).
pub(super) fn layer_norm(prefix: &str, swap: bool) -> Function {
    let b = FunctionBuilder::new("ln");
    let x = b.parameter("x", F32, [2, 3, 4]);
    let n = |s: &str| format!("{prefix}/{s}");
    let mean = reduce(x, ReduceOp::Mean, &[2]).named(&n("ReduceMean"));
    let d = if swap { mean - x } else { x - mean }.named(&n("Sub"));
    let two = b.scalar(F32, 2.0).named(&n("Constant"));
    let sq = d.pow(two).named(&n("Pow"));
    let var = reduce(sq, ReduceOp::Mean, &[2]).named(&n("ReduceMean_1"));
    let eps = b.scalar(F32, 1e-5).named(&n("Constant_1"));
    let std = (var + eps).named(&n("Add")).sqrt().named(&n("Sqrt"));
    let norm = (d / std).named(&n("Div"));
    let gamma = b.constant(vec![1.0f32, 2.0, 0.5, -1.0], [4]);
    let beta = b.constant(vec![0.1f32, 0.2, 0.3, 0.4], [4]);
    let y = ((norm * gamma).named(&n("Mul")) + beta).named(&n("Add_1"));
    b.finish(&[y.relu()]).unwrap()
}

/// Softmax written out under `prefix` along the last axis of `[3, 5]`, with or without
/// the max subtraction.
fn softmax(prefix: &str, stable: bool) -> Function {
    let b = FunctionBuilder::new("sm");
    let x = b.parameter("x", F32, [3, 5]);
    let n = |s: &str| format!("{prefix}/{s}");
    let z = if stable {
        let m = reduce(x, ReduceOp::Max, &[1]).named(&n("ReduceMax"));
        (x - m).named(&n("Sub"))
    } else {
        x
    };
    let e = z.exp().named(&n("Exp"));
    let s = reduce(e, ReduceOp::Sum, &[1]).named(&n("ReduceSum"));
    let y = (e / s).named(&n("Div"));
    b.finish(&[y * 2.0]).unwrap()
}

fn input(f: &Function) -> Vec<Tensor> {
    f.parameter_types()
        .iter()
        .map(|t| {
            let len = t.shape.element_count().unwrap();
            let data: Vec<f32> = (0..len)
                .map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.37)
                .collect();
            Tensor::from_data(graphlift_ir::TensorData::F32(data), t.shape.clone()).unwrap()
        })
        .collect()
}

fn assert_close(a: &Function, b: &Function) {
    let inputs = input(a);
    let (x, y) = (eval(a, &inputs), eval(b, &inputs));
    for (p, q) in x.iter().zip(&y) {
        let (p, q) = (
            p.data().as_slice::<f32>().unwrap(),
            q.data().as_slice::<f32>().unwrap(),
        );
        for (u, v) in p.iter().zip(q) {
            assert!((u - v).abs() <= 1e-5 * (1.0 + v.abs()), "{u} vs {v}");
        }
    }
}

fn fuse(f: &mut Function) -> ScopeFusionReport {
    let report = ScopeFusion::default().fuse(f).unwrap();
    f.validate().unwrap();
    report
}

#[test]
fn layer_norm_written_out_becomes_one_op_with_provenance() {
    let original = layer_norm("/encoder/layer.0/attention/LayerNorm", false);
    let mut f = original.clone();
    let report = fuse(&mut f);
    assert_eq!(report.fused.len(), 1, "{report}");
    let s = &report.fused[0];
    // The enclosing scopes hold the same nodes: the innermost names the block.
    assert!(report.discarded.iter().any(|d| d.scope == "encoder"
        && matches!(&d.reason, DiscardReason::SameNodes { scope } if scope == &s.scope)));
    assert_eq!(s.scope, "encoder/layer.0/attention/LayerNorm");
    assert_eq!(
        (s.pass.as_str(), s.op_type.as_str()),
        ("layer_norm", "LayerNorm")
    );
    assert_eq!(count_op(&f, "LayerNorm"), 1, "{f}");
    for gone in ["ReduceMean", "Sqrt", "Divide", "Power", "Subtract"] {
        assert_eq!(count_op(&f, gone), 0, "{gone} left:\n{f}");
    }
    let ln = f
        .nodes()
        .find(|n| n.op().type_name() == "LayerNorm")
        .unwrap();
    assert_eq!(ln.name(), s.node);
    assert_eq!(ln.pass_history(), ["scope_fusion:layer_norm"]);
    assert_eq!(
        ln.metadata().get(SCOPE_KEY).map(String::as_str),
        Some(s.scope.as_str())
    );
    assert!(matches!(ln.op(), Op::LayerNorm(l) if l.axis == 2 && (l.epsilon - 1e-5).abs() < 1e-9));
    assert_close(&original, &f);
}

#[test]
fn tensorflow_paths_and_both_softmax_forms_fuse() {
    let original = layer_norm("bert/encoder/layer_0/attention/output/LayerNorm", false);
    let mut f = original.clone();
    assert_eq!(fuse(&mut f).fused.len(), 1);
    assert_close(&original, &f);
    for stable in [true, false] {
        let original = softmax("/encoder/layer.0/attention/self/Softmax", stable);
        let mut f = original.clone();
        let report = fuse(&mut f);
        assert_eq!(report.fused.len(), 1, "{report}");
        assert_eq!(count_op(&f, "Softmax"), 1, "{f}");
        assert_eq!(count_op(&f, "Exp"), 0);
        assert_close(&original, &f);
    }
}

#[test]
fn same_names_another_computation_is_left_alone_and_the_report_says_why() {
    let original = layer_norm("/encoder/LayerNorm", true);
    let mut f = original.clone();
    let report = fuse(&mut f);
    assert!(report.fused.is_empty(), "{report}");
    assert_eq!(f, original, "unchanged");
    let failed = report
        .failed
        .iter()
        .find(|x| x.scope == "encoder/LayerNorm")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(failed.pass, "layer_norm");
    assert!(
        failed.reason.contains("the mean is `x`"),
        "{}",
        failed.reason
    );
    assert!(report.to_string().contains("not fused `encoder/LayerNorm`"));
}

#[test]
fn a_name_alone_fuses_nothing() {
    // The names of a LayerNorm on a graph that only adds.
    let b = FunctionBuilder::new("names");
    let x = b.parameter("x", F32, [4]);
    let y = (x + 1.0)
        .named("/m/LayerNorm/ReduceMean")
        .exp()
        .named("/m/LayerNorm/Div");
    let original = b.finish(&[y]).unwrap();
    let mut f = original.clone();
    let report = fuse(&mut f);
    assert!(
        report.fused.is_empty() && report.failed.is_empty(),
        "{report}"
    );
    assert_eq!(f, original);
}

#[test]
fn disabled_passes_do_not_run_and_unknown_names_are_errors_or_reported() {
    let mut reg = ScopeFusionRegistry::builtin();
    assert_eq!(
        reg.pass_names(),
        ["layer_norm", "softmax", "attention", "conv_bn_activation"]
    );
    reg.disable("layer_norm").unwrap();
    let err = reg.disable("conv_bn").unwrap_err().to_string();
    assert!(
        err.contains("layer_norm, softmax, attention, conv_bn_activation"),
        "{err}"
    );
    reg.disable_listed(" softmax , nope,");
    assert!(!reg.is_enabled("softmax"));
    assert_eq!(reg.unknown_disabled().collect::<Vec<_>>(), ["nope"]);
    let original = layer_norm("/a/LayerNorm", false);
    let mut f = original.clone();
    let report = ScopeFusion::new(reg.clone()).fuse(&mut f).unwrap();
    assert_eq!(f, original);
    assert_eq!(report.disabled, ["layer_norm", "softmax"]);
    assert!(report.to_string().contains("no such pass: nope"));
    reg.enable("layer_norm").unwrap();
    assert!(ScopeFusion::new(reg).run(&mut f).unwrap());
}

#[test]
fn the_pipeline_runs_scope_fusion_first_and_reports_it() {
    let original = layer_norm("/enc/LayerNorm", false);
    let mut f = original.clone();
    let pm = PassManager::default_pipeline(ExtractionConfig::default());
    assert_eq!(pm.pass_names()[0], PASS_NAME);
    let report = pm.run(&mut f).unwrap();
    let sf = report.scope_fusion().unwrap();
    assert_eq!(sf.fused.len(), 1, "{sf}");
    assert_eq!(count_op(&f, "LayerNorm"), 1, "{f}");
    assert_close(&original, &f);
}

#[test]
fn odd_names_build_a_tree_without_panicking() {
    let b = FunctionBuilder::new("odd");
    let x = b.parameter("x", F32, [2]);
    let names = [
        "",
        "/",
        "//",
        "a//b/c",
        "/ü/日本/x_1",
        "a/b/Add_1",
        "a/b/",
        "_1",
        "a.0/b",
    ];
    let mut v = x;
    for (i, n) in names.iter().enumerate() {
        v = (v + i as f64).named(n);
    }
    let f = b.finish(&[v]).unwrap();
    let tree = ScopeTree::new(&f);
    let ab = tree.find("/a/b").unwrap();
    assert_eq!(ab.name(), "a/b");
    assert_eq!(tree.find("a//b").unwrap().id(), ab.id());
    assert_eq!(ab.op_type_count("Add"), 3, "a//b/c, a/b/Add_1, a/b/");
    assert_eq!(tree.find("ü/日本").unwrap().last_name(), "日本");
    assert_eq!(tree.find("a.0").unwrap().base_name(), "a");
    assert_eq!(super::tree::base_name("Add_1"), "Add");
    assert_eq!(super::tree::base_name("_1"), "_1");
    assert_eq!(super::tree::base_name("12"), "12");
    let mut g = f.clone();
    fuse(&mut g);
    assert_eq!(g, f);
}

#[test]
fn features_count_attributes_and_sub_scopes() {
    let f = layer_norm("/m/LayerNorm", false);
    let tree = ScopeTree::new(&f);
    let s = tree.find("m/LayerNorm").unwrap();
    assert!(NodeOpTypeFeature::new("ReduceMean", Count::Exactly(2)).matches(s));
    assert!(NodeOpTypeFeature::new("ReduceMean", Count::MultipleOf(2)).matches(s));
    assert!(!NodeOpTypeFeature::new("ReduceMean", Count::MultipleOf(0)).matches(s));
    let axes = ScopeAttrValue::Ints(vec![2]);
    assert!(NodeAttrFeature::new("ReduceMean", "axes", axes.clone()).matches(s, &tree, &f));
    assert!(!NodeAttrFeature::new("ReduceSum", "axes", axes).matches(s, &tree, &f));
    let m = tree.find("m").unwrap();
    let sub = ScopeFeature::SubScopes {
        sub_type: "LayerNorm".into(),
        count: Count::Exactly(1),
    };
    assert!(sub.matches(m, &tree));
    assert!(ScopeFeature::NameSuffix("Norm".into()).matches(s, &tree));
}

/// A careless user pass: it claims every node of a scope named `blk` as the inner nodes of
/// one `Exp` of the scope's input, replacing its last value, without reading the data flow.
struct Careless;

impl ScopeBasePass for Careless {
    fn pass_name(&self) -> &str {
        "careless"
    }

    fn define_patterns(&self) -> ScopeFusionPatterns {
        vec![vec![
            ScopePattern::new("Blk").scope(ScopeFeature::NameSuffix("blk".into()))
        ]]
    }

    fn generate_fusion_result(
        &self,
        scope: &Scope,
        graph: &ScopeGraph<'_>,
    ) -> Result<Vec<FusionScopesResult>, StructureMismatch> {
        let f = graph.function();
        let mut inner: Vec<_> = graph.scope_nodes(scope.id()).into_iter().collect();
        inner.sort();
        let (first, last) = (inner[0], inner[inner.len() - 1]);
        Ok(vec![FusionScopesResult {
            name: "careless".into(),
            op: Op::Unary(graphlift_ir::UnaryOp::Exp),
            inputs: vec![FusedInput::Value(f.node(first).unwrap().inputs()[0])],
            outputs: vec![last.into()],
            description: String::new(),
            inner_nodes: inner,
        }])
    }
}

#[test]
fn a_result_whose_inner_value_is_used_outside_is_refused() {
    let b = FunctionBuilder::new("outside");
    let x = b.parameter("x", F32, [3]);
    let a = x.exp().named("blk/a");
    let y = a.exp().named("blk/b");
    let original = b.finish(&[y, a * 2.0]).unwrap();
    let mut reg = ScopeFusionRegistry::empty();
    reg.register(std::sync::Arc::new(Careless));
    let mut f = original.clone();
    let report = ScopeFusion::new(reg).fuse(&mut f).unwrap();
    assert!(report.fused.is_empty(), "{report}");
    assert!(
        report.failed[0].reason.contains("`blk/a` is also used by"),
        "{report}"
    );
    assert_eq!(f, original);
}

#[test]
fn a_scope_handing_out_several_values_is_refused_naming_their_outside_readers() {
    let b = FunctionBuilder::new("two_outs");
    let x = b.parameter("x", F32, [3, 5]);
    let n = |s: &str| format!("/m/Softmax/{s}");
    let e = x.exp().named(&n("Exp"));
    let s = reduce(e, ReduceOp::Sum, &[1]).named(&n("ReduceSum"));
    let y = (e / s).named(&n("Div"));
    let side = (e * 3.0).named("/m/side");
    let original = b.finish(&[y, side]).unwrap();
    let mut f = original.clone();
    let report = fuse(&mut f);
    let failed = report
        .failed
        .iter()
        .find(|x| x.scope == "m/Softmax")
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        failed.reason.contains("hands out 2 values")
            && failed.reason.contains("`/m/Softmax/Exp` read by `/m/side`"),
        "{}",
        failed.reason
    );
    assert_eq!(f, original);
}
