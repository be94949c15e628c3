//! Graphviz DOT export: clusters for fused kernels, state (variables, their initializers,
//! assigns, sinks), edges, styling and escaping.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder, FusedKernel, Op, Output};
use proptest::prelude::*;

/// A kernel body computing (exp(p0) + p1, -p0), optionally with a nested kernel inside.
fn body(name: &str, nested: bool) -> Function {
    let b = FunctionBuilder::new(name);
    let p0 = b.parameter("p0", F32, [4]);
    let p1 = b.parameter("p1", F32, [4]);
    let s = (p0.exp() + p1).named("sum");
    let n = (-p0).named("neg");
    let mut f = b.finish(&[s, n]).unwrap();
    if nested {
        let inner = FunctionBuilder::new("inner_body");
        let q = inner.parameter("q", F32, [4]);
        let inner = inner.finish(&[q.tanh()]).unwrap();
        let k = f
            .add_node(
                Op::FusedKernel(Arc::new(FusedKernel { body: inner })),
                &[Output::from(f.parameters()[1])],
            )
            .unwrap();
        f.set_name(k, "inner").unwrap();
        f.add_result(k.into(), None).unwrap();
    }
    f
}

/// x, y -> kernel `fk` (two outputs) -> relu of output 1; `fk` also depends on `c`.
fn with_kernel(kernel_name: &str, nested: bool) -> (Function, Vec<usize>) {
    let b = FunctionBuilder::new("g");
    b.parameter("x", F32, [4]);
    b.parameter("y", F32, [4]);
    b.scalar(F32, 1.0).named("c");
    let mut f = b.finish(&[]).unwrap();
    let ids: Vec<_> = f.nodes().map(|n| n.id()).collect();
    let k = f
        .add_node(
            Op::FusedKernel(Arc::new(FusedKernel {
                body: body("fk_body", nested),
            })),
            &[ids[0].into(), ids[1].into()],
        )
        .unwrap();
    f.set_name(k, kernel_name).unwrap();
    let r = f
        .add_node(Op::Unary(graphlift_ir::UnaryOp::Relu), &[Output::new(k, 1)])
        .unwrap();
    f.add_result(Output::new(k, 0), Some("out0".into()))
        .unwrap();
    f.add_result(r.into(), Some("out1".into())).unwrap();
    f.add_control_dependency(k, ids[2]).unwrap();
    f.validate().unwrap();
    (
        f,
        vec![
            ids[0].index(),
            ids[1].index(),
            ids[2].index(),
            k.index(),
            r.index(),
        ],
    )
}

/// `true` when every line has balanced, properly escaped quotes (no quoted string spans
/// lines, so no raw newline from a name leaked into the output).
fn quotes_balanced(dot: &str) -> bool {
    dot.lines().all(|line| {
        let mut inside = false;
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' if inside => {
                    chars.next();
                }
                '"' => inside = !inside,
                _ => {}
            }
        }
        !inside
    })
}

/// Runs `dot -Tsvg` on the text: the SVG, or Graphviz's errors or warnings. Panics when
/// Graphviz is not installed (`./scripts/test.sh` installs it).
fn render_svg(dot: &str) -> Result<String, String> {
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot run Graphviz's `dot` ({e}): ./scripts/test.sh installs it")
        });
    let mut stdin = child.stdin.take().unwrap();
    let text = dot.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(text.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.success() && stderr.trim().is_empty() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(stderr)
    }
}

/// Asserts that Graphviz accepts `dot` and renders it.
fn assert_graphviz_accepts(dot: &str) {
    match render_svg(dot) {
        Ok(svg) => assert!(svg.contains("<svg"), "no SVG produced"),
        Err(e) => panic!("dot -Tsvg rejected the output: {e}\n{dot}"),
    }
}

