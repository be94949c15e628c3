//! Shared machinery of the rewrite passes: running a rewrite on a copy so that a failure
//! leaves the function unchanged, replacing a node by a value with nGraph's provenance rule,
//! and recording pass history.

use std::collections::BTreeSet;

use graphlift_ir::{Function, NodeId, Op, Output, ProvenanceTags, TensorData};
use smallvec::SmallVec;

use crate::PassError;

/// Replaces the single-output node `old` by `value` everywhere, without pruning. The caller
/// records its pass on the producer of `value` (see [`record_pass_once`]).
///
/// Provenance follows nGraph's rule ([`Function::replace_node`]): `old`'s tags go to the
/// producer of `value` and to the replacement subgraph behind it. `bypassed` are the other
/// nodes of the removed subgraph, between `old` and the arguments it shares with its
/// replacement (the Constant inputs of a folded node, the `1` of `x * 1`, the inner
/// negation of `-(-x)`): nGraph collects their tags as well, so they go the same way,
/// after `old`'s (they are added to `old` first, which is replaced anyway). When `value` is one output of a multi-output node (which
/// `replace_node` cannot take, since the output lists differ), the rule is applied by hand:
/// the producer takes the tags, users and control dependents of `old` move to it; `old`
/// must then have no control dependencies of its own.
///
/// A replacement that would cut a `ReadVariable` off from what comes after `old`
/// ([`cuts_a_read`]) is not made: a read and an assign may be ordered only through the
/// data path the rewrite removes (`x - x -> 0` on a read feeding an assign).
///
/// # Errors
/// [`PassError::Ir`] from the IR (types differ, dangling ids, a cycle);
/// [`PassError::Broken`] if `old` has control dependencies and `value` is not output 0 of a
/// single-output node.
pub(crate) fn replace_by_value(
    g: &mut Function,
    old: NodeId,
    value: Output,
    bypassed: &[NodeId],
    pass: &'static str,
) -> Result<(), PassError> {
    if !g.is_used(old)? {
        // Dead already (an earlier rewrite took its users): pruning removes it, and
        // `replace_node` refuses a node nothing uses.
        return Ok(());
    }
    if cuts_a_read(g, old, value.node)? {
        return Ok(());
    }
    // The removed subgraph's tags, `old`'s first: `old` carries them into the replacement.
    let mut removed_tags = ProvenanceTags::new();
    for &b in bypassed {
        removed_tags.union_with(g.node(b)?.tags());
    }
    g.propagate_tags(old, &removed_tags)?;
    let producer = g.node(value.node)?;
    if value.index == 0 && producer.outputs().len() == 1 {
        g.replace_node_unpruned(old, value.node)?;
    } else {
        let old_node = g.node(old)?;
        if !old_node.other_deps().is_empty() {
            return Err(PassError::Broken {
                pass,
                message: format!(
                    "cannot replace `{}`, which has control dependencies, by an output of a \
                     multi-output node",
                    old_node.name()
                ),
            });
        }
        let tags = old_node.tags().clone();
        g.propagate_tags(value.node, &tags)?;
        g.replace_output(Output::new(old, 0), value)?;
        g.redirect_control_dependencies(old, value.node)?;
    }
    Ok(())
}

