//! graphlift-runtime: tensors, the `Backend` and `Executable` traits, the backend registry,
//! the reference kernels that define what each op computes, the INTERPRETER backend built on
//! them, and execution tracing ([`trace`]).

#![warn(missing_docs)]

mod backend;
pub mod compare;
pub mod control_flow;
mod error;
mod interpreter;
pub mod reference;
pub mod registry;
pub mod state;
mod tensor;
pub mod trace;

pub use backend::{
    function_signature, validate_arguments, Backend, CodeRange, Executable, KernelInfo, StepInfo,
    TensorSpec,
};
pub use compare::{compare, Comparison};
pub use error::RuntimeError;
pub use interpreter::{InterpreterBackend, InterpreterExecutable};
pub use registry::{create_backend, register_backend, registered_backends};
pub use tensor::Tensor;
