//! [`CpuJitExecutable`]: the compiled plan, its reports, and the `Executable` interface.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use graphlift_ir::{Function, Op};
use graphlift_kernels::target::VectorIsa;
use graphlift_passes::{ExtractionReport, PassRunReport, ScopeFusionReport};
use graphlift_runtime::state::VariableStore;
use graphlift_runtime::trace::CallRecorder;
use graphlift_runtime::{
    validate_arguments, KernelInfo, RuntimeError, StepInfo, Tensor, TensorSpec,
};

use graphlift_codegen::compile::CompiledKernel;
use graphlift_codegen::module::MemoryWatch;
use graphlift_codegen::provenance::BodyNodes;
use graphlift_kernels::parallel::{Parallel, ThreadConfig};

use graphlift_codegen::asm::Refusal;

use super::batch_split::{SampleSpread, Schedule};
use super::*;

/// A Function compiled by the CPU-JIT backend: an ordered plan of JIT kernel calls and
/// native kernel calls.
///
/// `Send + Sync`: kernels are plain function pointers into code that is never written after
/// finalization, and a JIT module is only touched (behind a mutex) when its last user (an
/// executable or the backend's kernel cache) is dropped, which frees its code memory. Calls
/// from several threads run concurrently; each call may also split a kernel over the
/// backend's thread pool.
#[derive(Debug)]
pub struct CpuJitExecutable {
    /// What the compiler made of the Function; shared with every executable of the same
    /// Function from the backend's executable cache.
    pub(super) plan: Arc<ExecutablePlan>,
    /// Bins of dead temporaries from earlier calls ([`Bins`]), this executable's own or
    /// shared ([`super::buffers::Recycling`]); `None` where a call frees its temporaries
    /// ([`CpuJitBackend::with_buffer_recycling`]).
    pub(super) recycled: Option<Arc<Bins>>,
    pub(super) parallel: Arc<Parallel>,
    /// The backend's threads, which a plan run sample by sample spreads its samples over
    /// ([`Schedule::Samples`]; `parallel` then has one thread).
    pub(super) batch_pool: Arc<Parallel>,
    /// Whether the last call offered work to the pool's helpers: the next call then wakes
    /// them before its first step ([`Parallel::wake`]), so that its first split step does
    /// not wait for a sleeping helper.
    pub(super) wakes_helpers: AtomicBool,
    /// The variables' storage, this executable's own (`None` without variables); a call
    /// holds its lock throughout, so calls are serialized.
    pub(super) variables: Option<VariableStore>,
    /// For a plan run sample by sample, the executables the samples after the rounds run
    /// on, one per group of threads ([`SampleSpread::groups`]); else empty.
    pub(super) groups: Vec<CpuJitExecutable>,
}

/// Everything an executable runs and reports that a call does not change: the compiled
/// function, the step plan and its buffers, the kernels. Immutable once built.
#[derive(Debug)]
pub(super) struct ExecutablePlan {
    /// The Function as given to `compile`, when the executable cache holds the plan (its
    /// key).
    pub(super) source: Option<Function>,
    /// Whether a call runs the plan once over the whole batch or once per sample.
    pub(super) schedule: Schedule,
    pub(super) function: Function,
    pub(super) parameters: Vec<TensorSpec>,
    pub(super) results: Vec<TensorSpec>,
    pub(super) steps: Vec<Step>,
    pub(super) temps: usize,
    /// The buffer of each temporary and its type.
    pub(super) buffers: BufferPlan,
    /// See [`Executable::peak_intermediate_bytes`].
    pub(super) peak_intermediate_bytes: usize,
    /// The Function's constants as tensors, indexed by [`Loc::Constant`].
    pub(super) constants: Vec<Tensor>,
    pub(super) result_locs: Vec<Loc>,
    pub(super) take_result: Vec<bool>,
    /// Set when the plan is one kernel that reads only inputs and constants and writes
    /// every result: a call then hands the caller's buffers to it directly.
    pub(super) direct: Option<DirectCall>,
    /// The kernels' reports, made on the first [`Executable::kernels`] call.
    pub(super) infos: OnceLock<Vec<KernelInfo>>,
    pub(super) pass_report: PassRunReport,
    /// Each kernel owns (an `Arc` of) the module its code lives in.
    pub(super) compiled: Vec<CompiledKernel>,
    /// The target the kernels were planned for.
    pub(super) target: Target,
    /// The source function's variables by name, indexed by [`Loc::Variable`].
    pub(super) variables: Vec<String>,
    /// The compiled bodies of each control-flow step ([`StepKind::ControlFlow`]).
    pub(super) control_flow: Vec<graphlift_runtime::control_flow::CompiledBodies>,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CpuJitExecutable>();
    assert_send_sync::<CpuJitBackend>();
    assert_send_sync::<crate::JitKernel>();
};

