//! The `Backend` and `Executable` traits (nGraph's `runtime::Backend` and `Executable`).

use std::sync::Arc;

use graphlift_ir::{ElementType, Function, Shape, TensorType};

use crate::state::{no_variables, VariableStore};
use crate::{RuntimeError, Tensor};

/// A parameter or result of an Executable: its name and type.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    /// The Parameter's or Result's node name.
    pub name: String,
    /// Element type and shape.
    pub tensor_type: TensorType,
}

/// What a compiled fused kernel contains, for reports (`graphlift run`, `graphlift
/// explain`, tests). Build it with `..Default::default()` so new fields do not break
/// constructors.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KernelInfo {
    /// The fused kernel node's name.
    pub name: String,
    /// Names of the nodes fused into it, in topological order.
    pub fused_nodes: Vec<String>,
    /// Union of the fused nodes' provenance tags.
    pub tags: Vec<String>,
    /// Number of live-ins.
    pub live_ins: usize,
    /// Number of outputs.
    pub outputs: usize,
    /// Size of the generated machine code in bytes (0 when not compiled to native code).
    pub code_size: usize,
    /// Provenance tags of each fused node, parallel to `fused_nodes`.
    pub node_tags: Vec<Vec<String>>,
    /// Pass history of each fused node (oldest first), parallel to `fused_nodes`.
    pub pass_history: Vec<Vec<String>>,
    /// The Cranelift IR the kernel was compiled from (empty when not compiled).
    pub ir: Arc<str>,
    /// Which ranges of the machine code come from which fused node, by code offset (empty
    /// when the code generator records no source locations).
    pub code_ranges: Arc<[CodeRange]>,
    /// The node (a `MatMul` or `Convolution`) in whose output loop the kernel runs, block
    /// by block, when the backend fused it as that node's epilogue; `None` when it runs as
    /// a step of its own.
    pub epilogue_of: Option<String>,
    /// `(output, variable)` for each output the kernel writes straight into a variable's
    /// storage, the value of an assign that then needs no temporary and no copy.
    pub writes_in_place: Vec<(usize, String)>,
}

/// A range of a kernel's machine code and the node it was lowered from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CodeRange {
    /// First byte, as an offset from the kernel's entry.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
    /// The body node it was lowered from: a fused node, or the live-in (body parameter)
    /// or Constant that a load reads.
    pub node: String,
}

/// One step of a compiled plan: a node run as a fused JIT kernel or a native kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StepInfo {
    /// The node's name.
    pub node: String,
    /// Its op (`Add`, `FusedKernel`, ...).
    pub op: String,
    /// `true` for a fused (JIT) kernel, `false` for a native kernel.
    pub fused: bool,
    /// Its provenance tags.
    pub tags: Vec<String>,
    /// For a read or an assign of a variable: how the backend runs it (copies, or reads or
    /// writes the variable's storage in place), in words; `None` for other steps.
    pub state: Option<String>,
    /// For a control-flow step (`If`, `Loop`, `Scan`): what it runs, in words (its bodies
    /// and their kernels); `None` for other steps.
    pub control_flow: Option<String>,
    /// For a native product (`MatMul`, `Convolution`) whose constant operand the backend
    /// packed once at compile time: those weights, in words; `None` for other steps (their
    /// products, if any, pack both operands on every call).
    pub packed: Option<String>,
    /// For a data-movement step that takes over its input's buffer instead of copying the
    /// elements (a `Reshape` whose input dies there): which, in words; `None` for other
    /// steps.
    pub forwards: Option<String>,
}

/// A backend: makes tensors and compiles Functions into Executables.
pub trait Backend: Send + Sync {
    /// The name it is registered under (`INTERPRETER`, `CPU-JIT`).
    fn name(&self) -> &str;

    /// A zero-filled tensor.
    ///
    /// # Errors
    /// [`RuntimeError::Ir`] for a shape whose element count overflows.
    fn create_tensor(
        &self,
        element_type: ElementType,
        shape: Shape,
    ) -> Result<Tensor, RuntimeError> {
        Tensor::zeros(element_type, shape)
    }

    /// Compiles `function`; the Function is not modified (backends rewrite a copy).
    ///
    /// # Errors
    /// [`RuntimeError::Ir`] if the function does not validate; [`RuntimeError::Compile`]
    /// if code generation fails.
    fn compile(&self, function: &Function) -> Result<Arc<dyn Executable>, RuntimeError>;
}

/// A compiled Function, callable any number of times, from any thread.
///
/// An Executable of a Function with variables owns their storage ([`VariableStore`]): the
/// values persist from call to call, start at their initializers' values, and its calls are
/// serialized (one runs at a time; each sees every write of the one before). Executables
/// without variables run calls from several threads at once.
pub trait Executable: Send + Sync {
    /// Parameters in call order.
    fn parameters(&self) -> &[TensorSpec];

    /// Results in call order.
    fn results(&self) -> &[TensorSpec];

    /// Runs the function: reads `inputs` (one per parameter), writes `outputs` (one per
    /// result). Implementations check every count, element type and shape before they touch
    /// memory, so a call with mismatched tensors fails with every output tensor unchanged.
    /// Once the tensors match, the built-in backends do not fail on any data, short of
    /// running out of memory (every function they compiled validated, fused kernel bodies
    /// included, and no op fails at run time: see [`crate::reference`]). Were an internal
    /// invariant broken, the INTERPRETER would still leave the outputs unchanged (it writes
    /// them only after every node ran), while the CPU-JIT, whose kernels write results
    /// straight into the output tensors, would leave them with their types but unspecified
    /// values.
    ///
    /// # Errors
    /// [`RuntimeError::ArgumentCount`] / [`RuntimeError::ArgumentType`] for mismatched
    /// tensors; [`RuntimeError::Execution`] naming the node that failed.
    fn call(&self, outputs: &mut [Tensor], inputs: &[Tensor]) -> Result<(), RuntimeError>;

