//! graphlift-runtime: tensors, the `Backend` and `Executable` traits, the backend registry,
//! the reference kernels, the INTERPRETER backend and execution tracing ([`trace`]).
//!
//! ```
//! use graphlift_ir::{ElementType::F32, FunctionBuilder};
//! use graphlift_runtime::{Backend, Tensor};
//! let b = FunctionBuilder::new("f");
//! let x = b.parameter("x", F32, [3]);
//! let f = b.finish(&[x.relu()]).unwrap();
//! let backend = <dyn Backend>::create("INTERPRETER").unwrap();
//! let exe = backend.compile(&f).unwrap();
//! let out = exe.run(&[Tensor::from_vec(vec![-1.0f32, 0.5, 2.0], [3]).unwrap()]).unwrap();
//! assert_eq!(out[0].read::<f32>().unwrap(), &[0.0, 0.5, 2.0]);
//! ```

#![warn(missing_docs)]

mod backend;
pub mod compare;
mod error;
mod interpreter;
pub mod reference;
pub mod registry;
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