impl CpuJitExecutable {
    /// Whether a call runs the plan's one kernel on the caller's buffers directly (no step loop).
    pub fn calls_directly(&self) -> bool {
        self.plan.direct.is_some()
    }

    /// The function as compiled: the input after subgraph extraction, with its
    /// `FusedKernel` nodes.
    pub fn function(&self) -> &Function {
        &self.plan.function
    }

    /// What the pass pipeline did at compile time: every pass with its timing, and the
    /// extraction report.
    pub fn pass_report(&self) -> &PassRunReport {
        &self.plan.pass_report
    }

    /// Subgraph extraction's report: the kernels it formed and the nodes it left outside,
    /// with the reason for each (`None` when extraction was disabled).
    pub fn extraction_report(&self) -> Option<&ExtractionReport> {
        self.plan.pass_report.extraction()
    }

    /// Scope fusion's report: the scopes fused, and the matches discarded or refused with
    /// the reason for each (`None` when scope fusion was disabled).
    pub fn scope_fusion_report(&self) -> Option<&ScopeFusionReport> {
        self.plan.pass_report.scope_fusion()
    }

    /// The kernel of the fused node `name`.
    pub(super) fn kernel(&self, name: &str) -> Option<&CompiledKernel> {
        self.plan.compiled.iter().find(|k| k.plan.name == name)
    }

    /// The Cranelift IR of the kernel of the fused node `name` (for assembled code, its
    /// listing).
    pub fn kernel_ir(&self, name: &str) -> Option<&str> {
        self.kernel(name).map(|k| &*k.ir)
    }

    /// Whether the kernel of the fused node `name` runs as a vector loop.
    pub fn kernel_is_vectorized(&self, name: &str) -> Option<bool> {
        self.kernel_lanes(name).map(|n| n > 1)
    }

    /// Elements per vector body of the kernel of the fused node `name`: 16 (AVX-512 code),
    /// 8 (AVX2 code), 4 (`F32X4`/`I32X4`, or a mixed-width kernel), 2 (`F64X2`/`I64X2`) or 1
    /// (a scalar loop); see [`crate::JitKernel::lanes`].
    pub fn kernel_lanes(&self, name: &str) -> Option<usize> {
        self.kernel(name).map(|k| k.lanes())
    }

    /// The instruction set of the kernel of the fused node `name` when it is assembled
    /// without Cranelift ([`CpuJitBackend::with_assembler`]): `Some(None)` for Cranelift's
    /// code, `None` when there is no such kernel.
    pub fn kernel_assembled(&self, name: &str) -> Option<Option<VectorIsa>> {
        self.kernel(name).map(|k| k.assembled())
    }

    /// Whether the kernel of the fused node `name` mixes 32-bit and 64-bit numbers (see
    /// [`crate::JitKernel::is_mixed_width`]).
    pub fn kernel_is_mixed_width(&self, name: &str) -> Option<bool> {
        self.kernel(name)
            .map(|k| k.plan.lanes == graphlift_codegen::lanes::Lanes::Mixed)
    }

    /// Whether the kernel of the fused node `name` calls the vector math library for its
    /// `f32` `exp`, `sigmoid`, `tanh`, `erf`, divisions or activation forms (see
    /// [`CpuJitBackend::with_veclib`]).
    pub fn kernel_calls_library(&self, name: &str) -> Option<bool> {
        self.kernel(name).map(|k| k.calls_library())
    }