#[test]
fn kernel_is_a_cluster_wired_to_outer_nodes() {
    let (f, ids) = with_kernel("fk", false);
    let (x, y, c, k, r) = (ids[0], ids[1], ids[2], ids[3], ids[4]);
    let dot = f.to_dot();
    assert!(dot.starts_with("digraph \"g\" {"), "{dot}");
    assert!(dot.contains("subgraph \"cluster_fk\" {"), "{dot}");
    assert!(dot.contains("label=\"fk\\nFusedKernel (3 ops)\";"), "{dot}");
    let Op::FusedKernel(kernel) = f.node_by_name("fk").unwrap().op() else {
        panic!("fk is a fused kernel");
    };
    let body = &kernel.body;
    let [p0, p1] = [body.parameters()[0].index(), body.parameters()[1].index()];
    let [r0, r1] = [body.results()[0].index(), body.results()[1].index()];
    // Outer producers into the body parameters.
    assert!(dot.contains(&format!("n{x} -> n{k}_{p0};")), "{dot}");
    assert!(dot.contains(&format!("n{y} -> n{k}_{p1};")), "{dot}");
    // Body results to the outer users, labelled with the output index when > 0.
    assert!(
        dot.contains(&format!("n{k}_{r1} -> n{r} [label=\"1\"];")),
        "{dot}"
    );
    assert!(
        dot.lines()
            .any(|l| l.trim().starts_with(&format!("n{k}_{r0} -> n")) && !l.contains("label")),
        "{dot}"
    );
    // Body-internal edges and nodes are inside the cluster.
    let cluster = &dot[dot.find("subgraph \"cluster_fk\"").unwrap()..];
    let cluster = &cluster[..cluster.find("\n  }").unwrap()];
    assert!(cluster.contains(&format!("n{k}_{p0} [label=\"p0\\nParameter\\nf32[4]\"")));
    assert!(
        cluster.contains("label=\"sum\\nAdd\\nf32[4]\""),
        "{cluster}"
    );
    assert!(
        !cluster.contains(&format!("n{x} ->")),
        "outer edge inside the cluster"
    );
    // The control dependency on `c` is dashed and ends at the cluster.
    assert!(
        dot.contains(&format!(
            "n{c} -> n{k}_{p0} [style=dashed, color=\"#8c8c8c\", lhead=\"cluster_fk\"];"
        )),
        "{dot}"
    );
    assert!(dot.contains("shape=invhouse"), "{dot}");
    assert!(dot.contains("shape=house"), "{dot}");
    assert!(
        dot.contains("style=\"filled,dashed\""),
        "body parameters are styled apart"
    );
    assert!(quotes_balanced(&dot), "{dot}");
    assert_graphviz_accepts(&dot);
}

#[test]
fn nested_kernels_are_nested_clusters() {
    let (f, _) = with_kernel("outer", true);
    let dot = f.to_dot();
    let outer = dot
        .find("subgraph \"cluster_outer\" {")
        .expect("outer cluster");
    let inner = dot
        .find("subgraph \"cluster_outer/inner\" {")
        .expect("inner cluster");
    assert!(outer < inner, "{dot}");
    assert!(
        dot.contains("label=\"inner\\nFusedKernel (1 op)\";"),
        "{dot}"
    );
    assert_eq!(dot.matches("subgraph ").count(), 2, "{dot}");
    assert!(quotes_balanced(&dot));
    assert_graphviz_accepts(&dot);
}

#[test]
fn names_are_escaped() {
    let nasty = "fk \"quoted\" back\\slash\nnew line\ttab\\";
    let (mut f, ids) = with_kernel(nasty, false);
    let x = f.nodes().nth(ids[0]).unwrap().id();
    f.set_name(x, "x\"; evil -> injected [color=red]; \"")
        .unwrap();
    let dot = f.to_dot();
    assert!(
        dot.contains(
            "subgraph \"cluster_fk \\\"quoted\\\" back\\\\slash\\nnew line\\\\x09tab\\\\\" {"
        ),
        "{dot}"
    );
    assert!(
        dot.contains("label=\"x\\\"; evil -> injected [color=red]; \\\"\\nParameter"),
        "{dot}"
    );
    assert!(!dot.contains("color=red]; \"\\n"), "{dot}");
    assert!(quotes_balanced(&dot), "{dot}");
    assert_graphviz_accepts(&dot);
}

#[test]
fn duplicate_kernel_names_across_levels_get_distinct_clusters() {
    // A body kernel named like the path of another cluster still gets its own cluster.
    let (f, _) = with_kernel("outer/inner", false);
    let mut g = f.clone();
    let (h, _) = with_kernel("outer", true);
    // Merge: add h's kernel into g so both `outer/inner` and `outer` + nested `inner` exist.
    let kernel = h
        .nodes()
        .find(|n| matches!(n.op(), Op::FusedKernel(_)))
        .unwrap()
        .clone();
    let ins: Vec<Output> = g.parameters().iter().map(|&p| p.into()).collect();
    let k = g.import_node(&kernel, &ins).unwrap();
    g.add_result(k.into(), None).unwrap();
    let dot = g.to_dot();
    assert!(dot.contains("subgraph \"cluster_outer/inner\" {"), "{dot}");
    assert!(
        dot.contains("subgraph \"cluster_outer/inner#2\" {"),
        "{dot}"
    );
    assert_graphviz_accepts(&dot);
}

