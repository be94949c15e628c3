//! An ONNX model served call by call (onnxruntime's `InferenceSession`): graphlift compiles
//! static shapes, so each call's input shapes (the symbolic dimensions) and the values of the
//! inputs that shape-like operands are computed from pick a specialisation of the model,
//! imported and compiled on first use and kept in a bounded least-recently-used cache. A
//! model with a node whose output shape depends on values (`NonZero`, `Compress`,
//! `NonMaxSuppression`) runs in stages ([`split`]).

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use graphlift_ir::Lru;
use graphlift_runtime::{Backend, Executable, RuntimeError, Tensor};

use crate::error::OnnxError;
use crate::import::{
    import_binding, input_names_of, read_model_file, ImportOptions, ImportedModel,
};
use crate::proto::ModelProto;

mod loop_step;
mod split;

/// Why a [`Session`] call failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The call gave another number of inputs than the model has graph inputs.
    #[error("model `{model}` has {expected} graph inputs, the call gave {got}")]
    InputCount {
        /// The model file.
        model: String,
        /// Graph inputs that are not initializers.
        expected: usize,
        /// Tensors given.
        got: usize,
    },
    /// The model does not import for the call's shapes and values (the error names the node
    /// or graph input).
    #[error(transparent)]
    Import(#[from] OnnxError),
    /// Compiling or running the specialisation failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// A dynamic step between two stages of the model (see [`Session`]) failed.
    #[error("model `{model}`: {message}")]
    DynamicStep {
        /// The model file.
        model: String,
        /// What failed, naming the node.
        message: String,
    },
}

/// One specialisation of the model: imported for some input shapes and bound input values,
/// and compiled.
pub struct Specialization {
    /// The imported model: its parameters are the graph inputs that were not bound.
    pub model: ImportedModel,
    /// The compiled Function.
    pub executable: Arc<dyn Executable>,
    /// Positions (in graph input order) of the inputs passed to the executable.
    call: Vec<usize>,
    /// Positions and values of the inputs bound into the model as constants.
    bound: Vec<(usize, Tensor)>,
}

impl Specialization {
    /// Whether this specialisation was made for `inputs`' bound values (the cache key holds
    /// their values as `f64` bits, which can collide for 64-bit integers past 2^53).
    fn binds(&self, inputs: &[Tensor]) -> bool {
        self.bound.iter().all(|(k, v)| {
            inputs[*k].tensor_type() == v.tensor_type() && inputs[*k].data().same_bits(v.data())
        })
    }
}

/// Counters of a [`Session`]'s cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionStats {
    /// Specialisations imported and compiled so far.
    pub compiles: usize,
    /// Specialisations held now (at most `capacity`).
    pub entries: usize,
    /// Specialisations evicted, least recently used first.
    pub evictions: usize,
    /// The cache's bound.
    pub capacity: usize,
}

struct Inner {
    /// Graph inputs the model has needed as values so far (positions, ascending).
    bound: Vec<usize>,
    cache: Lru<Arc<Specialization>>,
    compiles: usize,
}

/// An ONNX model file on a backend, called with tensors in graph input order.
///
/// Each call's key is the shape of every input and the values of the inputs that the import
/// needs as constants (a `Reshape` shape, `Slice` starts, `Tile` repeats, `Resize` scales
/// computed from a graph input: [`OnnxError::RunTimeOperand`]); a new key imports the model
/// with those shapes and values ([`crate::import_model_file_binding`]) and compiles it on the
/// backend (whose own kernel cache makes a recompile of known kernels cheap). At most
/// `capacity` specialisations are kept ([`Session::DEFAULT_CAPACITY`] unless
/// [`Session::with_capacity`] says otherwise); the least recently used goes first.
///
/// A node whose output shapes depend on the values it reads (`NonZero`, `Compress` or
/// `NonMaxSuppression` over values computed at run time, a `Loop` of run-time length:
/// [`OnnxError::DataDependentShape`]) splits the model into stages on the first call that
/// meets it: a session for the part that computes what the node reads, the node run on the
/// host between them (a loop's body a session of its own, called once per iteration), and a
/// session for the model with the node's outputs as more inputs, specialised by their
/// shapes. Each stage keeps its own cache of `capacity` specialisations.
pub struct Session {
    /// The model file, or what stands for it in messages.
    name: String,
    model: Arc<ModelProto>,
    backend: Arc<dyn Backend>,
    options: ImportOptions,
    capacity: usize,
    names: Vec<String>,
    inner: Mutex<Inner>,
    /// The stages, once a call has met a data-dependent shape.
    stages: OnceLock<split::Stages>,
}

impl Session {
    /// Specialisations a session keeps unless told otherwise.
    pub const DEFAULT_CAPACITY: usize = 16;

    /// A session over the model at `path`, compiling on `backend`, with
    /// [`Session::DEFAULT_CAPACITY`].
    ///
    /// # Errors
    /// [`OnnxError::Io`] or [`OnnxError::Protobuf`] naming the file.
    pub fn new(path: &Path, backend: Arc<dyn Backend>) -> Result<Session, OnnxError> {
        Session::with_capacity(
            path,
            backend,
            ImportOptions::default(),
            Self::DEFAULT_CAPACITY,
        )
    }

    /// A session with import `options` (fixed input shapes by name; its ordered shapes and
    /// input values are overridden by each call's) keeping at most `capacity`
    /// specialisations (0: every call imports and compiles anew).
    ///
    /// # Errors
    /// As [`Session::new`].
    pub fn with_capacity(
        path: &Path,
        backend: Arc<dyn Backend>,
        options: ImportOptions,
        capacity: usize,
    ) -> Result<Session, OnnxError> {
        let model = read_model_file(path)?;
        let name = path.display().to_string();
        Ok(Session::of_model(
            name,
            Arc::new(model),
            backend,
            options,
            capacity,
        ))
    }

