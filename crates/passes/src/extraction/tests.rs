//! Unit tests of subgraph extraction: each builds a small graph, runs the pass, and checks the
//! kernels it made (members, live-ins, outputs, body) and that the function computes the same.

use std::collections::BTreeMap;

use graphlift_ir::{
    ElementType::F32, Function, FunctionBuilder, Node, NodeId, Op, Output, TensorData,
};

use super::*;
use graphlift_runtime::reference::{convert, evaluate_function};
use graphlift_runtime::Tensor;

/// Fused kernel nodes of `f`, in id order.
pub(super) fn kernels(f: &Function) -> Vec<&Node> {
    f.nodes()
        .filter(|n| matches!(n.op(), Op::FusedKernel(_)))
        .collect()
}

/// The body of a fused kernel node.
pub(super) fn body(n: &Node) -> &Function {
    match n.op() {
        Op::FusedKernel(k) => &k.body,
        op => panic!("{op} is not a fused kernel"),
    }
}

/// Compute nodes of a body (not Parameter, Result or Constant), in id order.
fn body_compute(b: &Function) -> Vec<&Node> {
    b.nodes()
        .filter(|n| !matches!(n.op(), Op::Parameter | Op::Result | Op::Constant(_)))
        .collect()
}

/// How many nodes of each compute op type `f` has, counting inside kernel bodies.
pub(super) fn op_counts(f: &Function) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    count_into(f, &mut counts);
    counts
}

fn count_into(f: &Function, counts: &mut BTreeMap<String, usize>) {
    for n in f.nodes() {
        match n.op() {
            Op::FusedKernel(k) => count_into(&k.body, counts),
            Op::Parameter | Op::Result | Op::Constant(_) => {}
            op => *counts.entry(op.type_name().to_string()).or_default() += 1,
        }
    }
}

/// Broadcasts that extraction copied, in kernel bodies or not: their pass history names it
/// (the originals were made before it ran).
fn copied_broadcasts(f: &Function) -> usize {
    kernels(f)
        .iter()
        .flat_map(|k| body(k).nodes())
        .chain(f.nodes())
        .filter(|n| {
            matches!(n.op(), Op::Broadcast(_))
                && n.pass_history()
                    .iter()
                    .any(|p| p == SubgraphExtraction::NAME)
        })
        .count()
}

/// No kernel reads a Broadcast that another kernel exports: each has its own copy.
fn assert_no_broadcast_crosses_kernels(f: &Function) {
    for k in kernels(f) {
        let b = body(k);
        for (i, &r) in b.results().iter().enumerate() {
            let src = b.result_source(r).expect("valid body");
            if !matches!(b.node(src.node).expect("valid").op(), Op::Broadcast(_)) {
                continue;
            }
            for &(user, _) in k.users(i) {
                let user = f.node(user).expect("live");
                assert!(
                    !matches!(user.op(), Op::FusedKernel(_)),
                    "kernel `{}` exports a Broadcast that kernel `{}` reads",
                    k.name(),
                    user.name()
                );
            }
        }
    }
}

/// Deterministic, varied inputs for every parameter of `f`.
pub(super) fn sample_inputs(f: &Function) -> Vec<Tensor> {
    f.parameter_types()
        .iter()
        .enumerate()
        .map(|(p, t)| {
            let len = t.shape.element_count().expect("small");
            let v: Vec<f32> = (0..len)
                .map(|i| ((i * 7 + p * 13) % 11) as f32 * 0.37 - 1.5)
                .collect();
            let data = convert(&TensorData::F32(v), t.element_type).expect("numbers convert");
            Tensor::from_data(data, t.shape.clone()).expect("fits")
        })
        .collect()
}

/// The results of `f` on `inputs`, by the reference interpreter (fused kernels run through
/// their bodies).
fn eval(f: &Function, inputs: &[Tensor]) -> Vec<Tensor> {
    evaluate_function(f, inputs).expect("the reference evaluates")
}

