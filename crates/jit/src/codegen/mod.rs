//! Code generation: a fused kernel's body to a native function.
//!
//! [`plan`] flattens the body into slots (with [`broadcast`] addressing for broadcast
//! inputs), [`kernel`] builds the loops and the range ABI, [`lower`] lowers each op through
//! the lane view of [`lanes`]. [`compile`] puts every kernel of an executable into one JIT
//! module with one `finalize_definitions`.

pub(crate) mod broadcast;
pub(crate) mod kernel;
pub(crate) mod lanes;
pub(crate) mod lower;
pub(crate) mod plan;

use std::collections::HashMap;

use cranelift_codegen::ir::{types, AbiParam, Signature, Type, UserFuncName};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{Linkage, Module};
use graphlift_ir::{ElementType, TensorData};
use graphlift_runtime::CodeRange;

use crate::provenance::code_ranges;

use crate::helpers::Helper;
use crate::module::KernelModule;
use crate::JitError;
use lower::{helper_of, HelperRefs};
use plan::KernelPlan;

/// The native entry point of a kernel (the range ABI of [`kernel`]).
pub(crate) type KernelFn = unsafe extern "C" fn(
    inputs: *const *const u8,
    outputs: *const *mut u8,
    begin: usize,
    end: usize,
);

/// A kernel compiled into a [`KernelModule`]; valid only while that module is alive, so it is
/// always stored beside it.
pub(crate) struct CompiledKernel {
    /// What it computes and which buffers it takes.
    pub plan: KernelPlan,
    /// The entry point.
    func: KernelFn,
    /// Machine code size in bytes.
    pub code_size: usize,
    /// The Cranelift IR it was compiled from (text).
    pub ir: String,
    /// Machine code ranges and the body node each was lowered from.
    pub code_ranges: Vec<CodeRange>,
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledKernel")
            .field("name", &self.plan.name)
            .field("lanes", &self.plan.lanes)
            .field("code_size", &self.code_size)
            .finish_non_exhaustive()
    }
}

/// The Cranelift signature of a helper.
pub(crate) fn helper_signature(module: &JITModule, h: Helper) -> Signature {
    let ty: Type = match h {
        Helper::UnaryF64(_) | Helper::PowF64 => types::F64,
        Helper::PowF32 => types::F32,
        Helper::PowI32 => types::I32,
        Helper::PowI64 => types::I64,
    };
    let mut sig = module.make_signature();
    let arity = if matches!(h, Helper::UnaryF64(_)) {
        1
    } else {
        2
    };
    for _ in 0..arity {
        sig.params.push(AbiParam::new(ty));
    }
    sig.returns.push(AbiParam::new(ty));
    sig
}

/// Compiles every plan into `module` and finalizes it once.
///
/// # Errors
/// [`JitError::Codegen`] naming the kernel when Cranelift rejects it; [`JitError::Module`]
/// when finalization fails.
pub(crate) fn compile(
    module: &KernelModule,
    plans: Vec<KernelPlan>,
) -> Result<Vec<CompiledKernel>, JitError> {
    module.with(|m| {
        let ptr = m.target_config().pointer_type();
        let call_conv = m.isa().default_call_conv();
        let mut ctx = m.make_context();
        let mut fbc = FunctionBuilderContext::new();
        let mut defined = Vec::with_capacity(plans.len());
        for (k, plan) in plans.iter().enumerate() {
            let codegen = |message: String| JitError::Codegen {
                kernel: plan.name.clone(),
                message,
            };
            ctx.func.signature = kernel::kernel_signature(ptr, call_conv);
            let id = m
                .declare_function(
                    &format!("graphlift_kernel_{k}"),
                    Linkage::Local,
                    &ctx.func.signature,
                )
                .map_err(|e| codegen(e.to_string()))?;
            ctx.func.name = UserFuncName::user(0, id.as_u32());
            let mut refs = HelperRefs(HashMap::new());
            for slot in &plan.slots {
                if let Some(h) = helper_of(slot, &plan.slots) {
                    if refs.0.contains_key(&h) {
                        continue;
                    }
                    let hid = module
                        .helper(h)
                        .ok_or_else(|| codegen(format!("helper {} not declared", h.symbol())))?;
                    let r = m.declare_func_in_func(hid, &mut ctx.func);
                    refs.0.insert(h, r);
                }
            }
            {
                let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
                kernel::build(&mut b, plan, &refs, ptr)?;
                b.finalize(m.target_config());
            }
            let ir = ctx.func.display().to_string();
            m.define_function(id, &mut ctx)
                .map_err(|e| codegen(format!("{e:?}")))?;
            let (code_size, code_ranges) = ctx
                .compiled_code()
                .map(|c| {
                    let ranges = code_ranges(plan, c.buffer.get_srclocs_sorted());
                    (c.code_buffer().len(), ranges)
                })
                .unwrap_or_default();
            m.clear_context(&mut ctx);
            defined.push((id, code_size, ir, code_ranges));
        }
        m.finalize_definitions()
            .map_err(|e| JitError::Module(e.to_string()))?;
        Ok(plans
            .into_iter()
            .zip(defined)
            .map(|(plan, (id, code_size, ir, code_ranges))| {
                let code = m.get_finalized_function(id);
                // SAFETY: `code` is the finalized entry of a function built with
                // `kernel_signature` (four pointer-sized integer parameters, no results) in the
                // ISA's default call convention, which is the platform's C convention — the
                // ABI of `KernelFn`. The pointer stays valid while the module lives, and a
                // CompiledKernel is only ever stored beside its module.
                let func = unsafe { std::mem::transmute::<*const u8, KernelFn>(code) };
                CompiledKernel {
                    plan,
                    func,
                    code_size,
                    ir,
                    code_ranges,
                }
            })
            .collect())
    })
}