    /// Why the kernel of the fused node `name` is not assembled code of the host's full
    /// vector width, in words (`None` for an assembled kernel or an unknown name): the
    /// target's reason when assembled kernels are off (the host, or a switch), else what in
    /// the kernel the assembler does not take. A kernel that calls the vector math library
    /// still computes those calls at the library's full width.
    pub fn kernel_assembler_refusal(&self, name: &str) -> Option<String> {
        let refusal = self.kernel(name)?.assembler_refusal()?;
        Some(match refusal {
            Refusal::Off => match self.plan.target.assembler_off() {
                Some(why) => format!("assembled kernels are off: {why}"),
                None => "assembled kernels are off".to_string(),
            },
            other => other.to_string(),
        })
    }

    /// Whether the kernel of the fused node `name` writes its `f32` and `i32` outputs with
    /// non-temporal stores (see [`CpuJitBackend::with_streaming_stores`]).
    pub fn kernel_streams(&self, name: &str) -> Option<bool> {
        self.kernel(name).map(|k| k.streams())
    }

    /// The vector math library functions the kernel of the fused node `name` calls, each
    /// once, by name (`exp`, `sigmoid`, `tanh`, `erf`, `divide`, and the activation forms
    /// `gelu_tanh`, `gelu_erf`, `gelu_erf_divide`, `silu`, `silu_exp`); empty when it calls
    /// none. `None` when there is no such kernel.
    pub fn kernel_library_functions(&self, name: &str) -> Option<Vec<&'static str>> {
        self.kernel(name).map(|k| k.library_functions())
    }

    /// The ops the kernel of the fused node `name` computes by calling the reference
    /// interpreter's scalar function once per lane (no inline vector lowering on their
    /// element type: `Mod`, `FloorMod`, integer `Power`, and trigonometric and hyperbolic
    /// functions such as `Sin f64`), each once; `None` when there is no such kernel.
    pub fn kernel_scalar_calls(&self, name: &str) -> Option<Vec<String>> {
        self.kernel(name).map(|k| k.scalar_calls())
    }

    /// A watch that tells when all JIT code memory this executable uses has been freed:
    /// after the executable is dropped and no other executable or the backend's kernel cache
    /// holds the same code (an executable without kernels is released from the start).
    pub fn memory_watch(&self) -> MemoryWatch {
        MemoryWatch::all(self.plan.compiled.iter().map(|k| k.code.module().as_ref()))
    }

    /// The entry address of the kernel of the fused node `name`: equal for two kernels that
    /// share compiled code through the backend's kernel cache.
    pub fn kernel_entry_address(&self, name: &str) -> Option<usize> {
        self.kernel(name).map(|k| k.code.entry_address())
    }

    /// How many intermediate buffers the plan uses: temporaries of one element type whose
    /// lifetimes do not overlap share one, whatever their shapes, and a call reuses the
    /// buffers a previous call left behind (results are written into the caller's output
    /// tensors instead).
    pub fn intermediate_buffers(&self) -> usize {
        self.plan.buffers.count
    }

    /// How many `Reshape` steps take over their input's buffer (a temporary that dies at
    /// the step) instead of copying the elements into one of their own.
    pub fn forwarded_reshapes(&self) -> usize {
        self.plan
            .steps
            .iter()
            .filter(|s| s.forwards.is_some())
            .count()
    }

    /// Runs the plan once on arguments validated against it.
    pub(super) fn call_whole(
        &self,
        outputs: &mut [Tensor],
        inputs: &[Tensor],
    ) -> Result<(), RuntimeError> {
        if let Some(d) = &self.plan.direct {
            if !CallRecorder::tracing() {
                return self.call_direct(d, outputs, inputs);
            }
        }
        let mut temps: Vec<Option<Tensor>> = vec![None; self.plan.temps];
        // A result that a kernel computes is written straight into the caller's output
        // tensor: hand the tensor to the kernel's temp slot (validated above to have the
        // result's type), so no fresh buffer is allocated and page-faulted per call.
        for (k, loc) in self.plan.result_locs.iter().enumerate() {
            if let (Loc::Temp(t), true) = (*loc, self.plan.take_result[k]) {
                let empty = Tensor::zeros(outputs[k].element_type(), [0])?;
                temps[t] = Some(std::mem::replace(&mut outputs[k], empty));
            }
        }
        let mut state = self.variables.as_ref().map(VariableStore::lock);
        // Tracing hook: `None` (one thread-local read) unless a tracer is alive.
        let mut recorder = CallRecorder::begin(&self.plan.function, BACKEND_NAME);
        if let (Some(r), Some(v)) = (recorder.as_mut(), state.as_deref()) {
            r.record_variables(v);
        }
        let vars: &mut [Tensor] = match state.as_deref_mut() {
            Some(v) => v.values_mut(),
            None => &mut [],
        };
        // Steps run on the caller's thread; a step that splits its work takes the pool's
        // workers as helpers for that step only (`parallel::for_each`).
        let run = self.run_steps(inputs, &mut temps, &mut recorder, vars);
        if let Err(e) = run {
            // Leave every output with its validated type (its values are unspecified).
            for (k, r) in self.plan.results.iter().enumerate() {
                if !outputs[k].has_type(&r.tensor_type) {
                    outputs[k] =
                        Tensor::zeros(r.tensor_type.element_type, r.tensor_type.shape.clone())?;
                }
            }
            return Err(e);
        }
        for (k, loc) in self.plan.result_locs.iter().enumerate() {
            let value = match *loc {
                Loc::Input(i) => inputs.get(i).cloned(),
                Loc::Temp(t) if self.plan.take_result[k] => temps.get_mut(t).and_then(Option::take),
                Loc::Temp(t) => temps.get(t).and_then(Clone::clone),
                Loc::Constant(c) => self.plan.constants.get(c).cloned(),
                Loc::Variable(v) => vars.get(v).cloned(),
            };
            outputs[k] = value.ok_or_else(|| RuntimeError::Execution {
                node: self.plan.results[k].name.clone(),
                op: "Result".into(),
                provenance: self
                    .plan
                    .function
                    .results()
                    .get(k)
                    .and_then(|&r| self.plan.function.get(r))
                    .map(provenance)
                    .unwrap_or_default(),
                message: "the result was not computed".into(),
            })?;
        }
        if let Some(r) = recorder {
            r.finish(&self.plan.function)?;
        }
        Ok(())
    }

    /// The thread configuration kernel calls use.
    pub fn thread_config(&self) -> ThreadConfig {
        self.parallel.config()
    }

    /// How a call spreads the samples over the backend's threads, when it runs the plan once
    /// per sample, each sample's steps on one thread or on a group of threads (the plan,
    /// kernels and steps reported are one sample's: batch splitting,
    /// `backend/batch_split.rs`); else why a call runs every step over the whole batch, in
    /// words.
    pub fn batch_split(&self) -> Result<SampleSpread, &str> {
        match &self.plan.schedule {
            Schedule::Samples(s) => Ok(s.spread(self.batch_pool.config().threads)),
            Schedule::Whole(why) => Err(why),
        }
    }
}

