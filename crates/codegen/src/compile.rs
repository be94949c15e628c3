//! Kernel plans to machine code: [`compile_codes`] puts kernels into one JIT module with one
//! `finalize_definitions`; a [`KernelCode`] owns an `Arc` of its module, so code shared by
//! several executables (the backend's kernel cache) lives as long as any of them.

use std::collections::HashMap;
use std::sync::Arc;

use cranelift_codegen::ir::UserFuncName;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_module::{Linkage, Module};
use graphlift_ir::{ElementType, TensorData};
use graphlift_runtime::CodeRange;

use crate::provenance::{code_ranges, slot_spans};
use graphlift_kernels::parallel::{for_each, Parallel};

use crate::lower::{helper_of, scalar_unary, HelperRefs};
use crate::module::KernelModule;
use crate::plan::{KernelPlan, SlotOp};
use crate::JitError;
use crate::{asm, cost, kernel, strip};
use graphlift_kernels::native::Block;
use graphlift_kernels::target::VectorIsa;

/// The native entry point of a kernel (the range ABI of [`kernel`]).
pub type KernelFn = unsafe extern "C" fn(
    inputs: *const *const u8,
    outputs: *const *mut u8,
    begin: usize,
    end: usize,
);

/// Compiled machine code of one kernel plan, shareable between plans of equal structure
/// (the kernel cache): the entry point and the module that owns it.
pub struct KernelCode {
    /// The entry point; valid while `module` is alive, which this value guarantees.
    func: KernelFn,
    /// Machine code size in bytes.
    pub code_size: usize,
    /// The Cranelift IR it was compiled from (text; for assembled code the listing), shared
    /// by every kernel that uses the code.
    pub ir: Arc<str>,
    /// The instruction set of assembled code from [`asm`]; `None` for Cranelift's.
    pub assembled: Option<VectorIsa>,
    /// Code spans attributed to plan slots (see [`crate::provenance::slot_spans`]).
    spans: Vec<(u32, u32, usize)>,
    /// Why the assembler, which took the plan, failed to write its code (a bug there: the
    /// Cranelift code runs instead, and `explain` says why).
    assembler_failure: Option<String>,
    /// Owns the code memory; it is freed when the last `KernelCode` of the module (held by
    /// kernels of executables and by the cache) is dropped.
    module: Arc<KernelModule>,
}

impl KernelCode {
    /// The entry point's address (equal for two kernels that share code).
    pub fn entry_address(&self) -> usize {
        self.func as usize
    }

    /// The module that owns the code.
    pub fn module(&self) -> &Arc<KernelModule> {
        &self.module
    }
}

impl std::fmt::Debug for KernelCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelCode")
            .field("code_size", &self.code_size)
            .finish_non_exhaustive()
    }
}

/// A kernel plan with its compiled code (possibly shared with equal plans).
pub struct CompiledKernel {
    /// What it computes and which buffers it takes.
    pub plan: KernelPlan,
    /// The machine code (owns its module).
    pub code: Arc<KernelCode>,
    /// Machine code size in bytes.
    pub code_size: usize,
    /// The Cranelift IR it was compiled from (text; shared with the code).
    pub ir: Arc<str>,
    /// The work of a call over the whole iteration space, in byte-equivalents (the bytes of
    /// every input read once and every output written once, plus the compute per element:
    /// [`cost`]): the cost model of [`Parallel`].
    work: usize,
}

impl CompiledKernel {
    /// Pairs `plan` with code compiled from it or from an equal plan.
    pub fn new(plan: KernelPlan, code: Arc<KernelCode>) -> CompiledKernel {
        CompiledKernel {
            code_size: code.code_size,
            ir: Arc::clone(&code.ir),
            work: cost::call_work(&plan),
            plan,
            code,
        }
    }

    /// The work of a call over the whole iteration space, in byte-equivalents ([`cost`]).
    pub fn work(&self) -> usize {
        self.work
    }

    /// Elements per vector body: 16 for AVX-512 code, 8 for AVX2 code ([`asm`]), else the
    /// plan's lane count (4, 2 or 1).
    pub fn lanes(&self) -> usize {
        match self.code.assembled {
            Some(isa) => isa.lanes(),
            None => self.plan.lanes.count(),
        }
    }

    /// The instruction set of the code when it is assembled code from [`asm`] (eight-lane
    /// AVX2 or sixteen-lane AVX-512); `None` for Cranelift's.
    pub fn assembled(&self) -> Option<VectorIsa> {
        self.code.assembled
    }

