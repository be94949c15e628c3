//! Variables in the builder, with Nervana Graph's ordering semantics: reads and assigns are
//! logged in creation order, and each computation orders the ones it contains by that log.
//!
//! `x = variable(0); a = assign(x, 5); z = x + 1` gives `z = 6`: a read made after an assign
//! of its variable runs after it, and an assign runs after the reads and assigns of its
//! variable made before it. Assigns made in the main stream run in every computation (they
//! are its sinks); assigns made inside [`FunctionBuilder::saved_user_deps`] run only in
//! computations whose results need them.

use std::collections::BTreeSet;

use super::{FunctionBuilder, Value};
use crate::{CreationSite, Function, IrError, NodeId, Op, Output};

/// A read or an assign of a variable, as logged by the builder.
#[derive(Debug, Clone, Copy)]
pub(super) struct Access {
    node: NodeId,
    /// `None` for a read; for an assign, whether it was made inside `saved_user_deps`.
    assign: Option<bool>,
}

impl FunctionBuilder {
    /// A new variable named `name` (unique in the function) whose initial value is
    /// `initial_value`: the subgraph behind it (constants and ops, no parameters, no state)
    /// becomes the variable's initializer, which a backend runs before the first call and
    /// on `reset_variables` (Nervana Graph's `variable(initial_value=...)`).
    ///
    /// The value returned stands for the variable: used as an operand it is read where it
    /// is used (see [`FunctionBuilder::op`]); [`FunctionBuilder::assign`] writes it.
    ///
    /// ```
    /// use graphlift_ir::{ElementType::F32, FunctionBuilder};
    /// let b = FunctionBuilder::new("counter");
    /// let w = b.variable("w", b.scalar(F32, 0.0));
    /// b.assign(w, w + 1.0);
    /// let f = b.finish(&[w]).unwrap(); // each call adds 1 and returns w: 1, 2, 3, ...
    /// assert_eq!(f.sinks().len(), 1);
    /// ```
    ///
    /// # Errors (recorded, returned by `finish`)
    /// [`IrError::DuplicateName`] for a name taken by another node (two variables of one
    /// name included); [`IrError::State`] for an initial value that reads a parameter or a
    /// variable.
    #[track_caller]
    pub fn variable(&self, name: &str, initial_value: Value<'_>) -> Value<'_> {
        if !self.check_owned(&"Variable", &[initial_value]) {
            return self.value(None);
        }
        let Some(init) = initial_value.output else {
            return self.value(None);
        };
        let site = CreationSite::caller();
        let r = self.with_function(|f| {
            let initializer = subgraph(f, init, name)?;
            f.add_variable_at(name, initializer, site)
        });
        self.value(r)
    }

    /// Writes `value` into the whole of `variable` (same element type and shape; no
    /// broadcast) and returns the value written (Nervana Graph's `assign`). It is ordered
    /// after the reads and assigns of `variable` made before it, and reads made after it
    /// see the value. Made in the main stream it runs on every call of every computation;
    /// inside [`FunctionBuilder::saved_user_deps`], only where a result needs it.
    ///
    /// # Errors (recorded, returned by `finish`)
    /// [`IrError::State`] if `variable` is not a variable; [`IrError::Inference`] if the
    /// value's element type or shape differs from the variable's.
    #[track_caller]
    pub fn assign<'b>(&'b self, variable: Value<'b>, value: Value<'b>) -> Value<'b> {
        self.op(Op::Assign, &[variable, value])
    }

    /// Runs `build` with the assigns it makes kept out of the main stream (Nervana Graph's
    /// `saved_user_deps`): they run only in computations whose results need them, as an
    /// optimizer's update runs only when its step is asked for.
    pub fn saved_user_deps<R>(&self, build: impl FnOnce() -> R) -> R {
        self.guarded.set(self.guarded.get() + 1);
        let r = build();
        self.guarded.set(self.guarded.get() - 1);
        r
    }

    /// The variables upstream of `of` through inputs (`of` itself if it is one), in creation
    /// order: an optimizer's parameter list.
    pub fn variables<'b>(&'b self, of: Value<'b>) -> Vec<Value<'b>> {
        if !self.owns(&of) {
            return Vec::new();
        }
        let Some(o) = of.output else {
            return Vec::new();
        };
        let f = self.function.borrow();
        let mut seen = BTreeSet::new();
        let mut found = BTreeSet::new();
        let mut stack = vec![o.node];
        while let Some(id) = stack.pop() {
            let Some(n) = f.get(id).filter(|_| seen.insert(id)) else {
                continue;
            };
            if matches!(n.op(), Op::Variable(_)) {
                found.insert(id);
            }
            stack.extend(n.inputs().iter().map(|o| o.node));
        }
        drop(f);
        found.into_iter().map(|id| self.value(Some(id))).collect()
    }

    /// The function of `results` over the graph built so far, leaving the builder as it is,
    /// so that one graph gives several computations (Nervana Graph's
    /// `transformer.computation`), each compiled on its own. It holds the graph, a Result
    /// per value (a variable is read after everything made before), the main stream's
    /// assigns as sinks, and the control dependencies that order the reads and assigns it
    /// runs by creation order.
    ///
    /// # Errors
    /// The first error any builder call recorded (the builder keeps it);
    /// [`IrError::ForeignValue`] for a result of another builder or function.
    #[track_caller]
    pub fn computation(&self, results: &[Value<'_>]) -> Result<Function, IrError> {
        let site = CreationSite::caller();
        let outs: Option<Vec<Output>> = if self.check_owned(&"Result", results) {
            results.iter().map(|v| v.output).collect()
        } else {
            None
        };
        if let Some(e) = self.error() {
            return Err(e);
        }
        let mut f = self.function.borrow().clone();
        let mut log = self.log.borrow().clone();
        for mut o in outs.unwrap_or_default() {
            // A variable result is read after everything made so far, in this computation
            // only (the builder's graph is left as it is).
            if let Some(Op::Variable(_)) = f.get(o.node).map(|n| n.op()) {
                let read = f.add_node_at(Op::ReadVariable, &[o], site.clone())?;
                log.push(Access {
                    node: read,
                    assign: None,
                });
                o = Output::from(read);
            }
            f.add_result(o, None)?;
        }
        for a in log.iter().filter(|a| a.assign == Some(false)) {
            f.add_sink(a.node)?;
        }
        let live = f.live_nodes();
        let order: Vec<NodeId> = log
            .iter()
            .map(|a| a.node)
            .filter(|n| live[n.index()])
            .collect();
        f.order_accesses(&order)?;
        f.validate()?;
        Ok(f)
    }

    /// `o`, or a new read of it when it is a variable.
    pub(super) fn read_if_variable(&self, o: Output, site: &CreationSite) -> Option<Output> {
        let is_variable = matches!(
            self.function.borrow().get(o.node).map(|n| n.op()),
            Some(Op::Variable(_))
        );
        if !is_variable {
            return Some(o);
        }
        let r = self
            .function
            .borrow_mut()
            .add_node_at(Op::ReadVariable, &[o], site.clone());
        let id = self.record(r)?;
        self.log_access(id);
        Some(Output::from(id))
    }

    /// Logs node `id` if it reads or assigns a variable.
    pub(super) fn log_access(&self, id: NodeId) {
        let f = self.function.borrow();
        let (Some(n), Some(_)) = (f.get(id), f.variable_of(id)) else {
            return;
        };
        let assign = matches!(n.op(), Op::Assign).then(|| self.guarded.get() > 0);
        self.log.borrow_mut().push(Access { node: id, assign });
    }
}

