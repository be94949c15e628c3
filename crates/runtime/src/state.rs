//! The variables of an Executable: their storage, kept from call to call, their
//! initializers, and the lock that serializes the calls of a stateful Executable.

use std::sync::{Mutex, MutexGuard, PoisonError};

use graphlift_ir::{Function, NodeId, Op};

use crate::reference::evaluate_function;
use crate::{RuntimeError, Tensor, TensorSpec};

/// The variables of one compiled Function: for each `Variable` node (in id order) its name,
/// type, initializer and current value.
#[derive(Debug, Clone)]
pub struct Variables {
    specs: Vec<TensorSpec>,
    nodes: Vec<NodeId>,
    initializers: Vec<Function>,
    values: Vec<Tensor>,
}

impl Variables {
    /// The variables of `function`, each holding its initial value: its initializer run by
    /// the reference interpreter (so a variable starts bit-identical on every backend).
    ///
    /// # Errors
    /// [`RuntimeError::Execution`] naming the variable if its initializer fails.
    pub fn of(function: &Function) -> Result<Variables, RuntimeError> {
        let mut v = Variables {
            specs: Vec::new(),
            nodes: Vec::new(),
            initializers: Vec::new(),
            values: Vec::new(),
        };
        for n in function.variables() {
            let Op::Variable(var) = n.op() else { continue };
            v.specs.push(TensorSpec {
                name: n.name().to_string(),
                tensor_type: n.output_type().clone(),
            });
            v.nodes.push(n.id());
            v.initializers.push(var.initializer.clone());
        }
        v.values = (0..v.specs.len())
            .map(|k| v.initial_value(k))
            .collect::<Result<_, _>>()?;
        Ok(v)
    }

    fn initial_value(&self, k: usize) -> Result<Tensor, RuntimeError> {
        let fail = |message: String| RuntimeError::Execution {
            node: self.specs[k].name.clone(),
            op: "Variable".into(),
            provenance: String::new(),
            message,
        };
        let mut out = evaluate_function(&self.initializers[k], &[])
            .map_err(|e| fail(format!("initializer: {e}")))?;
        let value = out.pop().filter(|t| t.has_type(&self.specs[k].tensor_type));
        value.ok_or_else(|| fail("the initializer gives no value of the variable's type".into()))
    }

    /// `true` when the function has no variables.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Each variable's name and type, in node id order.
    pub fn specs(&self) -> &[TensorSpec] {
        &self.specs
    }

    /// The index of the variable whose node is `node`.
    pub fn index_of_node(&self, node: NodeId) -> Option<usize> {
        self.nodes.iter().position(|&n| n == node)
    }

    /// The index of the variable named `name`.
    ///
    /// # Errors
    /// [`RuntimeError::UnknownVariable`] listing the variables.
    pub fn index(&self, name: &str) -> Result<usize, RuntimeError> {
        self.specs
            .iter()
            .position(|s| s.name == name)
            .ok_or_else(|| RuntimeError::UnknownVariable {
                name: name.to_string(),
                known: if self.specs.is_empty() {
                    "none".to_string()
                } else {
                    let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
                    names.join(", ")
                },
            })
    }

    /// The value of variable `k`.
    pub fn value(&self, k: usize) -> &Tensor {
        &self.values[k]
    }

    /// The storage of variable `k`, to write in place; the caller keeps its type.
    pub fn value_mut(&mut self, k: usize) -> &mut Tensor {
        &mut self.values[k]
    }

    /// Every variable's value, by index.
    pub fn values(&self) -> &[Tensor] {
        &self.values
    }

    /// Every variable's storage, by index, to write in place; the caller keeps the types
    /// (a backend may move a value out during a step and must put it back).
    pub fn values_mut(&mut self) -> &mut [Tensor] {
        &mut self.values
    }

    /// Replaces the value of variable `k` by `value` of the same type.
    ///
    /// # Errors
    /// [`RuntimeError::VariableType`] if `value` has another element type or shape.
    pub fn set(&mut self, k: usize, value: &Tensor) -> Result<(), RuntimeError> {
        let spec = &self.specs[k];
        if !value.has_type(&spec.tensor_type) {
            return Err(RuntimeError::VariableType {
                name: spec.name.clone(),
                expected: Box::new(spec.tensor_type.clone()),
                got: Box::new(value.tensor_type()),
            });
        }
        self.values[k].data_mut().copy_from(value.data());
        Ok(())
    }

    /// Runs every initializer again.
    ///
    /// # Errors
    /// As [`Variables::of`]; the values are then unchanged.
    pub fn reset(&mut self) -> Result<(), RuntimeError> {
        let fresh = (0..self.specs.len())
            .map(|k| self.initial_value(k))
            .collect::<Result<Vec<_>, _>>()?;
        self.values = fresh;
        Ok(())
    }
}

/// The variables of a stateful Executable behind the lock that serializes its calls: a call
/// holds it from start to end, so calls from several threads run one at a time, each seeing
/// every write of the one before (stateless Executables have no store and no lock).
#[derive(Debug)]
pub struct VariableStore(Mutex<Variables>);

impl VariableStore {
    /// A store of `variables`; `None` when there are none.
    pub fn new(variables: Variables) -> Option<VariableStore> {
        (!variables.is_empty()).then(|| VariableStore(Mutex::new(variables)))
    }

    /// Holds the lock for a call (a call that panicked leaves the values as it left them).
    pub fn lock(&self) -> MutexGuard<'_, Variables> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// See [`crate::Executable::variable`].
    ///
    /// # Errors
    /// [`RuntimeError::UnknownVariable`].
    pub fn variable(&self, name: &str) -> Result<Tensor, RuntimeError> {
        let v = self.lock();
        Ok(v.value(v.index(name)?).clone())
    }

    /// See [`crate::Executable::set_variable`].
    ///
    /// # Errors
    /// [`RuntimeError::UnknownVariable`], [`RuntimeError::VariableType`].
    pub fn set_variable(&self, name: &str, value: &Tensor) -> Result<(), RuntimeError> {
        let mut v = self.lock();
        let k = v.index(name)?;
        v.set(k, value)
    }

    /// See [`crate::Executable::reset_variables`].
    ///
    /// # Errors
    /// As [`Variables::reset`].
    pub fn reset(&self) -> Result<(), RuntimeError> {
        self.lock().reset()
    }
}

/// The error for a variable asked of an Executable that has none.
pub fn no_variables(name: &str) -> RuntimeError {
    RuntimeError::UnknownVariable {
        name: name.to_string(),
        known: "none".to_string(),
    }
}