    /// Why the code is not assembled code, or `None` when it is: worked out from the plan
    /// when a report asks ([`asm::Layout::of`] decided it the same way at compile time).
    pub fn assembler_refusal(&self) -> Option<asm::Refusal> {
        match (self.code.assembled, &self.code.assembler_failure) {
            (Some(_), _) => None,
            (None, Some(failure)) => Some(asm::Refusal::Failed(failure.clone())),
            (None, None) => asm::Layout::of(&self.plan).err(),
        }
    }

    /// The strip plan the code runs (none for assembled code, which computes every op
    /// inline: [`asm`]).
    fn strips(&self) -> Option<strip::StripPlan> {
        if self.code.assembled.is_some() {
            return None;
        }
        strip::StripPlan::of(&self.plan)
    }

    /// Whether the code calls the vector math library (and runs in strips: [`strip`]).
    pub fn calls_library(&self) -> bool {
        self.strips().is_some_and(|s| !s.functions().is_empty())
    }

    /// Whether the code writes outputs with non-temporal stores ([`graphlift_kernels::stream`]).
    pub fn streams(&self) -> bool {
        self.strips().is_some_and(|s| s.streams())
    }

    /// The names of the library functions the code calls, each once (none when it does not
    /// run in strips).
    pub fn library_functions(&self) -> Vec<&'static str> {
        self.strips()
            .map(|s| s.functions().into_iter().map(|f| f.name()).collect())
            .unwrap_or_default()
    }

    /// The ops the code computes by calling the reference interpreter's scalar function once
    /// per lane, because they have no inline vector lowering on their element type
    /// ([`crate::lower::helper_of`]: `Mod`, `FloorMod`, integer `Power`, and the
    /// trigonometric and hyperbolic functions of [`crate::lower::scalar_unary`]), each once,
    /// as `Op` names with the element type (`Sin f64`).
    pub fn scalar_calls(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for s in &self.plan.slots {
            let what = match (&s.op, helper_of(s, &self.plan.slots)) {
                (SlotOp::Unary(u, _), Some(_)) if scalar_unary(*u, s.ty).is_some() => {
                    format!("{} {}", u.name(), s.ty)
                }
                (SlotOp::Binary(b, a, _), Some(_)) => {
                    format!("{} {}", b.name(), self.plan.slots[*a].ty)
                }
                _ => continue,
            };
            if !names.contains(&what) {
                names.push(what);
            }
        }
        names
    }

    /// Machine code ranges and the body node (of this plan) each was lowered from, worked
    /// out when a report asks (compiling does not pay for it).
    pub fn code_ranges(&self) -> Vec<CodeRange> {
        code_ranges(&self.plan, &self.code.spans)
    }
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

/// Compiles `plans` into a fresh module, finalized once, each with its own code.
///
/// # Errors
/// As [`compile_codes`]; [`JitError::Isa`] or [`JitError::Module`] creating the module.
pub fn compile(plans: Vec<KernelPlan>) -> Result<Vec<CompiledKernel>, JitError> {
    let module = Arc::new(KernelModule::new()?);
    let refs: Vec<&KernelPlan> = plans.iter().collect();
    let codes = compile_codes(&module, &refs)?;
    Ok(plans
        .into_iter()
        .zip(codes)
        .map(|(p, c)| CompiledKernel::new(p, Arc::new(c)))
        .collect())
}

