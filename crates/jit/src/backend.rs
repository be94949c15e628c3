//! The CPU-JIT backend: fused kernels as JIT code, every other node as a native kernel.

mod epilogue;
mod executable_cache;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::native::{self, Block, Epilogue};
use epilogue::{fuse_epilogues, EpilogueStep};
use executable_cache::ExecutableCache;
pub use executable_cache::ExecutableCacheStats;
use graphlift_ir::{Function, Node, NodeId, Op, Output, TensorData, TensorType};
use graphlift_passes::{ExtractionConfig, ExtractionReport, PassManager, PassRunReport};
use graphlift_runtime::trace::{CallRecorder, StepKind as TraceStepKind};
use graphlift_runtime::{
    function_signature, validate_arguments, Backend, Executable, KernelInfo, RuntimeError,
    StepInfo, Tensor, TensorSpec,
};
use smallvec::SmallVec;

use crate::cache::{KernelCache, KernelCacheStats, KernelKey};
use crate::codegen::{self, plan, CompiledKernel, KernelCode};
use crate::module::{KernelModule, MemoryWatch};
use crate::parallel::{Parallel, ThreadConfig};
use crate::provenance::BodyNodes;
use crate::JitError;

/// The name the backend registers under.
pub const BACKEND_NAME: &str = "CPU-JIT";

/// The CPU-JIT backend (`Backend::create("CPU-JIT")`), after nGraph's CPU backend with its
/// Halide subgraph extraction.
///
/// `compile` copies and validates the Function, runs the default pass pipeline
/// ([`graphlift_passes::PassManager::from_env`]: constant folding, CSE, algebraic
/// simplification, DCE, subgraph extraction; `GRAPHLIFT_DUMP=dir` dumps the graph after
/// each pass), compiles every resulting `FusedKernel` that is not in the backend's kernel
/// cache into one JIT module (one `finalize_definitions` per Executable), and plans the other
/// nodes as native kernels — the reference kernels of `graphlift_runtime::reference`, so their
/// semantics are the interpreter's by construction.
///
/// **Kernel cache.** Kernels are cached by the canonical form of their body (ops, element
/// types, shapes and broadcast pattern, constants' bits; not node names), shared by every
/// executable of this backend and its clones: compiling an equal region again reuses the
/// compiled code ([`CpuJitBackend::cache_stats`]). At most 1,024 entries are kept (the oldest
/// is evicted first). JIT code memory is freed when neither an executable nor the cache uses
/// it: dropping the backend (all its clones) and its executables frees everything.
///
/// **Executable cache.** Compiling a Function equal (`==`) to one whose executable is still
/// alive returns a new executable sharing that one's plan: no passes, no planning, well
/// under a microsecond for a small Function (`cargo bench --bench compile -- cached`). Plans
/// are held weakly, so dropping the executables frees them (`backend/executable_cache.rs`;
/// [`CpuJitBackend::with_executable_cache`]).
///
/// **Epilogue fusion.** A fused kernel that consumes the result of a `MatMul` or 2-D
/// `Convolution` (a bias add, GELU, a HardSwish chain) runs inside the producer's output
/// loop, on each block of the result as soon as it is written, while the block is in cache
/// (XLA's output fusion; oneDNN's post-ops). A block is a whole product, a thread's block
/// of rows, or the output planes of several (image, group) pairs. Which kernels run this
/// way is in [`KernelInfo::epilogue_of`]; results are bit-identical with it off
/// ([`CpuJitBackend::with_epilogue_fusion`], `GRAPHLIFT_EPILOGUE_FUSION=0`).
///
/// **Threads.** A kernel call whose work (memory traffic plus compute, in bytes and
/// byte-equivalents) is at least two tasks of [`ThreadConfig::min_bytes_per_task`] (256 KiB
/// by default, XLA's threshold) is split into chunks over [`ThreadConfig::threads`]
/// threads: the calling thread and the workers of a dedicated pool of one thread fewer
/// (default: `GRAPHLIFT_NUM_THREADS` when the backend is created, else the available
/// parallelism; [`CpuJitBackend::with_threads`]); so are large native MatMul, Convolution,
/// Softmax and LayerNorm steps. Smaller calls run on the calling thread alone. Results are
/// bit-identical for every thread count.
#[derive(Debug, Clone)]
pub struct CpuJitBackend {
    config: ExtractionConfig,
    parallel: Arc<Parallel>,
    cache: Arc<KernelCache>,
    epilogue_fusion: bool,
    /// Whether kernels call the vector math library ([`CpuJitBackend::with_veclib`]).
    veclib: bool,
    /// Whether kernels whose calls exceed the last-level cache write their outputs with
    /// non-temporal stores ([`CpuJitBackend::with_streaming_stores`]).
    stream: bool,
    /// Whether qualifying kernels are assembled as AVX-512 code
    /// ([`CpuJitBackend::with_avx512`]).
    avx512: bool,
    /// Plans of live executables, by Function ([`executable_cache`]); `None` when off.
    executables: Option<Arc<ExecutableCache>>,
}

/// The environment variable that switches epilogue fusion off when set to `0` (read when a
/// backend is created; see [`CpuJitBackend::with_epilogue_fusion`]).
pub const EPILOGUE_FUSION_ENV: &str = "GRAPHLIFT_EPILOGUE_FUSION";

impl Default for CpuJitBackend {
    fn default() -> CpuJitBackend {
        CpuJitBackend::new()
    }
}

