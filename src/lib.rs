//! graphlift: a JIT graph compiler for CPUs, after Intel nGraph's CPU backend with Halide: a
//! [`Function`] from the builder or ONNX ([`onnx`]) runs on a [`Backend`], whose CPU-JIT fuses
//! elementwise regions and compiles each with Cranelift into a native SIMD loop.

#![warn(missing_docs)]

use std::sync::Arc;

pub use graphlift_ir as ir;
pub use graphlift_jit as jit;
pub use graphlift_onnx as onnx;
pub use graphlift_passes as passes;
pub use graphlift_runtime as runtime;

pub use graphlift_ir::{
    bf16, f16, select, ElementType, Function, FunctionBuilder, IrError, Op, Shape, TensorData,
    TensorType, Value,
};
pub use graphlift_runtime::{Executable, KernelInfo, RuntimeError, Tensor, TensorSpec};

/// The entry point to the backends (nGraph's `runtime::Backend::create`).
///
/// The backend trait itself is [`runtime::Backend`]. [`Backend::create`] selects
/// `"INTERPRETER"`, the reference that defines what every op means, or `"CPU-JIT"`, which
/// gathers every region of elementwise ops of a [`Function`] (a DAG of typed nodes, from
/// [`FunctionBuilder`] or [`onnx`]) into a fused kernel and compiles it with Cranelift into
/// a native SIMD loop.
///
/// ```
/// use graphlift::{Backend, ElementType::F32, FunctionBuilder, Tensor};
/// let b = FunctionBuilder::new("halide_subgraph");
/// let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
/// let f = b.finish(&[((a + bb) * c).relu() + d]).unwrap();
/// let exe = Backend::create("CPU-JIT").unwrap().compile(&f).unwrap();
/// let x = Tensor::from_vec(vec![-1.0f32, 4.0, -2.0, 5.0, 1.0, 5.0, 7.0, 9.0], [8]).unwrap();
/// let out = exe.run(&[x.clone(), x.clone(), x.clone(), x]).unwrap();
/// assert_eq!(out[0].read::<f32>().unwrap(), &[1.0, 36.0, 6.0, 55.0, 3.0, 55.0, 105.0, 171.0]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Backend;

impl Backend {
    /// The backend registered under `name`: `"INTERPRETER"` or `"CPU-JIT"`, or any backend a
    /// program registered with [`runtime::register_backend`].
    ///
    /// # Errors
    /// [`RuntimeError::UnknownBackend`] listing the known names.
    pub fn create(name: &str) -> Result<Arc<dyn runtime::Backend>, RuntimeError> {
        graphlift_jit::register();
        runtime::create_backend(name)
    }

    /// Names of the registered backends.
    pub fn registered() -> Vec<String> {
        graphlift_jit::register();
        runtime::registered_backends()
    }
}