/// Compiles every plan into `module` and finalizes it once.
///
/// # Errors
/// [`JitError::Codegen`] naming the kernel when Cranelift rejects it; [`JitError::Module`]
/// when finalization fails.
pub fn compile_codes(
    module: &Arc<KernelModule>,
    plans: &[&KernelPlan],
) -> Result<Vec<KernelCode>, JitError> {
    module.with(|m| {
        let ptr = m.target_config().pointer_type();
        let call_conv = m.isa().default_call_conv();
        let mut ctx = m.make_context();
        let mut fbc = FunctionBuilderContext::new();
        let mut defined = Vec::with_capacity(plans.len());
        for (k, plan) in plans.iter().enumerate() {
            // A plan the assembler takes but fails to write (a bug there) falls back to the
            // Cranelift code, with the reason kept for `explain`: it costs speed, not the
            // model.
            let failure = match asm::Layout::of(plan).map(|layout| asm::assemble(plan, &layout)) {
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => None,
                Ok(Ok(code)) => {
                    let entry = module.map_code(&plan.name, &code.code)?;
                    // SAFETY: `entry` is the first byte of a mapped, executable copy of code whose
                    // byte `code.entry` (after the constant pool, within the code: the function
                    // follows it) is the first instruction of the function that `asm::assemble`
                    // wrote for the range ABI of `KernelFn` in the System V convention (arguments
                    // in rdi, rsi, rdx, rcx; callee-saved registers pushed and popped; nothing
                    // returned), on a host with the instruction set it uses (`Layout::of` checked
                    // the plan's). The mapping is owned by `module`, which the KernelCode built
                    // from it holds.
                    let func = unsafe {
                        std::mem::transmute::<*const u8, KernelFn>(entry.add(code.entry))
                    };
                    defined.push(Pending::Ready(KernelCode {
                        func,
                        code_size: code.code.len(),
                        ir: code.listing.into(),
                        assembled: plan.isa,
                        spans: code.spans,
                        assembler_failure: None,
                        module: Arc::clone(module),
                    }));
                    continue;
                }
            };
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
            let lane_helpers = plan.slots.iter().filter_map(|s| helper_of(s, &plan.slots));
            let strips = strip::StripPlan::of(plan);
            for h in lane_helpers.chain(strips.iter().flat_map(strip::StripPlan::helpers)) {
                if refs.0.contains_key(&h) {
                    continue;
                }
                let hid = module
                    .helper(h)
                    .ok_or_else(|| codegen(format!("helper {} not declared", h.symbol())))?;
                let r = m.declare_func_in_func(hid, &mut ctx.func);
                refs.0.insert(h, r);
            }
            {
                let mut b = FunctionBuilder::new(&mut ctx.func, &mut fbc);
                kernel::build(&mut b, plan, strips.as_ref(), &refs, ptr)?;
                b.finalize(m.target_config());
            }
            let ir = ctx.func.display().to_string();
            m.define_function(id, &mut ctx)
                .map_err(|e| codegen(format!("{e:?}")))?;
            let (code_size, spans) = ctx
                .compiled_code()
                .map(|c| {
                    (
                        c.code_buffer().len(),
                        slot_spans(c.buffer.get_srclocs_sorted()),
                    )
                })
                .unwrap_or_default();
            m.clear_context(&mut ctx);
            defined.push(Pending::Cranelift(id, code_size, ir, spans, failure));
        }
        m.finalize_definitions()
            .map_err(|e| JitError::Module(e.to_string()))?;
        Ok(defined
            .into_iter()
            .map(|pending| {
                let (id, code_size, ir, spans, assembler_failure) = match pending {
                    Pending::Ready(code) => return code,
                    Pending::Cranelift(id, code_size, ir, spans, failure) => {
                        (id, code_size, ir, spans, failure)
                    }
                };
                let code = m.get_finalized_function(id);
                // SAFETY: `code` is the finalized entry of a function built with
                // `kernel_signature` (four pointer-sized integer parameters, no results) in the
                // ISA's default call convention, which is the platform's C convention — the
                // ABI of `KernelFn`. The pointer stays valid while the module lives, and the
                // KernelCode that stores it owns an `Arc` of the module.
                let func = unsafe { std::mem::transmute::<*const u8, KernelFn>(code) };
                KernelCode {
                    func,
                    code_size,
                    ir: ir.into(),
                    assembled: None,
                    spans,
                    assembler_failure,
                    module: Arc::clone(module),
                }
            })
            .collect())
    })
}

/// A kernel of [`compile_codes`] before the module is finalized: defined in Cranelift (its
/// id, code size, IR text, slot spans, and why the assembler failed where it took the plan),
/// or already assembled ([`asm`]).
enum Pending {
    Cranelift(
        cranelift_module::FuncId,
        usize,
        String,
        Vec<(u32, u32, usize)>,
        Option<String>,
    ),
    Ready(KernelCode),
}

impl CompiledKernel {
    /// Runs elements `begin..end` on typed buffers on the calling thread: `inputs` are the
    /// live-ins (the hidden constant buffers are added here), `outputs` one per kernel
    /// output.
    ///
    /// # Errors
    /// [`JitError::Buffer`] unless every buffer has the element type and element count the
    /// kernel was compiled for, and `begin <= end <= count` — checked before any pointer
    /// reaches the kernel.
    pub fn invoke(
        &self,
        inputs: &[&TensorData],
        outputs: &mut [&mut TensorData],
        begin: usize,
        end: usize,
    ) -> Result<(), JitError> {
        self.invoke_split(inputs, outputs, begin, end, None)
    }

