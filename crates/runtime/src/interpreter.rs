//! The INTERPRETER backend: runs a Function node by node with the reference kernels.

use std::sync::Arc;

use graphlift_ir::Function;

use crate::backend::{function_signature, validate_arguments};
use crate::reference::evaluate_function_traced;
use crate::state::{VariableStore, Variables};
use crate::trace::CallRecorder;
use crate::{Backend, Executable, RuntimeError, Tensor, TensorSpec};

/// The reference backend (`Backend::create("INTERPRETER")`): defines what every op means.
#[derive(Debug, Default, Clone, Copy)]
pub struct InterpreterBackend;

impl Backend for InterpreterBackend {
    fn name(&self) -> &str {
        "INTERPRETER"
    }

    fn compile(&self, function: &Function) -> Result<Arc<dyn Executable>, RuntimeError> {
        function.validate()?;
        let (parameters, results) = function_signature(function)?;
        Ok(Arc::new(InterpreterExecutable {
            function: function.clone(),
            parameters,
            results,
            variables: VariableStore::new(Variables::of(function)?),
        }))
    }
}

/// A Function prepared for interpretation.
#[derive(Debug)]
pub struct InterpreterExecutable {
    function: Function,
    parameters: Vec<TensorSpec>,
    results: Vec<TensorSpec>,
    variables: Option<VariableStore>,
}

impl Executable for InterpreterExecutable {
    fn parameters(&self) -> &[TensorSpec] {
        &self.parameters
    }

    fn results(&self) -> &[TensorSpec] {
        &self.results
    }

    fn variable_store(&self) -> Option<&VariableStore> {
        self.variables.as_ref()
    }

    fn call(&self, outputs: &mut [Tensor], inputs: &[Tensor]) -> Result<(), RuntimeError> {
        validate_arguments(&self.parameters, inputs.iter(), "input")?;
        validate_arguments(&self.results, outputs.iter(), "output")?;
        let mut state = self.variables.as_ref().map(VariableStore::lock);
        let mut recorder = CallRecorder::begin(&self.function, "INTERPRETER");
        if let (Some(r), Some(vars)) = (recorder.as_mut(), state.as_deref()) {
            r.record_variables(vars);
        }
        let values = evaluate_function_traced(
            &self.function,
            inputs,
            state.as_deref_mut(),
            recorder.as_mut(),
        )?;
        if let Some(r) = recorder {
            r.finish(&self.function)?;
        }
        for (o, v) in outputs.iter_mut().zip(values) {
            *o = v;
        }
        Ok(())
    }
}
