//! Rebuilding a runnable [`Function`] from a trace (DL4J's `collect`).

use graphlift_ir::{Function, NodeId, Op, Output};

use super::record::{CallTrace, OpRecord, Trace, TracedVariable, ValueSource};
use crate::{RuntimeError, Tensor};

impl CallTrace {
    /// The traced call as a Function: one Parameter per call input (named after the
    /// Executable's parameters), one Variable per traced variable (named after it, its
    /// initializer its value at the start of the call: [`TracedVariable::initializer`]),
    /// each recorded op re-created in execution order with its name, provenance tags and
    /// pass history (Constants as Constants, fused kernels as `FusedKernel` ops with their
    /// bodies, `ReadVariable` and `Assign` on their variables), and the call's Results.
    /// Metadata, creation sites and control dependencies are not kept.
    ///
    /// The accesses of each variable keep their recorded order through control
    /// dependencies: a read runs after the assign recorded before it, an assign after the
    /// assign and the reads recorded since the one before it. Every Assign is a sink.
    ///
    /// Given inputs of the recorded types, the Function computes what the call computed,
    /// and its first call leaves its variables with the values the traced call left.
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] for wiring that refers to a missing record, input or
    /// variable, or a record whose re-created types differ from the recorded ones;
    /// [`RuntimeError::Ir`] when the IR rejects a node (e.g. a duplicate name, or a
    /// `ReadVariable` whose input 0 is not a variable).
    pub fn collect(&self) -> Result<Function, RuntimeError> {
        let mut f = Function::new(self.function.clone());
        let mut sources = Sources::default();
        for p in &self.parameters {
            let id = f.add_parameter(
                p.name.clone(),
                p.tensor_type.element_type,
                p.tensor_type.shape.clone(),
            )?;
            sources.params.push(Output::new(id, 0));
        }
        for v in &self.variables {
            let id = f.add_variable(v.name.clone(), v.initializer()?)?;
            sources.variables.push(Output::new(id, 0));
        }
        for r in &self.records {
            let inputs = r
                .inputs
                .iter()
                .map(|i| sources.resolve(i.source, &r.name))
                .collect::<Result<Vec<_>, _>>()?;
            let outputs = add_record(&mut f, r, &inputs)?;
            sources.outputs.push(outputs);
        }
        // Reads and assigns keep their recorded order; every assign runs (a sink).
        let executed: Vec<NodeId> = sources
            .outputs
            .iter()
            .filter_map(|o| o.first().map(|o| o.node))
            .collect();
        f.order_accesses(&executed)?;
        for &id in &executed {
            if matches!(f.node(id)?.op(), Op::Assign) {
                f.add_sink(id)?;
            }
        }
        for res in &self.results {
            let value = sources.resolve(res.source, &res.name)?;
            f.add_result(value, Some(res.name.clone()))?;
        }
        f.validate()?;
        Ok(f)
    }
}

impl Trace {
    /// [`CallTrace::collect`] of every call, in order.
    ///
    /// # Errors
    /// As [`CallTrace::collect`].
    pub fn collect(&self) -> Result<Vec<Function>, RuntimeError> {
        self.calls.iter().map(CallTrace::collect).collect()
    }
}

impl TracedVariable {
    /// The initializer of the collected Function's variable: a Function of no parameters,
    /// named after the variable, whose one result is a Constant holding
    /// [`TracedVariable::value`] bit for bit.
    ///
    /// # Errors
    /// [`RuntimeError::Ir`] if the IR rejects the constant (its data does not fit its
    /// shape).
    pub fn initializer(&self) -> Result<Function, RuntimeError> {
        let mut f = Function::new(self.name.clone());
        let c = f.add_constant(self.value.data().clone(), self.value.shape().clone())?;
        f.add_result(Output::new(c, 0), None)?;
        Ok(f)
    }

    /// The inverse of [`TracedVariable::initializer`]: the variable `name` whose value is
    /// the Constant that `initializer`'s one result passes out.
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] naming the variable if the initializer is not of that form.
    pub(crate) fn from_initializer(
        name: String,
        initializer: &Function,
    ) -> Result<TracedVariable, RuntimeError> {
        let constant = match initializer.results() {
            [r] => initializer
                .result_source(*r)
                .ok()
                .and_then(|o| initializer.get(o.node)),
            _ => None,
        };
        let value = match constant.map(|n| (n.op(), n.output_type())) {
            Some((Op::Constant(data), t)) => Tensor::from_data((**data).clone(), t.shape.clone())?,
            _ => {
                return Err(RuntimeError::Trace(format!(
                    "variable `{name}`: its value must be one Constant passed to one Result"
                )))
            }
        };
        Ok(TracedVariable { name, value })
    }
}

/// The collected Function's values so far, by [`ValueSource`].
#[derive(Default)]
struct Sources {
    params: Vec<Output>,
    variables: Vec<Output>,
    /// Per record, in record order: its outputs.
    outputs: Vec<Vec<Output>>,
}

impl Sources {
    /// The value `source` names, for the record or result `user`.
    fn resolve(&self, source: ValueSource, user: &str) -> Result<Output, RuntimeError> {
        let found = match source {
            ValueSource::CallInput(k) => self.params.get(k),
            ValueSource::Variable(k) => self.variables.get(k),
            ValueSource::Record { record, output } => {
                self.outputs.get(record).and_then(|o| o.get(output))
            }
        };
        found.copied().ok_or_else(|| {
            RuntimeError::Trace(format!(
                "`{user}` uses {source:?}, which is not an earlier record, a call input or a \
                 variable of the call"
            ))
        })
    }
}

/// Adds the node of one record (wired to `inputs`) and returns its outputs.
fn add_record(
    f: &mut Function,
    r: &OpRecord,
    inputs: &[Output],
) -> Result<Vec<Output>, RuntimeError> {
    let id = match &r.op {
        Op::Parameter | Op::Variable(_) | Op::Result => {
            return Err(RuntimeError::Trace(format!(
                "record `{}` is a {}, which is not an executed op",
                r.name,
                r.op.type_name()
            )))
        }
        Op::Constant(data) => {
            let shape = r.outputs.first().map(|t| t.shape.clone()).ok_or_else(|| {
                RuntimeError::Trace(format!("constant `{}` has no recorded output", r.name))
            })?;
            f.add_constant((**data).clone(), shape)?
        }
        op => f.add_node(op.clone(), inputs)?,
    };
    f.set_name(id, r.name.clone())?;
    for t in &r.tags {
        f.add_tag(id, t.clone())?;
    }
    for p in &r.pass_history {
        f.record_pass(id, p)?;
    }
    let node = f.node(id)?;
    if node.outputs() != r.outputs.as_slice() {
        let list = |ts: &[graphlift_ir::TensorType]| {
            ts.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(RuntimeError::Trace(format!(
            "`{}` re-creates with outputs ({}), recorded ({})",
            r.name,
            list(node.outputs()),
            list(&r.outputs)
        )));
    }
    Ok((0..r.outputs.len()).map(|i| Output::new(id, i)).collect())
}
