//! Facts a [`Function`] derives from its graph (that it validates, its topological order),
//! remembered until the graph next changes, because a compile asks the same questions of an
//! unchanged function in pass after pass.

use std::sync::OnceLock;

use crate::NodeId;

#[cfg(doc)]
use super::Function;

/// The remembered facts; empty on a new or changed function. A clone keeps them (it is the
/// same graph); equality ignores them (they are derived).
///
/// Every `&mut self` method of [`Function`] that can change what [`Function::validate`] or
/// [`Function::topological_order`] look at (nodes, inputs, outputs, names, control
/// dependencies, parameters, results) calls [`Derived::forget`] first, so a remembered fact
/// is never stale; debug builds recompute and compare on every use.
#[derive(Debug, Clone, Default)]
pub(super) struct Derived {
    /// Set when [`Function::validate`] succeeded.
    pub(super) validated: OnceLock<()>,
    /// The result of [`Function::topological_order`] when it succeeded.
    pub(super) order: OnceLock<Vec<NodeId>>,
}

impl Derived {
    /// Forgets every fact (the graph is about to change).
    pub(super) fn forget(&mut self) {
        self.validated = OnceLock::new();
        self.order = OnceLock::new();
    }
}

impl PartialEq for Derived {
    fn eq(&self, _: &Derived) -> bool {
        true
    }
}