impl CpuJitBackend {
    /// The backend with the default extraction configuration and
    /// [`ThreadConfig::from_env`].
    pub fn new() -> CpuJitBackend {
        CpuJitBackend::with_config(ExtractionConfig::default())
    }

    /// The backend with an extraction configuration (size cap, excluded ops) and
    /// [`ThreadConfig::from_env`].
    pub fn with_config(config: ExtractionConfig) -> CpuJitBackend {
        CpuJitBackend {
            config,
            parallel: Arc::new(Parallel::new(ThreadConfig::from_env())),
            cache: Arc::new(KernelCache::new(KernelCache::DEFAULT_CAPACITY)),
            epilogue_fusion: std::env::var(EPILOGUE_FUSION_ENV).map_or(true, |v| v.trim() != "0"),
            veclib: crate::veclib::default_on(),
            stream: crate::stream::default_on(),
            avx512: crate::codegen::avx512::default_on(),
            executables: Some(Arc::default()),
        }
    }

    /// This backend, with epilogue fusion on or off for executables compiled from now on.
    /// On (the default, unless `GRAPHLIFT_EPILOGUE_FUSION=0`), a fused kernel that consumes
    /// a `MatMul` or `Convolution` result runs inside the producer's output loop, on each
    /// block of the result as soon as it is written (a product, a block of its rows, or the
    /// planes of one image and group), while the block is in cache; results are
    /// bit-identical either way.
    pub fn with_epilogue_fusion(self, on: bool) -> CpuJitBackend {
        CpuJitBackend {
            epilogue_fusion: on,
            executables: self.executables.as_ref().map(|_| Arc::default()),
            ..self
        }
    }

    /// This backend, with `f32` `exp`, `sigmoid`, `tanh`, `erf`, divisions of two
    /// per-element values and whole GELU and SiLU expressions in fused kernels computed by
    /// the vector math library (on: the default when the host has AVX2 and FMA, unless
    /// `GRAPHLIFT_VECLIB=0`) or inline (off), for executables compiled from now on. The
    /// library runs the inline code's operations on the host's widest vectors (AVX-512:
    /// sixteen lanes, against four inline); results are bit-identical either way. On a host
    /// without AVX2 and FMA the setting has no effect.
    pub fn with_veclib(self, on: bool) -> CpuJitBackend {
        CpuJitBackend {
            veclib: on && crate::veclib::host_has_wide_code(),
            executables: self.executables.as_ref().map(|_| Arc::default()),
            ..self
        }
    }

    /// This backend, with non-temporal stores on or off for executables compiled from now
    /// on. On (the default on x86-64, unless `GRAPHLIFT_STREAM=0`), a fused kernel whose
    /// call reads and writes more than twice the bytes the host's last-level cache holds
    /// writes its `f32` and `i32` outputs with non-temporal stores, which skip reading each
    /// output line before writing it (E1 at 2^24 elements moves 20 bytes per element
    /// instead of 24); kernels that run as epilogues never do. Results are bit-identical
    /// either way.
    pub fn with_streaming_stores(self, on: bool) -> CpuJitBackend {
        CpuJitBackend {
            stream: on && cfg!(target_arch = "x86_64"),
            executables: self.executables.as_ref().map(|_| Arc::default()),
            ..self
        }
    }

    /// This backend, with AVX-512 kernels on or off for executables compiled from now on.
    /// On (the default on hosts with AVX-512F and BMI2, unless `GRAPHLIFT_AVX512=0`), a
    /// fused kernel of simple `f32` operations (`+ - * /`, negation, absolute value, `Relu`,
    /// square root, rounding, bounds by a constant) over contiguous, scalar, row, column
    /// and channel inputs is assembled as sixteen-lane AVX-512 code instead of Cranelift's
    /// four-lane loops (see [`crate::AVX512_ENV`]); results are bit-identical either way. On
    /// other hosts the setting has no effect.
    pub fn with_avx512(self, on: bool) -> CpuJitBackend {
        CpuJitBackend {
            avx512: on && crate::codegen::avx512::host_supported(),
            executables: self.executables.as_ref().map(|_| Arc::default()),
            ..self
        }
    }

    /// Whether qualifying kernels compiled from now on are AVX-512 code
    /// ([`CpuJitBackend::with_avx512`]).
    pub fn avx512(&self) -> bool {
        self.avx512
    }

    /// Whether large kernels compiled from now on write their outputs with non-temporal
    /// stores ([`CpuJitBackend::with_streaming_stores`]).
    pub fn streaming_stores(&self) -> bool {
        self.stream
    }

    /// This backend, with kernel calls split over `threads` threads (at least 1; 1 runs
    /// every kernel on the calling thread) and the default per-task threshold. Executables
    /// compiled before keep their setting; the kernel cache stays shared.
    pub fn with_threads(self, threads: usize) -> CpuJitBackend {
        self.with_thread_config(ThreadConfig::with_threads(threads))
    }

    /// This backend with a full thread configuration (e.g. a small
    /// [`ThreadConfig::min_bytes_per_task`] to force splitting in tests).
    pub fn with_thread_config(self, config: ThreadConfig) -> CpuJitBackend {
        CpuJitBackend {
            parallel: Arc::new(Parallel::new(config)),
            executables: self.executables.as_ref().map(|_| Arc::default()),
            ..self
        }
    }

