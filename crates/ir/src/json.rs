//! JSON save and load of a [`Function`]: a versioned document (layout in [`JSON_VERSION`])
//! that round-trips exactly, constants bit for bit, so a graph can be stored, diffed and
//! written by hand.

mod constant;
mod decode;
mod dto;
mod encode;
mod pretty;

use std::path::Path;

use crate::error::{SerializationError, SerializationErrorKind};
use crate::{Function, IrError};

/// The `format` tag of a graphlift function document.
pub const JSON_FORMAT: &str = "graphlift-function";

/// The format version this build writes; it reads versions 1 and 2 (a version-1 document is
/// read as version 2: the new fields are optional).
///
/// # Layout of version 2 (version 1 is version 2 without sinks and state)
///
/// A document is `{"format": "graphlift-function", "version": 2, "function": {"name",
/// "parameters", "results", "sinks", "nodes"}}` (an example is in [`Function::from_json`]);
/// `sinks` ([`Function::sinks`], by name) is left out when empty.
///
/// - `nodes` are the live nodes in arena (id) order; a loaded function numbers them
///   0, 1, 2, ... in that order, so ids survive a round trip unless the arena had holes
///   (nodes removed by a pass), which are compacted. Nodes may appear in any order in a
///   hand-written file: inputs (`node` name + `output` index) and control dependencies
///   (`other_deps`, by name) refer to nodes by their unique name.
/// - `op.type` is the nGraph op name ([`crate::Op::type_name`]); attributes: `to` (element
///   type) for `Convert`, `shape` for `Broadcast`, `element_type` and `values` for
///   `Constant`, `body` (a nested `function` object, same layout) for `FusedKernel`,
///   `initializer` (the same) for `Variable`; `element_type`, `shape`, `seed` and `low`,
///   `high` for `RandomUniform` or `mean`, `scale` for `RandomNormal` (JSON numbers: serde
///   writes each `f64` in the shortest form that reads back to the same bits);
///   `shape` for `Reshape`, `perm` for `Transpose`, `slice` (a list of
///   `{"start", "step", "len"}`) for `Slice`, `axis` for `Concat`, `Gather` and `Softmax`, `axis` and `shape` for `ScatterAdd`,
///   `cum_sum` (`{"axis", "exclusive", "reverse"}`) for `CumSum`, `grid_sample`
///   (`{"mode", "padding", "align_corners"}`) for `GridSample`,
///   `axes` and `keep_dims` for `ReduceSum`/`ReduceMean`/`ReduceMax`/`ReduceMin`/
///   `ReduceProd`, `axis` and `epsilon` for `LayerNorm`, `epsilon` for
///   `BatchNormInference`, `window` (`{"shape", "strides", "dilations", "pads_begin",
///   "pads_end"}`) for `MaxPool`, `MaxPoolBackprop` and `MaxPoolIndices`, `window` and `groups` for
///   `Convolution`, `window`, `groups` and `shape` for `ConvolutionBackpropData` and
///   `ConvolutionBackpropFilters`, and `heads` and `scale` for `Attention` (builds older than
///   that op reject it as an unknown op type, so the version stays 2). An op given an
///   attribute it does not take, or missing one it needs, is an error.
/// - `outputs` records each output's type. Loading re-runs shape and type inference and
///   rejects a node whose recorded types differ, naming it; Parameters and Constants carry
///   their type here.
/// - `metadata` (a JSON object), `tags` (provenance, in order), `pass_history` (oldest
///   first) and `other_deps` are left out when empty; `site` is the creation site.
/// - Constant `values`, row-major, exact for every value:
///   - `f32`: the IEEE 754 bit pattern as `"0x"` + 8 hex digits (`1.0` is `"0x3f800000"`),
///   - `f64`: the bit pattern as `"0x"` + 16 hex digits (`1.0` is `"0x3ff0000000000000"`),
///   - `f16`, `bf16`: the bit pattern as `"0x"` + 4 hex digits (`1.0` is `"0x3c00"` /
///     `"0x3f80"`),
///   - `i8`, `u8`, `i16`, `u16`, `i32`, `u32`: a JSON integer,
///   - `i64`, `u64`: a decimal string (`"-9007199254740993"`), since JSON readers that hold
///     numbers as doubles lose integers beyond 2^53,
///   - `bool`: `true` / `false`,
///   - `string`: a JSON string (any Unicode text, escaped as JSON escapes it).
///
///   JSON numbers cannot hold NaN or infinities, and a decimal rendering would lose NaN
///   payloads; bit patterns keep NaN payloads, signed zeros, infinities and subnormals bit
///   for bit. Hex per element (not base64 of the whole buffer) keeps one JSON value per
///   element, so an error can name the element and a reader can edit one value.
///
/// Every struct of the format rejects unknown fields. A new layout is a new `version`;
/// loading any other version or `format` is an [`IrError::Serialization`] of kind
/// [`SerializationErrorKind::UnsupportedFormat`].
///
/// Limits: serde_json refuses JSON nested more than 128 levels deep (a `Syntax` error,
/// "recursion limit exceeded"), which bounds fused kernels nested inside kernel bodies to
/// 30 levels when loading; writing has no such bound.
pub const JSON_VERSION: u64 = 2;

