//! The CPU-JIT backend: fused kernels as JIT code, every other node as a native kernel.
//! [`CpuJitBackend`] holds the settings and caches; the submodules plan an executable's steps
//! and buffers, hold it and run it.

mod batch_split;
mod buffers;
mod compile_plan;
mod control_flow;
mod epilogue;
mod executable;
mod executable_cache;
mod execute;
mod execute_state;
mod state;
mod steps;

use std::sync::Arc;

pub use batch_split::SampleSpread;
use buffers::{
    peak_bytes, plan_forwarding, plan_lifetimes, Bins, BufferPlan, Recycling, MAX_RECYCLE_BINS,
};
pub use executable::CpuJitExecutable;
use executable::ExecutablePlan;
use executable_cache::ExecutableCache;
pub use executable_cache::ExecutableCacheStats;
use graphlift_ir::Function;
use graphlift_passes::{ExtractionConfig, ScopeFusionRegistry};
use graphlift_runtime::{Backend, Executable, RuntimeError};
use steps::{provenance, DirectCall, Loc, Step, StepKind};

use crate::cache::{KernelCache, KernelCacheStats};
use graphlift_kernels::parallel::{Parallel, ThreadConfig};
use graphlift_kernels::target::Target;

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
/// nodes as native kernels of `graphlift_kernels` (MatMul, convolution, normalisation,
/// reductions; epilogue kernels fused into their output loops) or the reference kernels of
/// `graphlift_runtime::reference`, so their semantics are the interpreter's by construction.
/// The result, a [`CpuJitExecutable`], is an ordered list of steps over buffers planned by
/// liveness (constants bound once, intermediates recycled across calls). Kernels compute
/// what the INTERPRETER computes, except that the vector math and float `Power` are within
/// the bounds of `graphlift_codegen::vmath`.
///
/// **Kernel cache.** Kernels are cached by the canonical form of their body (ops, element
/// types, shapes and broadcast pattern, constants' bits; not node names), shared by every
/// executable of this backend and its clones: compiling an equal region again reuses the
/// compiled code ([`CpuJitBackend::cache_stats`]). At most
/// [`Target::kernel_cache_capacity`] entries are kept — 1,024 by default
/// ([`graphlift_kernels::target::DEFAULT_KERNEL_CACHE_CAPACITY`] says why),
/// `GRAPHLIFT_KERNEL_CACHE=N` or [`CpuJitBackend::with_kernel_cache_capacity`] to change it,
/// 0 for no cache — and the least recently used is evicted first. JIT code memory is freed
/// when neither an executable nor the cache uses it: an evicted kernel's executables keep
/// running it, and dropping the backend (all its clones) and its executables frees
/// everything.
///
/// **Executable cache.** Compiling a Function equal (`==`) to one whose executable is still
/// alive returns a new executable sharing that one's plan: no passes, no planning. Plans
/// are held weakly, so dropping the executables frees them (`backend/executable_cache.rs`;
/// [`CpuJitBackend::with_executable_cache`]); it needs no capacity, as it never holds more
/// than the live executables (and, until the next compile, the entries of ones dropped
/// since, a weak pointer each).
///
/// **Epilogue fusion.** A fused kernel that consumes the result of a `MatMul` or 2-D
/// `Convolution` (a bias add, GELU, a HardSwish chain) runs inside the producer's output
/// loop, on each block of the result as soon as it is written, while the block is in cache
/// (XLA's output fusion; oneDNN's post-ops). A block is a whole product, a thread's block
/// of rows, or the output planes of several (image, group) pairs. Which kernels run this
/// way is in `KernelInfo::epilogue_of`; results are bit-identical with it off
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
    /// The scope fusion passes the pipeline runs (the environment's
    /// `GRAPHLIFT_DISABLE_SCOPE_PASSES` is applied on top when compiling).
    scope_fusion: ScopeFusionRegistry,
    parallel: Arc<Parallel>,
    cache: Arc<KernelCache>,
    /// The host's features and every code-path switch: what kernels compiled from now on
    /// may use ([`CpuJitBackend::target`]).
    target: Target,
    /// Plans of live executables, by Function ([`executable_cache`]); `None` when off.
    executables: Option<Arc<ExecutableCache>>,
    /// Where executables keep their dead temporaries between calls
    /// ([`CpuJitBackend::with_buffer_recycling`], [`CpuJitBackend::with_shared_buffers`]).
    recycling: Recycling,
}

impl Default for CpuJitBackend {
    fn default() -> CpuJitBackend {
        CpuJitBackend::new()
    }
}

impl CpuJitBackend {
    /// The backend with the default extraction configuration and single-op kernels (a lone
    /// elementwise op runs JIT code, not the reference kernel), for [`Target::from_env`]
    /// (the host's features, the `GRAPHLIFT_*` switches and thread count).
    pub fn new() -> CpuJitBackend {
        CpuJitBackend::with_config(ExtractionConfig::default().with_single_op_kernels(true))
    }