    /// This backend with the executable cache on (the default) or off. On, compiling a
    /// Function equal to one whose executable is still alive returns a new executable that
    /// shares that one's plan and kernels: no passes, no planning (see
    /// [`CpuJitBackend::executable_cache_stats`]). Off, every compile runs the pipeline (the
    /// kernel cache still supplies compiled kernels). Executables are not cached while
    /// `GRAPHLIFT_DUMP` asks for pass dumps.
    pub fn with_executable_cache(self, on: bool) -> CpuJitBackend {
        CpuJitBackend {
            executables: on.then(Arc::default),
            ..self
        }
    }

    /// Whether kernels compiled from now on call the vector math library
    /// ([`CpuJitBackend::with_veclib`]).
    pub fn veclib(&self) -> bool {
        self.veclib
    }

    /// Counters of the executable cache (all zero when it is off).
    pub fn executable_cache_stats(&self) -> ExecutableCacheStats {
        self.executables
            .as_ref()
            .map_or_else(ExecutableCacheStats::default, |c| c.stats())
    }

    /// The thread configuration of executables compiled from now on.
    pub fn thread_config(&self) -> ThreadConfig {
        self.parallel.config()
    }

    /// Counters of the kernel cache: kernels compiled, cache hits, entries held.
    pub fn cache_stats(&self) -> KernelCacheStats {
        self.cache.stats()
    }

    /// Empties the kernel cache; code that live executables use stays alive.
    pub fn clear_cache(&self) {
        self.cache.clear();
    }

    /// The compiled code of every plan: from the cache, or compiled now (equal plans of one
    /// function once, all misses into one new module) and cached.
    fn kernel_codes(&self, plans: &[plan::KernelPlan]) -> Result<Vec<Arc<KernelCode>>, JitError> {
        let keys: Vec<KernelKey> = plans.iter().map(KernelKey::of).collect();
        let mut codes: Vec<Option<Arc<KernelCode>>> = Vec::with_capacity(plans.len());
        // Unique missing keys, and for each, the plan that compiles it.
        let mut missing: Vec<usize> = Vec::new();
        for (k, key) in keys.iter().enumerate() {
            let found = self.cache.get(key);
            if found.is_none() && !missing.iter().any(|&m| keys[m] == *key) {
                missing.push(k);
            }
            codes.push(found);
        }
        if !missing.is_empty() {
            let module = Arc::new(KernelModule::new()?);
            let refs: Vec<&plan::KernelPlan> = missing.iter().map(|&m| &plans[m]).collect();
            let fresh = codegen::compile_codes(&module, &refs)?;
            for (&m, code) in missing.iter().zip(fresh) {
                let code = Arc::new(code);
                self.cache.insert(keys[m].clone(), Arc::clone(&code));
                for (k, key) in keys.iter().enumerate() {
                    if codes[k].is_none() && *key == keys[m] {
                        codes[k] = Some(Arc::clone(&code));
                    }
                }
            }
        }
        codes
            .into_iter()
            .map(|c| c.ok_or_else(|| JitError::Module("a kernel was not compiled".into())))
            .collect()
    }

    /// Compiles `function` into the concrete executable type, or takes the plan of a live
    /// executable of an equal Function from the executable cache
    /// ([`CpuJitBackend::with_executable_cache`]).
    ///
    /// # Errors
    /// [`RuntimeError::Ir`] if the function does not validate; [`RuntimeError::Compile`]
    /// if extraction or code generation fails (the message names the kernel).
    pub fn compile_executable(
        &self,
        function: &Function,
    ) -> Result<CpuJitExecutable, RuntimeError> {
        let cache = self
            .executables
            .as_ref()
            .filter(|_| PassManager::env_dump_dir().is_none());
        let plan = match cache.and_then(|c| c.get(function)) {
            Some(plan) => plan,
            None => {
                let plan = Arc::new(self.compile_plan(function, cache.is_some())?);
                if let Some(c) = cache {
                    c.insert(&plan);
                }
                plan
            }
        };
        Ok(CpuJitExecutable {
            plan,
            recycled: Mutex::new(Vec::new()),
            parallel: Arc::clone(&self.parallel),
        })
    }