/// Whether two result lists are equal bit for bit (any NaN equals any NaN).
fn same_bits(a: &[Tensor], b: &[Tensor]) -> bool {
    let bits = |t: &Tensor| -> Vec<Option<u64>> {
        (0..t.len())
            .map(|i| {
                t.data()
                    .get_f64(i)
                    .map(|x| if x.is_nan() { u64::MAX } else { x.to_bits() })
            })
            .collect()
    };
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.tensor_type() == y.tensor_type() && bits(x) == bits(y))
}

/// Runs extraction and checks the invariants every result must have; returns the report.
pub(super) fn extract_checked(f: &mut Function, config: &ExtractionConfig) -> ExtractionReport {
    let before = f.clone();
    let expected = eval(&before, &sample_inputs(&before));
    let mut pruned = before.clone();
    pruned.remove_dead_nodes();
    let report = extract_subgraphs(f, config).expect("extraction succeeds");
    f.validate().expect("the rewritten function validates");
    let (after, mut expected_counts) = (op_counts(f), op_counts(&pruned));
    let copies = copied_broadcasts(f);
    *expected_counts.entry("Broadcast".into()).or_default() += copies;
    expected_counts.retain(|_, n| *n > 0);
    assert_eq!(
        after, expected_counts,
        "no op lost or duplicated, but for {copies} Broadcast copies"
    );
    assert_eq!(f.parameters(), before.parameters(), "parameters untouched");
    assert_eq!(f.results(), before.results(), "results untouched");
    assert!(
        same_bits(&eval(f, &sample_inputs(f)), &expected),
        "same values"
    );
    assert_eq!(
        report.kernels.len(),
        kernels(f).len() - kernels(&before).len()
    );
    for k in kernels(f) {
        let b = body(k);
        b.validate().expect("kernel body validates");
        assert_eq!(b.name(), k.name());
        let compute = body_compute(b);
        assert!(compute.len() >= 2, "a kernel fuses at least 2 nodes");
        assert!(compute.len() <= config.max_ops, "a kernel respects max_ops");
        let shape = &compute[0].output_type().shape;
        for n in &compute {
            assert_eq!(&n.output_type().shape, shape, "one iteration space");
            assert!(config.is_fusible(b, n), "`{}` may not be fused", n.name());
        }
        assert_eq!(b.parameters().len(), k.inputs().len());
        assert_eq!(b.results().len(), k.outputs().len());
        assert!(k
            .pass_history()
            .iter()
            .any(|p| p == SubgraphExtraction::NAME));
        let listed: Vec<&str> = compute.iter().map(|n| n.name()).collect();
        assert_eq!(k.metadata()[FUSED_NODES_KEY], listed.join(","));
    }
    report
}

fn id(v: graphlift_ir::Value<'_>) -> NodeId {
    v.output().expect("built").node
}

fn halide_subgraph() -> Function {
    let b = FunctionBuilder::new("halide_subgraph");
    let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
    let add = (a + bb).named("add").tagged("tf/add");
    let mul = (add * c).named("mul").tagged("tf/mul");
    let relu = mul.relu().named("relu").tagged("tf/relu").tagged("tf/add");
    let r = (relu + d).named("add_d");
    b.finish(&[r]).expect("builds")
}

#[test]
fn halide_subgraph_becomes_one_kernel() {
    let mut f = halide_subgraph();
    let params = f.parameters().to_vec();
    let result = f.results()[0];
    let report = extract_checked(&mut f, &ExtractionConfig::default());

    assert_eq!(report.kernels.len(), 1);
    let k = &report.kernels[0];
    assert_eq!(k.name, "FusedKernel_0");
    assert_eq!(k.fused_nodes, ["add", "mul", "relu", "add_d"]);
    assert_eq!((k.live_ins, k.outputs), (4, 1));
    assert!(k.copied_constants.is_empty());

    // Parameters, one kernel, one result: nothing else is left.
    assert_eq!(f.node_count(), 6);
    let fused = f.node(k.node).expect("kernel node");
    assert_eq!(fused.name(), "FusedKernel_0");
    let ins: Vec<NodeId> = fused.inputs().iter().map(|o| o.node).collect();
    assert_eq!(ins, params, "live-ins A, B, C, D in order of first use");
    assert_eq!(
        f.result_source(result).expect("result"),
        Output::new(k.node, 0)
    );
    let tags: Vec<&str> = fused.tags().iter().collect();
    assert_eq!(tags, ["tf/add", "tf/mul", "tf/relu"]);
    assert_eq!(fused.pass_history(), ["subgraph_extraction"]);
    assert_eq!(fused.metadata()[FUSED_NODES_KEY], "add,mul,relu,add_d");

    let b = body(fused);
    assert_eq!(b.name(), "FusedKernel_0");
    let param_names: Vec<&str> = b
        .parameters()
        .iter()
        .map(|&p| b.node(p).expect("param").name())
        .collect();
    assert_eq!(param_names, ["A", "B", "C", "D"]);
    let ops: Vec<&str> = body_compute(b).iter().map(|n| n.op().type_name()).collect();
    assert_eq!(ops, ["Add", "Multiply", "Relu", "Add"]);
    let relu = b.node_by_name("relu").expect("names survive");
    assert!(relu.tags().contains("tf/relu"));
    assert!(relu.creation_site().file.ends_with("tests.rs"));
    assert_eq!(b.results().len(), 1);
}