#[test]
fn state_is_drawn_with_cylinders_writes_edges_and_sinks() {
    // w = variable(exp(0)); assign(w, w + 1) (a sink); the result reads w after it.
    let b = FunctionBuilder::new("counter");
    let w = b.variable("w", b.scalar(F32, 0.0).exp().named("e"));
    b.assign(w, (w + 1.0).named("next")).named("tick");
    let f = b.finish(&[w]).unwrap();
    let at = |name: &str| f.node_by_name(name).unwrap().id().index();
    let (var, tick, next) = (at("w"), at("tick"), at("next"));
    let result_read = f.node(f.results()[0]).unwrap().inputs()[0].node.index();
    let dot = f.to_dot();

    // The variable is a cylinder; its initializer a cluster whose Result feeds it.
    assert!(
        dot.contains(&format!(
            "n{var} [label=\"w\\nVariable\\nf32[]\", shape=cylinder,"
        )),
        "{dot}"
    );
    let Op::Variable(v) = f.node_by_name("w").unwrap().op() else {
        panic!("w is a Variable");
    };
    let init_result = v.initializer.results()[0].index();
    let cluster = &dot[dot
        .find("subgraph \"cluster_w/initializer\" {")
        .expect("cluster")..];
    let cluster = &cluster[..cluster.find("\n  }").unwrap()];
    assert!(
        cluster.contains("label=\"w initializer (2 ops)\";"),
        "{cluster}"
    );
    assert!(cluster.contains("label=\"e\\nExp\\nf32[]\""), "{cluster}");
    assert!(
        dot.contains(&format!(
            "n{var}_{init_result} -> n{var} [style=dotted, label=\"init\"];"
        )),
        "{dot}"
    );
    // The assign's edge to the variable is a bold red `writes` pointing at the variable;
    // its value's edge and the reads' edges are plain.
    assert!(
        dot.contains(&format!(
            "n{var} -> n{tick} [label=\"writes\", color=\"#c0392b\", \
             fontcolor=\"#c0392b\", style=bold, dir=back];"
        )),
        "{dot}"
    );
    assert_eq!(dot.matches("writes").count(), 1, "{dot}");
    assert!(dot.contains(&format!("n{next} -> n{tick};")), "{dot}");
    assert!(dot.contains(&format!("n{var} -> n{result_read};")), "{dot}");
    // The sink has a double border and says so; the read after it waits for it.
    let tick_line = dot
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("n{tick} [")))
        .unwrap();
    assert!(tick_line.contains("\\n(sink)\""), "{tick_line}");
    assert!(tick_line.contains("peripheries=2"), "{tick_line}");
    assert_eq!(dot.matches("peripheries=2").count(), 1, "{dot}");
    assert!(
        dot.contains(&format!(
            "n{tick} -> n{result_read} [style=dashed, color=\"#8c8c8c\"];"
        )),
        "{dot}"
    );
    assert!(quotes_balanced(&dot), "{dot}");
    assert_graphviz_accepts(&dot);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Random stateful computations export to DOT that Graphviz accepts, with one cylinder
    /// and one initializer cluster per variable, one `writes` edge per assign and one
    /// double border per sink.
    #[test]
    fn random_stateful_functions_export_to_valid_dot(s in common::random::stateful()) {
        let f = s.function.expect("the builder's function");
        let count = |op: &str| f.nodes().filter(|n| n.op().type_name() == op).count();
        let dot = f.to_dot();
        prop_assert!(quotes_balanced(&dot), "{}", dot);
        prop_assert_eq!(dot.matches("shape=cylinder").count(), count("Variable"));
        prop_assert_eq!(dot.matches("/initializer\" {").count(), count("Variable"));
        prop_assert_eq!(dot.matches("label=\"writes\"").count(), count("Assign"));
        prop_assert_eq!(dot.matches("peripheries=2").count(), f.sinks().len());
        if let Err(e) = render_svg(&dot) {
            prop_assert!(false, "dot -Tsvg rejected the output: {}\n{}", e, dot);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random functions (weird names included) export to DOT that Graphviz accepts, with
    /// one cluster per fused kernel.
    #[test]
    fn random_functions_export_to_valid_dot(f in common::random::function()) {
        fn kernels(f: &Function) -> usize {
            f.nodes()
                .map(|n| match n.op() {
                    Op::FusedKernel(k) => 1 + kernels(&k.body),
                    _ => 0,
                })
                .sum()
        }
        let dot = f.to_dot();
        prop_assert!(quotes_balanced(&dot), "{}", dot);
        prop_assert_eq!(dot.matches("\n  subgraph \"cluster_").count()
            + dot.matches("\n    subgraph \"cluster_").count()
            + dot.matches("\n      subgraph \"cluster_").count(), kernels(&f));
        if let Err(e) = render_svg(&dot) {
            prop_assert!(false, "dot -Tsvg rejected the output: {}\n{}", e, dot);
        }
    }
}
