//! Rebuilding a runnable [`Function`] from a trace (DL4J's `collect`).

use graphlift_ir::{Function, Op, Output};

use super::record::{CallTrace, OpRecord, Trace, ValueSource};
use crate::RuntimeError;

impl CallTrace {
    /// The traced call as a Function: one Parameter per call input (named after the
    /// Executable's parameters), each recorded op re-created in execution order with its
    /// name, provenance tags and pass history (Constants as Constants, fused kernels as
    /// `FusedKernel` ops with their bodies), and the call's Results. Metadata and creation
    /// sites are not kept.
    ///
    /// Given inputs of the recorded types, the Function computes what the call computed.
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] for wiring that refers to a missing record or input, or a
    /// record whose re-created types differ from the recorded ones; [`RuntimeError::Ir`]
    /// when the IR rejects a node (e.g. a duplicate name).
    pub fn collect(&self) -> Result<Function, RuntimeError> {
        let mut f = Function::new(self.function.clone());
        let mut params = Vec::with_capacity(self.parameters.len());
        for p in &self.parameters {
            let id = f.add_parameter(
                p.name.clone(),
                p.tensor_type.element_type,
                p.tensor_type.shape.clone(),
            )?;
            params.push(Output::new(id, 0));
        }
        let mut outputs: Vec<Vec<Output>> = Vec::with_capacity(self.records.len());
        for r in &self.records {
            let inputs = r
                .inputs
                .iter()
                .map(|i| resolve(i.source, &params, &outputs, &r.name))
                .collect::<Result<Vec<_>, _>>()?;
            outputs.push(add_record(&mut f, r, &inputs)?);
        }
        for res in &self.results {
            let value = resolve(res.source, &params, &outputs, &res.name)?;
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

fn resolve(
    source: ValueSource,
    params: &[Output],
    outputs: &[Vec<Output>],
    user: &str,
) -> Result<Output, RuntimeError> {
    let found = match source {
        ValueSource::CallInput(k) => params.get(k).copied(),
        ValueSource::Record { record, output } => {
            outputs.get(record).and_then(|o| o.get(output)).copied()
        }
    };
    found.ok_or_else(|| {
        RuntimeError::Trace(format!(
            "`{user}` uses {source:?}, which is not an earlier record or a call input"
        ))
    })
}

/// Adds the node of one record (wired to `inputs`) and returns its outputs.
fn add_record(
    f: &mut Function,
    r: &OpRecord,
    inputs: &[Output],
) -> Result<Vec<Output>, RuntimeError> {
    let id = match &r.op {
        Op::Parameter | Op::Result => {
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