#[test]
fn pass_trait_reports_change_and_is_idempotent() {
    let pass = SubgraphExtraction::default();
    assert_eq!(pass.name(), "subgraph_extraction");
    let mut f = halide_subgraph();
    assert!(pass.run(&mut f).expect("runs"));
    let once = f.clone();
    assert!(!pass.run(&mut f).expect("runs again"));
    assert_eq!(f, once);
}

#[test]
fn deterministic() {
    let config = ExtractionConfig::default().exclude("Exp");
    let build = || {
        let b = FunctionBuilder::new("det");
        let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
        let t = x * y;
        let u = t.exp() + t;
        let v = (u - x).relu();
        b.finish(&[v, t.abs(), u]).expect("builds")
    };
    let (mut f1, mut f2) = (build(), build());
    let r1 = extract_subgraphs(&mut f1, &config).expect("runs");
    let r2 = extract_subgraphs(&mut f2, &config).expect("runs");
    assert_eq!(r1, r2);
    assert_eq!(f1, f2);
}

/// a = x + y; b = exp(a) (not fusible); c = a * b. Fusing {a, c} would need b both after a
/// and before c: a cycle.
fn diamond_through_barrier(barrier: impl Fn(&mut Function, NodeId)) -> (Function, [NodeId; 3]) {
    let b = FunctionBuilder::new("diamond");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let a = x + y;
    let e = a.exp();
    let c = a * e;
    let ids = [id(a), id(e), id(c)];
    let mut f = b.finish(&[c]).expect("builds");
    barrier(&mut f, ids[1]);
    (f, ids)
}

fn assert_not_together(f: &Function, report: &ExtractionReport, names: [&str; 2]) {
    for k in &report.kernels {
        let both = names.iter().all(|n| k.fused_nodes.iter().any(|m| m == n));
        assert!(!both, "kernel {} fuses both {names:?}: a cycle", k.name);
    }
    f.validate().expect("acyclic");
}

#[test]
fn convexity_rejects_region_around_excluded_op() {
    let (mut f, [a, _, c]) = diamond_through_barrier(|_, _| {});
    let names = [a, c].map(|n| f.node(n).expect("node").name().to_string());
    let config = ExtractionConfig::default().exclude("Exp");
    let report = extract_checked(&mut f, &config);
    assert_not_together(&f, &report, [&names[0], &names[1]]);
    assert!(report.kernels.is_empty(), "a and c are each alone");

    // Without the barrier all three fuse.
    let (mut f, _) = diamond_through_barrier(|_, _| {});
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 1);
    assert_eq!(report.kernels[0].fused_nodes.len(), 3);
}

#[test]
fn convexity_rejects_region_around_stop_fusion_node() {
    let (mut f, [a, e, c]) = diamond_through_barrier(|f, e| {
        f.set_metadata(e, STOP_FUSION_KEY, "true")
            .expect("node exists");
    });
    let names = [a, c].map(|n| f.node(n).expect("node").name().to_string());
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_not_together(&f, &report, [&names[0], &names[1]]);
    assert!(f.get(e).is_some(), "the barrier stays a node of its own");
}

