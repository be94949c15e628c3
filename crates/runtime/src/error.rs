//! Errors of the runtime crate.

use graphlift_ir::{IrError, TensorType};

/// Everything that can go wrong creating tensors, compiling or calling an Executable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    /// `Backend::create` with a name no backend is registered under.
    #[error("unknown backend `{name}`; known backends: {known}")]
    UnknownBackend {
        /// The name asked for.
        name: String,
        /// Registered names, comma-separated.
        known: String,
    },
    /// A call with the wrong number of inputs or outputs.
    #[error("{what}: expected {expected} tensor(s), got {got}")]
    ArgumentCount {
        /// `inputs` or `outputs`.
        what: &'static str,
        /// Tensors the Executable takes.
        expected: usize,
        /// Tensors given.
        got: usize,
    },
    /// A tensor whose element type or shape differs from the parameter or result.
    #[error("{what} {index} (`{name}`): expected {expected}, got {got}")]
    ArgumentType {
        /// `input` or `output`.
        what: &'static str,
        /// Position in the call.
        index: usize,
        /// The parameter's or result's name.
        name: String,
        /// The type the Executable was compiled for (boxed, like `got`, to keep the error
        /// small on the `Ok` path of every call).
        expected: Box<TensorType>,
        /// The tensor's type.
        got: Box<TensorType>,
    },
    /// Tensor data whose length or type does not match its declared type, or a tensor too
    /// large for any allocation (more than `isize::MAX` bytes).
    #[error("tensor data: {0}")]
    Data(String),
    /// An error from the IR (shape overflow, invalid function, ...).
    #[error(transparent)]
    Ir(#[from] IrError),
    /// Compilation failed.
    #[error("compiling `{function}`: {message}")]
    Compile {
        /// The function's name.
        function: String,
        /// What failed.
        message: String,
    },
    /// Executing a node failed; names the node and its provenance.
    #[error("node `{node}` ({op}) [provenance: {provenance}]: {message}")]
    Execution {
        /// The node's name.
        node: String,
        /// Its op.
        op: String,
        /// Its provenance tags, comma-separated.
        provenance: String,
        /// What failed.
        message: String,
    },
    /// A variable name the Executable does not have.
    #[error("no variable `{name}`; the executable's variables: {known}")]
    UnknownVariable {
        /// The name asked for.
        name: String,
        /// The executable's variables, comma-separated (`none` when it has none).
        known: String,
    },
    /// A value for a variable whose element type or shape differs from the variable's.
    #[error("variable `{name}`: expected {expected}, got {got}")]
    VariableType {
        /// The variable's name.
        name: String,
        /// The variable's type.
        expected: Box<TensorType>,
        /// The value's type.
        got: Box<TensorType>,
    },
    /// A trace that cannot be recorded, rebuilt, written or read (the message says which
    /// and why, naming the file or record).
    #[error("trace: {0}")]
    Trace(String),
}
