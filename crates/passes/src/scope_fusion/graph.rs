//! CANN's `ScopeGraph`: the function, its [`ScopeTree`] and the scopes each pass matched.

use std::collections::HashSet;

use graphlift_ir::{Function, NodeId, Op};

use super::features::ScopeFusionPatterns;
use super::tree::{ScopeId, ScopeTree};

/// A scope a pass's patterns matched (before the structure check and filtering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopeMatch {
    /// The scope.
    pub scope: ScopeId,
    /// The pass's position in the registry (its registration order).
    pub pass: usize,
}

/// The function being fused, its scope tree, and the match results so far.
#[derive(Debug, Clone)]
pub struct ScopeGraph<'f> {
    function: &'f Function,
    tree: ScopeTree,
    matches: Vec<ScopeMatch>,
}

impl<'f> ScopeGraph<'f> {
    /// The scope graph of `f`, with no matches yet.
    pub fn new(function: &'f Function) -> ScopeGraph<'f> {
        ScopeGraph {
            function,
            tree: ScopeTree::new(function),
            matches: Vec::new(),
        }
    }

    /// The function.
    pub fn function(&self) -> &'f Function {
        self.function
    }

    /// The scope tree.
    pub fn tree(&self) -> &ScopeTree {
        &self.tree
    }

    /// The nodes a fusion of scope `id` may replace: the scope's nodes (sub-scopes
    /// included) and the helpers that serve only them wherever their names put them
    /// (`Broadcast`, `Reshape` and `Constant` nodes all of whose users are such nodes; a
    /// builder or importer names those after no module).
    pub fn scope_nodes(&self, id: ScopeId) -> HashSet<NodeId> {
        let mut nodes: HashSet<NodeId> = self.tree.all_nodes(id).into_iter().collect();
        let helper = |op: &Op| matches!(op, Op::Broadcast(_) | Op::Reshape(_) | Op::Constant(_));
        let mut grew = true;
        while grew {
            grew = false;
            for n in self.function.nodes() {
                if nodes.contains(&n.id()) || !helper(n.op()) || !n.has_users() {
                    continue;
                }
                if (0..n.outputs().len()).all(|i| n.users(i).iter().all(|(u, _)| nodes.contains(u)))
                {
                    nodes.insert(n.id());
                    grew = true;
                }
            }
        }
        nodes
    }

    /// Every match so far, in the order passes made them.
    pub fn matches(&self) -> &[ScopeMatch] {
        &self.matches
    }

    /// Matches `patterns` batch by batch for the pass at registry position `pass`: each
    /// batch types the scopes it matches (types of an earlier pass are cleared first); the
    /// last batch's scopes are recorded as matches and returned. The root scope is never a
    /// candidate.
    pub fn match_patterns(&mut self, patterns: &ScopeFusionPatterns, pass: usize) -> Vec<ScopeId> {
        let ids: Vec<ScopeId> = self.tree.scopes().map(|s| s.id()).collect();
        for &id in &ids {
            self.tree.set_type(id, None);
        }
        let mut last = Vec::new();
        for batch in patterns {
            last.clear();
            for &id in ids.iter().skip(1) {
                let Some(scope) = self.tree.get(id) else {
                    continue;
                };
                let hit = batch
                    .iter()
                    .find(|p| p.matches(scope, &self.tree, self.function));
                if let Some(p) = hit {
                    let t = p.sub_type.clone();
                    self.tree.set_type(id, Some(t));
                    last.push(id);
                }
            }
        }
        self.matches
            .extend(last.iter().map(|&scope| ScopeMatch { scope, pass }));
        last
    }
}
