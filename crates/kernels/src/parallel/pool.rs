//! The worker pool of [`super::Parallel`]: a dedicated rayon pool whose helpers, once a
//! call's tasks are done, spin for a short while ([`HELPER_SPIN`]) waiting for the next
//! call's offer before they go back to rayon (where an idle worker soon sleeps). A model
//! runs its parallel steps tens of microseconds apart; waking a sleeping worker for each
//! costs about as much, so without this the second thread joined the small steps of a
//! model late or not at all. onnxruntime's and Eigen's pools spin between parallel sections
//! for the same reason.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rayon::ThreadPool;

/// How long a helper waits for the next call's offer after its tasks are done: longer
/// than the gap between two parallel steps of a model, short enough that an idle process
/// stops spinning within a fraction of a millisecond.
const HELPER_SPIN: Duration = Duration::from_micros(200);

/// Work that a call offers its helpers: run on a helper thread by [`Pool::offer`]'s
/// helpers, spinning or newly spawned.
pub(super) trait Offer: Send + Sync + 'static {
    /// Takes part in the call's tasks until none is left.
    fn work(&self);
}

/// A pool of `threads − 1` workers for fork-join calls ([`super::for_each`]). Several calls
/// may be open at once (groups of threads that each run a sample: `super::Parallel::group`);
/// a helper takes a seat of whichever open call has one.
pub struct Pool {
    rayon: ThreadPool,
    handoff: Arc<Handoff>,
}

/// The calls open for helpers, seen by the helpers that spin.
struct Handoff {
    /// Raised by every offer: how many there have been.
    epoch: AtomicUsize,
    /// The open calls, newest last, each with how many more spinning helpers may take it: a
    /// call of two tasks takes one helper, not every one that spins; the rest spin on for
    /// the next offer.
    open: Mutex<Vec<(Arc<dyn Offer>, usize)>>,
    /// The seats left in `open`, summed: what a spinning helper watches.
    seats: AtomicUsize,
    /// Helpers spinning for an offer now.
    spinning: AtomicUsize,
    /// Helpers spawned by [`Pool::wake`] that have not started yet: with `spinning`, what
    /// a wake counts as ready, so that groups of threads waking the pool at once do not
    /// queue a spin each on every worker.
    waking: AtomicUsize,
    /// How long a helper spins ([`HELPER_SPIN`]).
    spin: Duration,
    /// Helpers spawned so far (the rest of the offers were taken by spinning helpers):
    /// shown by `Debug`.
    spawned: AtomicUsize,
}

impl Pool {
    /// A pool of `workers` threads named `graphlift-jit-K`; `None` when the threads cannot
    /// be started.
    pub(super) fn new(workers: usize) -> Option<Pool> {
        Pool::with_spin(workers, HELPER_SPIN)
    }

    /// As [`Pool::new`], with helpers that spin for `spin`.
    fn with_spin(workers: usize, spin: Duration) -> Option<Pool> {
        let rayon = rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .thread_name(|k| format!("graphlift-jit-{k}"))
            .build()
            .ok()?;
        Some(Pool {
            rayon,
            handoff: Arc::new(Handoff {
                epoch: AtomicUsize::new(0),
                open: Mutex::new(Vec::new()),
                seats: AtomicUsize::new(0),
                spinning: AtomicUsize::new(0),
                waking: AtomicUsize::new(0),
                spin,
                spawned: AtomicUsize::new(0),
            }),
        })
    }

    /// The worker threads (the caller of a fork-join call is one more).
    pub fn current_num_threads(&self) -> usize {
        self.rayon.current_num_threads()
    }

