//! One fused kernel compiled on its own: for tools, benchmarks and accuracy sweeps.

use std::sync::Arc;

use graphlift_ir::{ElementType, Function, TensorData};
use graphlift_runtime::{KernelInfo, Tensor};

use crate::compile::{self, CompiledKernel};
use crate::module::MemoryWatch;
use crate::plan;
use crate::provenance::BodyNodes;
use crate::JitError;
use graphlift_kernels::target::Target;

/// A fused kernel body compiled to native code in its own JIT module (freed on drop).
///
/// The body is a `Function` of the form subgraph extraction gives a `FusedKernel`: its
/// parameters are the live-ins, its results the outputs, all of one element count (the
/// iteration space); ops are `Unary`, `Binary`, `Compare`, `Select`, `Convert`,
/// `Broadcast` and `Constant`. Inputs keep their own (broadcastable) shapes.
///
/// ```
/// use graphlift_ir::{ElementType::F32, FunctionBuilder};
/// use graphlift_codegen::JitKernel;
/// use graphlift_runtime::Tensor;
/// let b = FunctionBuilder::new("bias_relu");
/// let (x, bias) = (b.parameter("x", F32, [2, 4]), b.parameter("b", F32, [4]));
/// let body = b.finish(&[(x + bias).relu()]).unwrap();
/// let k = JitKernel::compile(&body).unwrap();
/// let x = Tensor::from_vec(vec![-1.0f32, 2.0, -3.0, 4.0, 5.0, -6.0, 7.0, -8.0], [2, 4]).unwrap();
/// let bias = Tensor::from_vec(vec![1.0f32, 1.0, 1.0, 1.0], [4]).unwrap();
/// let mut out = [Tensor::zeros(F32, [2, 4]).unwrap()];
/// k.call(&[&x, &bias], &mut out).unwrap();
/// assert_eq!(out[0].read::<f32>().unwrap(), &[0.0, 3.0, 0.0, 5.0, 6.0, 0.0, 8.0, 0.0]);
/// ```
#[derive(Debug)]
pub struct JitKernel {
    /// Owns (an `Arc` of) its module, freed when this drops.
    kernel: CompiledKernel,
    nodes: BodyNodes,
}

impl JitKernel {
    /// Compiles `body` (named after the function).
    ///
    /// # Errors
    /// [`JitError::Unsupported`] for a body outside the fused-kernel form;
    /// [`JitError::Codegen`], [`JitError::Module`] or [`JitError::Isa`] if Cranelift fails.
    /// `f32` `exp`, `sigmoid`, `tanh`, `erf` and divisions run as calls to the vector math
    /// library when the host and the environment allow it (`Target::from_env`; see
    /// [`JitKernel::calls_library`]); an `f32` / `i32` kernel the assembler takes is AVX2 or
    /// AVX-512 code when they allow it (see [`JitKernel::assembled`]). Never streams its
    /// outputs.
    pub fn compile(body: &Function) -> Result<JitKernel, JitError> {
        JitKernel::compile_for(body, &Target::from_env())
    }

    /// Compiles `body` for `target` ([`crate::code_path::choose_code_path`], as a standalone
    /// kernel that does not stream).
    ///
    /// # Errors
    /// As [`JitKernel::compile`].
    pub fn compile_for(body: &Function, target: &Target) -> Result<JitKernel, JitError> {
        let mut plan = plan::plan_kernel(body.name(), body)?;
        crate::code_path::choose_code_path(&mut plan, &target.with_streaming_stores(false), true);
        JitKernel::from_plan(body, plan)
    }

    /// Compiles `body` with every op inline: as [`JitKernel::compile`], without calls to the
    /// vector math library (the Cranelift vector math of [`crate::vmath`] in the loop), and
    /// always through Cranelift (never as assembled code).
    ///
    /// # Errors
    /// As [`JitKernel::compile`].
    pub fn compile_inline(body: &Function) -> Result<JitKernel, JitError> {
        let plan = plan::plan_kernel(body.name(), body)?;
        JitKernel::from_plan(body, plan)
    }

    /// Compiles `body` as a scalar loop (one element per trip), whatever its element types:
    /// the same operation sequence as the vector loop [`JitKernel::compile`] picks, lane for
    /// lane, for checking one against the other (the accuracy sweeps of vector math).
    ///
    /// # Errors
    /// As [`JitKernel::compile`].
    pub fn compile_scalar(body: &Function) -> Result<JitKernel, JitError> {
        let mut plan = plan::plan_kernel(body.name(), body)?;
        plan.lanes = crate::lanes::Lanes::X1;
        JitKernel::from_plan(body, plan)
    }

