//! Rewriting accepted [`FusionScopesResult`]s into the function: the framework's own checks
//! of a result's boundary, then nGraph's `replace_node` with the inner nodes' provenance and
//! the pass history `scope_fusion:<pass name>`.

use std::collections::HashSet;

use graphlift_ir::{Function, NodeId, Op, Output, ProvenanceTags};

use super::pass::{FusedInput, FusionScopesResult, StructureMismatch};
use crate::PassError;

/// The metadata key a fused node records its scope's full name under.
pub const SCOPE_KEY: &str = "scope_fusion.scope";

/// Checks that `r` describes a rewrite of scope nodes `scope` of `f` that keeps `f` a DAG
/// and computes nothing twice: its inner nodes are in the scope, stateless and free of
/// control dependencies; its outputs are inner nodes' values, and no other inner value is
/// used outside the inner nodes (a gradient graph's backward nodes reading the forward
/// block's values keep the block unfused); its inputs are not inner values and do not
/// depend on its outputs.
pub(crate) fn check_result(
    f: &Function,
    scope: &HashSet<NodeId>,
    r: &FusionScopesResult,
) -> Result<(), StructureMismatch> {
    let inner: HashSet<NodeId> = r.inner_nodes.iter().copied().collect();
    let bad = |why: String| Err(StructureMismatch::new(why));
    if let Some(n) = r.inner_nodes.iter().find(|n| !scope.contains(n)) {
        return bad(format!("inner node {n} is outside the scope"));
    }
    for &id in &r.inner_nodes {
        let n = f
            .node(id)
            .map_err(|e| StructureMismatch::new(e.to_string()))?;
        if n.op().is_stateful() || !n.other_deps().is_empty() {
            return bad(format!("inner node `{}` is ordered by state", n.name()));
        }
    }
    let deps: HashSet<NodeId> = f.nodes().flat_map(|n| n.other_deps().to_vec()).collect();
    if let Some(id) = r
        .inner_nodes
        .iter()
        .find(|n| deps.contains(n) || f.sinks().contains(n))
    {
        return bad(format!("inner node {id} orders other nodes"));
    }
    if r.outputs.is_empty() {
        return bad("the result replaces no value".into());
    }
    if let Some(o) = r.outputs.iter().find(|o| !inner.contains(&o.node)) {
        return bad(format!("output {} is not an inner node's value", o.node));
    }
    let replaced: HashSet<Output> = r.outputs.iter().copied().collect();
    for &id in &r.inner_nodes {
        let n = f
            .node(id)
            .map_err(|e| StructureMismatch::new(e.to_string()))?;
        for i in 0..n.outputs().len() {
            let outside = n.users(i).iter().find(|(u, _)| !inner.contains(u));
            if let (Some(&(u, _)), false) = (outside, replaced.contains(&Output::new(id, i))) {
                let user = f
                    .get(u)
                    .map_or_else(|| u.to_string(), |x| x.name().to_string());
                return bad(format!(
                    "inner value `{}` is also used by `{user}` outside the fused op (kept, it would be computed twice)",
                    n.name()
                ));
            }
        }
    }
    let sources: Vec<Output> = r.inputs.iter().flat_map(FusedInput::sources).collect();
    if let Some(i) = sources.iter().find(|i| inner.contains(&i.node)) {
        return bad(format!("input {} is an inner node's value", i.node));
    }
    let outs: HashSet<NodeId> = r.outputs.iter().map(|o| o.node).collect();
    if depends_on(f, &sources, &outs) {
        return bad("an input depends on a value the fused op replaces".into());
    }
    Ok(())
}

/// Whether any of `from` is computed from a node of `targets`.
fn depends_on(f: &Function, from: &[Output], targets: &HashSet<NodeId>) -> bool {
    let mut seen = HashSet::new();
    let mut stack: Vec<NodeId> = from.iter().map(|o| o.node).collect();
    while let Some(id) = stack.pop() {
        if targets.contains(&id) {
            return true;
        }
        if seen.insert(id) {
            if let Some(n) = f.get(id) {
                stack.extend(n.inputs().iter().map(|o| o.node));
            }
        }
    }
    false
}

