//! Errors of the IR crate.

use std::path::PathBuf;

use crate::{CreationSite, NodeId, Shape};

/// Everything that can go wrong while building or editing a [`crate::Function`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IrError {
    /// An op was given operands it does not accept (type or shape inference failed).
    #[error(transparent)]
    Inference(Box<InferenceError>),
    /// A shape's element count overflows `usize`.
    #[error("{}shape {shape}: element count overflows usize", location_prefix(.at))]
    ShapeOverflow {
        /// What has the shape: ``Parameter `x` (created at src/main.rs:4:13)``,
        /// ``Constant `Constant_2` (created at …)``, `f32 tensor`; empty when a shape is
        /// checked on its own ([`Shape::element_count`]).
        at: String,
        /// The offending shape.
        shape: Shape,
    },
    /// A constant's data does not fill its shape.
    #[error("constant `{name}`: {len} elements given for shape {shape}, which holds {expected}")]
    ConstantLength {
        /// The constant's name.
        name: String,
        /// Elements given.
        len: usize,
        /// Declared shape.
        shape: Shape,
        /// Elements the shape holds.
        expected: usize,
    },
    /// A node id or output index that is not in the function.
    #[error("function `{function}`: {what}")]
    Dangling {
        /// The function's name.
        function: String,
        /// Which reference dangles.
        what: String,
    },
    /// A name already taken by another node.
    #[error("function `{function}`: the name `{name}` is already used by node {node}")]
    DuplicateName {
        /// The function's name.
        function: String,
        /// The name.
        name: String,
        /// The node that has it.
        node: NodeId,
    },
    /// `replace_node` between nodes whose outputs differ.
    #[error("replace_node: cannot replace `{old}` ({old_types}) by `{new}` ({new_types})")]
    ReplaceMismatch {
        /// Name of the replaced node.
        old: String,
        /// Its output types.
        old_types: String,
        /// Name of the replacement.
        new: String,
        /// Its output types.
        new_types: String,
    },
    /// `replace_node` of a node nGraph's refuses to replace: a `Result` (replace the value it
    /// reads instead), or a node nothing uses (no data user and no control dependency on
    /// it), where a replacement would change nothing but tags.
    #[error("replace_node: cannot replace `{node}`: {reason}")]
    ReplaceRefused {
        /// Name of the node.
        node: String,
        /// Why.
        reason: &'static str,
    },
    /// The graph has a cycle through the named node.
    #[error("function `{function}`: cycle through node `{node}`")]
    Cycle {
        /// The function's name.
        function: String,
        /// A node on the cycle.
        node: String,
    },
    /// A [`crate::Value`] used with a [`crate::FunctionBuilder`] that did not make it, or
    /// made it for a function it has since finished. Node ids are indices into one
    /// function, so using it would silently wire in whatever node has the same id here.
    #[error("{at}: operand {index} is {value}, which is not a value of this function")]
    ForeignValue {
        /// The op being added (`Result` for [`crate::FunctionBuilder::finish`]), the function
        /// being built and the creation site: ``Add in function `f` (created at
        /// src/main.rs:9:13)``.
        at: String,
        /// The position of the foreign operand (or result).
        index: usize,
        /// The foreign value: ``node `y` of function `g` (made by another
        /// FunctionBuilder)``.
        value: String,
    },
    /// State used wrongly: an `Assign` or `ReadVariable` of something that is not a
    /// `Variable`, a variable used as a plain value, an initializer that takes parameters or
    /// uses state, or a read and an assign of one variable that nothing orders.
    #[error("function `{function}`: node `{node}`: {message}")]
    State {
        /// The function's name.
        function: String,
        /// The offending node's name.
        node: String,
        /// What is wrong, naming the other nodes involved.
        message: String,
    },
    /// A derivative that cannot be built ([`crate::FunctionBuilder::deriv`]): of a value that
    /// is not a float scalar, with respect to a value that is not a float, or through an op
    /// without an adjoint.
    #[error("deriv of `{of}`: {message}")]
    Derivative {
        /// The differentiated value's node.
        of: String,
        /// What is wrong, naming the op or value.
        message: String,
    },
    /// A structural invariant is broken (reported by [`crate::Function::validate`]).
    #[error("function `{function}` is invalid: {message}")]
    Invalid {
        /// The function's name.
        function: String,
        /// What is wrong, naming the node.
        message: String,
    },
    /// Reading or writing the JSON form of a function failed (see [`crate::Function::from_json`]).
    #[error(transparent)]
    Serialization(Box<SerializationError>),
}

/// Type or shape inference failed: names the op, the node, the operands and the site.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{op} `{name}` (created at {site}): {message}; operands: {operands}")]
pub struct InferenceError {
    /// The op, e.g. `Add` or `Broadcast<[2, 3]>`.
    pub op: String,
    /// The name the node would have had.
    pub name: String,
    /// Where the node was created.
    pub site: CreationSite,
    /// The operand types, e.g. `f32[2, 3], f32[3]`.
    pub operands: String,
    /// What is wrong.
    pub message: String,
}

/// What kind of problem a [`SerializationError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SerializationErrorKind {
    /// The file could not be read or written.
    Io,
    /// The text is not JSON (or is cut short); the message gives line and column.
    Syntax,
    /// The document is not a `graphlift-function` document, or its version is not one this
    /// build reads.
    UnsupportedFormat,
    /// A field is missing, unknown or of the wrong JSON type.
    Schema,
    /// The fields are well-formed but do not describe a valid function: a dangling or
    /// duplicate name, an unknown op, a bad constant, a cycle, or output types that shape
    /// and type inference does not give.
    Invalid,
}

/// Reading or writing the JSON form of a [`crate::Function`] failed: what is wrong and where.
///
/// Displays as `[<path>: ]graphlift JSON: [<location>: ]<message>`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}graphlift JSON: {}{message}", path_prefix(.path.as_ref()), location_prefix(.location))]
pub struct SerializationError {
    /// The kind of problem.
    pub kind: SerializationErrorKind,
    /// The file involved, for [`crate::Function::save_json`] and [`crate::Function::load_json`].
    pub path: Option<PathBuf>,
    /// Where in the document, e.g. ``function `main` / node 3 `add` `` (empty when the
    /// message says it, as serde_json's line and column do).
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl SerializationError {
    /// An error of `kind` at `location`, without a path.
    pub(crate) fn new(
        kind: SerializationErrorKind,
        location: impl Into<String>,
        message: impl Into<String>,
    ) -> SerializationError {
        SerializationError {
            kind,
            path: None,
            location: location.into(),
            message: message.into(),
        }
    }
}

/// `"<path>: "` when there is a path.
fn path_prefix(path: Option<&PathBuf>) -> String {
    path.map(|p| format!("{}: ", p.display()))
        .unwrap_or_default()
}

/// `"<location>: "` when there is a location.
fn location_prefix(location: &str) -> String {
    if location.is_empty() {
        String::new()
    } else {
        format!("{location}: ")
    }
}

impl From<SerializationError> for IrError {
    fn from(e: SerializationError) -> IrError {
        IrError::Serialization(Box::new(e))
    }
}