impl Function {
    /// The function as a pretty-printed JSON document (layout: [`JSON_VERSION`]).
    ///
    /// Exact: [`Function::from_json`] gives back the same names, ops and attributes, input
    /// wiring, output types, metadata, provenance tags (in order), pass histories, creation
    /// sites, control dependencies, parameter and result order, fused kernel bodies and
    /// constants bit for bit. Node ids are kept except that arena holes are compacted.
    pub fn to_json(&self) -> String {
        let doc = dto::DocumentDto {
            format: JSON_FORMAT.to_string(),
            version: JSON_VERSION,
            function: encode::function_dto(self),
        };
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut out, pretty::Pretty::default());
        // The DTOs hold only strings, integers, booleans and string-keyed maps, and the
        // writer is a Vec: serde_json has no failure case for these.
        serde::Serialize::serialize(&doc, &mut ser)
            .expect("serializing graphlift JSON DTOs into memory cannot fail");
        // serde_json writes valid UTF-8 only.
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }

    /// Reads a function from a JSON document written by [`Function::to_json`] (or by hand in
    /// the same format), then re-runs shape and type inference and [`Function::validate`].
    ///
    /// # Errors
    /// [`IrError::Serialization`], whose kind and location say what is wrong and where:
    /// `Syntax` for text that is not JSON (with line and column), `UnsupportedFormat` for
    /// another `format` or `version`, `Schema` for a missing, unknown or mistyped field
    /// (naming the node by index and name), `Invalid` for a dangling or duplicate name, an
    /// unknown op, a bad constant element, a cycle, or output types that inference does
    /// not give (naming the node).
    ///
    /// # Examples
    ///
    /// A hand-written document (the `nodes` written compactly; [`Function::to_json`] indents
    /// them):
    ///
    /// ```
    /// # use graphlift_ir::{Function, Op, BinaryOp};
    /// let text = r#"
    /// {
    ///   "format": "graphlift-function",
    ///   "version": 1,
    ///   "function": {
    ///     "name": "f",
    ///     "parameters": ["x"],
    ///     "results": ["y"],
    ///     "nodes": [
    ///       { "name": "x", "op": { "type": "Parameter" }, "inputs": [],
    ///         "outputs": [{ "element_type": "f32", "shape": [2] }],
    ///         "tags": ["onnx:X"], "site": { "file": "src/main.rs", "line": 3, "column": 9 } },
    ///       { "name": "two", "op": { "type": "Constant", "element_type": "f32",
    ///                                 "values": ["0x40000000"] }, "inputs": [],
    ///         "outputs": [{ "element_type": "f32", "shape": [] }],
    ///         "site": { "file": "src/main.rs", "line": 4, "column": 9 } },
    ///       { "name": "two_b", "op": { "type": "Broadcast", "shape": [2] },
    ///         "inputs": [{ "node": "two", "output": 0 }],
    ///         "outputs": [{ "element_type": "f32", "shape": [2] }],
    ///         "site": { "file": "src/main.rs", "line": 5, "column": 9 } },
    ///       { "name": "mul", "op": { "type": "Multiply" },
    ///         "inputs": [{ "node": "x", "output": 0 }, { "node": "two_b", "output": 0 }],
    ///         "outputs": [{ "element_type": "f32", "shape": [2] }],
    ///         "metadata": { "k": "v" }, "pass_history": ["cse"],
    ///         "site": { "file": "src/main.rs", "line": 5, "column": 9 },
    ///         "other_deps": ["two"] },
    ///       { "name": "y", "op": { "type": "Result" },
    ///         "inputs": [{ "node": "mul", "output": 0 }],
    ///         "outputs": [{ "element_type": "f32", "shape": [2] }],
    ///         "site": { "file": "src/main.rs", "line": 6, "column": 9 } }
    ///     ]
    ///   }
    /// }
    /// "#;
    /// let f = Function::from_json(text)?;
    /// let mul = f.node_by_name("mul").unwrap();
    /// assert_eq!(mul.op(), &Op::Binary(BinaryOp::Multiply));
    /// assert_eq!(mul.metadata()["k"], "v");
    /// assert_eq!(Function::from_json(&f.to_json())?.to_json(), f.to_json());
    /// # Ok::<(), graphlift_ir::IrError>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Function, IrError> {
        decode::read_document(text).map_err(IrError::from)
    }

    /// Writes [`Function::to_json`] to `path`.
    ///
    /// # Errors
    /// [`IrError::Serialization`] of kind `Io`, naming the path, if the file cannot be
    /// written.
    pub fn save_json(&self, path: impl AsRef<Path>) -> Result<(), IrError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json()).map_err(|e| io_error(path, &e))
    }

    /// Reads a function from the JSON file at `path` (see [`Function::from_json`]).
    ///
    /// # Errors
    /// [`IrError::Serialization`] naming the path: of kind `Io` if the file cannot be read
    /// (or is not UTF-8), otherwise as [`Function::from_json`].
    pub fn load_json(path: impl AsRef<Path>) -> Result<Function, IrError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| io_error(path, &e))?;
        decode::read_document(&text).map_err(|mut e| {
            e.path = Some(path.to_path_buf());
            IrError::from(e)
        })
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> IrError {
    let mut err = SerializationError::new(SerializationErrorKind::Io, "", e.to_string());
    err.path = Some(path.to_path_buf());
    IrError::from(err)
}
