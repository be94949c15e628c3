//! The `Pass` trait: one rewrite of a function.

use graphlift_ir::Function;

use crate::PassError;

/// A rewrite of a [`Function`], run in place.
///
/// Like nGraph's `FunctionPass`: a pass has a stable name (recorded in the pass history of
/// every node it creates or rewrites) and reports whether it changed the function.
pub trait Pass {
    /// The pass's name, e.g. `"subgraph_extraction"`.
    fn name(&self) -> &'static str;

    /// Rewrites `f`; returns `true` when anything changed.
    ///
    /// # Errors
    /// A [`PassError`]; `f` is then left unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError>;
}
