//! The thread-local scope stack behind [`Tracer`]: each thread has its own stack of live
//! tracers, and a finished call is committed to the innermost one of the thread that ran it, so
//! nothing is shared and tests tracing on different threads cannot race.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::OnceLock;
use std::time::Instant;

use super::record::{CallTrace, Trace};

struct Scope {
    id: u64,
    trace: Trace,
}

thread_local! {
    /// Number of live tracers on this thread: the only thing an untraced call reads.
    static ACTIVE: Cell<usize> = const { Cell::new(0) };
    static SCOPES: RefCell<Vec<Scope>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<u64> = const { Cell::new(0) };
}

/// The instant trace timestamps count from (set on first use, shared by all threads).
pub(crate) fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds from the trace epoch to `t` (saturating).
pub(crate) fn since_epoch(t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(epoch()).as_nanos()).unwrap_or(u64::MAX)
}

/// `true` when a tracer is alive on this thread (one thread-local read).
pub(crate) fn is_active() -> bool {
    ACTIVE.try_with(Cell::get).unwrap_or(0) > 0
}

/// Runs `f` with tracing off on this thread (the tracers stay alive and see nothing `f`
/// runs), then turns it back on.
pub(crate) fn suspended<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = ACTIVE.try_with(|a| a.set(self.0));
        }
    }
    let _restore = Restore(ACTIVE.try_with(|a| a.replace(0)).unwrap_or(0));
    f()
}

/// Adds a finished call to the innermost live tracer of this thread.
pub(crate) fn commit(call: CallTrace) {
    let _ = SCOPES.try_with(|s| {
        if let Some(scope) = s.borrow_mut().last_mut() {
            scope.trace.calls.push(call);
        }
    });
}

/// A tracing scope: while it is alive, Executables called on the thread that created it
/// record what they execute into it (the innermost live tracer of the thread gets each
/// call). Dropping it stops the recording and discards what it holds; [`Tracer::finish`]
/// returns it instead.
///
/// Not `Send`: a tracer belongs to its thread.
///
/// ```
/// use graphlift_ir::{ElementType::F32, FunctionBuilder};
/// use graphlift_runtime::{trace::Tracer, Backend, Tensor};
/// let b = FunctionBuilder::new("f");
/// let x = b.parameter("x", F32, [2]);
/// let f = b.finish(&[x.relu().named("r")]).unwrap();
/// let exe = <dyn Backend>::create("INTERPRETER").unwrap().compile(&f).unwrap();
/// let tracer = Tracer::start();
/// exe.run(&[Tensor::from_vec(vec![-1.0f32, 2.0], [2]).unwrap()]).unwrap();
/// let trace = tracer.finish();
/// assert_eq!(trace.calls[0].records[0].name, "r");
/// ```
#[derive(Debug)]
pub struct Tracer {
    id: u64,
    _thread_bound: PhantomData<*const ()>,
}

impl Tracer {
    /// Starts recording on the current thread.
    pub fn start() -> Tracer {
        epoch();
        let id = NEXT_ID.with(|n| {
            let id = n.get();
            n.set(id + 1);
            id
        });
        SCOPES.with(|s| {
            s.borrow_mut().push(Scope {
                id,
                trace: Trace::default(),
            })
        });
        ACTIVE.with(|a| a.set(a.get() + 1));
        Tracer {
            id,
            _thread_bound: PhantomData,
        }
    }

    fn with_trace<T>(&self, f: impl FnOnce(&mut Trace) -> T) -> Option<T> {
        SCOPES
            .try_with(|s| {
                s.borrow_mut()
                    .iter_mut()
                    .find(|scope| scope.id == self.id)
                    .map(|scope| f(&mut scope.trace))
            })
            .ok()
            .flatten()
    }

    /// A copy of what has been recorded so far.
    pub fn trace(&self) -> Trace {
        self.with_trace(|t| t.clone()).unwrap_or_default()
    }

    /// Takes what has been recorded so far, leaving the tracer empty and recording.
    pub fn take(&self) -> Trace {
        self.with_trace(std::mem::take).unwrap_or_default()
    }

    /// Stops recording and returns the trace.
    pub fn finish(self) -> Trace {
        self.take()
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = SCOPES.try_with(|s| s.borrow_mut().retain(|scope| scope.id != self.id));
        let _ = ACTIVE.try_with(|a| a.set(a.get().saturating_sub(1)));
    }
}
