//! What a trace holds: one [`CallTrace`] per traced Executable call, one [`OpRecord`] per
//! executed step, one [`TracedVariable`] per variable of a stateful call.

use graphlift_ir::{Op, TensorType};

use crate::{Tensor, TensorSpec};

/// Where a traced value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueSource {
    /// Input `k` of the call (in the nested records of a fused kernel: live-in `k` of the
    /// kernel).
    CallInput(usize),
    /// Output `output` of the record at index `record` of the same record list.
    Record {
        /// Index of the producing record.
        record: usize,
        /// Which of its outputs.
        output: usize,
    },
    /// Variable `k` of the call ([`CallTrace::variables`]): the storage a `ReadVariable` or
    /// `Assign` record takes at input 0.
    Variable(usize),
}

/// How a step was executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// A node run by the INTERPRETER with the reference kernels.
    Interpreted,
    /// A fused kernel run as JIT code.
    JitKernel,
    /// A node run by a JIT backend with its reference (native) kernel.
    Native,
    /// An op inside a fused kernel, or an inner step of a fused native op (`Convolution`'s
    /// im2col and GEMM, `LayerNorm`, `Attention`) written out in IR ops; a nested record,
    /// not timed on its own.
    Fused,
}

impl StepKind {
    /// The name used in trace files (`interpreted`, `jit_kernel`, `native`, `fused`).
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Interpreted => "interpreted",
            StepKind::JitKernel => "jit_kernel",
            StepKind::Native => "native",
            StepKind::Fused => "fused",
        }
    }

    /// The kind named `name` (inverse of [`StepKind::name`]).
    pub fn from_name(name: &str) -> Option<StepKind> {
        [
            StepKind::Interpreted,
            StepKind::JitKernel,
            StepKind::Native,
            StepKind::Fused,
        ]
        .into_iter()
        .find(|k| k.name() == name)
    }
}

/// Wall-clock time of a step or call, in nanoseconds since the process's trace epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timing {
    /// Start, ns since the trace epoch (the first use of tracing in the process).
    pub start_ns: u64,
    /// Duration in ns.
    pub duration_ns: u64,
}

/// One input of a recorded op: where it came from and its type.
#[derive(Debug, Clone, PartialEq)]
pub struct TracedInput {
    /// The producing record or call input.
    pub source: ValueSource,
    /// Element type and shape.
    pub tensor_type: TensorType,
}

/// One executed op.
#[derive(Debug, Clone, PartialEq)]
pub struct OpRecord {
    /// The node's name.
    pub name: String,
    /// The op with its attributes (a fused kernel's op holds its body).
    pub op: Op,
    /// How it was executed.
    pub kind: StepKind,
    /// Input wiring and types, in input order.
    pub inputs: Vec<TracedInput>,
    /// Output types, in output order.
    pub outputs: Vec<TensorType>,
    /// Provenance tags, in order.
    pub tags: Vec<String>,
    /// Passes that created or rewrote the node, oldest first.
    pub pass_history: Vec<String>,
    /// Wall time; `None` for the nested records of a fused kernel.
    pub timing: Option<Timing>,
    /// For a fused kernel: the ops of its body in execution order; for a fused native op
    /// run by a JIT backend (`Convolution`, `LayerNorm`, `Attention`): its inner steps in IR
    /// ops, named by step (`im2col`, `gemm`, `mean`, `variance`, `normalise`,
    /// `scores = Q·Kᵀ·scale`, `+ mask`, `softmax`, `· V`, ...). Either way wired to the
    /// op's inputs ([`ValueSource::CallInput`]) and to each other, computing its outputs.
    pub children: Vec<OpRecord>,
}

/// A Result of a traced call: its name and where its value came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TracedResult {
    /// The Result's name.
    pub name: String,
    /// The record output (or call input) it passes out.
    pub source: ValueSource,
    /// Element type and shape.
    pub tensor_type: TensorType,
}

/// A variable of a traced call: its name and its value when the call started (its type is
/// the value's).
#[derive(Debug, Clone, PartialEq)]
pub struct TracedVariable {
    /// The `Variable` node's name.
    pub name: String,
    /// The value before the call's first step ran (before any of its assigns).
    pub value: Tensor,
}

/// One traced Executable call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallTrace {
    /// The executed function's name.
    pub function: String,
    /// The backend that ran it (`INTERPRETER`, `CPU-JIT`).
    pub backend: String,
    /// The Executable's parameters, in call order.
    pub parameters: Vec<TensorSpec>,
    /// The results, in call order.
    pub results: Vec<TracedResult>,
    /// The variables of a stateful Executable, in the executed function's node id order,
    /// with their values at the start of the call; empty for a stateless one.
    pub variables: Vec<TracedVariable>,
    /// The executed steps, in execution order (`ReadVariable` and `Assign` steps among
    /// them, each wired to its variable through [`ValueSource::Variable`]).
    pub records: Vec<OpRecord>,
    /// Wall time of the whole call.
    pub timing: Timing,
}

/// Everything a tracer recorded: its calls in the order they finished.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Trace {
    /// The traced calls.
    pub calls: Vec<CallTrace>,
}

impl Trace {
    /// `true` when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Number of recorded steps over all calls (nested records not counted).
    pub fn step_count(&self) -> usize {
        self.calls.iter().map(|c| c.records.len()).sum()
    }
}
