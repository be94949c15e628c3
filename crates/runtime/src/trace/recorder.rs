//! [`CallRecorder`]: the hook a backend puts around its step loop.

use std::collections::HashMap;
use std::time::Instant;

use graphlift_ir::{Function, Node, NodeId, Op, Output, TensorType};

use super::inner;
use super::record::{
    CallTrace, OpRecord, StepKind, Timing, TracedInput, TracedResult, TracedVariable, ValueSource,
};
use super::scope;
use crate::state::Variables;
use crate::{RuntimeError, Tensor, TensorSpec};

/// Records one Executable call for the current thread's innermost [`super::Tracer`].
///
/// A backend calls [`CallRecorder::begin`] once per call (one thread-local read; `None`
/// when no tracer is alive, so an untraced call pays nothing more); for a stateful
/// Executable, [`CallRecorder::record_variables`] before the first step; then per executed
/// node (`ReadVariable` and `Assign` included) [`CallRecorder::step_start`] and
/// [`CallRecorder::record`]; and finally [`CallRecorder::finish`]. A call that fails is not
/// committed.
#[derive(Debug)]
pub struct CallRecorder {
    call: CallTrace,
    started: Instant,
    /// The steps so far, made into records by [`CallRecorder::finish`].
    steps: Vec<Step>,
    values: HashMap<Output, (ValueSource, TensorType)>,
    /// The executed function's variables in node id order, each with its value at the
    /// start of the call once [`CallRecorder::record_variables`] has given it.
    variables: Vec<(TensorSpec, Option<Tensor>)>,
}

impl CallRecorder {
    /// Starts recording a call of `function` on `backend`, if a tracer is alive on this
    /// thread. `function` is the graph the backend executes; its parameters are the call's
    /// inputs in order.
    pub fn begin(function: &Function, backend: &str) -> Option<CallRecorder> {
        if !Self::tracing() {
            return None;
        }
        Some(Self::new(function, backend))
    }

    /// Whether a tracer is alive on this thread (one thread-local read): a backend that
    /// has a faster path without per-step hooks takes it only when this is `false`.
    pub fn tracing() -> bool {
        scope::is_active()
    }

    fn new(function: &Function, backend: &str) -> CallRecorder {
        let mut values = HashMap::new();
        let mut parameters = Vec::new();
        for (k, &p) in function.parameters().iter().enumerate() {
            if let Ok(node) = function.node(p) {
                let t = node.output_type().clone();
                values.insert(Output::new(p, 0), (ValueSource::CallInput(k), t.clone()));
                parameters.push(TensorSpec {
                    name: node.name().to_string(),
                    tensor_type: t,
                });
            }
        }
        let mut variables = Vec::new();
        for (k, node) in function.variables().enumerate() {
            let t = node.output_type().clone();
            let source = ValueSource::Variable(k);
            values.insert(Output::new(node.id(), 0), (source, t.clone()));
            let spec = TensorSpec {
                name: node.name().to_string(),
                tensor_type: t,
            };
            variables.push((spec, None));
        }
        CallRecorder {
            call: CallTrace {
                function: function.name().to_string(),
                backend: backend.to_string(),
                parameters,
                results: Vec::new(),
                variables: Vec::new(),
                records: Vec::new(),
                timing: Timing::default(),
            },
            started: Instant::now(),
            steps: Vec::new(),
            values,
            variables,
        }
    }

    /// Records the values of the Executable's `variables` at the start of the call, which
    /// the collected Function's variables start from ([`CallTrace::collect`]).
    ///
    /// A backend running a stateful Executable calls this once per traced call, holding
    /// the lock of its [`crate::state::VariableStore`], after [`CallRecorder::begin`] and
    /// before the first step (before any `Assign` writes); without it
    /// [`CallRecorder::finish`] fails. Values are matched to the executed function's
    /// `Variable` nodes by name; a variable the function does not have is ignored. It
    /// clones each value, and runs only while tracing.
    pub fn record_variables(&mut self, variables: &Variables) {
        for (k, spec) in variables.specs().iter().enumerate() {
            if let Some(slot) = self.variables.iter_mut().find(|(s, _)| s.name == spec.name) {
                slot.1 = Some(variables.value(k).clone());
            }
        }
    }

    /// The start time of a step (taken before it runs).
    pub fn step_start(&self) -> Instant {
        Instant::now()
    }

    /// Records that `node` (of the function the call runs) ran from `start` until now as a
    /// step of `kind`, producing `outputs` (for a `ReadVariable`, the value it read; for an
    /// `Assign`, the value it wrote). Parameters, Variables and Results are not steps and
    /// are ignored. Only the step's node, times and output types are kept here; its record
    /// is made by [`CallRecorder::finish`], so the time between two steps holds little of
    /// the tracer's own work.
    pub fn record(&mut self, node: &Node, kind: StepKind, start: Instant, outputs: &[Tensor]) {
        let end = Instant::now();
        if matches!(node.op(), Op::Parameter | Op::Variable(_) | Op::Result) {
            return;
        }
        self.steps.push(Step {
            node: node.id(),
            kind,
            timing: timing(start, end),
            outputs: outputs.iter().map(Tensor::tensor_type).collect(),
        });
    }

