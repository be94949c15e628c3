//! The backend registry behind `Backend::create` (nGraph's `BackendManager`): `INTERPRETER`
//! is always registered, and other crates add theirs with [`register_backend`] (the `graphlift`
//! facade registers `CPU-JIT`).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

use crate::interpreter::InterpreterBackend;
use crate::{Backend, RuntimeError};

/// Makes a backend instance.
pub type BackendFactory = fn() -> Result<Arc<dyn Backend>, RuntimeError>;

fn registry() -> &'static RwLock<BTreeMap<String, BackendFactory>> {
    static REGISTRY: OnceLock<RwLock<BTreeMap<String, BackendFactory>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut m: BTreeMap<String, BackendFactory> = BTreeMap::new();
        m.insert("INTERPRETER".to_string(), || {
            Ok(Arc::new(InterpreterBackend))
        });
        RwLock::new(m)
    })
}

/// Registers (or replaces) the factory for `name`.
pub fn register_backend(name: &str, factory: BackendFactory) {
    let mut m = registry().write().unwrap_or_else(|p| p.into_inner());
    m.insert(name.to_string(), factory);
}

/// Names of the registered backends, sorted.
pub fn registered_backends() -> Vec<String> {
    let m = registry().read().unwrap_or_else(|p| p.into_inner());
    m.keys().cloned().collect()
}

/// A new instance of the backend registered under `name`.
///
/// # Errors
/// [`RuntimeError::UnknownBackend`] listing the known names.
pub fn create_backend(name: &str) -> Result<Arc<dyn Backend>, RuntimeError> {
    let factory = {
        let m = registry().read().unwrap_or_else(|p| p.into_inner());
        m.get(name).copied()
    };
    match factory {
        Some(f) => f(),
        None => Err(RuntimeError::UnknownBackend {
            name: name.to_string(),
            known: registered_backends().join(", "),
        }),
    }
}

impl dyn Backend {
    /// The backend registered under `name` (nGraph's `runtime::Backend::create`).
    ///
    /// ```
    /// use graphlift_ir::{ElementType::F32, FunctionBuilder};
    /// use graphlift_runtime::{Backend, Tensor};
    /// let b = FunctionBuilder::new("f");
    /// let x = b.parameter("x", F32, [3]);
    /// let f = b.finish(&[x.relu()]).unwrap();
    /// let backend = <dyn Backend>::create("INTERPRETER").unwrap();
    /// let exe = backend.compile(&f).unwrap();
    /// let out = exe.run(&[Tensor::from_vec(vec![-1.0f32, 0.5, 2.0], [3]).unwrap()]).unwrap();
    /// assert_eq!(out[0].read::<f32>().unwrap(), &[0.0, 0.5, 2.0]);
    /// ```
    ///
    /// # Errors
    /// [`RuntimeError::UnknownBackend`] listing the registered names.
    pub fn create(name: &str) -> Result<Arc<dyn Backend>, RuntimeError> {
        create_backend(name)
    }
}
