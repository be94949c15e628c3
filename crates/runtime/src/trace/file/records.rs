//! The records of a trace document: one per executed step, its op as a function document
//! (or a state op's name), its wiring, types, provenance and time.

use graphlift_ir::{Function, Op, Output};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::dto::{document, tensor_type, type_parts, CallVariables, InputDto, TypeDto};
use super::err;
use crate::trace::record::{OpRecord, StepKind, Timing, TracedInput};
use crate::RuntimeError;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordDto {
    name: String,
    kind: String,
    /// A function document, or the name of a state op ([`STATE_OPS`]).
    op: Value,
    inputs: Vec<InputDto>,
    outputs: Vec<TypeDto>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pass_history: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    children: Vec<RecordDto>,
}

/// The ops a record names instead of holding a function document: they have no attributes,
/// and their input 0 is a variable's storage, which a Parameter cannot stand for.
const STATE_OPS: [Op; 2] = [Op::ReadVariable, Op::Assign];

pub(super) fn record_dto(r: &OpRecord, vars: CallVariables<'_>) -> Result<RecordDto, RuntimeError> {
    let in_record = |m: String| err(format!("record `{}`: {m}", r.name));
    let op = if STATE_OPS.contains(&r.op) {
        Value::String(r.op.type_name().to_string())
    } else {
        document(&op_function(r)?, &format!("record `{}`", r.name))?
    };
    Ok(RecordDto {
        name: r.name.clone(),
        kind: r.kind.name().to_string(),
        op,
        inputs: r
            .inputs
            .iter()
            .enumerate()
            .map(|(k, i)| {
                let (element_type, shape) = type_parts(&i.tensor_type);
                Ok(InputDto {
                    source: vars
                        .source_dto(i.source)
                        .map_err(|m| in_record(format!("input {k} {m}")))?,
                    element_type,
                    shape,
                })
            })
            .collect::<Result<_, RuntimeError>>()?,
        outputs: r
            .outputs
            .iter()
            .map(|t| {
                let (element_type, shape) = type_parts(t);
                TypeDto {
                    element_type,
                    shape,
                }
            })
            .collect(),
        tags: r.tags.clone(),
        pass_history: r.pass_history.clone(),
        start_ns: r.timing.map(|t| t.start_ns),
        duration_ns: r.timing.map(|t| t.duration_ns),
        children: r
            .children
            .iter()
            .map(|c| record_dto(c, vars))
            .collect::<Result<_, _>>()?,
    })
}

pub(super) fn record(r: RecordDto, vars: CallVariables<'_>) -> Result<OpRecord, RuntimeError> {
    let name = r.name;
    let in_record = |m: String| err(format!("record `{name}`: {m}"));
    let kind = StepKind::from_name(&r.kind)
        .ok_or_else(|| in_record(format!("unknown kind `{}`", r.kind)))?;
    let op = op(&name, r.op).map_err(in_record)?;
    let timing = match (r.start_ns, r.duration_ns) {
        (Some(start_ns), Some(duration_ns)) => Some(Timing {
            start_ns,
            duration_ns,
        }),
        _ => None,
    };
    Ok(OpRecord {
        op,
        kind,
        inputs: r
            .inputs
            .into_iter()
            .enumerate()
            .map(|(k, i)| {
                Ok(TracedInput {
                    source: vars
                        .source(i.source)
                        .map_err(|m| in_record(format!("input {k} {m}")))?,
                    tensor_type: tensor_type(&i.element_type, i.shape)?,
                })
            })
            .collect::<Result<_, RuntimeError>>()?,
        outputs: r
            .outputs
            .into_iter()
            .map(|t| tensor_type(&t.element_type, t.shape))
            .collect::<Result<_, _>>()?,
        tags: r.tags,
        pass_history: r.pass_history,
        timing,
        children: r
            .children
            .into_iter()
            .map(|c| record(c, vars))
            .collect::<Result<_, _>>()?,
        name,
    })
}

/// The op of the record `name` from its `op` field: a state op's name, or a function
/// document holding a node of that name.
fn op(name: &str, op: Value) -> Result<Op, String> {
    if let Value::String(s) = &op {
        return STATE_OPS
            .into_iter()
            .find(|o| o.type_name() == s)
            .ok_or_else(|| {
                format!("unknown op `{s}` (ops other than ReadVariable and Assign are documents)")
            });
    }
    let f = Function::from_json(&op.to_string()).map_err(|e| e.to_string())?;
    f.node_by_name(name)
        .map(|n| n.op().clone())
        .ok_or_else(|| "its op document has no node of that name".into())
}

/// A one-node function holding the record's op on Parameters of its input types.
fn op_function(r: &OpRecord) -> Result<Function, RuntimeError> {
    let fail = |m: String| err(format!("record `{}`: {m}", r.name));
    let mut f = Function::new("op");
    let mut inputs = Vec::with_capacity(r.inputs.len());
    for (k, i) in r.inputs.iter().enumerate() {
        let id = f
            .add_parameter(
                format!("{}#in{k}", r.name),
                i.tensor_type.element_type,
                i.tensor_type.shape.clone(),
            )
            .map_err(|e| fail(e.to_string()))?;
        inputs.push(Output::new(id, 0));
    }
    let id = match &r.op {
        Op::Constant(d) => {
            let shape = r
                .outputs
                .first()
                .map(|t| t.shape.clone())
                .unwrap_or_default();
            f.add_constant((**d).clone(), shape)
        }
        Op::Parameter | Op::Variable(_) | Op::Result => {
            return Err(fail(format!(
                "a {} is not an executed op",
                r.op.type_name()
            )))
        }
        op => f.add_node(op.clone(), &inputs),
    }
    .map_err(|e| fail(e.to_string()))?;
    f.set_name(id, r.name.clone())
        .map_err(|e| fail(e.to_string()))?;
    let outputs = f.node(id).map_err(|e| fail(e.to_string()))?.outputs().len();
    for i in 0..outputs {
        f.add_result(Output::new(id, i), None)
            .map_err(|e| fail(e.to_string()))?;
    }
    Ok(f)
}