#[test]
fn convexity_follows_control_dependencies() {
    // a = x + y; e = tanh(y) (excluded) runs after a; c = a * e. The path a -> e -> c
    // goes through a control dependency.
    let b = FunctionBuilder::new("ctrl_diamond");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let a = (x + y).named("a");
    let e = y.tanh().named("e");
    let c = (a * e).named("c");
    let d = c.relu().named("d");
    let (ia, ie) = (id(a), id(e));
    let mut f = b.finish(&[d]).expect("builds");
    f.add_control_dependency(ie, ia).expect("acyclic");
    let config = ExtractionConfig::default().exclude("Tanh");
    let report = extract_checked(&mut f, &config);
    assert_not_together(&f, &report, ["a", "c"]);
    // c and d still fuse; e keeps its dependency on a.
    assert_eq!(report.kernels.len(), 1);
    assert_eq!(report.kernels[0].fused_nodes, ["c", "d"]);
    assert_eq!(f.node(ie).expect("e").other_deps(), [ia]);
}

#[test]
fn control_dependencies_move_to_the_kernel() {
    // pre = tanh(x) and post = tanh(y) are excluded; a = x + y runs after pre; post runs
    // after b = relu(a); b also runs after a (internal, dropped).
    let b = FunctionBuilder::new("ctrl_move");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let pre = x.tanh().named("pre");
    let a = (x + y).named("a");
    let bb = a.relu().named("b");
    let post = y.tanh().named("post");
    let [ipre, ia, ib, ipost] = [pre, a, bb, post].map(id);
    let mut f = b.finish(&[bb, post, pre]).expect("builds");
    f.add_control_dependency(ia, ipre).expect("acyclic");
    f.add_control_dependency(ipost, ib).expect("acyclic");
    f.add_control_dependency(ib, ia).expect("acyclic");
    let config = ExtractionConfig::default().exclude("Tanh");
    let report = extract_checked(&mut f, &config);
    assert_eq!(report.kernels.len(), 1);
    let k = f.node(report.kernels[0].node).expect("kernel");
    assert_eq!(k.other_deps(), [ipre]);
    assert_eq!(f.node(ipost).expect("post").other_deps(), [k.id()]);
    assert!(body(k).nodes().all(|n| n.other_deps().is_empty()));
}

#[test]
fn value_used_only_through_control_dependency_is_left_alone() {
    // {a, b} is live only because the result waits for b: a kernel would have no output.
    let b = FunctionBuilder::new("ctrl_only");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let bb = (x + y).relu();
    let out = x.abs();
    let ib = id(bb);
    let mut f = b.finish(&[out]).expect("builds");
    let r = f.results()[0];
    f.add_control_dependency(r, ib).expect("acyclic");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert!(report.kernels.is_empty());
    assert!(f.get(ib).is_some());
}

#[test]
fn a_broadcast_shared_by_two_regions_is_copied_not_exported() {
    // One splat of 0.5 (as CSE leaves it) feeds a region before the Tanh barrier and one
    // after it. The first region takes the Broadcast; the second gets its own copy instead
    // of reading the full [2, 4] tensor back from the first kernel.
    let bld = FunctionBuilder::new("shared_splat");
    let x = bld.parameter("x", F32, [2, 4]);
    let half = bld.scalar(F32, 0.5).broadcast_to([2, 4]).named("half");
    let a = (x * half).relu().named("a");
    let t = a.tanh().named("t");
    let d = (t * half).abs().named("d");
    let mut f = bld.finish(&[d]).expect("builds");
    let config = ExtractionConfig::default().exclude("Tanh");
    let report = extract_checked(&mut f, &config);
    assert_eq!(report.kernels.len(), 2);
    assert!(report
        .kernels
        .iter()
        .all(|k| k.outputs == 1 && k.live_ins == 1));
    assert_eq!(copied_broadcasts(&f), 1);
    assert_no_broadcast_crosses_kernels(&f);
    let copy = kernels(&f)
        .into_iter()
        .flat_map(|k| body(k).nodes())
        .find(|n| {
            n.pass_history()
                .iter()
                .any(|p| p == SubgraphExtraction::NAME)
        })
        .expect("a copy");
    assert!(copy.name().starts_with("half"), "{}", copy.name());
}

