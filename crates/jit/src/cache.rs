//! The kernel cache of a backend: compiled code keyed by the canonical form of a kernel plan,
//! so equal fused regions compile once and share one JIT module.

use std::sync::{Arc, Mutex};

use graphlift_ir::{ElementType, TensorData};
use indexmap::IndexMap;

use graphlift_codegen::compile::KernelCode;
use graphlift_codegen::lanes::Lanes;
use graphlift_codegen::plan::{KernelPlan, SlotId, SlotOp};
use graphlift_kernels::target::VectorIsa;

/// The canonical form of a kernel plan.
///
/// It is everything code generation reads from a [`KernelPlan`] except names: the iteration
/// space's element count, the lane width, the input buffers' element types and lengths, each
/// slot's op (with its broadcast addressing and constant bits), element types and invariance,
/// the output slots, the bits of every hidden constant buffer and the code-path switches.
/// Two fused regions with equal keys compile to the same machine code, so the second reuses
/// the first's [`KernelCode`] — and with it the JIT module that owns the code, which is freed
/// only when no executable and no cache entry holds it any more.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct KernelKey {
    count: usize,
    lanes: Lanes,
    live_ins: usize,
    args: Vec<(ElementType, usize)>,
    /// Per slot: op, compute type, storage type ([`graphlift_codegen::storage`]: an `f16`
    /// value is computed in `f32` but rounded), invariance.
    slots: Vec<(SlotOp, ElementType, ElementType, bool)>,
    outputs: Vec<(SlotId, ElementType)>,
    constants: Vec<ConstBits>,
    veclib: bool,
    stream: bool,
    isa: Option<VectorIsa>,
}

/// A constant buffer by value: element type and the bits of every element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ConstBits(ElementType, Vec<u64>);

impl KernelKey {
    /// The key of `plan`.
    pub(crate) fn of(plan: &KernelPlan) -> KernelKey {
        KernelKey {
            count: plan.count,
            lanes: plan.lanes,
            live_ins: plan.live_ins,
            args: plan.args.iter().map(|a| (a.ty, a.len)).collect(),
            slots: plan
                .slots
                .iter()
                .map(|s| (s.op.clone(), s.ty, s.storage, s.invariant))
                .collect(),
            outputs: plan.outputs.clone(),
            constants: plan.constants.iter().map(|c| bits(c)).collect(),
            veclib: plan.veclib,
            stream: plan.stream,
            isa: plan.isa,
        }
    }
}

/// The element bits of a constant buffer.
fn bits(data: &TensorData) -> ConstBits {
    let v: Vec<u64> = match data {
        TensorData::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        TensorData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        TensorData::I32(v) => v.iter().map(|&x| u64::from(x as u32)).collect(),
        TensorData::I64(v) => v.iter().map(|&x| x as u64).collect(),
        TensorData::Bool(v) => v.iter().map(|&x| u64::from(x)).collect(),
        TensorData::F16(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        TensorData::BF16(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        TensorData::I8(v) => v.iter().map(|&x| x as u8 as u64).collect(),
        TensorData::U8(v) => v.iter().map(|&x| u64::from(x)).collect(),
        TensorData::I16(v) => v.iter().map(|&x| x as u16 as u64).collect(),
        TensorData::U16(v) => v.iter().map(|&x| u64::from(x)).collect(),
        TensorData::U32(v) => v.iter().map(|&x| u64::from(x)).collect(),
        TensorData::U64(v) => v.clone(),
        // The storage-only types, by their bit patterns.
        other => graphlift_ir::storage_bits(other)
            .unwrap_or_default()
            .into_iter()
            .map(u64::from)
            .collect(),
    };
    ConstBits(data.element_type(), v)
}

/// Compiled kernels of one backend, shared by its executables (behind a mutex; compilation
/// itself runs outside the lock).
///
/// Least recently used first out: it holds at most its capacity of entries (a backend's
/// [`graphlift_kernels::target::Target::kernel_cache_capacity`], by default
/// [`graphlift_kernels::target::DEFAULT_KERNEL_CACHE_CAPACITY`]); a hit moves its entry to
/// the most recent end, and inserting beyond the capacity evicts from the least recent end.
/// An evicted entry only drops the cache's `Arc` of the code: executables that use it keep
/// theirs, so the code (and its JIT module) lives until the last of them is dropped. With
/// capacity 0 nothing is kept and every compile compiles its kernels anew.
#[derive(Debug)]
pub(crate) struct KernelCache {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    entries: IndexMap<KernelKey, Arc<KernelCode>>,
    capacity: usize,
    compiled: usize,
    hits: usize,
    evicted: usize,
}

/// Counters of a backend's kernel cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KernelCacheStats {
    /// Kernels compiled to machine code (cache misses) since the backend was created.
    pub compiled: usize,
    /// Kernels that reused cached code.
    pub hits: usize,
    /// Entries currently held (at most [`KernelCacheStats::capacity`]).
    pub entries: usize,
    /// Entries evicted, least recently used first, to stay within the capacity.
    pub evicted: usize,
    /// The most entries the cache holds (0: caching is off).
    pub capacity: usize,
}

impl KernelCache {
    /// An empty cache of at most `capacity` entries (0 disables caching).
    pub(crate) fn new(capacity: usize) -> KernelCache {
        KernelCache {
            inner: Mutex::new(Inner {
                entries: IndexMap::new(),
                capacity,
                compiled: 0,
                hits: 0,
                evicted: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached code for `key`, counting a hit and making its entry the most recently
    /// used.
    pub(crate) fn get(&self, key: &KernelKey) -> Option<Arc<KernelCode>> {
        let mut g = self.lock();
        let (at, _, code) = g.entries.get_full(key)?;
        let code = Arc::clone(code);
        let last = g.entries.len() - 1;
        g.entries.move_index(at, last);
        g.hits += 1;
        Some(code)
    }

    /// Records freshly compiled `code` under `key` (counting a compilation) as the most
    /// recently used entry, evicting the least recently used ones beyond the capacity.
    pub(crate) fn insert(&self, key: KernelKey, code: Arc<KernelCode>) {
        let mut g = self.lock();
        g.compiled += 1;
        if g.capacity == 0 {
            return;
        }
        // A key compiled by two executables at once is replaced in place: move it last.
        let (at, _) = g.entries.insert_full(key, code);
        let last = g.entries.len() - 1;
        g.entries.move_index(at, last);
        while g.entries.len() > g.capacity {
            g.entries.shift_remove_index(0);
            g.evicted += 1;
        }
    }

    /// The counters.
    pub(crate) fn stats(&self) -> KernelCacheStats {
        let g = self.lock();
        KernelCacheStats {
            compiled: g.compiled,
            hits: g.hits,
            entries: g.entries.len(),
            evicted: g.evicted,
            capacity: g.capacity,
        }
    }

    /// Drops every entry (code used by live executables stays alive).
    pub(crate) fn clear(&self) {
        self.lock().entries.clear();
    }
}
