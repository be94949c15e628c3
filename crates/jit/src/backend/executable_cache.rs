//! The executable cache of a backend: compiling a Function equal to one compiled before, while
//! an executable of it is alive, returns a new executable that shares the first one's plan
//! (steps, buffers, kernels) and skips the pass pipeline and planning.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use foldhash::HashMap;
use graphlift_ir::Function;

use super::ExecutablePlan;

/// Counters of a backend's executable cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExecutableCacheStats {
    /// Compiles that ran the pipeline with the cache on (misses).
    pub compiled: usize,
    /// Compiles answered from the cache.
    pub hits: usize,
    /// Plans held by live executables.
    pub live: usize,
}

/// Plans by fingerprint, held weakly.
///
/// As JAX's and TensorFlow/XLA's compilation caches do for a traced function, but keyed by
/// the whole Function: a hit needs a Function equal in every respect (`==`: names, ops,
/// constants' values, types, tags, metadata, creation sites, control dependencies), so what
/// an executable reports (kernel names, provenance, the pass report of the first compile) is
/// always its own Function's. A fingerprint of the graph's structure picks the bucket; the
/// full comparison decides.
///
/// When the last executable of a Function is dropped, its plan and the constants it holds
/// are freed and the entry dies. A backend's executables are cached only for its own thread
/// configuration and epilogue setting (changing either makes a backend with a new, empty
/// executable cache).
#[derive(Debug, Default)]
pub(super) struct ExecutableCache {
    entries: Mutex<HashMap<u64, Vec<Weak<ExecutablePlan>>>>,
    compiled: AtomicUsize,
    hits: AtomicUsize,
}

impl ExecutableCache {
    /// The live plan compiled from a Function equal to `f`, if any.
    pub(super) fn get(&self, f: &Function) -> Option<Arc<ExecutablePlan>> {
        let key = fingerprint(f);
        // Compared outside the lock: comparing a model's Functions compares its weights.
        let candidates: Vec<Arc<ExecutablePlan>> = {
            let entries = self.entries.lock().ok()?;
            entries
                .get(&key)?
                .iter()
                .filter_map(Weak::upgrade)
                .collect()
        };
        let plan = candidates
            .into_iter()
            .find(|p| p.source.as_ref() == Some(f));
        if plan.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        plan
    }

    /// Remembers `plan` (compiled from `plan.source`; a plan without one is not kept), and
    /// forgets plans no executable holds.
    pub(super) fn insert(&self, plan: &Arc<ExecutablePlan>) {
        self.compiled.fetch_add(1, Ordering::Relaxed);
        let Some(source) = &plan.source else { return };
        let key = fingerprint(source);
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|_, bucket| {
                bucket.retain(|w| w.strong_count() > 0);
                !bucket.is_empty()
            });
            entries.entry(key).or_default().push(Arc::downgrade(plan));
        }
    }

    pub(super) fn stats(&self) -> ExecutableCacheStats {
        let live = self.entries.lock().map_or(0, |entries| {
            entries
                .values()
                .flatten()
                .filter(|w| w.strong_count() > 0)
                .count()
        });
        ExecutableCacheStats {
            compiled: self.compiled.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            live,
        }
    }
}

/// A hash of the graph's structure: the name, and every node's id, name, op kind, inputs,
/// output types and control dependencies, and the parameter and result lists. Equal
/// Functions have equal fingerprints; what it leaves out (attributes, constants' values,
/// tags, ...) the full comparison checks.
fn fingerprint(f: &Function) -> u64 {
    let mut h = foldhash::fast::FixedState::default().build_hasher();
    f.name().hash(&mut h);
    for n in f.nodes() {
        n.id().hash(&mut h);
        n.name().hash(&mut h);
        n.op().type_name().hash(&mut h);
        n.inputs().hash(&mut h);
        n.outputs().hash(&mut h);
        n.other_deps().hash(&mut h);
    }
    f.parameters().hash(&mut h);
    f.results().hash(&mut h);
    h.finish()
}