    /// Runs `job` on a worker (rayon's `ThreadPool::spawn`).
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        self.rayon.spawn(job);
    }

    /// Offers `work` to up to `helpers` workers: as many spinning ones take a seat of it,
    /// and as many more as are missing are spawned. A helper that comes after the work is
    /// done finds nothing left in it (the caller of [`super::for_each`] makes sure of that,
    /// and withdraws the offer when its call is done).
    pub(super) fn offer(&self, work: Arc<dyn Offer>, helpers: usize) {
        let h = &self.handoff;
        {
            let mut open = h.open.lock().unwrap_or_else(PoisonError::into_inner);
            open.push((Arc::clone(&work), helpers));
            // Under the lock, as every change of a count of seats: `seats` never runs below
            // the seats a helper may take.
            h.seats.fetch_add(helpers, SeqCst);
        }
        h.epoch.fetch_add(1, SeqCst);
        // Counted after the seats were raised: a helper that stops spinning after this read
        // looks at the seats once more first (see `Handoff::next`) and takes one.
        let spawn = helpers.saturating_sub(h.spinning.load(SeqCst));
        // The spawned helpers go straight to the work: their seats are closed.
        h.take_seats(&work, spawn);
        self.spawn_helpers(&work, spawn);
    }

    /// Spawns `count` helpers that run `work`, then spin for the next offer.
    fn spawn_helpers(&self, work: &Arc<dyn Offer>, count: usize) {
        let h = &self.handoff;
        for _ in 0..count {
            h.spawned.fetch_add(1, SeqCst);
            let (work, handoff) = (Arc::clone(work), Arc::clone(h));
            self.rayon.spawn(move || handoff.help(work));
        }
    }

    /// Gets every worker that is not spinning for an offer to start doing so (helpers with
    /// no work), so that the next offer finds them spinning: a call that will split its
    /// steps wakes them before its first steps, which hides a sleeping worker's wake-up
    /// (tens of microseconds) behind those steps instead of adding it to the first split
    /// one.
    pub(super) fn wake(&self) {
        let h = &self.handoff;
        let ready = h.spinning.load(SeqCst) + h.waking.load(SeqCst);
        let missing = self.current_num_threads().saturating_sub(ready);
        if missing == 0 {
            return;
        }
        h.waking.fetch_add(missing, SeqCst);
        h.epoch.fetch_add(1, SeqCst);
        for _ in 0..missing {
            h.spawned.fetch_add(1, SeqCst);
            let handoff = Arc::clone(h);
            self.rayon.spawn(move || {
                handoff.waking.fetch_sub(1, SeqCst);
                handoff.help(Arc::new(Nothing));
            });
        }
    }

    /// The offers made so far (a count that only grows).
    pub(super) fn offers(&self) -> usize {
        self.handoff.epoch.load(SeqCst)
    }

    /// Closes the offer of `work`: its seats left are taken back, so no helper joins the
    /// finished call (and its state is not kept until the next one).
    pub(super) fn withdraw(&self, work: &Arc<dyn Offer>) {
        let h = &self.handoff;
        let mut open = h.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(k) = open.iter().position(|(o, _)| Arc::ptr_eq(o, work)) {
            let (_, left) = open.remove(k);
            h.seats.fetch_sub(left, SeqCst);
        }
    }
}

/// An offer with no work: its helpers go straight to spinning for the next one.
struct Nothing;

impl Offer for Nothing {
    fn work(&self) {}
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.rayon.current_num_threads())
            .field("helpers_spawned", &self.handoff.spawned.load(SeqCst))
            .finish()
    }
}

impl Handoff {
    /// A helper's life: `work`, then every offer it takes a seat of while it spins, until
    /// none comes within the spin time.
    fn help(&self, work: Arc<dyn Offer>) {
        let mut work = Some(work);
        while let Some(w) = work.take() {
            w.work();
            drop(w);
            work = self.next();
        }
    }

