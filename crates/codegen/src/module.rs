//! Ownership of JIT code memory: a [`JITModule`] that is freed when its owner is dropped,
//! because dropping a `JITModule` alone leaks its code pages.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module};

use crate::helpers::Helper;
use crate::{isa, JitError};

static LIVE_MODULES: AtomicUsize = AtomicUsize::new(0);

/// Number of JIT modules whose code memory is currently mapped, process-wide.
///
/// Every [`crate::JitKernel`] holds one module; a `crate::CpuJitExecutable` holds the
/// modules of its kernels, which it shares with other executables of its backend and with the
/// backend's kernel cache (a compile that hits the cache for every kernel adds no module).
/// The count goes down when a module's last user is dropped and its memory freed. For
/// diagnostics and tests.
pub fn live_modules() -> usize {
    LIVE_MODULES.load(Ordering::SeqCst)
}

/// Reports whether some modules' code memory has been released.
///
/// Obtained from `crate::CpuJitExecutable::memory_watch` or
/// [`crate::JitKernel::memory_watch`]; it does not keep the module alive.
#[derive(Debug, Clone)]
pub struct MemoryWatch(Vec<Weak<()>>);

impl MemoryWatch {
    /// `true` once the code memory of every watched module has been freed (all its owners
    /// were dropped).
    pub fn is_released(&self) -> bool {
        self.0.iter().all(|w| w.strong_count() == 0)
    }

    /// A watch over every module in `modules`.
    pub fn all<'a>(modules: impl IntoIterator<Item = &'a KernelModule>) -> MemoryWatch {
        MemoryWatch(
            modules
                .into_iter()
                .map(|m| Arc::downgrade(&m.token))
                .collect(),
        )
    }
}

/// A JIT module being filled with kernels, then finalized; frees its memory on drop. It also
/// owns the code of the kernels assembled outside Cranelift ([`crate::asm`]),
/// each in its own executable mapping, unmapped on drop.
///
/// Dropping a `JITModule` leaks its code pages; [`JITModule::free_memory`] releases them, and
/// `KernelModule` calls it on drop. A `JITModule` is `Send` but not `Sync`, so it sits behind
/// a `Mutex` that is only locked at drop; the kernels' function pointers are used without it.
pub struct KernelModule {
    module: Mutex<Option<JITModule>>,
    /// Executable mappings of assembled kernels (only added to, at compile time).
    mapped: Mutex<Vec<memmap2::Mmap>>,
    helpers: Vec<(Helper, FuncId)>,
    token: Arc<()>,
}

impl std::fmt::Debug for KernelModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelModule")
            .field("helpers", &self.helpers.len())
            .finish_non_exhaustive()
    }
}

impl KernelModule {
    /// A fresh module on the shared host ISA, with every host helper declared.
    ///
    /// # Errors
    /// [`JitError::Isa`] or [`JitError::Module`].
    pub fn new() -> Result<KernelModule, JitError> {
        let isa = isa::host_isa()?;
        let mut builder = JITBuilder::with_isa(isa, default_libcall_names());
        for h in Helper::all() {
            builder.symbol(h.symbol(), h.address());
        }
        let mut module = JITModule::new(builder);
        let mut helpers = Vec::new();
        for h in Helper::all() {
            let sig = crate::helpers::helper_signature(&module, h);
            let id = module
                .declare_function(&h.symbol(), Linkage::Import, &sig)
                .map_err(|e| JitError::Module(e.to_string()))?;
            helpers.push((h, id));
        }
        LIVE_MODULES.fetch_add(1, Ordering::SeqCst);
        Ok(KernelModule {
            module: Mutex::new(Some(module)),
            mapped: Mutex::new(Vec::new()),
            helpers,
            token: Arc::new(()),
        })
    }

    /// The declared id of a helper.
    pub fn helper(&self, h: Helper) -> Option<FuncId> {
        self.helpers
            .iter()
            .find(|(k, _)| *k == h)
            .map(|(_, id)| *id)
    }

    /// Runs `f` on the module (compile time only; never while kernels run).
    ///
    /// # Errors
    /// [`JitError::Module`] if the module was already freed; otherwise what `f` returns.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&mut JITModule) -> Result<T, JitError>,
    ) -> Result<T, JitError> {
        let mut guard = self.module.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_mut() {
            Some(m) => f(m),
            None => Err(JitError::Module("the module was freed".into())),
        }
    }

    /// Copies position-independent machine code into a fresh executable mapping owned by
    /// this module and returns its address, valid while the module lives.
    ///
    /// # Errors
    /// [`JitError::Module`] naming the kernel if the memory cannot be mapped or made
    /// executable.
    pub fn map_code(&self, kernel: &str, code: &[u8]) -> Result<*const u8, JitError> {
        let failed = |what: &str, e: std::io::Error| {
            JitError::Module(format!("kernel `{kernel}`: {what} its code memory: {e}"))
        };
        let mut map =
            memmap2::MmapMut::map_anon(code.len().max(1)).map_err(|e| failed("mapping", e))?;
        map[..code.len()].copy_from_slice(code);
        let map = map.make_exec().map_err(|e| failed("protecting", e))?;
        let address = map.as_ptr();
        self.mapped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(map);
        Ok(address)
    }

    /// A watch that reports when this module's memory is released.
    pub fn watch(&self) -> MemoryWatch {
        MemoryWatch::all([self])
    }
}

impl Drop for KernelModule {
    fn drop(&mut self) {
        let taken = self
            .module
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(m) = taken {
            // SAFETY: the function pointers into this module are held only by `KernelCode`s,
            // each of which owns an `Arc` of this KernelModule; this is the last `Arc` being
            // dropped, so no kernel of this module can run or be called after this point.
            unsafe { m.free_memory() };
            LIVE_MODULES.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
