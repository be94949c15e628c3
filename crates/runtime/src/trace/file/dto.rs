//! The serde shapes of a trace document's calls, variables, results, sources and types, and
//! their conversion to and from [`CallTrace`] (layout: [`super::TRACE_VERSION`]; records in
//! [`super::records`]).

use graphlift_ir::{ElementType, Function, Shape, TensorType};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::err;
use super::records::{record, record_dto, RecordDto};
use crate::trace::record::{CallTrace, Timing, TracedResult, TracedVariable, ValueSource};
use crate::{RuntimeError, TensorSpec};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallDto {
    function: String,
    backend: String,
    start_ns: u64,
    duration_ns: u64,
    parameters: Vec<SpecDto>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    variables: Vec<VariableDto>,
    results: Vec<ResultDto>,
    records: Vec<RecordDto>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecDto {
    name: String,
    element_type: String,
    shape: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct VariableDto {
    name: String,
    /// A function document: [`TracedVariable::initializer`].
    value: Value,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResultDto {
    name: String,
    source: SourceDto,
    element_type: String,
    shape: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, untagged)]
pub(super) enum SourceDto {
    Input { input: usize },
    Record { record: usize, output: usize },
    Variable { variable: String },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TypeDto {
    pub(super) element_type: String,
    pub(super) shape: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InputDto {
    pub(super) source: SourceDto,
    pub(super) element_type: String,
    pub(super) shape: Vec<usize>,
}

/// The variables of the call being converted: sources name them in the file and index
/// them in memory.
#[derive(Clone, Copy)]
pub(super) struct CallVariables<'a>(&'a [TracedVariable]);

impl CallVariables<'_> {
    pub(super) fn source_dto(self, s: ValueSource) -> Result<SourceDto, String> {
        Ok(match s {
            ValueSource::CallInput(input) => SourceDto::Input { input },
            ValueSource::Record { record, output } => SourceDto::Record { record, output },
            ValueSource::Variable(k) => SourceDto::Variable {
                variable: self
                    .0
                    .get(k)
                    .ok_or_else(|| format!("uses variable {k}; the call has {}", self.0.len()))?
                    .name
                    .clone(),
            },
        })
    }

    pub(super) fn source(self, s: SourceDto) -> Result<ValueSource, String> {
        Ok(match s {
            SourceDto::Input { input } => ValueSource::CallInput(input),
            SourceDto::Record { record, output } => ValueSource::Record { record, output },
            SourceDto::Variable { variable } => self
                .0
                .iter()
                .position(|v| v.name == variable)
                .map(ValueSource::Variable)
                .ok_or_else(|| {
                    let names: Vec<&str> = self.0.iter().map(|v| v.name.as_str()).collect();
                    format!(
                        "names variable `{variable}`, which the call does not have (its \
                         variables: {})",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    )
                })?,
        })
    }
}

pub(super) fn type_parts(t: &TensorType) -> (String, Vec<usize>) {
    (t.element_type.name().to_string(), t.shape.dims().to_vec())
}

pub(super) fn tensor_type(
    element_type: &str,
    shape: Vec<usize>,
) -> Result<TensorType, RuntimeError> {
    let e = ElementType::from_name(element_type)
        .ok_or_else(|| err(format!("unknown element type `{element_type}`")))?;
    Ok(TensorType::new(e, Shape::new(shape)))
}

/// A function document as a JSON value, for `what` (in errors).
pub(super) fn document(f: &Function, what: &str) -> Result<Value, RuntimeError> {
    serde_json::from_str(&f.to_json()).map_err(|e| err(format!("{what}: {e}")))
}

pub(super) fn call_dto(c: &CallTrace) -> Result<CallDto, RuntimeError> {
    let vars = CallVariables(&c.variables);
    Ok(CallDto {
        function: c.function.clone(),
        backend: c.backend.clone(),
        start_ns: c.timing.start_ns,
        duration_ns: c.timing.duration_ns,
        parameters: c
            .parameters
            .iter()
            .map(|p| {
                let (element_type, shape) = type_parts(&p.tensor_type);
                SpecDto {
                    name: p.name.clone(),
                    element_type,
                    shape,
                }
            })
            .collect(),
        variables: c
            .variables
            .iter()
            .map(|v| {
                Ok(VariableDto {
                    name: v.name.clone(),
                    value: document(&v.initializer()?, &format!("variable `{}`", v.name))?,
                })
            })
            .collect::<Result<_, RuntimeError>>()?,
        results: c
            .results
            .iter()
            .map(|r| {
                let (element_type, shape) = type_parts(&r.tensor_type);
                Ok(ResultDto {
                    name: r.name.clone(),
                    source: vars
                        .source_dto(r.source)
                        .map_err(|m| err(format!("result `{}`: {m}", r.name)))?,
                    element_type,
                    shape,
                })
            })
            .collect::<Result<_, RuntimeError>>()?,
        records: c
            .records
            .iter()
            .map(|r| record_dto(r, vars))
            .collect::<Result<_, _>>()?,
    })
}

pub(super) fn call(c: CallDto) -> Result<CallTrace, RuntimeError> {
    let variables = c
        .variables
        .into_iter()
        .map(|v| {
            let f = Function::from_json(&v.value.to_string())
                .map_err(|e| err(format!("variable `{}`: {e}", v.name)))?;
            TracedVariable::from_initializer(v.name, &f)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let vars = CallVariables(&variables);
    let results = c
        .results
        .into_iter()
        .map(|r| {
            let in_result = |m: String| err(format!("result `{}`: {m}", r.name));
            Ok(TracedResult {
                source: vars.source(r.source).map_err(in_result)?,
                tensor_type: tensor_type(&r.element_type, r.shape)?,
                name: r.name,
            })
        })
        .collect::<Result<_, RuntimeError>>()?;
    let records = c
        .records
        .into_iter()
        .map(|r| record(r, vars))
        .collect::<Result<_, _>>()?;
    Ok(CallTrace {
        function: c.function,
        backend: c.backend,
        timing: Timing {
            start_ns: c.start_ns,
            duration_ns: c.duration_ns,
        },
        parameters: c
            .parameters
            .into_iter()
            .map(|p| {
                Ok(TensorSpec {
                    name: p.name,
                    tensor_type: tensor_type(&p.element_type, p.shape)?,
                })
            })
            .collect::<Result<_, RuntimeError>>()?,
        results,
        records,
        variables,
    })
}