/// The subgraph of `f` behind `value`, as the initializer of variable `variable`: a
/// function named `<variable>_initializer` of one result.
///
/// # Errors
/// [`IrError::State`] naming the variable if the subgraph uses state.
fn subgraph(f: &Function, value: Output, variable: &str) -> Result<Function, IrError> {
    let mut need = vec![false; f.arena_len()];
    let mut stack = vec![value.node];
    while let Some(id) = stack.pop() {
        if !std::mem::replace(&mut need[id.index()], true) {
            stack.extend(f.node(id)?.inputs().iter().map(|o| o.node));
        }
    }
    let mut g = Function::new(format!("{variable}_initializer"));
    let mut map = std::collections::HashMap::new();
    for id in f.topological_order()? {
        if !need[id.index()] {
            continue;
        }
        let n = f.node(id)?;
        if n.op().is_stateful() {
            return Err(f.state_error(
                variable,
                format!(
                    "the initializer uses state (`{}`, a {}): initial values are computed \
                     from constants and ops only",
                    n.name(),
                    n.op()
                ),
            ));
        }
        let ins: Vec<Output> = n
            .inputs()
            .iter()
            .map(|o| Output::new(map[&o.node], o.index))
            .collect();
        map.insert(id, g.import_node_from(f, id, &ins)?);
    }
    g.add_result(Output::new(map[&value.node], value.index), None)?;
    Ok(g)
}