    /// As [`CompiledKernel::invoke`], but with `parallel`, the range is split into chunks
    /// run on its thread pool when the call moves enough bytes ([`Parallel::split`]);
    /// the call returns when every chunk has finished.
    ///
    /// # Errors
    /// As [`CompiledKernel::invoke`].
    pub fn invoke_split(
        &self,
        inputs: &[&TensorData],
        outputs: &mut [&mut TensorData],
        begin: usize,
        end: usize,
        parallel: Option<&Parallel>,
    ) -> Result<(), JitError> {
        let buffers = self.prepare(inputs, outputs)?;
        let plan = &self.plan;
        if begin > end || end > plan.count {
            return Err(JitError::Buffer {
                kernel: plan.name.clone(),
                message: format!("range {begin}..{end} is not within 0..{}", plan.count),
            });
        }
        if begin == end {
            return Ok(());
        }
        // SAFETY (both calls below): every input and output buffer was checked above to
        // have exactly the element type and element count the kernel was planned for, and
        // the hidden constant buffers are the plan's own; every range handed to the kernel
        // lies within `begin..end`, within the iteration space, and the kernel reads input k
        // only at indices < args[k].len (its addressing maps every index < count into the
        // source) and writes outputs only at the indices of its range. Outputs are distinct
        // `&mut` borrows, so they alias neither each other nor inputs. `self.code` owns the
        // module, so the code is alive.
        let chunks = parallel.and_then(|p| p.split(begin, end, self.work(), plan.count));
        match chunks {
            None => unsafe { self.call_unchecked(&buffers.ins, &buffers.outs, begin, end) },
            // Several threads receive the same base pointers: sound because each chunk is
            // a disjoint sub-range of `begin..end`, so no two threads write the same output
            // element and inputs are only read; `Buffers` is Send + Sync only to carry the
            // pointers across (see its SAFETY note); and `for_each` returns once every chunk has
            // finished, while the `&`/`&mut` borrows of the buffers are still held, so no
            // buffer is freed or touched by the caller while a chunk runs.
            Some((team, chunks)) => for_each(team, chunks.into_iter(), |(b, e)| {
                let (ins, outs) = buffers.pointers();
                unsafe { self.call_unchecked(ins, outs, b, e) }
            }),
        }
        Ok(())
    }

    /// Checks a call's buffers as [`CompiledKernel::invoke`] does and returns their pointer
    /// arrays (live-ins, then the plan's constant buffers; outputs), for calls on ranges.
    ///
    /// # Errors
    /// [`JitError::Buffer`] unless every buffer has the element type and element count the
    /// kernel was compiled for.
    pub fn prepare(
        &self,
        inputs: &[&TensorData],
        outputs: &mut [&mut TensorData],
    ) -> Result<Buffers, JitError> {
        let inputs: smallvec::SmallVec<[Option<&TensorData>; 8]> =
            inputs.iter().map(|&d| Some(d)).collect();
        self.prepare_slots(&inputs, outputs)
    }

