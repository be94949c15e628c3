//! The steps of an executable's plan: what each runs, where its values live ([`Loc`]),
//! and the direct call of a plan that is a single kernel.

use super::epilogue::EpilogueStep;
use graphlift_ir::{Function, Node, NodeId, TensorType};
use graphlift_runtime::RuntimeError;

/// A node's provenance tags, comma-separated, for error messages.
pub(super) fn provenance(node: &Node) -> String {
    node.tags().iter().collect::<Vec<_>>().join(", ")
}

/// Where a value lives during a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Loc {
    /// The caller's input tensor `k`.
    Input(usize),
    /// Temporary `t`.
    Temp(usize),
    /// Constant `c`, made into a tensor once at compile time (weights are never copied per
    /// call).
    Constant(usize),
}

/// A plan of one kernel step that reads only the call's inputs and constants, and whose
/// outputs are exactly the results, each once: the shape of most small fused expressions.
/// Such a call needs no temporaries: the kernel reads the caller's input buffers and writes
/// the caller's output buffers (about half of the fixed cost of a small call). The node and
/// inputs are copies of the step's: reading them through the step list cost a direct call
/// 12 ns more (102 → 114 ns, criterion `call_overhead`).
#[derive(Debug)]
pub(super) struct DirectCall {
    /// The kernel ([`ExecutablePlan::compiled`] index) and its step's node.
    pub(super) kernel: usize,
    pub(super) node: NodeId,
    /// The kernel's live-ins, each an input or a constant.
    pub(super) inputs: Vec<Loc>,
    /// For each kernel output, the result it is.
    pub(super) results: Vec<usize>,
}

impl DirectCall {
    pub(super) fn of(steps: &[Step], result_locs: &[Loc]) -> Option<DirectCall> {
        let [step] = steps else { return None };
        let StepKind::Kernel(kernel) = step.kind else {
            return None;
        };
        let reads_caller = step
            .inputs
            .iter()
            .all(|l| matches!(l, Loc::Input(_) | Loc::Constant(_)));
        if step.epilogue.is_some() || !reads_caller || step.outputs.len() != result_locs.len() {
            return None;
        }
        let results = step
            .outputs
            .iter()
            .map(|&t| {
                let mut at = (0..result_locs.len()).filter(|&k| result_locs[k] == Loc::Temp(t));
                at.next().filter(|_| at.next().is_none())
            })
            .collect::<Option<Vec<usize>>>()?;
        Some(DirectCall {
            kernel,
            node: step.node,
            inputs: step.inputs.clone(),
            results,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StepKind {
    /// JIT kernel `k`.
    Kernel(usize),
    /// The reference kernel of the node.
    Native,
}

/// One step of the plan: a node, where its inputs are, which temporaries it fills, and
/// which temporaries die after it. A step with an epilogue lists the producer's inputs and
/// outputs first, then the epilogue kernel's.
#[derive(Debug, Clone)]
pub(super) struct Step {
    pub(super) node: NodeId,
    pub(super) kind: StepKind,
    pub(super) inputs: Vec<Loc>,
    pub(super) outputs: Vec<usize>,
    pub(super) free_after: Vec<usize>,
    /// A kernel run in this native step's output loop ([`epilogue`]).
    pub(super) epilogue: Option<Box<EpilogueStep>>,
}

impl Step {
    /// The types of the step's outputs, in order (the producer's, then its epilogue's).
    pub(super) fn output_types<'g>(
        &self,
        g: &'g Function,
    ) -> Result<Vec<&'g TensorType>, RuntimeError> {
        let mut types: Vec<&TensorType> = g.node(self.node)?.outputs().iter().collect();
        if let Some(e) = &self.epilogue {
            types.extend(g.node(e.step.node)?.outputs());
        }
        Ok(types)
    }
}
