//! Kernel provenance: what a fused kernel's body contains (nodes, tags, pass histories) and
//! which ranges of its machine code come from which body node, so tools such as
//! `graphlift explain` can attribute machine code to graph nodes.

use cranelift_codegen::ir::SourceLoc;
use cranelift_codegen::MachSrcLoc;
use graphlift_ir::{Function, Op};
use graphlift_runtime::{CodeRange, KernelInfo};

use crate::plan::KernelPlan;

/// The computing nodes of a fused kernel's body (not Parameter, Result or Constant), in
/// topological order, with their tags and pass histories.
#[derive(Debug, Clone, Default)]
pub struct BodyNodes {
    /// Node names.
    pub names: Vec<String>,
    /// Each node's tags.
    pub tags: Vec<Vec<String>>,
    /// Each node's pass history.
    pub histories: Vec<Vec<String>>,
}

impl BodyNodes {
    /// The computing nodes of `body`, in topological order (in arena order should the body
    /// not have one: bodies are validated when they are made, so that is never expected).
    pub fn of(body: &Function) -> BodyNodes {
        let mut out = BodyNodes::default();
        let order = body
            .topological_order()
            .unwrap_or_else(|_| body.nodes().map(|n| n.id()).collect());
        for n in order.into_iter().filter_map(|id| body.get(id)) {
            if matches!(n.op(), Op::Parameter | Op::Result | Op::Constant(_)) {
                continue;
            }
            out.names.push(n.name().to_string());
            out.tags.push(n.tags().iter().map(str::to_string).collect());
            out.histories.push(n.pass_history().to_vec());
        }
        out
    }

    /// The union of the nodes' tags, after `first` (the fused node's own tags).
    pub fn union_tags(&self, first: Vec<String>) -> Vec<String> {
        let mut tags = first;
        for t in self.tags.iter().flatten() {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        tags
    }

    /// A [`KernelInfo`] with these nodes; the caller fills in the rest.
    pub fn info(&self, name: &str, tags: Vec<String>) -> KernelInfo {
        KernelInfo {
            name: name.to_string(),
            fused_nodes: self.names.clone(),
            tags,
            node_tags: self.tags.clone(),
            pass_history: self.histories.clone(),
            ..Default::default()
        }
    }
}

/// The source location of slot `k` of a plan.
///
/// Code generation sets it (`FunctionBuilder::set_srcloc`) on every instruction it emits for
/// the slot; after compilation `compiled_code().buffer.get_srclocs_sorted()` lists code
/// ranges with those locations, which [`slot_spans`] and [`code_ranges`] map back to body
/// nodes. Loop control and pointer set-up carry no location and are not attributed.
pub fn slot_srcloc(k: usize) -> SourceLoc {
    SourceLoc::new(u32::try_from(k).unwrap_or(u32::MAX - 1))
}

/// The slot-attributed spans of compiled code: `(start, end, slot)` for every range of
/// Cranelift's sorted source locations that carries a slot's location. They depend only on
/// the plan's structure, so a cached kernel keeps them and maps them to the node names of
/// each plan that reuses it ([`code_ranges`]).
pub fn slot_spans(srclocs: &[MachSrcLoc<cranelift_codegen::Final>]) -> Vec<(u32, u32, usize)> {
    srclocs
        .iter()
        .filter(|s| !s.loc.is_default() && s.start < s.end)
        .filter_map(|s| Some((s.start, s.end, usize::try_from(s.loc.bits()).ok()?)))
        .collect()
}

/// Maps slot spans ([`slot_spans`]) to the body nodes of `plan`'s slots, merging adjacent
/// ranges of one node.
pub fn code_ranges(plan: &KernelPlan, spans: &[(u32, u32, usize)]) -> Vec<CodeRange> {
    let mut out: Vec<CodeRange> = Vec::new();
    for &(start, end, k) in spans {
        let Some(slot) = plan.slots.get(k) else {
            continue;
        };
        match out.last_mut() {
            Some(last) if *last.node == *slot.node && last.end == start => last.end = end,
            _ => out.push(CodeRange {
                start,
                end,
                node: slot.node.to_string(),
            }),
        }
    }
    out
}
