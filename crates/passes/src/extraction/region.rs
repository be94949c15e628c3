//! Region formation: greedy growth of convex, single-iteration-space regions.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashSet};

use graphlift_ir::{Function, Node, NodeId, Op, Output, Shape};

use super::graph::GraphView;
use super::outside::{self, OutsideNode, Rejections};
use super::ExtractionConfig;
use crate::PassError;

/// A region that will become one fused kernel.
#[derive(Debug, Clone)]
pub(super) struct Region {
    /// The node the region grew from (its creation site goes to the kernel).
    pub seed: NodeId,
    /// The non-Constant nodes, in topological order.
    pub members: Vec<NodeId>,
    /// Constants copied into the body, in order of first use.
    pub constants: Vec<NodeId>,
    /// Values the region reads from outside, in order of first use, deduplicated.
    pub live_ins: Vec<Output>,
    /// Values of the region used outside it, in topological order.
    pub outputs: Vec<Output>,
    /// Control dependencies of members on outside nodes, in order of first appearance.
    pub ext_deps: Vec<NodeId>,
    /// Members that some live node has a control dependency on.
    pub ctrl_targets: Vec<NodeId>,
}

/// Forms every region of `f`, walking back from the results (seeds in reverse topological
/// order) and contracting each region in `view` as soon as it is accepted. Returns the
/// regions in a topological order of the rewritten graph. A region of fewer than 2 nodes, or
/// without outputs (live only through control dependencies), is left alone; its nodes stay
/// available to later regions. Also returns the computing nodes left outside every region,
/// with the reason for each.
pub(super) fn form_regions(
    f: &Function,
    view: &mut GraphView,
    config: &ExtractionConfig,
) -> Result<(Vec<Region>, Vec<OutsideNode>), PassError> {
    let mut assigned = vec![false; view.len()];
    let mut rejected = Rejections::new(view.len());
    let mut regions = Vec::new();
    let seeds: Vec<NodeId> = view.order().iter().rev().copied().collect();
    for seed in seeds {
        if assigned[seed.index()] || compute_node(f, seed, config).is_none() {
            continue;
        }
        let members = grow(f, view, config, &assigned, &mut rejected, seed);
        let region = describe(f, view, config, seed, members)?;
        let fewest = if config.single_op_kernels && config.max_ops >= 2 {
            1
        } else {
            2
        };
        let is_kernel = region.members.len() >= fewest && !region.outputs.is_empty();
        if is_kernel {
            view.contract(&region.members);
        }
        for &m in &region.members {
            assigned[m.index()] |= is_kernel;
            view.set_in_region(m, false);
        }
        if is_kernel {
            regions.push(region);
        }
    }
    regions.sort_by_key(|r| r.members.first().map_or(0, |&m| view.rank(m)));
    let outside = outside::classify(f, view, config, &assigned, &rejected);
    Ok((regions, outside))
}

/// The node `id` if it is a fusible, single-output, non-Constant node.
fn compute_node<'f>(f: &'f Function, id: NodeId, config: &ExtractionConfig) -> Option<&'f Node> {
    f.get(id).filter(|n| {
        config.is_fusible(f, n) && !matches!(n.op(), Op::Constant(_)) && n.outputs().len() == 1
    })
}

/// Whether the Constant `n` may be copied into a region read by a node that is (or is not)
/// a Broadcast, in a region of shape `shape`.
fn copyable_constant(
    f: &Function,
    n: &Node,
    config: &ExtractionConfig,
    reader_is_broadcast: bool,
    shape: &Shape,
) -> bool {
    matches!(n.op(), Op::Constant(_))
        && config.is_fusible(f, n)
        && n.other_deps().is_empty()
        && (reader_is_broadcast || n.output_type().shape == *shape)
}

fn is_broadcast(f: &Function, id: NodeId) -> bool {
    f.get(id)
        .is_some_and(|n| matches!(n.op(), Op::Broadcast(_)))
}

/// Grows the region of `seed` greedily: candidates (unassigned fusible neighbours of the
/// same shape) are tried highest rank first, walking back from the seed; a candidate that
/// would break convexity or the Broadcast rule is set aside and tried again once the region
/// has grown. Stops at `config.max_ops` members. Leaves the members marked in `view`;
/// records in `rejected` why candidates were left out.
fn grow(
    f: &Function,
    view: &mut GraphView,
    config: &ExtractionConfig,
    assigned: &[bool],
    rejected: &mut Rejections,
    seed: NodeId,
) -> Vec<NodeId> {
    let Some(shape) = f.get(seed).map(|n| n.output_type().shape.clone()) else {
        return Vec::new();
    };
    let max_ops = config.max_ops.max(1);
    let mut members = vec![seed];
    view.set_in_region(seed, true);
    let (mut lo, mut hi) = (view.rank(seed), view.rank(seed));
    let mut frontier: BTreeSet<(Reverse<usize>, NodeId)> = BTreeSet::new();
    let mut set_aside: Vec<NodeId> = Vec::new();
    let mut grew = false;
    let ctx = Ctx {
        f,
        config,
        assigned,
        shape: &shape,
    };
    ctx.push_neighbours(view, seed, &mut frontier);
    while members.len() < max_ops {
        let Some((_, c)) = frontier.pop_first() else {
            if !grew || set_aside.is_empty() {
                break;
            }
            grew = false;
            frontier.extend(set_aside.drain(..).map(|c| (Reverse(view.rank(c)), c)));
            continue;
        };
        if view.in_region(c) {
            continue;
        }
        if !broadcast_rule_holds(f, view, c) {
            rejected.broadcast(c);
            set_aside.push(c);
            continue;
        }
        if !view.keeps_convex(c, lo, hi) {
            rejected.cycle(c);
            set_aside.push(c);
            continue;
        }
        view.set_in_region(c, true);
        members.push(c);
        lo = lo.min(view.rank(c));
        hi = hi.max(view.rank(c));
        grew = true;
        ctx.push_neighbours(view, c, &mut frontier);
    }
    if members.len() >= max_ops {
        let left: Vec<NodeId> = frontier.iter().map(|&(_, c)| c).chain(set_aside).collect();
        let left: Vec<NodeId> = left.into_iter().filter(|&c| !view.in_region(c)).collect();
        if !left.is_empty() {
            for &c in left.iter().chain(&members) {
                rejected.cap(c);
            }
        }
    }
    members.sort_by_key(|&m| view.topo_pos(m));
    members
}