    /// The record of `step`, whose node is `node`, wired to the records before it.
    fn add_record(&mut self, node: &Node, step: Step) {
        let Step {
            kind,
            timing,
            outputs,
            ..
        } = step;
        let index = self.call.records.len();
        let inputs = node.inputs().iter().map(|o| self.traced_input(o)).collect();
        for (i, t) in outputs.iter().enumerate() {
            let source = ValueSource::Record {
                record: index,
                output: i,
            };
            self.values
                .insert(Output::new(node.id(), i), (source, t.clone()));
        }
        let mut record = op_record(node, kind, inputs, outputs);
        record.timing = Some(timing);
        if let Op::FusedKernel(k) = node.op() {
            record.children = body_records(&k.body);
        } else if kind == StepKind::Native {
            let types: Vec<TensorType> = record
                .inputs
                .iter()
                .map(|i| i.tensor_type.clone())
                .collect();
            if let Some(body) = inner::decomposition(node.op(), &types) {
                record.children = body_records(&body);
            }
        }
        self.call.records.push(record);
    }

    fn traced_input(&self, o: &Output) -> TracedInput {
        match self.values.get(o) {
            Some((source, tensor_type)) => TracedInput {
                source: *source,
                tensor_type: tensor_type.clone(),
            },
            // Unreachable for a backend that records every step it runs; kept total.
            None => TracedInput {
                source: ValueSource::CallInput(usize::MAX),
                tensor_type: TensorType::new(graphlift_ir::ElementType::F32, []),
            },
        }
    }

    /// Makes the steps' records, resolves the results of `function` and commits the call to
    /// the innermost tracer of this thread.
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] if a result's value was not recorded, or a variable's value
    /// at the start of the call was not ([`CallRecorder::record_variables`]) or has another
    /// type than its node; the graph's error if a recorded step's node is not in `function`
    /// (the call is dropped either way).
    pub fn finish(mut self, function: &Function) -> Result<(), RuntimeError> {
        let end = Instant::now();
        for step in std::mem::take(&mut self.steps) {
            let node = function.node(step.node)?;
            self.add_record(node, step);
        }
        self.call.variables = std::mem::take(&mut self.variables)
            .into_iter()
            .map(traced_variable)
            .collect::<Result<_, _>>()?;
        for &r in function.results() {
            let node = function.node(r)?;
            let src = function.result_source(r)?;
            let (source, tensor_type) = self.values.get(&src).cloned().ok_or_else(|| {
                RuntimeError::Trace(format!("result `{}` was not recorded", node.name()))
            })?;
            self.call.results.push(TracedResult {
                name: node.name().to_string(),
                source,
                tensor_type,
            });
        }
        self.call.timing = timing(self.started, end);
        scope::commit(self.call);
        Ok(())
    }
}

/// The timing of what ran from `start` to `end`: its start in ns since the trace epoch,
/// its duration in ns (saturating).
fn timing(start: Instant, end: Instant) -> Timing {
    Timing {
        start_ns: scope::since_epoch(start),
        duration_ns: u64::try_from(end.saturating_duration_since(start).as_nanos())
            .unwrap_or(u64::MAX),
    }
}

/// A step as [`CallRecorder::record`] keeps it.
#[derive(Debug)]
struct Step {
    node: NodeId,
    kind: StepKind,
    timing: Timing,
    outputs: Vec<TensorType>,
}

/// A variable's record from its node's spec and the value handed to
/// [`CallRecorder::record_variables`].
fn traced_variable(
    (spec, value): (TensorSpec, Option<Tensor>),
) -> Result<TracedVariable, RuntimeError> {
    let value = value.ok_or_else(|| {
        RuntimeError::Trace(format!(
            "the value of variable `{}` at the start of the call was not recorded (a backend \
             running a stateful Executable hands it to CallRecorder::record_variables before \
             its first step)",
            spec.name
        ))
    })?;
    if !value.has_type(&spec.tensor_type) {
        return Err(RuntimeError::Trace(format!(
            "variable `{}` is {}, its recorded value {}",
            spec.name,
            spec.tensor_type,
            value.tensor_type()
        )));
    }
    Ok(TracedVariable {
        name: spec.name,
        value,
    })
}

fn op_record(
    node: &Node,
    kind: StepKind,
    inputs: Vec<TracedInput>,
    outputs: Vec<TensorType>,
) -> OpRecord {
    OpRecord {
        name: node.name().to_string(),
        op: node.op().clone(),
        kind,
        inputs,
        outputs,
        tags: node.tags().iter().map(str::to_string).collect(),
        pass_history: node.pass_history().to_vec(),
        timing: None,
        children: Vec::new(),
    }
}

/// The nested records of a fused kernel: its body's ops in topological order, wired to the
/// kernel's live-ins and to each other.
fn body_records(body: &Function) -> Vec<OpRecord> {
    let mut values: HashMap<Output, ValueSource> = body
        .parameters()
        .iter()
        .enumerate()
        .map(|(k, &p)| (Output::new(p, 0), ValueSource::CallInput(k)))
        .collect();
    let Ok(order) = body.topological_order() else {
        return Vec::new();
    };
    let mut records = Vec::new();
    for id in order {
        let Ok(node) = body.node(id) else { continue };
        if matches!(node.op(), Op::Parameter | Op::Result) {
            continue;
        }
        let inputs = node
            .inputs()
            .iter()
            .filter_map(|o| {
                Some(TracedInput {
                    source: *values.get(o)?,
                    tensor_type: body.output_type(*o).ok()?.clone(),
                })
            })
            .collect();
        for i in 0..node.outputs().len() {
            values.insert(
                Output::new(id, i),
                ValueSource::Record {
                    record: records.len(),
                    output: i,
                },
            );
        }
        records.push(op_record(
            node,
            StepKind::Fused,
            inputs,
            node.outputs().to_vec(),
        ));
    }
    records
}
