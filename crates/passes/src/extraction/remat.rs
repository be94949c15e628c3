//! Broadcast rematerialization: a region that reads a Broadcast from another region gets its
//! own copy of it, as XLA's fusion duplicates cheap producers into each consumer, so no region
//! exports a broadcast tensor for others to read back.

use std::collections::BTreeMap;

use graphlift_ir::{Function, NodeId, Op, Output};

use super::region::Region;
use super::SubgraphExtraction;
use crate::PassError;

/// A copy of `f` in which every Broadcast that a region exports to other regions has one
/// copy per reading region (each reading node of that region points at it), with the ids of
/// the copies; `None` when no region reads a Broadcast of another. A region that computes the
/// Broadcast's input itself gets no copy (a Broadcast's input stays outside its region).
/// Copies keep the Broadcast's name (suffixed), tags, metadata and creation site;
/// `"subgraph_extraction"` is added to their pass history. Uses by nodes outside every
/// region stay on the original, which its region still exports.
///
/// Common subexpression elimination merges identical Broadcasts, e.g. the `[1, 128, 1536]`
/// splat of GELU's `√2` in every layer of a transformer. Region formation then puts the
/// shared Broadcast into the first region that reaches it, which has to export it as a full
/// tensor, and every later region reads that tensor back as a live-in: a write and several
/// reads of a tensor that is one element wide. A Broadcast costs nothing inside a kernel
/// (its load repeats an element of its input), so every other region gets its own copy,
/// reading the Broadcast's small input instead.
///
/// # Errors
/// [`PassError::Ir`] if a copy cannot be made (a bug: the copy has the original's inputs).
pub(super) fn copy_shared_broadcasts(
    f: &Function,
    regions: &[Region],
) -> Result<Option<(Function, Vec<NodeId>)>, PassError> {
    let mut region_of = BTreeMap::new();
    for (r, region) in regions.iter().enumerate() {
        for &m in &region.members {
            region_of.insert(m, r);
        }
    }
    let mut g: Option<(Function, Vec<NodeId>)> = None;
    for (r, region) in regions.iter().enumerate() {
        for out in &region.outputs {
            let node = f.node(out.node)?;
            if !matches!(node.op(), Op::Broadcast(_)) {
                continue;
            }
            // Uses by other regions, grouped by region (deterministic order).
            let input_region = node.inputs().first().and_then(|i| region_of.get(&i.node));
            let mut readers: BTreeMap<usize, Vec<(NodeId, usize)>> = BTreeMap::new();
            for &(user, slot) in node.users(out.index) {
                match region_of.get(&user) {
                    Some(u) if *u != r && Some(u) != input_region => {
                        readers.entry(*u).or_default().push((user, slot));
                    }
                    _ => {}
                }
            }
            for uses in readers.values() {
                let (g, copies) = g.get_or_insert_with(|| (f.clone(), Vec::new()));
                let copy = g.import_node(node, node.inputs())?;
                g.record_pass(copy, SubgraphExtraction::NAME)?;
                for &(user, slot) in uses {
                    g.replace_input(user, slot, Output::new(copy, 0))?;
                }
                copies.push(copy);
            }
        }
    }
    Ok(g)
}
