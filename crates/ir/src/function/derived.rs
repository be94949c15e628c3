//! Facts a [`Function`] derives from its graph (that it validates, its topological order),
//! remembered until the graph next changes.
//!
//! A compile runs the same function through several passes, each of which needs a valid,
//! acyclic input; most passes change nothing on a small graph. Remembering the facts makes
//! the second and later questions cost nothing. Every `&mut self` method of [`Function`] that
//! can change what [`Function::validate`] or [`Function::topological_order`] look at (nodes,
//! inputs, outputs, names, control dependencies, parameters, results) forgets them first, so
//! a remembered fact is never stale; debug builds recompute and compare on every use.

use std::sync::OnceLock;

use crate::NodeId;

#[cfg(doc)]
use super::Function;

/// The remembered facts; empty on a new or changed function. A clone keeps them (it is the
/// same graph); equality ignores them (they are derived).
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