    /// Runs the pass pipeline on a copy of `function` and plans its steps, buffers and
    /// kernels; keeps a copy of `function` as the plan's source when `keep_source`.
    fn compile_plan(
        &self,
        function: &Function,
        keep_source: bool,
    ) -> Result<ExecutablePlan, RuntimeError> {
        function.validate()?;
        let (parameters, results) = function_signature(function)?;
        let mut g = function.clone();
        let fname = function.name().to_string();
        let pass_report = PassManager::from_env(self.config.clone())
            .run(&mut g)
            .map_err(|e| RuntimeError::Compile {
                function: fname.clone(),
                message: format!("pass pipeline: {e}"),
            })?;
        g.validate()?;
        let compile_err = |e: JitError| e.into_compile_error(&fname);

        let mut locs: HashMap<Output, Loc> = HashMap::new();
        for (k, &p) in g.parameters().iter().enumerate() {
            locs.insert(Output::new(p, 0), Loc::Input(k));
        }
        let mut steps = Vec::new();
        let mut plans = Vec::new();
        let mut temps = 0usize;
        let mut constants = Vec::new();
        for id in g.topological_order()? {
            let node = g.node(id)?;
            if matches!(node.op(), Op::Parameter | Op::Result) {
                continue;
            }
            if let Op::Constant(data) = node.op() {
                let shape = node.output_type().shape.clone();
                constants.push(Tensor::from_data((**data).clone(), shape)?);
                locs.insert(Output::new(id, 0), Loc::Constant(constants.len() - 1));
                continue;
            }
            let inputs = node
                .inputs()
                .iter()
                .map(|o| {
                    locs.get(o).copied().ok_or_else(|| RuntimeError::Compile {
                        function: fname.clone(),
                        message: format!(
                            "input {o:?} of `{}` [provenance: {}] is not computed",
                            node.name(),
                            provenance(node)
                        ),
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            let kind = if let Op::FusedKernel(k) = node.op() {
                let mut p = plan::plan_kernel(node.name(), &k.body).map_err(compile_err)?;
                p.veclib = self.veclib;
                p.avx512 = self.avx512;
                plans.push(p);
                StepKind::Kernel(plans.len() - 1)
            } else {
                StepKind::Native
            };
            let outputs: Vec<usize> = (temps..temps + node.outputs().len()).collect();
            temps += outputs.len();
            for (i, &t) in outputs.iter().enumerate() {
                locs.insert(Output::new(id, i), Loc::Temp(t));
            }
            steps.push(Step {
                node: id,
                kind,
                inputs,
                outputs,
                free_after: Vec::new(),
                epilogue: None,
            });
        }
        let result_locs = g
            .results()
            .iter()
            .map(|&r| {
                let src = g.result_source(r)?;
                locs.get(&src)
                    .copied()
                    .ok_or_else(|| RuntimeError::Compile {
                        function: fname.clone(),
                        message: format!("result {r} is not computed"),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if self.epilogue_fusion {
            steps = fuse_epilogues(steps, &g, &plans)?;
        }
        if self.stream {
            // Standalone kernel steps stream when a call's traffic is more than twice the
            // cache; epilogues run on blocks that are in cache.
            for step in &steps {
                if let StepKind::Kernel(i) = step.kind {
                    if let Some(p) = plans.get_mut(i) {
                        p.stream = crate::stream::streams(codegen::cost::call_traffic(p));
                    }
                }
            }
        }
        plan_lifetimes(&mut steps, &result_locs, temps);
        let peak_intermediate_bytes = peak_bytes(&steps, &g)?;
        let (buffer_of, buffers) = assign_buffers(&steps, &g, temps)?;

        let codes = self.kernel_codes(&plans).map_err(compile_err)?;
        let compiled: Vec<CompiledKernel> = plans
            .into_iter()
            .zip(codes)
            .map(|(p, c)| CompiledKernel::new(p, c))
            .collect();
        let mut take_result = vec![false; result_locs.len()];
        for (k, loc) in result_locs.iter().enumerate() {
            take_result[k] =
                matches!(loc, Loc::Temp(_)) && !result_locs[k + 1..].iter().any(|l| l == loc);
        }
        let direct = DirectCall::of(&steps, &result_locs);
        Ok(ExecutablePlan {
            source: keep_source.then(|| function.clone()),
            function: g,
            parameters,
            results,
            steps,
            temps,
            buffer_of,
            buffers,
            peak_intermediate_bytes,
            constants,
            result_locs,
            take_result,
            direct,
            infos: OnceLock::new(),
            pass_report,
            compiled,
        })
    }
}

impl Backend for CpuJitBackend {
    fn name(&self) -> &str {
        BACKEND_NAME
    }

    fn compile(&self, function: &Function) -> Result<Arc<dyn Executable>, RuntimeError> {
        Ok(Arc::new(self.compile_executable(function)?))
    }
}

impl ExecutablePlan {
    /// The report of every kernel, in plan order: the body's computing nodes with their
    /// tags and pass histories, the fused node's tags followed by any other body tags, the
    /// code's size, IR and ranges, and the producer whose epilogue it is.
    fn kernel_infos(&self) -> Vec<KernelInfo> {
        let mut epilogue_of: HashMap<usize, &str> = HashMap::new();
        for step in &self.steps {
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
                ..nodes.info(node.name(), tags)
            });
        }
        infos
    }
}

/// A node's provenance tags, comma-separated, for error messages.
fn provenance(node: &Node) -> String {
    node.tags().iter().collect::<Vec<_>>().join(", ")
}

/// Where a value lives during a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    /// The caller's input tensor `k`.
    Input(usize),
    /// Temporary `t`.
    Temp(usize),
    /// Constant `c`, made into a tensor once at compile time (weights are never copied per
    /// call).
    Constant(usize),
}

/// A plan of one kernel step that reads only the call's inputs and constants, and whose
/// outputs are exactly the results, each once: the shape of most small fused expressions.
/// Such a call needs no temporaries: the kernel reads the caller's input buffers and writes
/// the caller's output buffers (about half of the fixed cost of a small call). The node and
/// inputs are copies of the step's: reading them through the step list cost a direct call
/// 12 ns more (102 → 114 ns, criterion `call_overhead`).
#[derive(Debug)]
struct DirectCall {
    /// The kernel ([`ExecutablePlan::compiled`] index) and its step's node.
    kernel: usize,
    node: NodeId,
    /// The kernel's live-ins, each an input or a constant.
    inputs: Vec<Loc>,
    /// For each kernel output, the result it is.
    results: Vec<usize>,
}

impl DirectCall {
    fn of(steps: &[Step], result_locs: &[Loc]) -> Option<DirectCall> {
        let [step] = steps else { return None };
        let StepKind::Kernel(kernel) = step.kind else {
            return None;
        };
        let reads_caller = step
            .inputs
            .iter()
            .all(|l| matches!(l, Loc::Input(_) | Loc::Constant(_)));
        if step.epilogue.is_some() || !reads_caller || step.outputs.len() != result_locs.len() {
            return None;
        }
        let results = step
            .outputs
            .iter()
            .map(|&t| {
                let mut at = (0..result_locs.len()).filter(|&k| result_locs[k] == Loc::Temp(t));
                at.next().filter(|_| at.next().is_none())
            })
            .collect::<Option<Vec<usize>>>()?;
        Some(DirectCall {
            kernel,
            node: step.node,
            inputs: step.inputs.clone(),
            results,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepKind {
    /// JIT kernel `k`.
    Kernel(usize),
    /// The reference kernel of the node.
    Native,
}

/// One step of the plan: a node, where its inputs are, which temporaries it fills, and
/// which temporaries die after it. A step with an epilogue lists the producer's inputs and
/// outputs first, then the epilogue kernel's.
#[derive(Debug, Clone)]
struct Step {
    node: NodeId,
    kind: StepKind,
    inputs: Vec<Loc>,
    outputs: Vec<usize>,
    free_after: Vec<usize>,
    /// A kernel run in this native step's output loop ([`epilogue`]).
    epilogue: Option<Box<EpilogueStep>>,
}

impl Step {
    /// The types of the step's outputs, in order (the producer's, then its epilogue's).
    fn output_types<'g>(&self, g: &'g Function) -> Result<Vec<&'g TensorType>, RuntimeError> {
        let mut types: Vec<&TensorType> = g.node(self.node)?.outputs().iter().collect();
        if let Some(e) = &self.epilogue {
            types.extend(g.node(e.step.node)?.outputs());
        }
        Ok(types)
    }
}

/// Frees each temporary after its last use (results are kept to the end).
/// The most bytes of temporaries live at once: each step's outputs are allocated before it
/// runs (its inputs still live) and `free_after` releases after it.
fn peak_bytes(steps: &[Step], g: &Function) -> Result<usize, RuntimeError> {
    let (mut live, mut peak) = (0usize, 0usize);
    let mut size = std::collections::HashMap::new();
    for step in steps {
        for (&t, ty) in step.outputs.iter().zip(step.output_types(g)?) {
            // Saturating: a shape too large for memory compiles (and fails to run) cleanly.
            let bytes = ty
                .shape
                .element_count()?
                .saturating_mul(ty.element_type.size_bytes());
            size.insert(t, bytes);
            live = live.saturating_add(bytes);
        }
        peak = peak.max(live);
        for t in &step.free_after {
            live = live.saturating_sub(size.get(t).copied().unwrap_or(0));
        }
    }
    Ok(peak)
}

/// Bins of recycled temporaries kept between calls, at most this many (one per call running
/// at once; more concurrent calls allocate afresh).
const MAX_RECYCLE_BINS: usize = 4;

/// Assigns every temporary a buffer: temporaries of one tensor type whose lifetimes do not
/// overlap share one (greedy interval colouring in step order; a step's outputs never take
/// the buffer of a value that dies at that step, which it may still be reading). Returns the
/// buffer of each temporary and the number of buffers.
fn assign_buffers(
    steps: &[Step],
    g: &Function,
    temps: usize,
) -> Result<(Vec<usize>, usize), RuntimeError> {
    let mut buffer_of = vec![usize::MAX; temps];
    // Per buffer: its tensor type and whether it is free for the next step.
    let mut buffers: Vec<(TensorType, bool)> = Vec::new();
    for step in steps {
        for (&t, ty) in step.outputs.iter().zip(step.output_types(g)?) {
            let b = match buffers.iter().position(|(bt, free)| *free && bt == ty) {
                Some(b) => b,
                None => {
                    buffers.push(((*ty).clone(), true));
                    buffers.len() - 1
                }
            };
            buffers[b].1 = false;
            buffer_of[t] = b;
        }
        for &t in &step.free_after {
            if let Some(b) = buffers.get_mut(buffer_of[t]) {
                b.1 = true;
            }
        }
    }
    Ok((buffer_of, buffers.len()))
}

fn plan_lifetimes(steps: &mut [Step], results: &[Loc], temps: usize) {
    let mut last: Vec<Option<usize>> = vec![None; temps];
    for (s, step) in steps.iter().enumerate() {
        for &t in &step.outputs {
            last[t] = Some(s);
        }
        for l in &step.inputs {
            if let Loc::Temp(t) = l {
                last[*t] = Some(s);
            }
        }
    }
    for l in results {
        if let Loc::Temp(t) = l {
            last[*t] = None;
        }
    }
    for (t, s) in last.into_iter().enumerate() {
        if let Some(s) = s {
            steps[s].free_after.push(t);
        }
    }
}

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
    plan: Arc<ExecutablePlan>,
    /// Bins of dead temporaries from earlier calls, indexed by buffer: a step's output takes
    /// its buffer's tensor from the bin (kernels and MatMul write into it) instead of
    /// allocating and page-faulting a new one.
    recycled: Mutex<Vec<Vec<Option<Tensor>>>>,
    parallel: Arc<Parallel>,
}

/// Everything an executable runs and reports that a call does not change: the compiled
/// function, the step plan and its buffers, the kernels. Immutable once built.
#[derive(Debug)]
struct ExecutablePlan {
    /// The Function as given to `compile`, when the executable cache holds the plan (its
    /// key).
    source: Option<Function>,
    function: Function,
    parameters: Vec<TensorSpec>,
    results: Vec<TensorSpec>,
    steps: Vec<Step>,
    temps: usize,
    /// The buffer of each temporary ([`assign_buffers`]).
    buffer_of: Vec<usize>,
    /// Number of buffers.
    buffers: usize,
    /// See [`Executable::peak_intermediate_bytes`].
    peak_intermediate_bytes: usize,
    /// The Function's constants as tensors, indexed by [`Loc::Constant`].
    constants: Vec<Tensor>,
    result_locs: Vec<Loc>,
    take_result: Vec<bool>,
    /// Set when the plan is one kernel that reads only inputs and constants and writes
    /// every result: a call then hands the caller's buffers to it directly.
    direct: Option<DirectCall>,
    /// The kernels' reports, made on the first [`Executable::kernels`] call.
    infos: OnceLock<Vec<KernelInfo>>,
    pass_report: PassRunReport,
    /// Each kernel owns (an `Arc` of) the module its code lives in.
    compiled: Vec<CompiledKernel>,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CpuJitExecutable>();
    assert_send_sync::<CpuJitBackend>();
    assert_send_sync::<crate::JitKernel>();
};

impl CpuJitExecutable {
    /// Whether a call runs the plan's one kernel on the caller's buffers ([`DirectCall`]).
    #[cfg(test)]
    pub(crate) fn calls_directly(&self) -> bool {
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

    /// The kernel of the fused node `name`.
    fn kernel(&self, name: &str) -> Option<&CompiledKernel> {
        self.plan.compiled.iter().find(|k| k.plan.name == name)
    }

    /// The Cranelift IR of the kernel of the fused node `name`.
    pub fn kernel_ir(&self, name: &str) -> Option<&str> {
        self.kernel(name).map(|k| &*k.ir)
    }

    /// Whether the kernel of the fused node `name` runs as a vector loop.
    pub fn kernel_is_vectorized(&self, name: &str) -> Option<bool> {
        self.kernel_lanes(name).map(|n| n > 1)
    }

    /// Elements per vector body of the kernel of the fused node `name`: 16 (AVX-512 code),
    /// 4 (`F32X4`/`I32X4`, or a mixed-width kernel), 2 (`F64X2`/`I64X2`) or 1 (a scalar
    /// loop); see [`crate::JitKernel::lanes`].
    pub fn kernel_lanes(&self, name: &str) -> Option<usize> {
        self.kernel(name).map(|k| k.lanes())
    }

    /// Whether the kernel of the fused node `name` is AVX-512 code assembled without
    /// Cranelift ([`CpuJitBackend::with_avx512`]). `None` when there is no such kernel.
    pub fn kernel_is_avx512(&self, name: &str) -> Option<bool> {
        self.kernel(name).map(|k| k.is_avx512())
    }

    /// Whether the kernel of the fused node `name` mixes 32-bit and 64-bit numbers (see
    /// [`crate::JitKernel::is_mixed_width`]).
    pub fn kernel_is_mixed_width(&self, name: &str) -> Option<bool> {
        self.kernel(name)
            .map(|k| k.plan.lanes == crate::codegen::lanes::Lanes::Mixed)
    }

    /// Whether the kernel of the fused node `name` calls the vector math library for its
    /// `f32` `exp`, `sigmoid`, `tanh`, `erf`, divisions or activation forms (see
    /// [`CpuJitBackend::with_veclib`]).
    pub fn kernel_calls_library(&self, name: &str) -> Option<bool> {
        self.kernel(name).map(|k| k.calls_library())
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

    /// How many intermediate buffers the plan uses: temporaries of one tensor type whose
    /// lifetimes do not overlap share one, and a call reuses the buffers a previous call
    /// left behind (results are written into the caller's output tensors instead).
    pub fn intermediate_buffers(&self) -> usize {
        self.plan.buffers
    }

    /// The thread configuration kernel calls use.
    pub fn thread_config(&self) -> ThreadConfig {
        self.parallel.config()
    }

    fn execution_error(node: &Node, message: String) -> RuntimeError {
        RuntimeError::Execution {
            node: node.name().to_string(),
            op: node.op().to_string(),
            provenance: provenance(node),
            message,
        }
    }

    /// Runs a [`DirectCall`] plan on the caller's (validated) buffers.
    fn call_direct(
        &self,
        d: &DirectCall,
        outputs: &mut [Tensor],
        inputs: &[Tensor],
    ) -> Result<(), RuntimeError> {
        let node = self.plan.function.node(d.node)?;
        let not_computed = || Self::execution_error(node, "an input was not computed".into());
        // The node's own inputs, as `run_step` takes them.
        let own = &d.inputs[..node.inputs().len().min(d.inputs.len())];
        let ins = own
            .iter()
            .map(|&l| self.resolve_one(l, inputs, &[]).map(Tensor::data))
            .collect::<Option<SmallVec<[&TensorData; 8]>>>()
            .ok_or_else(not_computed)?;
        let mut by_result: SmallVec<[Option<&mut TensorData>; 4]> =
            outputs.iter_mut().map(|t| Some(t.data_mut())).collect();
        let mut outs = d
            .results
            .iter()
            .map(|&r| by_result.get_mut(r).and_then(Option::take))
            .collect::<Option<SmallVec<[&mut TensorData; 4]>>>()
            .ok_or_else(not_computed)?;
        self.run_whole(&self.plan.compiled[d.kernel], &ins, &mut outs)
            .map_err(|e| Self::execution_error(node, e.to_string()))
    }

    /// Runs the plan's steps in order, leaving each value in its temp slot; records each
    /// step when a tracer is alive.
    fn run_steps(
        &self,
        inputs: &[Tensor],
        temps: &mut [Option<Tensor>],
        recorder: &mut Option<CallRecorder>,
    ) -> Result<(), RuntimeError> {
        let mut bin = self
            .recycled
            .lock()
            .ok()
            .and_then(|mut bins| bins.pop())
            .unwrap_or_else(|| vec![None; self.plan.buffers]);
        for step in &self.plan.steps {
            let started = recorder.as_ref().map(CallRecorder::step_start);
            let seeded = step
                .outputs
                .iter()
                .map(|&t| {
                    temps[t]
                        .take()
                        .or_else(|| bin.get_mut(self.plan.buffer_of[t]).and_then(Option::take))
                })
                .collect();
            let outs = self.run_step(step, inputs, temps, seeded)?;
            if let (Some(r), Some(start)) = (recorder.as_mut(), started) {
                self.record(r, step, start, &outs)?;
            }
            for (&t, o) in step.outputs.iter().zip(outs) {
                temps[t] = Some(o);
            }
            for &t in &step.free_after {
                if let (Some(dead), Some(slot)) =
                    (temps[t].take(), bin.get_mut(self.plan.buffer_of[t]))
                {
                    *slot = Some(dead);
                }
            }
        }
        if let Ok(mut bins) = self.recycled.lock() {
            if bins.len() < MAX_RECYCLE_BINS {
                bins.push(bin);
            }
        }
        Ok(())
    }

    /// Records `step` in the trace: its node, and an epilogue's kernel as a step of its own
    /// right after it (with no time of its own: it ran inside the producer's step).
    fn record(
        &self,
        r: &mut CallRecorder,
        step: &Step,
        start: std::time::Instant,
        outs: &[Tensor],
    ) -> Result<(), RuntimeError> {
        let kind = |k: StepKind| match k {
            StepKind::Kernel(_) => TraceStepKind::JitKernel,
            StepKind::Native => TraceStepKind::Native,
        };
        let node = self.plan.function.node(step.node)?;
        let n = node.outputs().len().min(outs.len());
        r.record(node, kind(step.kind), start, &outs[..n]);
        if let Some(e) = &step.epilogue {
            let end = r.step_start();
            r.record(
                self.plan.function.node(e.step.node)?,
                kind(e.step.kind),
                end,
                &outs[n..],
            );
        }
        Ok(())
    }

    /// The tensor at `loc`, or `None` if it was not computed.
    fn resolve_one<'a>(
        &'a self,
        loc: Loc,
        inputs: &'a [Tensor],
        temps: &'a [Option<Tensor>],
    ) -> Option<&'a Tensor> {
        match loc {
            Loc::Input(k) => inputs.get(k),
            Loc::Temp(t) => temps.get(t).and_then(Option::as_ref),
            Loc::Constant(c) => self.plan.constants.get(c),
        }
    }

    /// The tensors at `locs`, or `None` if one was not computed.
    fn resolve<'a>(
        &'a self,
        locs: &[Loc],
        inputs: &'a [Tensor],
        temps: &'a [Option<Tensor>],
    ) -> Option<Vec<&'a Tensor>> {
        locs.iter()
            .map(|&l| self.resolve_one(l, inputs, temps))
            .collect()
    }

    /// Runs one step. A kernel writes into `seeded[j]` for output `j` when the caller's
    /// output tensor was handed in for it (see [`Executable::call`]), else into a new tensor.
    fn run_step(
        &self,
        step: &Step,
        inputs: &[Tensor],
        temps: &[Option<Tensor>],
        seeded: Vec<Option<Tensor>>,
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let node = self.plan.function.node(step.node)?;
        let own_inputs = &step.inputs[..node.inputs().len().min(step.inputs.len())];
        let ins = self
            .resolve(own_inputs, inputs, temps)
            .ok_or_else(|| Self::execution_error(node, "an input was not computed".into()))?;
        match (step.kind, &step.epilogue) {
            (StepKind::Native, None) => native::evaluate(node, &ins, seeded, &self.parallel),
            (StepKind::Native, Some(e)) => {
                self.run_with_epilogue(node, e, &ins, inputs, temps, seeded)
            }
            (StepKind::Kernel(k), _) => {
                let mut outs = kernel_outputs(node, seeded)?;
                let in_data: Vec<&TensorData> = ins.iter().map(|t| t.data()).collect();
                let mut out_data: Vec<&mut TensorData> =
                    outs.iter_mut().map(|t| t.data_mut()).collect();
                self.run_whole(&self.plan.compiled[k], &in_data, &mut out_data)
                    .map_err(|e| Self::execution_error(node, e.to_string()))?;
                Ok(outs)
            }
        }
    }

    /// Runs `kernel` over its whole iteration space, split over the pool when the cost
    /// model says so.
    fn run_whole(
        &self,
        kernel: &CompiledKernel,
        inputs: &[&TensorData],
        outputs: &mut [&mut TensorData],
    ) -> Result<(), JitError> {
        kernel.invoke_split(inputs, outputs, 0, kernel.plan.count, Some(&self.parallel))
    }

    /// Runs the native `node` with the kernel step `e` as the epilogue of its output loop
    /// (see [`epilogue`]): the producer's outputs, then the kernel's.
    fn run_with_epilogue(
        &self,
        node: &Node,
        e: &EpilogueStep,
        ins: &[&Tensor],
        inputs: &[Tensor],
        temps: &[Option<Tensor>],
        mut seeded: Vec<Option<Tensor>>,
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let knode = self.plan.function.node(e.step.node)?;
        let StepKind::Kernel(k) = e.step.kind else {
            return Err(Self::execution_error(
                knode,
                "an epilogue must be a kernel".into(),
            ));
        };
        let kernel = &self.plan.compiled[k];
        let kernel_err = |err: JitError| Self::execution_error(knode, err.to_string());
        let mut kouts = kernel_outputs(knode, seeded.split_off(node.outputs().len()))?;
        // The producer's result, made before it runs so the kernel's buffers (with this one
        // in the slots that read it) are checked before any block reaches the kernel.
        let ty = node.output_type();
        let product = match seeded.into_iter().next().flatten() {
            Some(buffer) if buffer.has_type(ty) => buffer,
            _ => Tensor::zeros(ty.element_type, ty.shape.clone())?,
        };
        let not_computed = || Self::execution_error(knode, "an input was not computed".into());
        let mut out_data: Vec<&mut TensorData> = kouts.iter_mut().map(Tensor::data_mut).collect();
        let buffers = {
            let in_data = self
                .epilogue_inputs(e, product.data(), inputs, temps)
                .ok_or_else(not_computed)?;
            kernel
                .prepare(&in_data, &mut out_data)
                .map_err(kernel_err)?
        };
        let run = |block: Block| {
            // SAFETY: `buffers` come from `prepare` on this kernel; the kernel's outputs
            // stay borrowed by `out_data` and its other inputs by `inputs`, `temps` and
            // `self.plan.constants` until the producer returns. The slots in `e.reads` read the
            // producer's result contiguously (checked when the plan was made, see
            // `fuse_epilogues`) and are replaced by the block, which `Epilogue::run` hands
            // over as a borrowed slice of the result (a separate buffer from every kernel
            // output). Producers hand over disjoint blocks, so concurrent calls write
            // disjoint ranges of the outputs.
            unsafe { kernel.call_on_block(&buffers, &e.reads, block) }
        };
        let (mut outs, ran) = native::evaluate_with_epilogue(
            node,
            ins,
            vec![Some(product)],
            &self.parallel,
            Some(Epilogue::new(&run)),
        )?;
        if !ran {
            // A reference kernel computed the result: run the kernel over all of it.
            let result = outs.first().ok_or_else(not_computed)?;
            let in_data = self
                .epilogue_inputs(e, result.data(), inputs, temps)
                .ok_or_else(not_computed)?;
            self.run_whole(kernel, &in_data, &mut out_data)
                .map_err(kernel_err)?;
        }
        drop(out_data);
        outs.extend(kouts);
        Ok(outs)
    }

    /// The epilogue kernel's input buffers, with `result` (the producer's) in the slots
    /// that read it; `None` if an input was not computed.
    fn epilogue_inputs<'a>(
        &'a self,
        e: &EpilogueStep,
        result: &'a TensorData,
        inputs: &'a [Tensor],
        temps: &'a [Option<Tensor>],
    ) -> Option<Vec<&'a TensorData>> {
        e.step
            .inputs
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if e.reads.contains(&i) {
                    Some(result)
                } else {
                    self.resolve_one(*l, inputs, temps).map(Tensor::data)
                }
            })
            .collect()
    }
}

