//! The steps of an executable's plan: what each runs, where its values live ([`Loc`]),
//! and the direct call of a plan that is a single kernel.

use std::sync::Arc;

use super::epilogue::EpilogueStep;
use graphlift_ir::{Function, Node, NodeId, TensorType};
use graphlift_kernels::native::PackedWeights;
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
    /// The storage of variable `v` (the executable's [`graphlift_runtime::state::Variables`]
    /// index), read where a read of it is an alias (`backend/state.rs`).
    Variable(usize),
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
        if !step.in_place.is_empty() {
            return None;
        }
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
    /// A `ReadVariable` of variable `v` that copies its value into the step's output.
    Read(usize),
    /// A `ReadVariable` of variable `v` whose users read the storage itself: nothing runs.
    ReadAlias(usize),
    /// An `Assign` to variable `v` that copies its value (input 1) into the storage.
    Assign(usize),
    /// An `Assign` to variable `v` whose value a kernel step wrote into the storage in
    /// place ([`Step::in_place`]): nothing runs.
    AssignInPlace(usize),
    /// A control-flow node (`If`, `Loop`, `Scan`) run by the shared executor
    /// ([`graphlift_runtime::control_flow`]) over its bodies compiled by this backend:
    /// [`ExecutablePlan::control_flow`] entry `c` (`backend/control_flow.rs`).
    ControlFlow(usize),
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
    /// For a kernel step: `(output, variable)` for each output it writes straight into a
    /// variable's storage, reading that variable's live-ins from it (`backend/state.rs`);
    /// the output's temporary is never filled.
    pub(super) in_place: Vec<(usize, usize)>,
    /// For a native `MatMul` or `Convolution` step: its constant operand packed once for
    /// the packed `f32` product ([`graphlift_kernels::native::prepare`], stage `packing`).
    pub(super) packed: Option<Arc<PackedWeights>>,
    /// For a `Reshape` step whose input is a temporary that dies here: that temporary,
    /// whose buffer becomes the output's instead of being copied (`plan_forwarding`).
    pub(super) forwards: Option<usize>,
}

impl Step {
    /// The temporaries the step fills with their types: every output's but those it writes
    /// into a variable in place (no temporary holds them).
    pub(super) fn filled_outputs<'g>(
        &self,
        g: &'g Function,
    ) -> Result<Vec<(usize, &'g TensorType)>, RuntimeError> {
        let types = self.output_types(g)?;
        Ok(self
            .outputs
            .iter()
            .zip(types)
            .enumerate()
            .filter(|(j, _)| !self.in_place.iter().any(|w| w.0 == *j))
            .map(|(_, (&t, ty))| (t, ty))
            .collect())
    }

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