    /// Closes up to `count` seats of the offer of `work`.
    fn take_seats(&self, work: &Arc<dyn Offer>, count: usize) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, left)) = open.iter_mut().find(|(o, _)| Arc::ptr_eq(o, work)) {
            let closed = count.min(*left);
            *left -= closed;
            self.seats.fetch_sub(closed, SeqCst);
        }
    }

    /// A seat of the newest open offer that has one, taken; `None` when none has.
    fn take_seat(&self) -> Option<Arc<dyn Offer>> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let (work, left) = open.iter_mut().rev().find(|(_, left)| *left > 0)?;
        *left -= 1;
        self.seats.fetch_sub(1, SeqCst);
        Some(Arc::clone(work))
    }

    /// Spins until an open offer has a seat left for this helper (returned, the seat
    /// taken) or the spin time ([`HELPER_SPIN`]) has passed (`None`). The helper counts in
    /// `spinning` meanwhile, and looks at the seats once more after it stops counting, so
    /// an offer whose caller counted it is never missed: the offer's seats are at least
    /// the spinning helpers it counted on.
    fn next(&self) -> Option<Arc<dyn Offer>> {
        self.spinning.fetch_add(1, SeqCst);
        let start = Instant::now();
        let mut counted = true;
        loop {
            if self.seats.load(SeqCst) > 0 {
                if let Some(work) = self.take_seat() {
                    if counted {
                        self.spinning.fetch_sub(1, SeqCst);
                    }
                    return Some(work);
                }
            }
            if !counted {
                return None;
            }
            if start.elapsed() >= self.spin {
                self.spinning.fetch_sub(1, SeqCst);
                counted = false;
                continue;
            }
            for _ in 0..32 {
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Sender};

    /// Sends the thread it ran on.
    struct Report(Mutex<Sender<std::thread::ThreadId>>);

    impl Offer for Report {
        fn work(&self) {
            let tx = self.0.lock().unwrap();
            tx.send(std::thread::current().id()).unwrap();
        }
    }

    /// Waits (at most 30 s, else fails) until `helpers` of `pool`'s helpers spin.
    fn wait_for_spinning(pool: &Pool, helpers: usize) {
        let start = Instant::now();
        while pool.handoff.spinning.load(SeqCst) < helpers {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the helpers never spun"
            );
            std::thread::yield_now();
        }
    }

    /// A helper that finished one call's work takes the next call's from the handoff while
    /// it spins: no second helper is spawned for it.
    #[test]
    fn a_spinning_helper_takes_the_next_offer() {
        let pool = Pool::with_spin(1, Duration::from_secs(30)).unwrap();
        let (tx, rx) = channel();
        pool.offer(Arc::new(Report(Mutex::new(tx.clone()))), 1);
        let first = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        wait_for_spinning(&pool, 1);
        pool.offer(Arc::new(Report(Mutex::new(tx))), 1);
        let second = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert_eq!(first, second);
        assert_eq!(pool.handoff.spawned.load(SeqCst), 1);
    }

    /// A pool that was woken has all its workers spinning before any work is offered, and
    /// they take the next offer without another being spawned.
    #[test]
    fn a_woken_pool_takes_the_first_offer_with_spinning_helpers() {
        let pool = Pool::with_spin(2, Duration::from_secs(30)).unwrap();
        pool.wake();
        wait_for_spinning(&pool, 2);
        // Both spin now: waking again offers nothing.
        let offers = pool.offers();
        pool.wake();
        assert_eq!(pool.offers(), offers);
        let (tx, rx) = channel();
        pool.offer(Arc::new(Report(Mutex::new(tx))), 2);
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(30)).unwrap();
        }
        assert_eq!(pool.handoff.spawned.load(SeqCst), 2);
    }

    /// An offer of one helper is taken by one of the helpers that spin; the others spin on
    /// and take the next offer of three.
    #[test]
    fn an_offer_takes_only_the_helpers_it_asks_for() {
        let pool = Pool::with_spin(3, Duration::from_secs(30)).unwrap();
        let (tx, rx) = channel();
        pool.offer(Arc::new(Report(Mutex::new(tx.clone()))), 3);
        for _ in 0..3 {
            rx.recv_timeout(Duration::from_secs(30)).unwrap();
        }
        wait_for_spinning(&pool, 3);
        pool.offer(Arc::new(Report(Mutex::new(tx.clone()))), 1);
        rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "a second helper took an offer of one"
        );
        pool.offer(Arc::new(Report(Mutex::new(tx))), 3);
        for _ in 0..3 {
            rx.recv_timeout(Duration::from_secs(30)).unwrap();
        }
        assert_eq!(pool.handoff.spawned.load(SeqCst), 3);
    }

    /// Two calls open at once (two groups of threads) each get a spinning helper: a helper
    /// takes a seat of whichever open offer has one, not only of the newest. (Each offer's
    /// work waits for the other's: one helper could not run both.)
    #[test]
    fn open_offers_share_the_spinning_helpers() {
        let pool = Pool::with_spin(2, Duration::from_secs(30)).unwrap();
        pool.wake();
        wait_for_spinning(&pool, 2);
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let (tx, rx) = channel();
        let meet = |tx: Sender<_>| -> Arc<dyn Offer> {
            Arc::new(Meet(Arc::clone(&barrier), Mutex::new(tx)))
        };
        let a = meet(tx.clone());
        pool.offer(Arc::clone(&a), 1);
        pool.offer(meet(tx), 1);
        let (first, second) = (
            rx.recv_timeout(Duration::from_secs(30)).unwrap(),
            rx.recv_timeout(Duration::from_secs(30)).unwrap(),
        );
        assert_ne!(first, second);
        assert_eq!(pool.handoff.spawned.load(SeqCst), 2);
        pool.withdraw(&a);
        assert_eq!(pool.handoff.seats.load(SeqCst), 0);
        assert_eq!(pool.handoff.open.lock().unwrap().len(), 1);
    }

    /// Waits at a barrier shared with other offers, then sends the thread it ran on.
    struct Meet(
        Arc<std::sync::Barrier>,
        Mutex<Sender<std::thread::ThreadId>>,
    );

    impl Offer for Meet {
        fn work(&self) {
            self.0.wait();
            let tx = self.1.lock().unwrap();
            tx.send(std::thread::current().id()).unwrap();
        }
    }
}