#[test]
fn regions_that_share_only_a_broadcast_stay_apart() {
    // Two independent branches (as two convolutions' ReLU6 epilogues after CSE, whose bounds
    // are one splat each) share only the splats: each stays a kernel of its own, with its
    // own copy, so that each can run in its own producer's output loop.
    let bld = FunctionBuilder::new("sibling_splats");
    let [x, y] = ["x", "y"].map(|n| bld.parameter(n, F32, [2, 4]));
    let lo = bld.scalar(F32, 0.0).broadcast_to([2, 4]).named("lo");
    let hi = bld.scalar(F32, 6.0).broadcast_to([2, 4]).named("hi");
    let a = x.abs().max(lo).min(hi).named("a");
    let b = y.abs().max(lo).min(hi).named("b");
    let mut f = bld.finish(&[a, b]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 2);
    assert!(report
        .kernels
        .iter()
        .all(|k| k.outputs == 1 && k.live_ins == 1));
    assert_no_broadcast_crosses_kernels(&f);
}

#[test]
fn interleaved_regions_do_not_form_a_cycle_together() {
    // Region 1 {p, a, d} and region 2 {r, b, c} are each convex, but a -> t1 -> b and
    // c -> t2 -> d (t1, t2 excluded) would make the two kernels depend on each other.
    let bld = FunctionBuilder::new("interleaved");
    let [x, y] = ["x", "y"].map(|n| bld.parameter(n, F32, [4]));
    let p = (x + x).named("p");
    let a = p.relu().named("a");
    let r = (y + y).named("r");
    let c = r.abs().named("c");
    let t1 = a.tanh().named("t1");
    let t2 = c.tanh().named("t2");
    let b = (r * t1).named("b");
    let d = (p * t2).named("d");
    let mut f = bld.finish(&[d, b]).expect("builds");
    let config = ExtractionConfig::default().exclude("Tanh");
    let report = extract_checked(&mut f, &config);
    // The first region (from d, walking back) is {p, a, d}. Then b cannot take r, since
    // r -> c -> t2 -> kernel {p, a, d} -> t1 -> b leaves and re-enters {b, r}; b stays alone
    // and c grows {r, c}.
    let fused: Vec<&[String]> = report.kernels.iter().map(|k| &k.fused_nodes[..]).collect();
    assert_eq!(fused, [&["r", "c"][..], &["p", "a", "d"][..]]);
}

#[test]
fn multi_output_kernel() {
    let b = FunctionBuilder::new("multi_output");
    let [x, y] = ["a", "b"].map(|n| b.parameter(n, F32, [4]));
    let t = (x + y).named("t");
    let u = t.relu().named("u");
    let mut f = b.finish(&[t, u]).expect("builds");
    let results = f.results().to_vec();
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 1);
    let k = &report.kernels[0];
    assert_eq!(k.fused_nodes, ["t", "u"]);
    assert_eq!((k.live_ins, k.outputs), (2, 2));
    assert_eq!(
        f.result_source(results[0]).expect("r0"),
        Output::new(k.node, 0)
    );
    assert_eq!(
        f.result_source(results[1]).expect("r1"),
        Output::new(k.node, 1)
    );
}

#[test]
fn sibling_consumers_join_one_kernel() {
    // t feeds two results through relu and abs: growth also follows users.
    let b = FunctionBuilder::new("siblings");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let t = x * y;
    let mut f = b.finish(&[t.relu(), t.abs()]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 1);
    assert_eq!(report.kernels[0].fused_nodes.len(), 3);
    assert_eq!(report.kernels[0].outputs, 2);
}

#[test]
fn value_used_inside_and_outside_becomes_output_without_duplication() {
    let b = FunctionBuilder::new("shared");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let t = (x + y).named("t");
    let u = (t.relu() + x).named("u");
    let v = t.exp().named("v");
    let mut f = b.finish(&[u, v]).expect("builds");
    let adds_before = op_counts(&f)["Add"];
    let config = ExtractionConfig::default().exclude("Exp");
    let report = extract_checked(&mut f, &config);
    assert_eq!(report.kernels.len(), 1);
    let k = &report.kernels[0];
    assert_eq!(k.outputs, 2, "t (for exp) and u (for the result)");
    assert_eq!(op_counts(&f)["Add"], adds_before);
    let v_node = f.node_by_name("v").expect("exp stays");
    assert_eq!(v_node.inputs()[0], Output::new(k.node, 0));
}