    /// The backend with an extraction configuration (size cap, excluded ops), for
    /// [`Target::from_env`].
    pub fn with_config(config: ExtractionConfig) -> CpuJitBackend {
        CpuJitBackend::for_target(config, Target::from_env())
    }

    /// The backend with an extraction configuration, for `target` (its features, switches
    /// and threads; the environment is not read). Fusion is limited to the element types
    /// fused kernels lower ([`graphlift_codegen::ELEMENT_TYPES`]): nodes of the others run
    /// on their reference kernels.
    pub fn for_target(config: ExtractionConfig, target: Target) -> CpuJitBackend {
        CpuJitBackend {
            config: config.with_element_types(graphlift_codegen::ELEMENT_TYPES),
            scope_fusion: ScopeFusionRegistry::builtin(),
            parallel: Arc::new(Parallel::new(target.threads())),
            cache: Arc::new(KernelCache::new(target.kernel_cache_capacity())),
            target,
            executables: Some(Arc::default()),
            recycling: Recycling::Own,
        }
    }

    /// The target kernels compiled from now on are planned for: the host's features and
    /// every switch ([`Target::veclib_off`] and the like say why a path is off).
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// This backend with `target` for executables compiled from now on.
    fn retargeted(self, target: Target) -> CpuJitBackend {
        CpuJitBackend {
            target,
            executables: self.executables.as_ref().map(|_| Arc::default()),
            ..self
        }
    }

    /// This backend, running the scope fusion passes of `registry` (user passes
    /// registered, passes disabled by name) for executables compiled from now on; the
    /// names in `GRAPHLIFT_DISABLE_SCOPE_PASSES` are disabled as well.
    pub fn with_scope_fusion(self, registry: ScopeFusionRegistry) -> CpuJitBackend {
        CpuJitBackend {
            scope_fusion: registry,
            executables: self.executables.as_ref().map(|_| Arc::default()),
            ..self
        }
    }

    /// The scope fusion passes this backend runs ([`CpuJitBackend::with_scope_fusion`]).
    pub fn scope_fusion(&self) -> &ScopeFusionRegistry {
        &self.scope_fusion
    }

    /// This backend, with epilogue fusion on or off for executables compiled from now on.
    /// On (the default, unless `GRAPHLIFT_EPILOGUE_FUSION=0`), a fused kernel that consumes
    /// a `MatMul` or `Convolution` result runs inside the producer's output loop, on each
    /// block of the result as soon as it is written (a product, a block of its rows, or the
    /// planes of one image and group), while the block is in cache; results are
    /// bit-identical either way.
    pub fn with_epilogue_fusion(self, on: bool) -> CpuJitBackend {
        let target = self.target.with_epilogue_fusion(on);
        self.retargeted(target)
    }

    /// This backend, with `f32` `exp`, `sigmoid`, `tanh`, `erf`, divisions of two
    /// per-element values and whole GELU and SiLU expressions in fused kernels computed by
    /// the vector math library (on: the default when the host has AVX2 and FMA, unless
    /// `GRAPHLIFT_VECLIB=0`) or inline (off), for executables compiled from now on. The
    /// library runs the inline code's operations on the host's widest vectors (AVX-512:
    /// sixteen lanes, against four inline); results are bit-identical either way. On a host
    /// without AVX2 and FMA the setting has no effect.
    pub fn with_veclib(self, on: bool) -> CpuJitBackend {
        let target = self.target.with_veclib(on);
        self.retargeted(target)
    }

    /// This backend, with batch splitting on or off for executables compiled from now on.
    /// On (the default, unless `GRAPHLIFT_BATCH_SPLIT=0`), a Function whose parameters and
    /// results share a batch (axis 0) and whose samples are independent
    /// ([`graphlift_passes::per_sample`]) is compiled for one sample, and a call runs it
    /// once per sample, the samples spread over the threads ([`SampleSpread`]), when one
    /// sample computes a large enough product and none then reads large weights for a few
    /// rows ([`CpuJitExecutable::batch_split`] says whether, or why not). The kernels, steps
    /// and traces an executable reports are then one sample's.
    pub fn with_batch_split(self, on: bool) -> CpuJitBackend {
        let target = self.target.with_batch_split(on);
        self.retargeted(target)
    }

    /// This backend, with non-temporal stores on or off for executables compiled from now
    /// on. On (the default on x86-64, unless `GRAPHLIFT_STREAM=0`, and not where AVX2
    /// kernels are assembled, whose plain stores are faster: `Target::stream_off`), a fused
    /// kernel whose call reads and writes more than twice the bytes the host's last-level
    /// cache holds writes its `f32` and `i32` outputs with non-temporal stores, which skip
    /// reading each output line before writing it (E1 at 2^24 elements moves 20 bytes per
    /// element instead of 24); kernels that run as epilogues never do. Results are
    /// bit-identical either way.
    pub fn with_streaming_stores(self, on: bool) -> CpuJitBackend {
        let target = self.target.with_streaming_stores(on);
        self.retargeted(target)
    }

