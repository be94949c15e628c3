//! Dead code elimination: nodes no result needs are removed.

use graphlift_ir::Function;

use crate::{Pass, PassError};

#[cfg(test)]
mod tests;

/// Removes every node that no Result or sink reaches through data inputs or control
/// dependencies (nGraph's and TVM's `DeadCodeElimination`), by
/// [`Function::remove_dead_nodes`].
///
/// Kept: every Parameter (even unused: the call signature does not change), every Result,
/// every sink ([`Function::sinks`]: the main stream's assigns, which run on every call
/// although no result reads them), and every node a kept node reaches, including nodes
/// reached only through control dependencies (`other_deps`): a node something must run
/// after is live. So the reads an assign waits for, and the assigns a read waits for, stay.
/// An assign made inside `saved_user_deps` that no result needs is not a sink and does not
/// run, so it goes; so does a Variable that no live node reads or assigns. The pass creates
/// and rewrites no node, so it records no pass history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeadCodeElimination;

impl DeadCodeElimination {
    /// The pass's name.
    pub const NAME: &'static str = "dead_code_elimination";
}

impl Pass for DeadCodeElimination {
    fn name(&self) -> &'static str {
        DeadCodeElimination::NAME
    }

    /// Removes dead nodes; `true` when at least one was removed.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` does not validate. `f` is then unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        f.validate()?;
        Ok(f.remove_dead_nodes() > 0)
    }
}
