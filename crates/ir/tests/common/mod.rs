//! Helpers shared by the integration tests.

#![allow(dead_code)]

pub mod random;

use graphlift_ir::{Function, Node, Op, TensorData};

/// Checks that `a` and `b` are the same function up to node id renumbering: same name,
/// same node names in the same arena order, and for each node the same op and attributes
/// (constants compared bit for bit, fused kernel bodies recursively), inputs (by producer
/// name and output index), output types, metadata, provenance tags in order, pass history,
/// creation site and control dependencies (by name, in order), variable initializers
/// recursively; same parameter, result and sink order. Returns the first difference.
pub fn same_structure(a: &Function, b: &Function) -> Result<(), String> {
    let ctx = format!("function `{}`", a.name());
    if a.name() != b.name() {
        return Err(format!("{ctx}: name differs from `{}`", b.name()));
    }
    let names = |f: &Function| f.nodes().map(|n| n.name().to_string()).collect::<Vec<_>>();
    if names(a) != names(b) {
        return Err(format!(
            "{ctx}: node names/order differ:\n{:?}\n{:?}",
            names(a),
            names(b)
        ));
    }
    let list = |f: &Function, ids: &[graphlift_ir::NodeId]| {
        ids.iter()
            .map(|&id| f.node(id).map(|n| n.name().to_string()).unwrap_or_default())
            .collect::<Vec<_>>()
    };
    if list(a, a.parameters()) != list(b, b.parameters()) {
        return Err(format!("{ctx}: parameters differ"));
    }
    if list(a, a.results()) != list(b, b.results()) {
        return Err(format!("{ctx}: results differ"));
    }
    if list(a, a.sinks()) != list(b, b.sinks()) {
        return Err(format!(
            "{ctx}: sinks differ: {:?} vs {:?}",
            list(a, a.sinks()),
            list(b, b.sinks())
        ));
    }
    for na in a.nodes() {
        let nb = b
            .node_by_name(na.name())
            .ok_or_else(|| format!("{ctx}: no node `{}`", na.name()))?;
        same_node(a, na, b, nb).map_err(|e| format!("{ctx} / node `{}`: {e}", na.name()))?;
    }
    Ok(())
}

fn same_node(fa: &Function, a: &Node, fb: &Function, b: &Node) -> Result<(), String> {
    same_op(a.op(), b.op())?;
    let inputs = |f: &Function, n: &Node| {
        n.inputs()
            .iter()
            .map(|o| (f.node(o.node).map(|p| p.name().to_string()).ok(), o.index))
            .collect::<Vec<_>>()
    };
    if inputs(fa, a) != inputs(fb, b) {
        return Err(format!("inputs {:?} vs {:?}", inputs(fa, a), inputs(fb, b)));
    }
    if a.outputs() != b.outputs() {
        return Err(format!("outputs {:?} vs {:?}", a.outputs(), b.outputs()));
    }
    if a.metadata() != b.metadata() {
        return Err(format!("metadata {:?} vs {:?}", a.metadata(), b.metadata()));
    }
    let tags = |n: &Node| n.tags().iter().map(str::to_string).collect::<Vec<_>>();
    if tags(a) != tags(b) {
        return Err(format!("tags {:?} vs {:?}", tags(a), tags(b)));
    }
    if a.pass_history() != b.pass_history() {
        return Err(format!(
            "pass history {:?} vs {:?}",
            a.pass_history(),
            b.pass_history()
        ));
    }
    if a.creation_site() != b.creation_site() {
        return Err(format!(
            "creation site {} vs {}",
            a.creation_site(),
            b.creation_site()
        ));
    }
    let deps = |f: &Function, n: &Node| {
        n.other_deps()
            .iter()
            .map(|&d| f.node(d).map(|p| p.name().to_string()).ok())
            .collect::<Vec<_>>()
    };
    if deps(fa, a) != deps(fb, b) {
        return Err(format!(
            "control deps {:?} vs {:?}",
            deps(fa, a),
            deps(fb, b)
        ));
    }
    Ok(())
}

fn same_op(a: &Op, b: &Op) -> Result<(), String> {
    match (a, b) {
        (Op::Constant(x), Op::Constant(y)) => {
            if same_bits(x, y) {
                Ok(())
            } else {
                Err(format!("constant data {x:?} vs {y:?}"))
            }
        }
        (Op::FusedKernel(x), Op::FusedKernel(y)) => {
            same_structure(&x.body, &y.body).map_err(|e| format!("kernel body: {e}"))
        }
        (Op::Variable(x), Op::Variable(y)) => {
            same_structure(&x.initializer, &y.initializer).map_err(|e| format!("initializer: {e}"))
        }
        (Op::Constant(_) | Op::FusedKernel(_) | Op::Variable(_), _) => {
            Err(format!("op {a} vs {b}"))
        }
        _ if a == b => Ok(()),
        _ => Err(format!("op {a} vs {b}")),
    }
}

/// Element-wise bit equality (so NaN payloads and -0.0 count).
pub fn same_bits(a: &TensorData, b: &TensorData) -> bool {
    a.same_bits(b)
}
