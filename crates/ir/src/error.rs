//! Errors of the IR crate.

use crate::{CreationSite, NodeId, Shape};

/// Everything that can go wrong while building or editing a [`crate::Function`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IrError {
    /// An op was given operands it does not accept (type or shape inference failed).
    #[error(transparent)]
    Inference(Box<InferenceError>),
    /// A shape's element count overflows `usize`.
    #[error("shape {shape}: element count overflows usize")]
    ShapeOverflow {
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
    /// The graph has a cycle through the named node.
    #[error("function `{function}`: cycle through node `{node}`")]
    Cycle {
        /// The function's name.
        function: String,
        /// A node on the cycle.
        node: String,
    },
    /// A structural invariant is broken (reported by [`crate::Function::validate`]).
    #[error("function `{function}` is invalid: {message}")]
    Invalid {
        /// The function's name.
        function: String,
        /// What is wrong, naming the node.
        message: String,
    },
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
