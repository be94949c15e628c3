//! Errors of the ONNX importer.

use std::fmt;

use graphlift_ir::IrError;

/// Where in a model an error is: an ONNX node (its name and `op_type`), or a graph-level
/// item (a graph input, output or initializer, with `op_type` saying which).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRef {
    /// The node's name; for an unnamed node, `#<index>` and its first output
    /// (`#3 (output `y`)`); for a graph-level item, the value's name.
    pub name: String,
    /// The node's `op_type` (`Relu`), or `graph input`, `graph output`, `initializer`,
    /// `tensor` for graph-level items and standalone tensors; an item of a control-flow
    /// node's subgraph names the node too (`Loop `l` body `b`: graph output`).
    pub op_type: String,
}

impl NodeRef {
    /// A reference to a graph-level item, e.g. `NodeRef::item("graph input", "x")`.
    pub fn item(kind: &str, name: &str) -> NodeRef {
        NodeRef {
            name: name.to_string(),
            op_type: kind.to_string(),
        }
    }
}

impl fmt::Display for NodeRef {
    /// `Relu `conv1/relu`` for a named node, `Relu node #3 (output `y`)` for an unnamed one,
    /// `graph input `x`` for a graph-level item.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.starts_with('#') {
            write!(f, "{} node {}", self.op_type, self.name)
        } else {
            write!(f, "{} `{}`", self.op_type, self.name)
        }
    }
}

/// Everything that can go wrong importing an ONNX model or reading a tensor.
///
/// Every variant says where (a [`NodeRef`]: the node's name and `op_type`, or the graph
/// input, output or initializer) and what was wrong. No input bytes make the importer panic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OnnxError {
    /// The file could not be opened or mapped.
    #[error("reading `{path}`: {message}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The bytes are not a valid protobuf encoding of the expected message (truncated,
    /// a bad wire type or length, invalid UTF-8 in a string).
    #[error("{}invalid protobuf for {message_type}: {message}", file_prefix(.path.as_deref()))]
    Protobuf {
        /// The file the bytes were read from ([`crate::import_model_file`]); `None` for
        /// bytes handed in.
        path: Option<String>,
        /// The message being decoded (`ModelProto`, `TensorProto`).
        message_type: &'static str,
        /// The decoder's description.
        message: String,
    },
    /// The model is well-formed protobuf but not a model graphlift can import (no graph, no
    /// default-domain opset, a tensor whose data does not fill its shape, duplicate names,
    /// a value two nodes produce, a cycle between nodes or nodes out of topological order,
    /// external data, ...).
    #[error("{at}: {message}")]
    InvalidModel {
        /// Where.
        at: NodeRef,
        /// What is wrong.
        message: String,
    },
    /// An operator graphlift does not import.
    #[error("{at}: unsupported operator `{op_type}` of domain `{domain}` ({})", opset_note(*.opset))]
    UnsupportedOp {
        /// The node.
        at: NodeRef,
        /// The operator.
        op_type: String,
        /// Its domain (`ai.onnx` for the default domain).
        domain: String,
        /// The opset version imported for that domain (0 if none).
        opset: i64,
    },
    /// An element type graphlift has no element type for (STRING, COMPLEX*, the 8-, 4- and
    /// 2-bit floats and integers), or one an operator does not accept yet (MaxPool of
    /// UINT8).
    #[error("{at}: unsupported element type {data_type}")]
    UnsupportedElementType {
        /// Where the type appears.
        at: NodeRef,
        /// The ONNX data type name (`UINT8`, `FLOAT16`, `STRING`), or `data type <code>` for
        /// a code the spec does not define.
        data_type: String,
    },
    /// A value that is not a dense tensor of static shape (a sequence, map, optional or
    /// sparse tensor, an unknown rank, a symbolic dimension).
    #[error("{at}: unsupported type: {message}")]
    UnsupportedType {
        /// Where the type appears.
        at: NodeRef,
        /// What kind of type, e.g. `sequence`, or `symbolic dimension `N``.
        message: String,
    },
    /// An attribute is missing, of the wrong type, or has a value the op does not accept.
    #[error("{at}: attribute `{attribute}`: {message}")]
    BadAttribute {
        /// The node.
        at: NodeRef,
        /// The attribute's name.
        attribute: String,
        /// What is wrong (e.g. `expected FLOAT, got INT`).
        message: String,
    },
    /// A node input (or graph output) names a value that no graph input, initializer or
    /// earlier node defines, or a required input is omitted.
    #[error("{at}: input {index} `{input}` is not defined by any graph input, initializer or earlier node")]
    MissingInput {
        /// The node (or graph output).
        at: NodeRef,
        /// The position of the input.
        index: usize,
        /// The value name (empty for an omitted required input).
        input: String,
    },
    /// Input shapes that do not broadcast, or a declared shape that differs from the one the
    /// importer infers.
    #[error("{at}: shape mismatch: {message}")]
    ShapeMismatch {
        /// The node.
        at: NodeRef,
        /// The shapes involved.
        message: String,
    },
    /// Input element types the op does not accept (e.g. `Add` of FLOAT and INT64, `Elu` of
    /// INT32), or a declared element type that differs from the one the importer infers.
    #[error("{at}: type mismatch: {message}")]
    TypeMismatch {
        /// The node.
        at: NodeRef,
        /// The types involved.
        message: String,
    },
    /// The node's arity is wrong (too few or too many inputs or outputs).
    #[error("{at}: {message}")]
    Arity {
        /// The node.
        at: NodeRef,
        /// What is wrong.
        message: String,
    },
    /// Building the IR for a node failed (an inference error the importer did not
    /// anticipate).
    #[error("{at}: {source}")]
    Ir {
        /// The node.
        at: NodeRef,
        /// The IR's error (boxed: it is large).
        source: Box<IrError>,
    },
    /// A valid use of a supported operator that graphlift does not implement: training-mode
    /// `BatchNormalization`, the `Indices` output of `MaxPool`, a shape computed at run time.
    #[error("{at}: not supported: {feature}")]
    UnsupportedFeature {
        /// The node.
        at: NodeRef,
        /// What is not supported, and how to avoid it where there is a way.
        feature: String,
    },
    /// A shape-like operand (a `Reshape` shape, `Resize` scales, `Pad` pads, ...) that a
    /// graph input gives at run time: graphlift needs it at import. Import again with the
    /// input's value in [`crate::ImportOptions::input_values`] (its value becomes a
    /// constant and the input leaves the Function's parameters).
    #[error("{at}: not supported: {what} is the graph input `{input}`, known only at run time; graphlift needs its value at import (ImportOptions::input_values)")]
    RunTimeOperand {
        /// The node.
        at: NodeRef,
        /// Which operand (`input 2 (`scales`)`).
        what: String,
        /// The graph input that gives it.
        input: String,
    },
    /// An operator whose output shape depends on the values of its operand (`NonZero`), over
    /// a value known only at run time. A Function's shapes are static, so such a model runs
    /// through a [`crate::Session`], which splits it at this node and runs the node between
    /// the two parts as a dynamic step.
    #[error("{at}: the shape of output `{output}` depends on the values of `{operand}`, known only at run time: a Function's shapes are static; run the model through graphlift_onnx::Session, which runs this node as a dynamic step")]
    DataDependentShape {
        /// The node.
        at: NodeRef,
        /// The ONNX value whose values decide the shape.
        operand: String,
        /// The ONNX value of data-dependent shape.
        output: String,
    },
    /// Evaluating a node whose inputs are all constants failed at import (an out-of-range
    /// `Gather` index in a shape computation, say).
    #[error("{at}: evaluating on constant inputs: {message}")]
    Fold {
        /// The node.
        at: NodeRef,
        /// The reference kernel's message.
        message: String,
    },
}

