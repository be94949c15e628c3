//! Fork-join over a task list, with the calling thread working and helpers that may come
//! late or never, so a busy core delays a call by no more than the tasks it actually runs.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use super::pool::Offer;
use super::Team;

/// How long the caller spins for running tasks before it sleeps until the last one ends.
const JOIN_SPIN: Duration = Duration::from_micros(50);

/// Runs `f` on every item of `tasks`, on the calling thread and on helpers from `team`'s
/// pool (at most `team.threads() − 1` of them, and one fewer than the tasks: those still
/// spinning after the previous call, and new ones spawned for the rest: see
/// [`super::Pool`]), and returns when all have run.
/// A panic in `f` stops further tasks from starting and is resumed here once the running
/// ones have finished.
///
/// Tasks are handed out one at a time, in order; each is taken under its own lock, so they
/// are meant to be large (microseconds, not nanoseconds).
///
/// rayon supplies the threads (`ThreadPool::spawn`); this only hands out task indices and
/// tracks which are running. rayon's scopes wait for every job spawned into them, so a
/// caller that spawns a helper job per worker must wait until each worker has woken up and
/// run its (by then possibly empty) helper, which lasts a scheduler time slice when another
/// process holds the cores. Here the caller waits only for tasks that have been claimed and
/// are running, as the thread pools of Eigen and onnxruntime do when they take back work
/// items no worker has started: a helper that starts after the last task was claimed finds
/// nothing to do and never touches the caller's data.
pub fn for_each<I>(team: Team<'_>, tasks: I, f: impl Fn(I::Item) + Sync)
where
    I: Iterator,
    I::Item: Send,
{
    let items: Vec<Mutex<Option<I::Item>>> = tasks.map(|t| Mutex::new(Some(t))).collect();
    let run = |k: usize| {
        let item = items
            .get(k)
            .and_then(|m| m.lock().unwrap_or_else(PoisonError::into_inner).take());
        if let Some(item) = item {
            f(item);
        }
    };
    let total = items.len();
    if total <= 1 {
        (0..total).for_each(run);
        return;
    }
    let task: &(dyn Fn(usize) + Sync) = &run;
    let task: *const (dyn Fn(usize) + Sync + '_) = task;
    // SAFETY: only the lifetime changes (same fat pointer). The pointer is dereferenced in
    // `Shared::work` only after a claim of an index below `total` succeeds, and this
    // function returns only after every such claim has finished (`wait` below): a thread
    // that starts to claim after the caller saw no claim running finds `next ≥ total`, as
    // the argument on `Shared::work` shows. So `run` (and the `items` and `f` it borrows)
    // outlives every use of the pointer, though helpers may hold `Shared` longer.
    let task: *const (dyn Fn(usize) + Sync + 'static) = unsafe { std::mem::transmute(task) };
    let shared = Arc::new(Shared {
        next: AtomicUsize::new(0),
        running: AtomicUsize::new(0),
        total,
        panic: Mutex::new(None),
        task: TaskPtr(task),
        caller: std::thread::current(),
        sleeping: AtomicBool::new(false),
    });
    let offer: Arc<dyn Offer> = Arc::clone(&shared) as Arc<dyn Offer>;
    let pool = team.pool;
    let helpers = (team.threads - 1)
        .min(total - 1)
        .min(pool.current_num_threads());
    pool.offer(Arc::clone(&offer), helpers);
    shared.work();
    shared.wait();
    pool.withdraw(&offer);
    let panic = shared
        .panic
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(payload) = panic {
        resume_unwind(payload);
    }
}

impl Offer for Shared {
    fn work(&self) {
        Shared::work(self);
    }
}

/// A task runner borrowed from the caller's frame (see the SAFETY note in [`for_each`]).
struct TaskPtr(*const (dyn Fn(usize) + Sync + 'static));

// SAFETY: the pointee is `Sync`, so calling it from several threads at once is allowed; the
// pointer is only dereferenced while the caller of `for_each` keeps the pointee alive.
unsafe impl Send for TaskPtr {}
// SAFETY: as for `Send`: shared access only reads the pointer.
unsafe impl Sync for TaskPtr {}

/// What one call shares with its helpers.
struct Shared {
    /// The next task index to claim (only grows).
    next: AtomicUsize,
    /// Threads between "about to claim" and "done with the task claimed".
    running: AtomicUsize,
    total: usize,
    /// The first panic of a task.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    task: TaskPtr,
    /// The calling thread, woken by whichever thread ends the last running task while it
    /// sleeps.
    caller: Thread,
    /// Whether the caller sleeps, or is about to.
    sleeping: AtomicBool,
}

impl Shared {
    /// Claims and runs tasks until none is left.
    ///
    /// Every claim is bracketed by `running` (raised before `next` is read, lowered after the
    /// task). All operations are `SeqCst`, so they fall in one order. The caller's last claim
    /// found `next ≥ total`; after that it waits until it reads `running == 0`. A claim whose
    /// raise comes after that read also reads `next` after it, so it finds `next ≥ total` and
    /// runs nothing; a claim whose raise comes before it is counted in `running`, and the
    /// caller waits for its task.
    fn work(&self) {
        loop {
            self.running.fetch_add(1, SeqCst);
            let k = self.next.fetch_add(1, SeqCst);
            if k >= self.total {
                self.leave();
                return;
            }
            // SAFETY: `k < total` was claimed while `running` counts this thread, so the
            // caller of `for_each` is still waiting and the pointee is alive (see above).
            let task = unsafe { &*self.task.0 };
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| task(k))) {
                // Start no more tasks; keep the first panic for the caller.
                self.next.fetch_max(self.total, SeqCst);
                let mut slot = self.panic.lock().unwrap_or_else(PoisonError::into_inner);
                slot.get_or_insert(payload);
            }
            self.leave();
        }
    }

    /// Ends a claim; the last one out wakes a sleeping caller. (`running` is lowered before
    /// `sleeping` is read, and the caller raises `sleeping` before it reads `running`: in the
    /// one `SeqCst` order, either this thread sees the caller sleeping and wakes it, or the
    /// caller sees `running == 0` and does not sleep.)
    fn leave(&self) {
        if self.running.fetch_sub(1, SeqCst) == 1 && self.sleeping.load(SeqCst) {
            self.caller.unpark();
        }
    }

    /// Waits until no claimed task is running: spins a little (a helper's last task usually
    /// ends within microseconds of the caller's), then sleeps until the thread that ends
    /// the last one wakes it (`park` may also return early: the loop checks again).
    fn wait(&self) {
        let start = Instant::now();
        while self.running.load(SeqCst) != 0 {
            if start.elapsed() < JOIN_SPIN {
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
                continue;
            }
            self.sleeping.store(true, SeqCst);
            if self.running.load(SeqCst) != 0 {
                std::thread::park();
            }
        }
        self.sleeping.store(false, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::{Parallel, ThreadConfig};

    /// Groups of one pool's threads run fork-join calls at once, each inside a task of a
    /// call on the whole pool (as batch splitting runs one sample on each group): every
    /// item of every group's calls runs exactly once.
    #[test]
    fn groups_of_one_pool_run_calls_at_once() {
        let all = Arc::new(Parallel::new(ThreadConfig {
            threads: 4,
            min_bytes_per_task: 1,
        }));
        let groups: Vec<Parallel> = [2, 3, 2].map(|t| Parallel::group(&all, t)).into();
        let counts: Vec<Vec<AtomicUsize>> = (0..3)
            .map(|_| (0..100).map(|_| AtomicUsize::new(0)).collect())
            .collect();
        for _ in 0..20 {
            let team = all.team_of(3, 1).unwrap();
            for_each(team, groups.iter().zip(&counts), |(group, counts)| {
                for _ in 0..5 {
                    let team = group.team_of(100, 1).expect("a group of two or three");
                    for_each(team, counts.iter(), |c| {
                        c.fetch_add(1, SeqCst);
                    });
                }
            });
        }
        for c in counts.iter().flatten() {
            assert_eq!(c.load(SeqCst), 100);
        }
        assert_eq!(groups[0].config().threads, 2);
        assert_eq!(Parallel::group(&all, 9).config().threads, 4);
    }
}
