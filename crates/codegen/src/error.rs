//! Errors of the JIT crate.

use graphlift_ir::IrError;
use graphlift_runtime::RuntimeError;

/// Everything that can go wrong while compiling or calling a JIT kernel.
///
/// At the backend boundary a `JitError` becomes [`RuntimeError::Compile`] (compile time) or
/// [`RuntimeError::Execution`] (call time); see [`JitError::into_compile_error`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JitError {
    /// The host machine cannot be targeted (Cranelift has no backend for it, or a flag was
    /// refused).
    #[error("host ISA: {0}")]
    Isa(String),
    /// A fused kernel whose body this JIT does not lower (an op outside the elementwise set,
    /// results of different element counts, ...). Names the kernel and what is wrong.
    #[error("kernel `{kernel}`: {message}")]
    Unsupported {
        /// The kernel (fused node or body function) name.
        kernel: String,
        /// What is not supported.
        message: String,
    },
    /// Cranelift rejected the generated function (a verifier or lowering error: a bug here).
    #[error("kernel `{kernel}`: Cranelift: {message}")]
    Codegen {
        /// The kernel name.
        kernel: String,
        /// Cranelift's message.
        message: String,
    },
    /// The JIT module failed to declare, define or finalize (e.g. executable memory could not
    /// be mapped).
    #[error("JIT module: {0}")]
    Module(String),
    /// A buffer handed to a kernel does not match what it was compiled for.
    #[error("kernel `{kernel}`: {message}")]
    Buffer {
        /// The kernel name.
        kernel: String,
        /// Which buffer and what is wrong.
        message: String,
    },
    /// An IR error while reading the kernel body.
    #[error(transparent)]
    Ir(#[from] IrError),
}

impl JitError {
    /// The error as the runtime reports a failed compilation of `function`.
    pub fn into_compile_error(self, function: &str) -> RuntimeError {
        match self {
            JitError::Ir(e) => RuntimeError::Ir(e),
            e => RuntimeError::Compile {
                function: function.to_string(),
                message: e.to_string(),
            },
        }
    }
}