    /// Compiles `plan` (made from `body` by [`plan::plan_kernel`], its code path already
    /// chosen) on its own.
    ///
    /// # Errors
    /// [`JitError`] if Cranelift or the assembler rejects the code.
    pub fn from_plan(body: &Function, plan: plan::KernelPlan) -> Result<JitKernel, JitError> {
        let mut kernels = compile::compile(vec![plan])?;
        let kernel = kernels
            .pop()
            .ok_or_else(|| JitError::Module("no kernel compiled".into()))?;
        let nodes = BodyNodes::of(body);
        Ok(JitKernel { kernel, nodes })
    }

    /// Elements in the iteration space (each output holds this many).
    pub fn element_count(&self) -> usize {
        self.kernel.plan.count
    }

    /// `true` when the kernel runs as a vector loop: `F32X4`/`I32X4` when every value is
    /// `f32`, `i32` or `bool`, `F64X2`/`I64X2` when every value is `f64`, `i64` or `bool`,
    /// and both when it mixes 32-bit and 64-bit numbers ([`JitKernel::is_mixed_width`]);
    /// `false` for a scalar loop.
    pub fn is_vectorized(&self) -> bool {
        self.kernel.plan.lanes.is_vector()
    }

    /// Elements per vector body of the kernel's loop: 16 for AVX-512 code and 8 for AVX2
    /// code ([`JitKernel::assembled`]), 4 (`F32X4`/`I32X4`, or a mixed-width
    /// kernel: each 32-bit value one `F32X4`/`I32X4`, each 64-bit value two
    /// `F64X2`/`I64X2`), 2 (`F64X2`/`I64X2`) or 1 (scalar).
    pub fn lanes(&self) -> usize {
        self.kernel.lanes()
    }

    /// The instruction set when the kernel is assembled without Cranelift (eight-lane AVX2 or
    /// sixteen-lane AVX-512 code: [`crate::asm`]); its results are bit-identical to
    /// [`JitKernel::compile_inline`]'s. `None` for Cranelift's code.
    pub fn assembled(&self) -> Option<graphlift_kernels::target::VectorIsa> {
        self.kernel.assembled()
    }

    /// `true` when the kernel mixes 32-bit and 64-bit numbers: its vector body computes
    /// four elements, 32-bit values as one vector and 64-bit values as two.
    pub fn is_mixed_width(&self) -> bool {
        self.kernel.plan.lanes == crate::lanes::Lanes::Mixed
    }

    /// `true` when the kernel calls the vector math library for some of its ops (it then
    /// runs in strips of elements; results are bit-identical to [`JitKernel::compile_inline`]).
    pub fn calls_library(&self) -> bool {
        self.kernel.calls_library()
    }

    /// Size of the machine code in bytes.
    pub fn code_size(&self) -> usize {
        self.kernel.code_size
    }

    /// The Cranelift IR the kernel was compiled from (for assembled code, its listing).
    pub fn ir(&self) -> &str {
        &self.kernel.ir
    }

    /// What the kernel contains.
    pub fn info(&self) -> KernelInfo {
        KernelInfo {
            live_ins: self.kernel.plan.live_ins,
            outputs: self.kernel.plan.outputs.len(),
            code_size: self.kernel.code_size,
            ir: Arc::clone(&self.kernel.ir),
            code_ranges: self.kernel.code_ranges().into(),
            ..self
                .nodes
                .info(&self.kernel.plan.name, self.nodes.union_tags(Vec::new()))
        }
    }

    /// Element types of the outputs, in order.
    pub fn output_types(&self) -> Vec<ElementType> {
        self.kernel.plan.outputs.iter().map(|&(_, t)| t).collect()
    }

    /// A watch that tells when this kernel's code memory has been freed.
    pub fn memory_watch(&self) -> MemoryWatch {
        self.kernel.code.module().watch()
    }

    /// Computes every element: `inputs` are the live-ins in parameter order (each of its
    /// parameter's element type and element count), `outputs` one tensor per result (of the
    /// result's element type and the iteration space's element count; shapes are not
    /// checked, only counts).
    ///
    /// # Errors
    /// [`JitError::Buffer`] naming the first mismatching tensor.
    pub fn call(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), JitError> {
        self.call_range(inputs, outputs, 0, self.element_count())
    }

    /// Computes elements `begin..end` only (the range ABI); other output elements are left
    /// as they are.
    ///
    /// # Errors
    /// [`JitError::Buffer`] for a mismatching tensor or a range outside the iteration space.
    pub fn call_range(
        &self,
        inputs: &[&Tensor],
        outputs: &mut [Tensor],
        begin: usize,
        end: usize,
    ) -> Result<(), JitError> {
        let ins: Vec<&TensorData> = inputs.iter().map(|t| t.data()).collect();
        let mut outs: Vec<&mut TensorData> = outputs.iter_mut().map(|t| t.data_mut()).collect();
        self.kernel.invoke(&ins, &mut outs, begin, end)
    }

    /// The compiled kernel: its plan, code and cost (tests call it on raw, unaligned buffers).
    pub fn compiled(&self) -> &CompiledKernel {
        &self.kernel
    }
}