/// A kernel's output tensors: the seeded buffers where they have the output's type, else
/// new zeroed tensors.
fn kernel_outputs(node: &Node, seeded: Vec<Option<Tensor>>) -> Result<Vec<Tensor>, RuntimeError> {
    node.outputs()
        .iter()
        .zip(seeded.into_iter().chain(std::iter::repeat(None)))
        .map(|(t, seed)| match seed {
            Some(buffer) if buffer.has_type(t) => Ok(buffer),
            _ => Tensor::zeros(t.element_type, t.shape.clone()),
        })
        .collect()
}

impl Executable for CpuJitExecutable {
    fn parameters(&self) -> &[TensorSpec] {
        &self.plan.parameters
    }

    fn results(&self) -> &[TensorSpec] {
        &self.plan.results
    }

    fn call(&self, outputs: &mut [Tensor], inputs: &[Tensor]) -> Result<(), RuntimeError> {
        validate_arguments(&self.plan.parameters, inputs.iter(), "input")?;
        validate_arguments(&self.plan.results, outputs.iter(), "output")?;
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
        // Tracing hook: `None` (one thread-local read) unless a tracer is alive.
        let mut recorder = CallRecorder::begin(&self.plan.function, BACKEND_NAME);
        // Steps run on the caller's thread; a step that splits its work takes the pool's
        // workers as helpers for that step only (`parallel::for_each`).
        let run = self.run_steps(inputs, &mut temps, &mut recorder);
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
        self.plan
            .steps
            .iter()
            .filter_map(|s| self.plan.function.get(s.node))
            .map(|n| StepInfo {
                node: n.name().to_string(),
                op: n.op().type_name().to_string(),
                fused: matches!(n.op(), Op::FusedKernel(_)),
                tags: n.tags().iter().map(str::to_string).collect(),
            })
            .collect()
    }
}