impl ExecutablePlan {
    /// The report of every kernel, in plan order: the body's computing nodes with their
    /// tags and pass histories, the fused node's tags followed by any other body tags, the
    /// code's size, IR and ranges, and the producer whose epilogue it is.
    pub(super) fn kernel_infos(&self) -> Vec<KernelInfo> {
        let mut epilogue_of: HashMap<usize, &str> = HashMap::new();
        let mut in_place: HashMap<usize, Vec<(usize, String)>> = HashMap::new();
        for step in &self.steps {
            if let StepKind::Kernel(k) = step.kind {
                let names = step.in_place.iter();
                let names = names.map(|&(j, v)| (j, self.variables[v].clone()));
                in_place.insert(k, names.collect());
            }
            if let Some(StepKind::Kernel(k)) = step.epilogue.as_ref().map(|e| e.step.kind) {
                if let Some(producer) = self.function.get(step.node) {
                    epilogue_of.insert(k, producer.name());
                }
            }
        }
        let mut infos = Vec::with_capacity(self.compiled.len());
        for (k, kernel) in self.compiled.iter().enumerate() {
            // Always present: a kernel is named after its fused node.
            let Some(node) = self.function.node_by_name(&kernel.plan.name) else {
                continue;
            };
            let Op::FusedKernel(fused) = node.op() else {
                continue;
            };
            let nodes = BodyNodes::of(&fused.body);
            let tags = nodes.union_tags(node.tags().iter().map(str::to_string).collect());
            infos.push(KernelInfo {
                live_ins: kernel.plan.live_ins,
                outputs: kernel.plan.outputs.len(),
                code_size: kernel.code_size,
                ir: Arc::clone(&kernel.ir),
                code_ranges: kernel.code_ranges().into(),
                epilogue_of: epilogue_of.get(&k).map(|p| p.to_string()),
                writes_in_place: in_place.remove(&k).unwrap_or_default(),
                ..nodes.info(node.name(), tags)
            });
        }
        infos
    }
}