/// What growth needs to know about the region besides `view`.
struct Ctx<'a> {
    f: &'a Function,
    config: &'a ExtractionConfig,
    assigned: &'a [bool],
    shape: &'a Shape,
}

impl Ctx<'_> {
    /// Adds the candidates next to the new member `m`: its producers and its users that
    /// are not Broadcasts, none for a Broadcast (its input stays outside; its other users
    /// each get a copy of it, so joining them saves nothing, and two regions that share only
    /// a Broadcast, as common-subexpression elimination leaves the bounds of every ReLU6 of
    /// a network, are independent: joined, one kernel became the epilogue of one producer and
    /// read the other producer's whole result back from memory).
    fn push_neighbours(
        &self,
        view: &GraphView,
        m: NodeId,
        frontier: &mut BTreeSet<(Reverse<usize>, NodeId)>,
    ) {
        let Some(node) = self.f.get(m) else { return };
        if matches!(node.op(), Op::Broadcast(_)) {
            return;
        }
        let producers = node.inputs().iter().map(|o| o.node);
        let users = (0..node.outputs().len())
            .flat_map(|i| node.users(i).iter().map(|&(u, _)| u))
            .filter(|&u| !is_broadcast(self.f, u));
        for c in producers.chain(users) {
            if self.is_candidate(view, c) {
                frontier.insert((Reverse(view.rank(c)), c));
            }
        }
    }

    fn is_candidate(&self, view: &GraphView, c: NodeId) -> bool {
        view.is_live(c)
            && !self.assigned[c.index()]
            && !view.in_region(c)
            && compute_node(self.f, c, self.config)
                .is_some_and(|n| n.output_type().shape == *self.shape)
    }
}

/// A Broadcast's input stays outside its region: `c` may join unless it is a Broadcast
/// whose input is in the region, or it feeds a Broadcast in the region.
fn broadcast_rule_holds(f: &Function, view: &GraphView, c: NodeId) -> bool {
    let Some(node) = f.get(c) else { return false };
    if matches!(node.op(), Op::Broadcast(_)) && node.inputs().iter().any(|o| view.in_region(o.node))
    {
        return false;
    }
    !(0..node.outputs().len())
        .flat_map(|i| node.users(i))
        .any(|&(u, _)| view.in_region(u) && is_broadcast(f, u))
}

/// Works out the boundary of the region `members` (marked in `view`, sorted topologically).
fn describe(
    f: &Function,
    view: &GraphView,
    config: &ExtractionConfig,
    seed: NodeId,
    members: Vec<NodeId>,
) -> Result<Region, PassError> {
    let shape = f.node(seed)?.output_type().shape.clone();
    let mut constants = Vec::new();
    let mut live_ins = Vec::new();
    let mut outputs = Vec::new();
    let mut ext_deps = Vec::new();
    let mut seen_constants = HashSet::new();
    let mut seen_live_ins = HashSet::new();
    let mut seen_deps = HashSet::new();
    for &m in &members {
        let node = f.node(m)?;
        let reader_is_broadcast = matches!(node.op(), Op::Broadcast(_));
        for &o in node.inputs() {
            if view.in_region(o.node) {
                continue;
            }
            let producer = f.node(o.node)?;
            if copyable_constant(f, producer, config, reader_is_broadcast, &shape) {
                if seen_constants.insert(o.node) {
                    constants.push(o.node);
                }
            } else if seen_live_ins.insert(o) {
                live_ins.push(o);
            }
        }
        for &d in node.other_deps() {
            if !view.in_region(d) && seen_deps.insert(d) {
                ext_deps.push(d);
            }
        }
        for i in 0..node.outputs().len() {
            let used_outside = node
                .users(i)
                .iter()
                .any(|&(u, _)| view.is_live(u) && !view.in_region(u));
            if used_outside {
                outputs.push(Output::new(m, i));
            }
        }
    }
    let ctrl_targets = members
        .iter()
        .copied()
        .filter(|&m| view.is_ctrl_target(m))
        .collect();
    Ok(Region {
        seed,
        members,
        constants,
        live_ins,
        outputs,
        ext_deps,
        ctrl_targets,
    })
}