    /// A session over a decoded `model`, named `name` in messages and creation sites.
    fn of_model(
        name: String,
        model: Arc<ModelProto>,
        backend: Arc<dyn Backend>,
        options: ImportOptions,
        capacity: usize,
    ) -> Session {
        Session {
            names: input_names_of(&model),
            name,
            model,
            backend,
            options,
            capacity,
            inner: Mutex::new(Inner {
                bound: Vec::new(),
                cache: Lru::new(capacity),
                compiles: 0,
            }),
            stages: OnceLock::new(),
        }
    }

    /// The graph inputs a call gives, in order (those that are not initializers).
    pub fn input_names(&self) -> &[String] {
        &self.names
    }

    /// Runs the model on `inputs` (one tensor per graph input, in graph order) and returns
    /// its outputs.
    ///
    /// # Errors
    /// [`SessionError::InputCount`]; an import error for these shapes or values (naming
    /// the input or node); a compile or run error (naming the parameter whose type differs);
    /// [`SessionError::DynamicStep`].
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, SessionError> {
        if let Some(stages) = self.stages.get() {
            return stages.run(inputs);
        }
        match self.specialization(inputs) {
            Ok(s) => {
                let call: Vec<Tensor> = s.call.iter().map(|&k| inputs[k].clone()).collect();
                Ok(s.executable.run(&call)?)
            }
            Err(SessionError::Import(OnnxError::DataDependentShape { at, output, .. })) => {
                let stages =
                    split::Stages::new(self, &output).ok_or_else(|| SessionError::DynamicStep {
                        model: self.name.clone(),
                        message: format!("{at}: the model cannot be split at `{output}`"),
                    })?;
                self.stages.get_or_init(|| stages).run(inputs)
            }
            Err(e) => Err(e),
        }
    }

    /// The specialisation for `inputs`, from the cache or imported and compiled now.
    ///
    /// # Errors
    /// As [`Session::run`], except for running.
    pub fn specialization(&self, inputs: &[Tensor]) -> Result<Arc<Specialization>, SessionError> {
        if inputs.len() != self.names.len() {
            return Err(SessionError::InputCount {
                model: self.name.clone(),
                expected: self.names.len(),
                got: inputs.len(),
            });
        }
        {
            let mut inner = self.lock();
            let key = key_of(inputs, &inner.bound);
            if let Some(s) = inner.cache.get(&key).filter(|s| s.binds(inputs)) {
                return Ok(s.clone());
            }
        }
        let s = Arc::new(self.compile(inputs)?);
        let mut inner = self.lock();
        inner.compiles += 1;
        // Key by every input the model has needed as a value so far (this import may have
        // needed others than the key held).
        inner.bound.extend(s.bound.iter().map(|(k, _)| *k));
        inner.bound.sort_unstable();
        inner.bound.dedup();
        let key = key_of(inputs, &inner.bound);
        inner.cache.insert(key, s.clone());
        Ok(s)
    }

    /// The cache's counters; for a model run in stages, the sums over this session and its
    /// stages' sessions.
    pub fn stats(&self) -> SessionStats {
        let inner = self.lock();
        let own = SessionStats {
            compiles: inner.compiles,
            entries: inner.cache.len(),
            evictions: inner.cache.evictions(),
            capacity: inner.cache.capacity(),
        };
        drop(inner);
        match self.stages.get() {
            Some(stages) => stages.stats(own),
            None => own,
        }
    }

    /// What a stage of this session's model inherits from it.
    fn parent(&self) -> split::Parent {
        split::Parent {
            name: self.name.clone(),
            backend: self.backend.clone(),
            options: self.options.clone(),
            capacity: self.capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while the lock was held leaves the cache consistent (it is only read or
        // replaced whole), so a poisoned lock is used as it is.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn compile(&self, inputs: &[Tensor]) -> Result<Specialization, SessionError> {
        let options = ImportOptions {
            ordered_input_shapes: inputs.iter().map(|t| t.shape().dims().to_vec()).collect(),
            ..self.options.clone()
        };
        let (model, _) = import_binding(&self.model, &self.name, &options, inputs)?;
        let position = |name: &str| self.names.iter().position(|n| n == name);
        let call: Vec<usize> = model
            .inputs
            .iter()
            .filter_map(|i| position(&i.name))
            .collect();
        let bound = (0..self.names.len())
            .filter(|k| !call.contains(k))
            .map(|k| (k, inputs[k].clone()))
            .collect();
        let executable = self.backend.compile(&model.function)?;
        Ok(Specialization {
            model,
            executable,
            call,
            bound,
        })
    }
}

/// The cache key of a call: every input's rank and extents, then each bound input's
/// position, element count and values (`f64` bits; [`Specialization::binds`] checks them
/// exactly).
fn key_of(inputs: &[Tensor], bound: &[usize]) -> Vec<u64> {
    let mut key = Vec::new();
    for t in inputs {
        key.push(t.shape().rank() as u64);
        key.extend(t.shape().dims().iter().map(|&d| d as u64));
    }
    for &k in bound {
        let data = inputs[k].data();
        key.push(k as u64);
        key.push(data.len() as u64);
        key.extend((0..data.len()).map(|i| data.get_f64(i).unwrap_or(f64::NAN).to_bits()));
    }
    key
}

#[cfg(test)]
mod tests;
