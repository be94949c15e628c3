//! Saving and loading traces as a versioned JSON document (layout in [`TRACE_VERSION`]), so a
//! recorded run can be kept, inspected and rebuilt later.

use std::path::Path;

use graphlift_ir::{ElementType, Function, Op, Output, Shape, TensorType};
use serde::{Deserialize, Serialize};

use super::record::{
    CallTrace, OpRecord, StepKind, Timing, Trace, TracedInput, TracedResult, ValueSource,
};
use crate::{RuntimeError, TensorSpec};

/// The `format` tag of a trace document.
pub const TRACE_FORMAT: &str = "graphlift-trace";

/// The trace format version this build writes and the only one it reads.
///
/// Layout of version 1:
///
/// ```text
/// { "format": "graphlift-trace", "version": 1,
///   "calls": [ { "function": "f", "backend": "CPU-JIT", "start_ns": 10, "duration_ns": 900,
///     "parameters": [ { "name": "x", "element_type": "f32", "shape": [8] } ],
///     "results": [ { "name": "y", "source": { "record": 1, "output": 0 },
///                    "element_type": "f32", "shape": [8] } ],
///     "records": [ { "name": "k0", "kind": "jit_kernel", "op": { ...graphlift-function... },
///       "inputs": [ { "source": { "input": 0 }, "element_type": "f32", "shape": [8] } ],
///       "outputs": [ { "element_type": "f32", "shape": [8] } ],
///       "tags": [...], "pass_history": [...], "start_ns": 20, "duration_ns": 300,
///       "children": [ ...records of the kernel's body, without times... ] } ] } ] }
/// ```
///
/// A record's `op` is a small graphlift function document ([`graphlift_ir::json`]) holding
/// one node named after the record, on Parameters of the input types: the IR's exact
/// encoding of op attributes, constants bit for bit and fused kernel bodies is reused
/// as is. Unknown fields are rejected; any other `format` or `version` is an error.
pub const TRACE_VERSION: u64 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DocDto {
    format: String,
    version: u64,
    calls: Vec<CallDto>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallDto {
    function: String,
    backend: String,
    start_ns: u64,
    duration_ns: u64,
    parameters: Vec<SpecDto>,
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
struct ResultDto {
    name: String,
    source: SourceDto,
    element_type: String,
    shape: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields, untagged)]
enum SourceDto {
    Input { input: usize },
    Record { record: usize, output: usize },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TypeDto {
    element_type: String,
    shape: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputDto {
    source: SourceDto,
    element_type: String,
    shape: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordDto {
    name: String,
    kind: String,
    op: serde_json::Value,
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

fn err(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Trace(message.into())
}

impl Trace {
    /// The trace as a JSON document (layout: [`TRACE_VERSION`]).
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] if a record's op cannot be expressed as a function document
    /// (its recorded input types do not fit it).
    pub fn to_json(&self) -> Result<String, RuntimeError> {
        let doc = DocDto {
            format: TRACE_FORMAT.to_string(),
            version: TRACE_VERSION,
            calls: self.calls.iter().map(call_dto).collect::<Result<_, _>>()?,
        };
        serde_json::to_string_pretty(&doc).map_err(|e| err(format!("writing JSON: {e}")))
    }

    /// Reads a trace written by [`Trace::to_json`].
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] for text that is not a trace document of this version, or a
    /// record whose op does not decode (naming the record).
    pub fn from_json(text: &str) -> Result<Trace, RuntimeError> {
        let doc: DocDto =
            serde_json::from_str(text).map_err(|e| err(format!("reading JSON: {e}")))?;
        if doc.format != TRACE_FORMAT || doc.version != TRACE_VERSION {
            return Err(err(format!(
                "unsupported document `{}` version {} (this build reads `{TRACE_FORMAT}` version {TRACE_VERSION})",
                doc.format, doc.version
            )));
        }
        let calls = doc.calls.into_iter().map(call).collect::<Result<_, _>>()?;
        Ok(Trace { calls })
    }

    /// Writes [`Trace::to_json`] to `path` (complete or not at all: through a temporary
    /// file that is renamed).
    ///
    /// # Errors
    /// As [`Trace::to_json`]; [`RuntimeError::Trace`] naming the path if it cannot be
    /// written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), RuntimeError> {
        write_atomically(path.as_ref(), self.to_json()?.as_bytes())
    }

    /// Reads a trace file written by [`Trace::save`].
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] naming the path if it cannot be read, else as
    /// [`Trace::from_json`].
    pub fn load(path: impl AsRef<Path>) -> Result<Trace, RuntimeError> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(|e| err(format!("{}: {e}", path.display())))?;
        Trace::from_json(&text).map_err(|e| match e {
            RuntimeError::Trace(m) => err(format!("{}: {m}", path.display())),
            other => other,
        })
    }
}