/// A result accepted for rewriting, with its scope and pass.
pub(crate) struct Accepted {
    pub scope: String,
    pub pass: String,
    pub result: FusionScopesResult,
}

/// Adds every accepted result's node, then points the replaced values' users at them
/// (creating all before replacing any, so a fused op reading another's output is rewired
/// too), then removes the dead nodes. Returns the fused nodes' names, in order.
///
/// # Errors
/// [`PassError::Ir`] when a fused op does not fit its inputs or outputs (a pass bug); the
/// caller works on a copy.
pub(crate) fn apply(f: &mut Function, accepted: &[Accepted]) -> Result<Vec<String>, PassError> {
    let mut created = Vec::with_capacity(accepted.len());
    for a in accepted {
        let r = &a.result;
        let mut made = Vec::new();
        let inputs = r
            .inputs
            .iter()
            .map(|i| materialize(f, i, &mut made))
            .collect::<Result<Vec<_>, _>>()?;
        let id = f.add_node(r.op.clone(), &inputs)?;
        let node = f.node(id)?;
        let types: Vec<_> = r
            .outputs
            .iter()
            .map(|&o| f.output_type(o).cloned())
            .collect::<Result<_, _>>()?;
        if node.outputs() != types.as_slice() {
            return Err(PassError::Broken {
                pass: super::PASS_NAME,
                message: format!(
                    "pass `{}` made a {} for scope `{}` whose outputs do not match the values it replaces",
                    a.pass,
                    r.op.type_name(),
                    a.scope
                ),
            });
        }
        let name = free_name(f, &r.name);
        f.set_name(id, name.clone())?;
        let mut tags = ProvenanceTags::new();
        for &n in &r.inner_nodes {
            tags.union_with(f.node(n)?.tags());
        }
        let history = format!("{}:{}", super::PASS_NAME, a.pass);
        for &m in &made {
            f.propagate_tags(m, &tags)?;
            f.record_pass(m, &history)?;
        }
        f.propagate_tags(id, &tags)?;
        f.record_pass(id, &history)?;
        f.set_metadata(id, SCOPE_KEY, a.scope.clone())?;
        created.push((id, name));
    }
    for (a, &(id, _)) in accepted.iter().zip(&created) {
        let outs = &a.result.outputs;
        let whole = outs.len() == 1
            && outs[0].index == 0
            && f.node(outs[0].node)?.outputs().len() == 1
            && f.is_used(outs[0].node)?;
        if whole {
            f.replace_node_unpruned(outs[0].node, id)?;
        } else {
            for (i, &o) in outs.iter().enumerate() {
                f.replace_output(o, Output::new(id, i))?;
            }
        }
    }
    f.remove_dead_nodes();
    Ok(created.into_iter().map(|(_, n)| n).collect())
}

/// The value a [`FusedInput`] stands for, adding the nodes it needs; the nodes of
/// [`FusedInput::Node`]s are pushed to `made` (they take the fused node's provenance).
fn materialize(
    f: &mut Function,
    input: &FusedInput,
    made: &mut Vec<NodeId>,
) -> Result<Output, PassError> {
    Ok(match input {
        FusedInput::Value(o) => *o,
        FusedInput::Constant(data, shape) => f.add_constant(data.clone(), shape.clone())?.into(),
        FusedInput::Reshape(o, shape) => f.add_node(Op::Reshape(shape.clone()), &[*o])?.into(),
        FusedInput::Broadcast(o, shape) => f.add_node(Op::Broadcast(shape.clone()), &[*o])?.into(),
        FusedInput::Node(op, inputs) => {
            let ins = inputs
                .iter()
                .map(|i| materialize(f, i, made))
                .collect::<Result<Vec<_>, _>>()?;
            let id = f.add_node(op.clone(), &ins)?;
            made.push(id);
            id.into()
        }
    })
}

/// `base` if no node has it, else `base_1`, `base_2`, ...
fn free_name(f: &Function, base: &str) -> String {
    let base = if base.is_empty() {
        "scope_fusion"
    } else {
        base
    };
    if f.node_by_name(base).is_none() {
        return base.to_string();
    }
    (1..)
        .map(|k| format!("{base}_{k}"))
        .find(|n| f.node_by_name(n).is_none())
        .unwrap_or_default()
}