    /// [`CompiledKernel::prepare`] where a `None` input is left a null pointer for the
    /// caller to fill ([`CompiledKernel::invoke_in_place`]).
    pub(crate) fn prepare_slots(
        &self,
        inputs: &[Option<&TensorData>],
        outputs: &mut [&mut TensorData],
    ) -> Result<Buffers, JitError> {
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
            if let Some(d) = d {
                let spec = &plan.args[k];
                check("input", k, d, spec.ty, spec.len)?;
            }
        }
        for (k, d) in outputs.iter().enumerate() {
            check("output", k, d, plan.outputs[k].1, plan.count)?;
        }
        Ok(Buffers {
            ins: inputs
                .iter()
                .map(|d| d.map_or(std::ptr::null(), TensorData::as_ptr))
                .chain(plan.constants.iter().map(|c| c.as_ptr()))
                .collect(),
            outs: outputs.iter_mut().map(|d| d.as_mut_ptr()).collect(),
        })
    }

    /// Runs the elements of `block`, a finished block of a producer's output that the
    /// kernel reads as the live-ins `reads` (an epilogue: see [`graphlift_kernels::native::Epilogue`]).
    /// Does nothing unless the block lies within the iteration space and has the element
    /// size of every live-in in `reads`.
    ///
    /// # Safety
    /// `buffers` must come from [`CompiledKernel::prepare`] on this kernel, with the
    /// borrows of its buffers still held by the caller; every live-in in `reads` must be
    /// read only with contiguous addressing ([`KernelPlan::reads_contiguously`]), so the
    /// kernel reads it at the block's indices only; `block.first` must point at
    /// `block.len` readable elements (as [`graphlift_kernels::native::Epilogue::run`] guarantees) that
    /// do not overlap an output; and calls running at the same time must have disjoint
    /// blocks.
    pub unsafe fn call_on_block(&self, buffers: &Buffers, reads: &[usize], block: Block) {
        let plan = &self.plan;
        let end = block.begin.checked_add(block.len);
        let fits =
            |&r: &usize| r < plan.live_ins && plan.args[r].ty.size_bytes() == block.element_bytes;
        if end.is_none_or(|e| e > plan.count) || !reads.iter().all(fits) {
            return;
        }
        debug_assert!(reads.iter().all(|&r| plan.reads_contiguously(r)));
        let (ins, outs) = buffers.pointers();
        let mut ins: smallvec::SmallVec<[*const u8; 16]> = ins.into();
        // The kernel adds `index * element_bytes` to the base: with `first` moved back by
        // `begin` elements, indices `begin..end` land on the block. `wrapping_sub` keeps
        // the arithmetic defined where the moved-back address lies outside the block.
        let base = block
            .first
            .wrapping_sub(block.begin.wrapping_mul(block.element_bytes));
        for &r in reads {
            ins[r] = base;
        }
        // SAFETY: `ins` and `outs` come from `prepare` on this kernel (caller), so every
        // buffer has the planned type and length and is still borrowed, except the slots
        // in `reads`, which now address the block: the kernel reads them at indices
        // `begin..end` only (contiguous addressing, caller), which map into the block's
        // `len` readable elements of the checked size. The range lies within `0..count`
        // (checked above) and is disjoint from every concurrent call's (caller).
        unsafe { self.call_unchecked(&ins, outs, block.begin, block.begin + block.len) }
    }

    /// Calls the kernel on raw pointer arrays.
    ///
    /// # Safety
    /// `ins` must hold one pointer per [`KernelPlan::args`] entry (live-ins then constants)
    /// to at least `args[k].len` elements of `args[k].ty`; `outs` one pointer per output to
    /// at least `count` writable elements of its type, not overlapping any input; and
    /// `begin <= end <= count`. Pointers need no alignment. Concurrent calls must write
    /// disjoint ranges.
    pub unsafe fn call_unchecked(
        &self,
        ins: &[*const u8],
        outs: &[*mut u8],
        begin: usize,
        end: usize,
    ) {
        debug_assert_eq!(ins.len(), self.plan.args.len());
        debug_assert_eq!(outs.len(), self.plan.outputs.len());
        // SAFETY: the caller guarantees the buffer contract above; `func` is valid while
        // the module lives, and `self.code` holds an `Arc` of it.
        unsafe { (self.code.func)(ins.as_ptr(), outs.as_ptr(), begin, end) }
    }
}

/// The pointer arrays of one kernel call ([`CompiledKernel::prepare`]): valid while the
/// buffers they were taken from are borrowed.
pub struct Buffers {
    pub(crate) ins: Vec<*const u8>,
    pub(crate) outs: Vec<*mut u8>,
}

impl Buffers {
    /// Both arrays (a method, so closures capture the whole `Sync` value, not its fields).
    pub fn pointers(&self) -> (&[*const u8], &[*mut u8]) {
        (&self.ins, &self.outs)
    }
}

// SAFETY: `Buffers` only carries the addresses of buffers borrowed by
// `CompiledKernel::invoke_split` (inputs shared, outputs exclusively) to the pool's threads
// for the duration of a blocking call; each thread passes them to the kernel with a range
// disjoint from every other thread's, so outputs are written at disjoint indices and
// inputs only read. The pointers themselves are never written.
unsafe impl Send for Buffers {}
// SAFETY: as for `Send`: shared access only reads the pointer values.
unsafe impl Sync for Buffers {}

#[cfg(test)]
mod tests;