/// `opset <n>`, or that the model imports none (`0`).
fn opset_note(opset: i64) -> String {
    if opset == 0 {
        "the model imports no opset of this domain".to_string()
    } else {
        format!("opset {opset}")
    }
}

/// ``"`<path>`: "`` when there is a path.
fn file_prefix(path: Option<&str>) -> String {
    path.map(|p| format!("`{p}`: ")).unwrap_or_default()
}

/// The `at` of an [`OnnxError`] (`$e`: `&OnnxError` or `&mut OnnxError`), if it has one.
macro_rules! location_of {
    ($e:expr) => {
        match $e {
            OnnxError::Io { .. } | OnnxError::Protobuf { .. } => None,
            OnnxError::InvalidModel { at, .. }
            | OnnxError::UnsupportedOp { at, .. }
            | OnnxError::UnsupportedElementType { at, .. }
            | OnnxError::UnsupportedType { at, .. }
            | OnnxError::BadAttribute { at, .. }
            | OnnxError::MissingInput { at, .. }
            | OnnxError::ShapeMismatch { at, .. }
            | OnnxError::TypeMismatch { at, .. }
            | OnnxError::Arity { at, .. }
            | OnnxError::Ir { at, .. }
            | OnnxError::Fold { at, .. }
            | OnnxError::UnsupportedFeature { at, .. }
            | OnnxError::RunTimeOperand { at, .. }
            | OnnxError::DataDependentShape { at, .. } => Some(at),
        }
    };
}

impl OnnxError {
    /// `true` for [`OnnxError::UnsupportedElementType`] and [`OnnxError::UnsupportedType`]:
    /// the model is valid ONNX but uses types graphlift does not have.
    pub fn is_unsupported_type(&self) -> bool {
        matches!(
            self,
            OnnxError::UnsupportedElementType { .. } | OnnxError::UnsupportedType { .. }
        )
    }

    /// `true` for valid ONNX that graphlift does not support: the unsupported types of
    /// [`OnnxError::is_unsupported_type`], [`OnnxError::UnsupportedOp`] and
    /// [`OnnxError::UnsupportedFeature`], [`OnnxError::RunTimeOperand`],
    /// [`OnnxError::DataDependentShape`] (unsupported by a single import; a
    /// [`crate::Session`] runs it).
    pub fn is_unsupported(&self) -> bool {
        self.is_unsupported_type()
            || matches!(
                self,
                OnnxError::UnsupportedOp { .. }
                    | OnnxError::UnsupportedFeature { .. }
                    | OnnxError::RunTimeOperand { .. }
                    | OnnxError::DataDependentShape { .. }
            )
    }

    /// The node or graph item the error is about, if any.
    pub fn location(&self) -> Option<&NodeRef> {
        location_of!(self)
    }

    /// [`OnnxError::location`], to change (a subgraph's error naming its enclosing node).
    pub(crate) fn location_mut(&mut self) -> Option<&mut NodeRef> {
        location_of!(self)
    }
}
