//! Multi-core kernel calls: a kernel's index range split into chunks over a thread pool, with
//! an XLA-style cost threshold so that small calls stay on the calling thread; a native
//! kernel's call takes a [`Team`] of as many threads as its work pays for
//! ([`Parallel::team`]), so a small call on a many-core machine does not wait on helpers
//! it cannot keep busy.

use std::sync::{Arc, OnceLock};

mod fork_join;
mod pool;
pub use fork_join::for_each;
pub use pool::Pool;

/// Chunk boundaries are multiples of this many elements: one trip of the AVX-512 main loop
/// (sixteen lanes, four bodies), so no chunk but the last ends in a masked tail; eight
/// trips of the unrolled four-lane Cranelift loop (`F32X4`), sixteen of the two-lane one. So
/// each chunk's vector main loop starts on the same element grid as the whole call's.
pub const CHUNK_ALIGN: usize = 64;

/// Tasks per thread at most: a few, so that a thread which falls behind (its core taken by
/// another process) leaves chunks for the others to claim.
const TASKS_PER_THREAD: usize = 4;

/// The multiply-accumulates each thread of a native kernel's call must get: a call of `w`
/// of them uses at most `w / MIN_MACS_PER_THREAD` threads, so one under twice this runs on
/// the calling thread. That is about 3 µs of one core's vector work. A call shared more
/// thinly pays more in reaching and waiting for its helpers than it saves: the PP-OCR
/// classifier got slower from 4 threads up on 16 cores. Kernels that count other units
/// (pooling taps, moved elements) set their own minimum through [`Parallel::team_of`].
pub const MIN_MACS_PER_THREAD: usize = 1 << 17;

/// How a `graphlift_jit::CpuJitBackend` runs kernels over threads.
///
/// Every kernel has the range ABI `(inputs, outputs, begin, end)` and computes any sub-range
/// exactly as it computes the whole (broadcast inputs are addressed from the element index,
/// not from the range start), so chunks run independently. The cost model follows XLA's CPU
/// backend: a loop is split only into tasks of at least `min_bytes_per_task` of work,
/// counted in bytes: the memory traffic (every input buffer read plus every output written)
/// plus the compute per element in byte-equivalents (`codegen::cost`: a `tanh` weighs as
/// much as moving 170 bytes). So small tensors run on the calling thread with no pool
/// dispatch at all, and compute-heavy kernels split at fewer elements than data movement
/// does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadConfig {
    /// Threads a kernel call may use (≥ 1; 1 runs every call on the calling thread).
    pub threads: usize,
    /// A call is split only into tasks that each carry at least this much work, in bytes
    /// of reads and writes plus byte-equivalents of compute (see [`ThreadConfig`]);
    /// smaller calls run on the calling thread.
    pub min_bytes_per_task: usize,
}

impl ThreadConfig {
    /// XLA's threshold for memory-bound loops: 256 KiB per task.
    pub const DEFAULT_MIN_BYTES_PER_TASK: usize = 256 * 1024;

    /// `threads` threads (at least 1) with the default threshold.
    pub fn with_threads(threads: usize) -> ThreadConfig {
        ThreadConfig {
            threads: threads.max(1),
            min_bytes_per_task: Self::DEFAULT_MIN_BYTES_PER_TASK,
        }
    }

    /// The thread count a [`crate::target::NUM_THREADS_ENV`] value asks for (see
    /// [`threads_from`]), with the default threshold.
    pub fn from_threads_var(value: Option<&str>) -> ThreadConfig {
        ThreadConfig::with_threads(threads_from(value))
    }
}

impl Default for ThreadConfig {
    /// The available parallelism ([`std::thread::available_parallelism`], 1 if unknown)
    /// with the default threshold; [`crate::target::Target::from_env`] reads
    /// [`crate::target::NUM_THREADS_ENV`] instead.
    fn default() -> ThreadConfig {
        ThreadConfig::from_threads_var(None)
    }
}

/// The thread count a [`crate::target::NUM_THREADS_ENV`] value asks for: a positive
/// integer, else (unset, empty, 0 or not a number) the available parallelism.
pub fn threads_from(value: Option<&str>) -> usize {
    value
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// A thread configuration and its pool, shared by a backend and its executables. The pool
/// (a dedicated rayon pool, not the global one) holds `threads − 1` workers: the thread
/// that calls the executable is the last one ([`for_each`]). It is built on the first call
/// that splits.
pub struct Parallel {
    config: ThreadConfig,
    pool: OnceLock<Option<Pool>>,
    /// Set for a group of another configuration's threads ([`Parallel::group`]): its pool
    /// is that one's.
    parent: Option<Arc<Parallel>>,
}

impl std::fmt::Debug for Parallel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parallel")
            .field("config", &self.config)
            .field("pool_started", &self.pool.get().is_some())
            .field("group", &self.parent.is_some())
            .finish()
    }
}

/// Chunk ranges of one call, each `(begin, end)`.
pub type Chunks = Vec<(usize, usize)>;

/// One call's share of the pool: the pool and how many threads the call runs on (the
/// calling thread included, so at least 2). [`for_each`] offers the call's tasks to at most
/// `threads − 1` helpers, however many tasks there are.
#[derive(Debug, Clone, Copy)]
pub struct Team<'a> {
    pool: &'a Pool,
    threads: usize,
}

impl Team<'_> {
    /// The threads of the call, the calling thread included (≥ 2).
    pub fn threads(&self) -> usize {
        self.threads
    }
}

