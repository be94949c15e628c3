//! Saving and loading traces as a versioned JSON document (layout in [`TRACE_VERSION`]), so a
//! recorded run can be kept, inspected and rebuilt later.

mod dto;
mod records;

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::record::Trace;
use crate::RuntimeError;

/// The `format` tag of a trace document.
pub const TRACE_FORMAT: &str = "graphlift-trace";

/// The trace format version this build writes; it reads this one and every older one.
///
/// Layout of version 2:
///
/// ```text
/// { "format": "graphlift-trace", "version": 2,
///   "calls": [ { "function": "f", "backend": "CPU-JIT", "start_ns": 10, "duration_ns": 900,
///     "parameters": [ { "name": "x", "element_type": "f32", "shape": [8] } ],
///     "variables": [ { "name": "w", "value": { ...graphlift-function... } } ],
///     "results": [ { "name": "y", "source": { "record": 1, "output": 0 },
///                    "element_type": "f32", "shape": [8] } ],
///     "records": [ { "name": "k0", "kind": "jit_kernel", "op": { ...graphlift-function... },
///       "inputs": [ { "source": { "input": 0 }, "element_type": "f32", "shape": [8] } ],
///       "outputs": [ { "element_type": "f32", "shape": [8] } ],
///       "tags": [...], "pass_history": [...], "start_ns": 20, "duration_ns": 300,
///       "children": [ ...records of the kernel's body, without times... ] },
///       { "name": "read_w", "kind": "native", "op": "ReadVariable",
///         "inputs": [ { "source": { "variable": "w" }, "element_type": "f32", "shape": [8] } ],
///         "outputs": [ { "element_type": "f32", "shape": [8] } ], ... } ] } ] }
/// ```
///
/// A record's `op` is a small graphlift function document ([`graphlift_ir::json`]) holding
/// one node named after the record, on Parameters of the input types: the IR's exact
/// encoding of op attributes, constants bit for bit and fused kernel bodies is reused
/// as is. A `ReadVariable` or `Assign` record (ops without attributes, whose input 0 is a
/// variable's storage rather than a value) has the op's name as `op` instead, and names its
/// variable in the source of input 0 (`{ "variable": NAME }`). A variable's `value`, its
/// value at the start of the call, is a function document whose one result is a Constant
/// holding it bit for bit ([`super::TracedVariable::initializer`]); `variables` is left out
/// for a stateless call. Unknown fields are rejected; any other `format`, or a `version`
/// this build does not read, is an error.
///
/// Version 1 is version 2 without variables: no `variables`, no variable sources, no
/// `ReadVariable` or `Assign` records.
pub const TRACE_VERSION: u64 = 2;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DocDto {
    format: String,
    version: u64,
    calls: Vec<dto::CallDto>,
}

fn err(message: impl Into<String>) -> RuntimeError {
    RuntimeError::Trace(message.into())
}

impl Trace {
    /// The trace as a JSON document (layout: [`TRACE_VERSION`]).
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] if a record's op cannot be expressed as a function document
    /// (its recorded input types do not fit it), or a record uses a variable the call does
    /// not have.
    pub fn to_json(&self) -> Result<String, RuntimeError> {
        let doc = DocDto {
            format: TRACE_FORMAT.to_string(),
            version: TRACE_VERSION,
            calls: self
                .calls
                .iter()
                .map(dto::call_dto)
                .collect::<Result<_, _>>()?,
        };
        serde_json::to_string_pretty(&doc).map_err(|e| err(format!("writing JSON: {e}")))
    }

    /// Reads a trace written by [`Trace::to_json`] of this version or an older one.
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] for text that is not a trace document of a version this
    /// build reads, a record whose op does not decode (naming the record), or a source
    /// that names a variable the call does not have.
    pub fn from_json(text: &str) -> Result<Trace, RuntimeError> {
        let doc: DocDto =
            serde_json::from_str(text).map_err(|e| err(format!("reading JSON: {e}")))?;
        if doc.format != TRACE_FORMAT || !(1..=TRACE_VERSION).contains(&doc.version) {
            return Err(err(format!(
                "unsupported document `{}` version {} (this build reads `{TRACE_FORMAT}` \
                 versions 1 to {TRACE_VERSION})",
                doc.format, doc.version
            )));
        }
        let calls = doc
            .calls
            .into_iter()
            .map(dto::call)
            .collect::<Result<_, _>>()?;
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
