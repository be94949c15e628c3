//! Execution tracing, after DL4J's ADR 0024 with thread-local scopes instead of its global
//! state: a [`Tracer`] records the steps Executables run on its thread, and a [`Trace`]
//! rebuilds runnable Functions, saves as JSON ([`mod@file`]) and exports to Chrome/Perfetto.

mod chrome;
mod collect;
pub mod file;
mod inner;
mod record;
mod recorder;
mod scope;

use std::cell::RefCell;

use graphlift_ir::Function;

pub use file::{TRACE_FORMAT, TRACE_VERSION};
pub use record::{
    CallTrace, OpRecord, StepKind, Timing, Trace, TracedInput, TracedResult, TracedVariable,
    ValueSource,
};
pub use recorder::CallRecorder;
pub use scope::Tracer;

use crate::RuntimeError;

thread_local! {
    /// The default tracer of this thread, while enabled.
    static DEFAULT: RefCell<Option<Tracer>> = const { RefCell::new(None) };
    /// What the default tracer recorded before it was last disabled.
    static RETAINED: RefCell<Trace> = RefCell::new(Trace::default());
}

/// Runs `f` untraced: the calls it makes are not recorded (a control-flow step's body calls,
/// which the trace shows as the one step of the `If`, `Loop` or `Scan` node).
pub fn untraced<R>(f: impl FnOnce() -> R) -> R {
    scope::suspended(f)
}

/// Starts the current thread's default tracer (no effect if it is running). Its records
/// accumulate until [`purge`] or [`take`].
///
/// While a tracer is alive, Executables called on the thread that created it record every
/// step they execute ([`OpRecord`]: the op with its attributes, node name, input wiring and
/// types, output types, provenance tags, pass history, wall time; a fused kernel's record
/// nests the ops of its body, and a fused native op's (`Convolution` as im2col + GEMM,
/// `LayerNorm`, `Attention`) nests its inner steps written out in IR ops). Tracing is per thread (two threads' tracers never see each
/// other's calls), and when no tracer is alive a call costs one thread-local read. A call of
/// a stateful Executable also records its variables' values at the start of the call
/// ([`TracedVariable`]) and its `ReadVariable` and `Assign` steps, so the rebuilt Function
/// starts from those values and makes the same updates. A
/// [`Trace`] rebuilds a runnable Function ([`CallTrace::collect`]), saves to and loads from a
/// versioned JSON file ([`Trace::save`], [`Trace::load`]) and exports to the Chrome
/// trace-event format that Perfetto opens ([`Trace::save_chrome`]).
///
/// [`enable`], [`disable`], [`collect`](fn@collect), [`take`] and [`purge`] drive the default
/// tracer:
///
/// ```
/// use graphlift_ir::{ElementType::F32, FunctionBuilder};
/// use graphlift_runtime::{trace, Backend, Tensor};
/// let b = FunctionBuilder::new("f");
/// let x = b.parameter("x", F32, [2]);
/// let f = b.finish(&[(x.relu() * x).named("y")]).unwrap();
/// let exe = <dyn Backend>::create("INTERPRETER").unwrap().compile(&f).unwrap();
/// trace::enable();
/// let out = exe.run(&[Tensor::from_vec(vec![-1.0f32, 2.0], [2]).unwrap()]).unwrap();
/// trace::disable();
/// let collected = trace::collect().unwrap();
/// assert_eq!(collected.len(), 1);
/// assert!(collected[0].node_by_name("y").is_some());
/// trace::purge();
/// assert!(trace::take().is_empty());
/// ```
pub fn enable() {
    DEFAULT.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(Tracer::start());
        }
    });
}

/// Stops the current thread's default tracer, keeping what it recorded.
pub fn disable() {
    let stopped = DEFAULT.with(|d| d.borrow_mut().take());
    if let Some(t) = stopped {
        let trace = t.finish();
        RETAINED.with(|r| r.borrow_mut().calls.extend(trace.calls));
    }
}

/// `true` while the current thread's default tracer is running.
pub fn is_enabled() -> bool {
    DEFAULT.with(|d| d.borrow().is_some())
}

/// A copy of what the current thread's default tracer has recorded.
pub fn trace() -> Trace {
    let mut all = RETAINED.with(|r| r.borrow().clone());
    DEFAULT.with(|d| {
        if let Some(t) = d.borrow().as_ref() {
            all.calls.extend(t.trace().calls);
        }
    });
    all
}

/// Takes what the current thread's default tracer has recorded, leaving it empty (and
/// running if it was).
pub fn take() -> Trace {
    let mut all = RETAINED.with(|r| std::mem::take(&mut *r.borrow_mut()));
    DEFAULT.with(|d| {
        if let Some(t) = d.borrow().as_ref() {
            all.calls.extend(t.take().calls);
        }
    });
    all
}

/// Discards what the current thread's default tracer has recorded.
pub fn purge() {
    take();
}

/// Rebuilds one Function per call the current thread's default tracer recorded
/// ([`CallTrace::collect`]).
///
/// # Errors
/// As [`CallTrace::collect`].
pub fn collect() -> Result<Vec<Function>, RuntimeError> {
    trace().collect()
}