#[test]
fn broadcast_bias_fuses_without_materializing() {
    let b = FunctionBuilder::new("bias_relu");
    let x = b.parameter("X", F32, [4, 8]);
    let bias = b.parameter("b", F32, [8]);
    let r = (x + bias).relu();
    let mut f = b.finish(&[r]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 1);
    let k = f.node(report.kernels[0].node).expect("kernel");
    assert_eq!(k.inputs().len(), 2);
    let b = body(k);
    let shapes: Vec<Vec<usize>> = b
        .parameter_types()
        .iter()
        .map(|t| t.shape.dims().to_vec())
        .collect();
    assert_eq!(
        shapes,
        [vec![8], vec![4, 8]],
        "the bias stays [8]; first used first"
    );
    let ops: Vec<&str> = body_compute(b).iter().map(|n| n.op().type_name()).collect();
    assert_eq!(ops, ["Broadcast", "Add", "Relu"]);
    assert!(!f.nodes().any(|n| matches!(n.op(), Op::Broadcast(_))));
}

#[test]
fn broadcast_input_stays_outside_its_region() {
    // relu(y[8]) is broadcast to [4, 8]: the relu is a live-in, not a member.
    let b = FunctionBuilder::new("bcast_in");
    let x = b.parameter("x", F32, [4, 8]);
    let y = b.parameter("y", F32, [8]);
    let r = (x * y.relu().abs()).exp();
    let mut f = b.finish(&[r]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 2, "one per iteration space");
    let shapes: Vec<Vec<usize>> = kernels(&f)
        .iter()
        .map(|k| k.outputs()[0].shape.dims().to_vec())
        .collect();
    assert_eq!(shapes, [vec![8], vec![4, 8]]);
}

#[test]
fn different_shapes_do_not_share_a_region() {
    let b = FunctionBuilder::new("shapes");
    let x = b.parameter("x", F32, [4]);
    let y = b.parameter("y", F32, [2, 4]);
    let small = (x.relu() + x).named("small");
    let big = (y.abs() * y).named("big");
    let mut f = b.finish(&[small, big]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 2);
    for k in kernels(&f) {
        assert_eq!(body_compute(body(k)).len(), 2);
    }
}

#[test]
fn single_op_is_not_a_kernel() {
    let b = FunctionBuilder::new("single");
    let x = b.parameter("x", F32, [4]);
    let mut f = b.finish(&[x.relu()]).expect("builds");
    let before = f.clone();
    let pass = SubgraphExtraction::default();
    assert!(!pass.run(&mut f).expect("runs"));
    assert_eq!(f, before);

    // A Broadcast alone, and a Constant with one op, are not kernels either.
    let b = FunctionBuilder::new("single_bcast");
    let x = b.parameter("x", F32, [4]);
    let c = b.constant(vec![1.0f32; 4], [4]);
    let mut f = b
        .finish(&[x.broadcast_to([3, 4]), c.relu()])
        .expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert!(report.kernels.is_empty());
}

#[test]
fn max_ops_splits_a_long_chain() {
    let b = FunctionBuilder::new("chain");
    let x = b.parameter("x", F32, [4]);
    let mut v = x;
    for _ in 0..10 {
        v = v.relu();
    }
    let mut f = b.finish(&[v]).expect("builds");
    let config = ExtractionConfig::default().with_max_ops(4);
    let report = extract_checked(&mut f, &config);
    let sizes: Vec<usize> = report.kernels.iter().map(|k| k.fused_nodes.len()).collect();
    assert_eq!(
        sizes,
        [2, 4, 4],
        "walking back from the result, in topological order"
    );
    assert_eq!(op_counts(&f)["Relu"], 10);

    let mut g = b_chain(3);
    let report = extract_checked(&mut g, &ExtractionConfig::default().with_max_ops(1));
    assert!(report.kernels.is_empty(), "max_ops below 2 disables fusion");
}