    /// Checks count, element type and shape of every tensor against the parameters and
    /// results, then calls (nGraph's `call_with_validate`).
    ///
    /// # Errors
    /// As [`Executable::call`]; the validation error names the offending parameter or result.
    fn call_with_validate(
        &self,
        outputs: &mut [Tensor],
        inputs: &[Tensor],
    ) -> Result<(), RuntimeError> {
        validate_arguments(self.parameters(), inputs.iter(), "input")?;
        validate_arguments(self.results(), outputs.iter(), "output")?;
        self.call(outputs, inputs)
    }

    /// Allocates the outputs, calls with validation, and returns them.
    ///
    /// # Errors
    /// As [`Executable::call_with_validate`].
    fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, RuntimeError> {
        let mut outputs = self
            .results()
            .iter()
            .map(|r| Tensor::zeros(r.tensor_type.element_type, r.tensor_type.shape.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        self.call_with_validate(&mut outputs, inputs)?;
        Ok(outputs)
    }

    /// The variables' storage; `None` for a Function without variables.
    fn variable_store(&self) -> Option<&VariableStore> {
        None
    }

    /// Each variable's name and type, in the Function's node order (empty without state).
    fn variables(&self) -> Vec<TensorSpec> {
        self.variable_store()
            .map(|s| s.lock().specs().to_vec())
            .unwrap_or_default()
    }

    /// The current value of variable `name` (a copy), waiting for a running call to end.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownVariable`] listing the variables there are.
    fn variable(&self, name: &str) -> Result<Tensor, RuntimeError> {
        match self.variable_store() {
            Some(s) => s.variable(name),
            None => Err(no_variables(name)),
        }
    }

    /// Sets variable `name` to `value` before the next call.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownVariable`]; [`RuntimeError::VariableType`] for a value of
    /// another element type or shape (the variable is then unchanged).
    fn set_variable(&self, name: &str, value: &Tensor) -> Result<(), RuntimeError> {
        match self.variable_store() {
            Some(s) => s.set_variable(name, value),
            None => Err(no_variables(name)),
        }
    }

    /// Runs every variable's initializer again (Nervana Graph's re-initialization).
    ///
    /// # Errors
    /// [`RuntimeError::Execution`] naming a variable whose initializer fails (the values
    /// are then unchanged).
    fn reset_variables(&self) -> Result<(), RuntimeError> {
        self.variable_store().map_or(Ok(()), VariableStore::reset)
    }

    /// The fused kernels this Executable runs (empty for backends that do not fuse).
    fn kernels(&self) -> Vec<KernelInfo> {
        Vec::new()
    }

    /// The steps it runs, in order (empty for backends that do not plan steps).
    fn steps(&self) -> Vec<StepInfo> {
        Vec::new()
    }

    /// Bytes of intermediate tensors (every value a step computes, results included,
    /// until its last use) live at once at the worst step of a call, under the
    /// backend's liveness plan; `None` for backends without one.
    fn peak_intermediate_bytes(&self) -> Option<usize> {
        None
    }
}

/// Checks that `tensors` match `specs` in count, element type and shape, and that each
/// tensor's data fills its shape (a caller can break that through [`Tensor::data_mut`]).
///
/// # Errors
/// [`RuntimeError::ArgumentCount`] or [`RuntimeError::ArgumentType`] naming the first
/// mismatch; [`RuntimeError::Data`] naming a tensor whose data does not fill its shape;
/// `what` is `input` or `output`.
pub fn validate_arguments<'t>(
    specs: &[TensorSpec],
    tensors: impl ExactSizeIterator<Item = &'t Tensor>,
    what: &'static str,
) -> Result<(), RuntimeError> {
    if specs.len() != tensors.len() {
        return Err(RuntimeError::ArgumentCount {
            what: if what == "input" { "inputs" } else { "outputs" },
            expected: specs.len(),
            got: tensors.len(),
        });
    }
    for (index, (spec, t)) in specs.iter().zip(tensors).enumerate() {
        let expected = &spec.tensor_type;
        if !t.has_type(expected) {
            return Err(RuntimeError::ArgumentType {
                what,
                index,
                name: spec.name.clone(),
                expected: Box::new(expected.clone()),
                got: Box::new(t.tensor_type()),
            });
        }
        let needs = t.shape().element_count().ok();
        if needs != Some(t.len()) {
            return Err(RuntimeError::Data(format!(
                "{what} {index} (`{}`): the {} tensor holds {} elements, its shape needs {}",
                spec.name,
                t.tensor_type(),
                t.len(),
                needs.map_or("more than usize::MAX".to_string(), |n| n.to_string())
            )));
        }
    }
    Ok(())
}

/// The parameter and result specs of a function.
pub fn function_signature(
    f: &Function,
) -> Result<(Vec<TensorSpec>, Vec<TensorSpec>), RuntimeError> {
    let spec = |id| -> Result<TensorSpec, RuntimeError> {
        let n = f.node(id)?;
        Ok(TensorSpec {
            name: n.name().to_string(),
            tensor_type: n.output_type().clone(),
        })
    };
    let params = f
        .parameters()
        .iter()
        .map(|&p| spec(p))
        .collect::<Result<_, _>>()?;
    let results = f
        .results()
        .iter()
        .map(|&r| spec(r))
        .collect::<Result<_, _>>()?;
    Ok((params, results))
}