    /// This backend, with AVX-512 code on or off for executables compiled from now on.
    /// On (the default on hosts with AVX-512F and BMI2, unless `GRAPHLIFT_AVX512=0`),
    /// assembled kernels ([`CpuJitBackend::with_assembler`]) are sixteen-lane AVX-512 code
    /// and products use their AVX-512 tiles; off, they are AVX2 code (see
    /// [`crate::AVX512_ENV`]). Results are bit-identical either way. On other hosts the
    /// setting has no effect.
    pub fn with_avx512(self, on: bool) -> CpuJitBackend {
        let target = self.target.with_avx512(on);
        self.retargeted(target)
    }

    /// Whether AVX-512 code is on for executables compiled from now on
    /// ([`CpuJitBackend::with_avx512`]).
    pub fn avx512(&self) -> bool {
        self.target.avx512()
    }

    /// This backend, with assembled kernels on or off for executables compiled from now on.
    /// On (the default on hosts with AVX2, FMA and F16C, unless `GRAPHLIFT_ASSEMBLER=0`), a fused
    /// `f32` / `i32` kernel the assembler takes (every elementwise op with an inline
    /// lowering, over contiguous, scalar, row, column and channel inputs:
    /// `graphlift_codegen::asm::Layout::of`) is machine code of the host's full vector
    /// width (sixteen AVX-512 lanes, or eight AVX2 lanes) instead of Cranelift's four-lane
    /// loops (see [`crate::ASSEMBLER_ENV`]); results are bit-identical either way.
    pub fn with_assembler(self, on: bool) -> CpuJitBackend {
        let target = self.target.with_assembler(on);
        self.retargeted(target)
    }

    /// The instruction set qualifying kernels compiled from now on are assembled for
    /// ([`CpuJitBackend::with_assembler`]); `None` when assembled kernels are off.
    pub fn vector_isa(&self) -> Option<crate::VectorIsa> {
        self.target.vector_isa()
    }

    /// Whether large kernels compiled from now on write their outputs with non-temporal
    /// stores ([`CpuJitBackend::with_streaming_stores`]).
    pub fn streaming_stores(&self) -> bool {
        self.target.streaming_stores()
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
            target: self.target.with_threads(config),
            executables: self.executables.as_ref().map(|_| Arc::default()),
            ..self
        }
    }

    /// This backend with executables that keep their dead temporaries from one call for the
    /// next (on, the default: a call takes its buffers from the last one's instead of
    /// allocating and page-faulting new ones) or free them when a call ends (off: for
    /// executables called rarely, whose kept buffers would only hold memory; executables
    /// that run one after another, as a loop body's specialisations do, share theirs
    /// instead: [`CpuJitBackend::with_shared_buffers`]).
    pub fn with_buffer_recycling(self, on: bool) -> CpuJitBackend {
        CpuJitBackend {
            recycling: if on { Recycling::Own } else { Recycling::Off },
            ..self
        }
    }

    /// This backend with executables that keep their dead temporaries between calls in
    /// bins shared by every executable compiled from now on by it and its clones (a few
    /// bins, each one call's buffers): for executables that run one after another with
    /// buffers of the same types, as the per-iteration specialisations of one loop body
    /// do, which would each hold a set of buffers of their own, or allocate and free them
    /// at every call. A buffer of another element type than a step's output is not used.
    pub fn with_shared_buffers(self) -> CpuJitBackend {
        CpuJitBackend {
            recycling: Recycling::Shared(Arc::default()),
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
        self.target.veclib()
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

    /// This backend with a new, empty kernel cache of at most `entries` compiled kernels
    /// (least recently used evicted first; 0: no cache, every compile compiles its kernels
    /// anew). Default: [`Target::kernel_cache_capacity`], which `GRAPHLIFT_KERNEL_CACHE`
    /// sets. Clones made before keep sharing the old cache; executables compiled before keep
    /// their code.
    pub fn with_kernel_cache_capacity(self, entries: usize) -> CpuJitBackend {
        CpuJitBackend {
            cache: Arc::new(KernelCache::new(entries)),
            target: self.target.with_kernel_cache_capacity(entries),
            ..self
        }
    }

    /// The most compiled kernels the kernel cache keeps
    /// ([`CpuJitBackend::with_kernel_cache_capacity`]).
    pub fn kernel_cache_capacity(&self) -> usize {
        self.cache.stats().capacity
    }

    /// Counters of the kernel cache: kernels compiled, cache hits, entries held (for
    /// diagnostics and tests: never more than the capacity), entries evicted.
    pub fn cache_stats(&self) -> KernelCacheStats {
        self.cache.stats()
    }

    /// Empties the kernel cache; code that live executables use stays alive.
    pub fn clear_cache(&self) {
        self.cache.clear();
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