fn b_chain(n: usize) -> Function {
    let b = FunctionBuilder::new("chain");
    let mut v = b.parameter("x", F32, [4]);
    for _ in 0..n {
        v = v.abs();
    }
    b.finish(&[v]).expect("builds")
}

#[test]
fn constants_are_copied_not_live_ins() {
    // relu(x * c + 1): c is a [4] constant, 1 a scalar broadcast to [4].
    let b = FunctionBuilder::new("constants");
    let x = b.parameter("x", F32, [4]);
    let c = b.constant(vec![0.5f32, -1.0, 2.0, 3.0], [4]).named("c");
    let r = (x * c + 1.0).relu();
    let mut f = b.finish(&[r]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 1);
    let k = &report.kernels[0];
    assert_eq!(k.live_ins, 1);
    assert_eq!(k.copied_constants.len(), 2);
    assert_eq!(k.copied_constants[0], "c");
    assert_eq!(k.fused_nodes.len(), 4, "Multiply, Broadcast, Add, Relu");
    assert!(
        !f.nodes().any(|n| matches!(n.op(), Op::Constant(_))),
        "no constant left outside"
    );
    let b = body(f.node(k.node).expect("kernel"));
    let consts = b
        .nodes()
        .filter(|n| matches!(n.op(), Op::Constant(_)))
        .count();
    assert_eq!(consts, 2);
}

#[test]
fn a_constant_used_by_two_regions_is_copied_into_each() {
    let b = FunctionBuilder::new("shared_constant");
    let x = b.parameter("x", F32, [4]);
    let y = b.parameter("y", F32, [2, 4]);
    let c = b.constant(vec![1.0f32, 2.0, 3.0, 4.0], [4]).named("c");
    let small = (x + c).relu();
    let big = (y * c).abs();
    let mut f = b.finish(&[small, big]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 2);
    for k in &report.kernels {
        assert_eq!(k.copied_constants, ["c"]);
        assert_eq!(k.live_ins, 1);
    }
}

#[test]
fn a_constant_with_an_excluded_type_is_a_live_in() {
    let b = FunctionBuilder::new("excluded_constant");
    let x = b.parameter("x", F32, [4]);
    let c = b.constant(vec![1.0f32; 4], [4]);
    let mut f = b.finish(&[(x + c).relu()]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default().exclude("Constant"));
    assert_eq!(report.kernels.len(), 1);
    assert_eq!(report.kernels[0].live_ins, 2);
    assert!(report.kernels[0].copied_constants.is_empty());
}

#[test]
fn existing_names_and_kernels_are_respected() {
    // A second extraction after new nodes were added names its kernel FusedKernel_1.
    let mut f = halide_subgraph();
    extract_subgraphs(&mut f, &ExtractionConfig::default()).expect("runs");
    let k0 = kernels(&f)[0].id();
    let x = f.add_parameter("E", F32, [8]).expect("param");
    let a = f
        .add_node(
            Op::Binary(graphlift_ir::BinaryOp::Add),
            &[Output::new(k0, 0), x.into()],
        )
        .expect("add");
    let r = f
        .add_node(Op::Unary(graphlift_ir::UnaryOp::Abs), &[a.into()])
        .expect("abs");
    f.add_result(r.into(), None).expect("result");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 1);
    assert_eq!(report.kernels[0].name, "FusedKernel_1");
    assert_eq!(kernels(&f).len(), 2);
}

#[test]
fn constant_data_survives_in_the_body() {
    let b = FunctionBuilder::new("const_data");
    let x = b.parameter("x", F32, [2]);
    let c = b.constant(vec![3.0f32, 4.0], [2]);
    let mut f = b.finish(&[(x * c).abs()]).expect("builds");
    extract_checked(&mut f, &ExtractionConfig::default());
    let body = body(kernels(&f)[0]);
    let data: Vec<&TensorData> = body
        .nodes()
        .filter_map(|n| match n.op() {
            Op::Constant(d) => Some(&**d),
            _ => None,
        })
        .collect();
    assert_eq!(data, [&TensorData::F32(vec![3.0, 4.0])]);
}