impl Executable for CpuJitExecutable {
    fn parameters(&self) -> &[TensorSpec] {
        match &self.plan.schedule {
            Schedule::Samples(s) => &s.parameters,
            Schedule::Whole(_) => &self.plan.parameters,
        }
    }

    fn results(&self) -> &[TensorSpec] {
        match &self.plan.schedule {
            Schedule::Samples(s) => &s.results,
            Schedule::Whole(_) => &self.plan.results,
        }
    }

    fn variable_store(&self) -> Option<&VariableStore> {
        self.variables.as_ref()
    }

    fn call(&self, outputs: &mut [Tensor], inputs: &[Tensor]) -> Result<(), RuntimeError> {
        validate_arguments(self.parameters(), inputs.iter(), "input")?;
        validate_arguments(self.results(), outputs.iter(), "output")?;
        match &self.plan.schedule {
            Schedule::Samples(s) => self.call_samples(s, outputs, inputs),
            Schedule::Whole(_) => self.call_whole(outputs, inputs),
        }
    }

    fn peak_intermediate_bytes(&self) -> Option<usize> {
        Some(self.plan.peak_intermediate_bytes)
    }

    fn kernels(&self) -> Vec<KernelInfo> {
        self.plan
            .infos
            .get_or_init(|| self.plan.kernel_infos())
            .clone()
    }

    fn steps(&self) -> Vec<StepInfo> {
        let variable = |v: usize| self.plan.variables.get(v).map_or("?", String::as_str);
        self.plan
            .steps
            .iter()
            .filter_map(|s| self.plan.function.get(s.node).map(|n| (s, n)))
            .map(|(s, n)| StepInfo {
                node: n.name().to_string(),
                op: n.op().type_name().to_string(),
                fused: matches!(n.op(), Op::FusedKernel(_)),
                tags: n.tags().iter().map(str::to_string).collect(),
                state: match s.kind {
                    StepKind::Read(v) => Some(format!("copies `{}`", variable(v))),
                    StepKind::ReadAlias(v) => {
                        Some(format!("its users read `{}` in place", variable(v)))
                    }
                    StepKind::Assign(v) => Some(format!("copies its value into `{}`", variable(v))),
                    StepKind::AssignInPlace(v) => Some(format!(
                        "its kernel wrote the value into `{}` in place",
                        variable(v)
                    )),
                    StepKind::Kernel(_) | StepKind::Native | StepKind::ControlFlow(_) => None,
                },
                control_flow: match s.kind {
                    StepKind::ControlFlow(c) => self.plan.control_flow_info(n, c),
                    _ => None,
                },
                packed: s.packed.as_ref().map(|w| w.to_string()),
                forwards: s.forwards.and_then(|_| {
                    let input = n.inputs().first()?;
                    let from = self.plan.function.get(input.node)?;
                    Some(format!("takes over the buffer of `{}`", from.name()))
                }),
            })
            .collect()
    }
}