impl CompiledKernel {
    /// Runs elements `begin..end` on typed buffers: `inputs` are the live-ins (the hidden
    /// constant buffers are added here), `outputs` one per kernel output.
    ///
    /// # Errors
    /// [`JitError::Buffer`] unless every buffer has the element type and element count the
    /// kernel was compiled for, and `begin <= end <= count` — checked before any pointer
    /// reaches the kernel.
    pub(crate) fn invoke(
        &self,
        inputs: &[&TensorData],
        outputs: &mut [&mut TensorData],
        begin: usize,
        end: usize,
    ) -> Result<(), JitError> {
        let plan = &self.plan;
        let bad = |message: String| JitError::Buffer {
            kernel: plan.name.clone(),
            message,
        };
        if inputs.len() != plan.live_ins {
            return Err(bad(format!(
                "{} input buffer(s) given, the kernel takes {}",
                inputs.len(),
                plan.live_ins
            )));
        }
        if outputs.len() != plan.outputs.len() {
            return Err(bad(format!(
                "{} output buffer(s) given, the kernel writes {}",
                outputs.len(),
                plan.outputs.len()
            )));
        }
        let check = |what: &str, k: usize, d: &TensorData, ty: ElementType, len: usize| {
            if d.element_type() != ty || d.len() != len {
                Err(bad(format!(
                    "{what} {k} holds {} {}, the kernel needs {len} {ty}",
                    d.len(),
                    d.element_type()
                )))
            } else {
                Ok(())
            }
        };
        for (k, d) in inputs.iter().enumerate() {
            let spec = &plan.args[k];
            check("input", k, d, spec.ty, spec.len)?;
        }
        for (k, d) in outputs.iter().enumerate() {
            check("output", k, d, plan.outputs[k].1, plan.count)?;
        }
        if begin > end || end > plan.count {
            return Err(bad(format!(
                "range {begin}..{end} is not within 0..{}",
                plan.count
            )));
        }
        if begin == end {
            return Ok(());
        }
        let ins: Vec<*const u8> = inputs
            .iter()
            .map(|d| d.as_ptr())
            .chain(plan.constants.iter().map(|c| c.as_ptr()))
            .collect();
        let outs: Vec<*mut u8> = outputs.iter_mut().map(|d| d.as_mut_ptr()).collect();
        // SAFETY: every input and output buffer was checked above to have exactly the
        // element type and element count the kernel was planned for, and the hidden
        // constant buffers are the plan's own; `begin..end` lies within the iteration space,
        // and the kernel reads input k only at indices < args[k].len (its addressing maps
        // every index < count into the source) and writes outputs only at `begin..end`.
        // Outputs are distinct `&mut` borrows, so they alias neither each other nor inputs.
        unsafe { self.call_unchecked(&ins, &outs, begin, end) };
        Ok(())
    }

    /// Calls the kernel on raw pointer arrays.
    ///
    /// # Safety
    /// `ins` must hold one pointer per [`KernelPlan::args`] entry (live-ins then constants)
    /// to at least `args[k].len` elements of `args[k].ty`; `outs` one pointer per output to
    /// at least `count` writable elements of its type, not overlapping any input; and
    /// `begin <= end <= count`. Pointers need no alignment.
    pub(crate) unsafe fn call_unchecked(
        &self,
        ins: &[*const u8],
        outs: &[*mut u8],
        begin: usize,
        end: usize,
    ) {
        debug_assert_eq!(ins.len(), self.plan.args.len());
        debug_assert_eq!(outs.len(), self.plan.outputs.len());
        // SAFETY: the caller guarantees the buffer contract above; `func` is valid while
        // the module that owns it lives, which the caller's ownership ensures.
        unsafe { (self.func)(ins.as_ptr(), outs.as_ptr(), begin, end) }
    }
}