impl Parallel {
    /// A configuration whose pool is not started yet.
    pub fn new(config: ThreadConfig) -> Parallel {
        Parallel {
            config: ThreadConfig {
                threads: config.threads.max(1),
                min_bytes_per_task: config.min_bytes_per_task,
            },
            pool: OnceLock::new(),
            parent: None,
        }
    }

    /// A group of `threads` of `parent`'s threads (at least 1, at most all of them): calls
    /// split over at most `threads` threads, on `parent`'s pool. Several groups run calls at
    /// once on one pool, each taking helpers from it (batch splitting runs one sample on
    /// each group), so together they use no more threads than the pool has.
    pub fn group(parent: &Arc<Parallel>, threads: usize) -> Parallel {
        Parallel {
            config: ThreadConfig {
                threads: threads.clamp(1, parent.config.threads),
                ..parent.config
            },
            pool: OnceLock::new(),
            parent: Some(Arc::clone(parent)),
        }
    }

    /// The configuration.
    pub fn config(&self) -> ThreadConfig {
        self.config
    }

    /// The pool of `threads − 1` workers (started on first use), or `None` with one thread
    /// configured or when no pool could be started.
    pub fn pool(&self) -> Option<&Pool> {
        if self.config.threads <= 1 {
            return None;
        }
        if let Some(parent) = &self.parent {
            return parent.pool();
        }
        self.pool
            .get_or_init(|| Pool::new(self.config.threads - 1))
            .as_ref()
    }

    /// Wakes the pool's helpers when the pool has been started (an offer of no work, after
    /// which they spin for the next): a call that will split its steps gets them spinning
    /// while its first steps run. Nothing with one thread configured (a group of one
    /// included: its steps never split).
    pub fn wake(&self) {
        if self.config.threads <= 1 {
            return;
        }
        match &self.parent {
            Some(parent) => parent.wake(),
            None => {
                if let Some(Some(pool)) = self.pool.get() {
                    pool.wake();
                }
            }
        }
    }

    /// How many times work has been offered to the pool's helpers (0 before the pool is
    /// started, and with one thread configured): a call that sees this grow split some of
    /// its work.
    pub fn offers(&self) -> usize {
        if self.config.threads <= 1 {
            return 0;
        }
        match (&self.parent, self.pool.get()) {
            (Some(parent), _) => parent.offers(),
            (None, Some(Some(pool))) => pool.offers(),
            _ => 0,
        }
    }

    /// The chunks for a call over `begin..end` of a kernel whose call over its whole
    /// iteration space of `count` elements carries `work` (bytes and byte-equivalents),
    /// with the team to run them on (as many threads as chunks, up to the configured
    /// count); `None` when the call should run on the calling thread (one thread
    /// configured, fewer than two tasks' worth of work, or no pool could be started).
    pub fn split(
        &self,
        begin: usize,
        end: usize,
        work: usize,
        count: usize,
    ) -> Option<(Team<'_>, Chunks)> {
        let chunks = chunk_ranges(self.config, begin, end, work, count)?;
        let team = self.team_of(chunks.len(), 1)?;
        Some((team, chunks))
    }

    /// The threads a native kernel's call of `macs` multiply-accumulates (or equivalents)
    /// should use: one per [`MIN_MACS_PER_THREAD`] of them, at least 1, at most the
    /// configured count.
    pub fn threads_for(&self, macs: usize) -> usize {
        self.threads_of(macs, MIN_MACS_PER_THREAD)
    }

    /// `work / per_thread` threads (`per_thread` at least 1), at least 1, at most the
    /// configured count.
    fn threads_of(&self, work: usize, per_thread: usize) -> usize {
        (work / per_thread.max(1)).clamp(1, self.config.threads)
    }

    /// The team for a native kernel's call of `macs` multiply-accumulates (or equivalents):
    /// [`Parallel::threads_for`] threads; `None` when that is one, or no pool could be
    /// started.
    pub fn team(&self, macs: usize) -> Option<Team<'_>> {
        self.team_of(macs, MIN_MACS_PER_THREAD)
    }

    /// The team for a call of `work` units of which each thread must get at least
    /// `per_thread` (≥ 1): `work / per_thread` threads, at most the configured count;
    /// `None` when that is under two, or no pool could be started.
    pub fn team_of(&self, work: usize, per_thread: usize) -> Option<Team<'_>> {
        let threads = self.threads_of(work, per_thread);
        if threads < 2 {
            return None;
        }
        Some(Team {
            pool: self.pool()?,
            threads,
        })
    }
}

/// The chunking of `begin..end` under `config` (see [`Parallel::split`]); `None` for one
/// chunk.
pub fn chunk_ranges(
    config: ThreadConfig,
    begin: usize,
    end: usize,
    work: usize,
    count: usize,
) -> Option<Chunks> {
    if config.threads <= 1 || end <= begin || count == 0 {
        return None;
    }
    let n = end - begin;
    let per_element = work.div_ceil(count).max(1);
    let min_elements = config
        .min_bytes_per_task
        .div_ceil(per_element)
        .max(1)
        .next_multiple_of(CHUNK_ALIGN);
    let tasks = (n / min_elements).min(config.threads.saturating_mul(TASKS_PER_THREAD));
    if tasks < 2 {
        return None;
    }
    let chunk = n.div_ceil(tasks).next_multiple_of(CHUNK_ALIGN);
    let chunks: Chunks = (begin..end)
        .step_by(chunk)
        .map(|b| (b, b.saturating_add(chunk).min(end)))
        .collect();
    (chunks.len() > 1).then_some(chunks)
}