/// Whether replacing `old` by the node `new` could unorder a read and an assign: a
/// `ReadVariable` upstream of `old` (over inputs) that `new` does not reach, whose variable
/// an `Assign` downstream of `old` (over users and control dependents) writes. That assign
/// may be ordered after the read only through `old` (`x - x -> 0` on a read feeding an
/// assign). A read replaced by an equal read (CSE) is not: its control dependents move to
/// the other read. `false` at once for a function without assigns.
fn cuts_a_read(g: &Function, old: NodeId, new: NodeId) -> Result<bool, PassError> {
    let both_reads = [old, new].iter().all(|&id| {
        g.get(id)
            .is_some_and(|n| matches!(n.op(), Op::ReadVariable))
    });
    if both_reads || !g.nodes().any(|n| matches!(n.op(), Op::Assign)) {
        return Ok(false);
    }
    let upstream = |from: NodeId| -> Result<BTreeSet<NodeId>, PassError> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(g.node(id)?.inputs().iter().map(|o| o.node));
            }
        }
        Ok(seen)
    };
    let kept = upstream(new)?;
    let cut: BTreeSet<NodeId> = upstream(old)?
        .into_iter()
        .filter(|id| !kept.contains(id))
        .filter_map(|id| {
            g.variable_of(id).filter(|_| {
                g.get(id)
                    .is_some_and(|n| matches!(n.op(), Op::ReadVariable))
            })
        })
        .collect();
    if cut.is_empty() {
        return Ok(false);
    }
    let dependents = g.control_dependents();
    let mut seen = BTreeSet::new();
    let mut stack = vec![old];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let n = g.node(id)?;
        if matches!(n.op(), Op::Assign) && g.variable_of(id).is_some_and(|v| cut.contains(&v)) {
            return Ok(true);
        }
        stack.extend((0..n.outputs().len()).flat_map(|i| n.users(i).iter().map(|u| u.0)));
        stack.extend(dependents.get(id.index()).into_iter().flatten());
    }
    Ok(false)
}

/// Appends `pass` once to the pass history of every node of `touched` that is still in `g`
/// (a node rewritten several times by one run of a pass records it once).
///
/// # Errors
/// [`PassError::Ir`] only if the function is inconsistent.
pub(crate) fn record_pass_once(
    g: &mut Function,
    touched: &BTreeSet<NodeId>,
    pass: &'static str,
) -> Result<(), PassError> {
    for &id in touched {
        if g.get(id).is_some() {
            g.record_pass(id, pass)?;
        }
    }
    Ok(())
}

/// Runs `rewrite` on a copy of `f` and, when it reports a change, prunes dead nodes,
/// validates the copy and moves it into `f`. Returns what `rewrite` returned.
///
/// `f` is validated first, so `applies` and `rewrite` may assume a valid, acyclic function
/// (validation is remembered, so in a pipeline this costs nothing after the first pass).
/// `applies` looks at `f` without copying it: when it answers `false` the pass changes
/// nothing and no copy is made, which is the common case of a pass on a small graph. It may
/// answer `true` when `rewrite` then changes nothing (the copy is dropped), never `false`
/// when `rewrite` would change something; debug builds run `rewrite` anyway to check that.
///
/// # Errors
/// [`PassError::Ir`] if `f` does not validate; the rewrite's error; [`PassError::Broken`]
/// if the rewritten copy does not validate. On error `f` is unchanged.
pub(crate) fn rewrite_on_copy(
    f: &mut Function,
    pass: &'static str,
    applies: impl FnOnce(&Function) -> Result<bool, PassError>,
    rewrite: impl FnOnce(&mut Function) -> Result<bool, PassError>,
) -> Result<bool, PassError> {
    f.validate()?;
    if !applies(f)? {
        if cfg!(debug_assertions) {
            let changed = rewrite(&mut f.clone())?;
            debug_assert!(!changed, "`{pass}` changed a function it said it would not");
        }
        return Ok(false);
    }
    let mut g = f.clone();
    if !rewrite(&mut g)? {
        return Ok(false);
    }
    g.remove_dead_nodes();
    g.validate().map_err(|e| PassError::Broken {
        pass,
        message: format!("the rewritten function does not validate: {e}"),
    })?;
    *f = g;
    Ok(true)
}

/// The Broadcasts and the Constant behind a splat operand (usually one or two: inline).
pub(crate) type Path = SmallVec<[NodeId; 2]>;

/// The data of the Constant behind `o`, looking through Broadcasts, with the nodes on the
/// way (Broadcasts, then the Constant), when none of them has control dependencies.
pub(crate) fn splat(g: &Function, mut o: Output) -> Result<Option<(&TensorData, Path)>, PassError> {
    let mut path = Path::new();
    loop {
        let n = g.node(o.node)?;
        if !n.other_deps().is_empty() {
            return Ok(None);
        }
        path.push(n.id());
        match n.op() {
            Op::Constant(d) => return Ok(Some((d, path))),
            Op::Broadcast(_) => o = n.inputs()[0],
            _ => return Ok(None),
        }
    }
}