/// Writes `bytes` to a temporary file next to `path`, then renames it over `path`, so the
/// file appears complete or not at all.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), RuntimeError> {
    let io = |e: std::io::Error| err(format!("{}: {e}", path.display()));
    let file_name = path
        .file_name()
        .ok_or_else(|| err(format!("{}: not a file path", path.display())))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    if let Err(e) = std::fs::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

fn source_dto(s: ValueSource) -> SourceDto {
    match s {
        ValueSource::CallInput(input) => SourceDto::Input { input },
        ValueSource::Record { record, output } => SourceDto::Record { record, output },
    }
}

fn source(s: SourceDto) -> ValueSource {
    match s {
        SourceDto::Input { input } => ValueSource::CallInput(input),
        SourceDto::Record { record, output } => ValueSource::Record { record, output },
    }
}

fn type_parts(t: &TensorType) -> (String, Vec<usize>) {
    (t.element_type.name().to_string(), t.shape.dims().to_vec())
}

fn tensor_type(element_type: &str, shape: Vec<usize>) -> Result<TensorType, RuntimeError> {
    let e = ElementType::from_name(element_type)
        .ok_or_else(|| err(format!("unknown element type `{element_type}`")))?;
    Ok(TensorType::new(e, Shape::new(shape)))
}

fn call_dto(c: &CallTrace) -> Result<CallDto, RuntimeError> {
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
        results: c
            .results
            .iter()
            .map(|r| {
                let (element_type, shape) = type_parts(&r.tensor_type);
                ResultDto {
                    name: r.name.clone(),
                    source: source_dto(r.source),
                    element_type,
                    shape,
                }
            })
            .collect(),
        records: c.records.iter().map(record_dto).collect::<Result<_, _>>()?,
    })
}

fn call(c: CallDto) -> Result<CallTrace, RuntimeError> {
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
        results: c
            .results
            .into_iter()
            .map(|r| {
                Ok(TracedResult {
                    name: r.name,
                    source: source(r.source),
                    tensor_type: tensor_type(&r.element_type, r.shape)?,
                })
            })
            .collect::<Result<_, RuntimeError>>()?,
        records: c
            .records
            .into_iter()
            .map(record)
            .collect::<Result<_, _>>()?,
    })
}

fn record_dto(r: &OpRecord) -> Result<RecordDto, RuntimeError> {
    let op_doc = op_function(r)?.to_json();
    let op = serde_json::from_str(&op_doc).map_err(|e| err(format!("`{}`: {e}", r.name)))?;
    Ok(RecordDto {
        name: r.name.clone(),
        kind: r.kind.name().to_string(),
        op,
        inputs: r
            .inputs
            .iter()
            .map(|i| {
                let (element_type, shape) = type_parts(&i.tensor_type);
                InputDto {
                    source: source_dto(i.source),
                    element_type,
                    shape,
                }
            })
            .collect(),
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
            .map(record_dto)
            .collect::<Result<_, _>>()?,
    })
}

fn record(r: RecordDto) -> Result<OpRecord, RuntimeError> {
    let name = r.name;
    let in_record = |m: String| err(format!("record `{name}`: {m}"));
    let kind = StepKind::from_name(&r.kind)
        .ok_or_else(|| in_record(format!("unknown kind `{}`", r.kind)))?;
    let f = Function::from_json(&r.op.to_string()).map_err(|e| in_record(e.to_string()))?;
    let op = f
        .node_by_name(&name)
        .map(|n| n.op().clone())
        .ok_or_else(|| in_record("its op document has no node of that name".into()))?;
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
            .map(|i| {
                Ok(TracedInput {
                    source: source(i.source),
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
            .map(record)
            .collect::<Result<_, _>>()?,
        name,
    })
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
        Op::Parameter | Op::Result => {
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
