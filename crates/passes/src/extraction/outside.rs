//! Why a node stayed outside every fused kernel: the reasons region formation records and
//! the classification of the nodes left over.

use std::fmt;

use graphlift_ir::{ElementType, Function, NodeId, Op};

use super::graph::GraphView;
use super::{ExtractionConfig, STOP_FUSION_KEY};

/// Why a computing node was not fused into any kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutsideReason {
    /// Its op is never fused (not elementwise nor a Broadcast, e.g. an existing
    /// `FusedKernel`, or it has several outputs).
    OpNotFusible {
        /// The op's type name.
        op: String,
    },
    /// Its op type is in [`ExtractionConfig::excluded_ops`].
    OpExcluded {
        /// The op's type name.
        op: String,
    },
    /// It reads or writes an element type the backend's fused kernels do not lower
    /// ([`ExtractionConfig::element_types`]); it runs on its own (reference) kernel.
    ElementType {
        /// The first such type.
        element_type: ElementType,
    },
    /// It carries the `stop_fusion` barrier ([`STOP_FUSION_KEY`]).
    StopFusion,
    /// Joining a neighbouring region would have created a cycle (a path leaving and
    /// re-entering the region).
    WouldCreateCycle,
    /// The neighbouring region was full ([`ExtractionConfig::max_ops`]).
    SizeCap {
        /// The cap in force.
        max_ops: usize,
    },
    /// Its region would hold it alone: no neighbour could be fused with it.
    Alone,
    /// Its fusible neighbours compute over another iteration space (output shape), or a
    /// Broadcast between them must stay outside the region.
    DifferentIterationSpace,
}

impl fmt::Display for OutsideReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutsideReason::OpNotFusible { op } => write!(f, "op `{op}` is not fusible"),
            OutsideReason::OpExcluded { op } => {
                write!(f, "op `{op}` is excluded by the extraction configuration")
            }
            OutsideReason::ElementType { element_type } => write!(
                f,
                "element type {element_type}: fused kernels do not lower it (runs on its \
                 reference kernel)"
            ),
            OutsideReason::StopFusion => write!(f, "stop_fusion barrier ({STOP_FUSION_KEY})"),
            OutsideReason::WouldCreateCycle => write!(f, "fusing it would create a cycle"),
            OutsideReason::SizeCap { max_ops } => {
                write!(f, "size cap: the kernel reached max_ops = {max_ops}")
            }
            OutsideReason::Alone => write!(f, "alone: a region of one op"),
            OutsideReason::DifferentIterationSpace => {
                write!(f, "different iteration space from its fusible neighbours")
            }
        }
    }
}

/// A computing node (not a Parameter, Result, Constant or Variable) that no kernel contains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideNode {
    /// The node, in the rewritten function.
    pub node: NodeId,
    /// Its name.
    pub name: String,
    /// Its op type name.
    pub op: String,
    /// Why it was not fused.
    pub reason: OutsideReason,
}

/// What growth observed about candidates it could not take, by node index.
#[derive(Debug, Clone)]
pub(super) struct Rejections {
    cycle: Vec<bool>,
    cap: Vec<bool>,
    broadcast: Vec<bool>,
}

impl Rejections {
    /// No rejections, for a view of `len` node slots.
    pub(super) fn new(len: usize) -> Rejections {
        Rejections {
            cycle: vec![false; len],
            cap: vec![false; len],
            broadcast: vec![false; len],
        }
    }
    /// `id` was set aside because joining would break convexity.
    pub(super) fn cycle(&mut self, id: NodeId) {
        self.cycle[id.index()] = true;
    }
    /// `id` was left out because the region reached its size cap.
    pub(super) fn cap(&mut self, id: NodeId) {
        self.cap[id.index()] = true;
    }
    /// `id` was set aside by the Broadcast rule.
    pub(super) fn broadcast(&mut self, id: NodeId) {
        self.broadcast[id.index()] = true;
    }
}

/// The live computing nodes of `f` that are not `assigned` to a kernel, with the reason for
/// each, in topological order.
pub(super) fn classify(
    f: &Function,
    view: &GraphView,
    config: &ExtractionConfig,
    assigned: &[bool],
    rejected: &Rejections,
) -> Vec<OutsideNode> {
    let mut out = Vec::new();
    for &id in view.order() {
        let Some(n) = f.get(id) else { continue };
        let not_computing = matches!(
            n.op(),
            Op::Parameter | Op::Result | Op::Constant(_) | Op::Variable(_)
        );
        if assigned[id.index()] || not_computing {
            continue;
        }
        let op = n.op().type_name().to_string();
        let reason = if !(n.op().is_elementwise() || matches!(n.op(), Op::Broadcast(_)))
            || n.outputs().len() != 1
        {
            OutsideReason::OpNotFusible { op: op.clone() }
        } else if let Some(element_type) = config.unfusible_type(f, n) {
            OutsideReason::ElementType { element_type }
        } else if n.metadata().get(STOP_FUSION_KEY).map(String::as_str) == Some("true") {
            OutsideReason::StopFusion
        } else if config.excluded_ops.contains(&op) {
            OutsideReason::OpExcluded { op: op.clone() }
        } else if rejected.cap[id.index()] {
            OutsideReason::SizeCap {
                max_ops: config.max_ops,
            }
        } else if rejected.cycle[id.index()] {
            OutsideReason::WouldCreateCycle
        } else if rejected.broadcast[id.index()] {
            OutsideReason::DifferentIterationSpace
        } else {
            by_neighbours(f, view, config, id)
        };
        out.push(OutsideNode {
            node: id,
            name: n.name().to_string(),
            op,
            reason,
        });
    }
    out
}

/// A fusible node no region took for none of the recorded reasons: alone unless a fusible
/// neighbour computes over another shape.
fn by_neighbours(
    f: &Function,
    view: &GraphView,
    config: &ExtractionConfig,
    id: NodeId,
) -> OutsideReason {
    let Some(n) = f.get(id) else {
        return OutsideReason::Alone;
    };
    let shape = &n.output_type().shape;
    let producers = n.inputs().iter().map(|o| o.node);
    let users = (0..n.outputs().len()).flat_map(|i| n.users(i).iter().map(|&(u, _)| u));
    let other_shape = producers.chain(users).any(|c| {
        view.is_live(c)
            && f.get(c).is_some_and(|m| {
                config.is_fusible(f, m)
                    && !matches!(m.op(), Op::Constant(_))
                    && m.outputs().len() == 1
                    && m.output_type().shape != *shape
            })
    });
    if other_shape {
        OutsideReason::DifferentIterationSpace
    } else {
        OutsideReason::Alone
    }
}
