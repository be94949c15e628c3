//! Scope fusion, as Huawei CANN defines it: exporters name nodes by the module that made
//! them (`/encoder/layer.0/attention/LayerNorm/ReduceMean`), those names form a
//! [`ScopeTree`], registered passes ([`ScopeBasePass`]) select scopes by their contents
//! ([`ScopePattern`]s of features) and return fused ops ([`FusionScopesResult`]) after
//! checking the scope's data flow, nested and overlapping matches are filtered by one
//! rule (`filter.rs`), and each result replaces its scope through `replace_node`.
//! Names propose, data flow decides: a name alone never fuses anything.

mod builtin;
mod features;
mod filter;
mod graph;
mod pass;
mod registry;
mod report;
mod rewrite;
mod tree;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

use std::collections::HashSet;

use graphlift_ir::Function;

pub use builtin::{AttentionPass, ConvBnActivationPass, LayerNormPass, SoftmaxPass};
pub use features::{
    op_attribute, Count, NodeAttrFeature, NodeOpTypeFeature, ScopeAttrValue, ScopeFeature,
    ScopeFusionPatterns, ScopePattern,
};
pub use filter::DiscardReason;
pub use graph::{ScopeGraph, ScopeMatch};
pub use pass::{FusedInput, FusionScopesResult, ScopeBasePass, StructureMismatch};
pub use registry::{ScopeFusionRegistry, DISABLE_SCOPE_PASSES_ENV};
pub use report::{DiscardedMatch, FailedMatch, FusedScope, ScopeFusionReport};
pub use rewrite::SCOPE_KEY;
pub use tree::{Scope, ScopeId, ScopeTree};

use crate::{Pass, PassError, PassOutcome};
use filter::Candidate;
use rewrite::Accepted;

/// The pass's name in a [`crate::PassManager`]; fused nodes record
/// `scope_fusion:<scope pass name>` in their pass history.
pub const PASS_NAME: &str = "scope_fusion";

/// The scope fusion pass: runs the enabled passes of a [`ScopeFusionRegistry`] in
/// registration order over the function's [`ScopeTree`], checks each match's structure,
/// filters nested and overlapping matches, and rewrites the rest; reports all of it
/// ([`ScopeFusionReport`]). It must run before any pass that renames nodes (it comes first
/// in [`crate::PassManager::default_pipeline`]).
#[derive(Debug, Clone)]
pub struct ScopeFusion {
    registry: ScopeFusionRegistry,
}

impl Default for ScopeFusion {
    /// With the built-in passes, all enabled.
    fn default() -> ScopeFusion {
        ScopeFusion::new(ScopeFusionRegistry::builtin())
    }
}

/// A match whose structure check passed.
struct Verified {
    scope: ScopeId,
    scope_name: String,
    pass: usize,
    pass_name: String,
    results: Vec<FusionScopesResult>,
    /// The results' inner nodes, sorted.
    nodes: Vec<graphlift_ir::NodeId>,
}

impl ScopeFusion {
    /// The pass running `registry`'s enabled passes.
    pub fn new(registry: ScopeFusionRegistry) -> ScopeFusion {
        ScopeFusion { registry }
    }

    /// The registry it runs.
    pub fn registry(&self) -> &ScopeFusionRegistry {
        &self.registry
    }

    /// Rewrites `f` and reports what it fused, discarded and refused.
    ///
    /// # Errors
    /// [`PassError::Ir`] or [`PassError::Broken`] when a verified result cannot be built
    /// (a bug in the scope pass that produced it); `f` is then unchanged.
    pub fn fuse(&self, f: &mut Function) -> Result<ScopeFusionReport, PassError> {
        let mut report = ScopeFusionReport::default();
        for (p, enabled) in self.registry.passes() {
            let list = if enabled {
                &mut report.passes
            } else {
                &mut report.disabled
            };
            list.push(p.pass_name().to_string());
        }
        report.unknown_disabled = self.registry.unknown_disabled().map(String::from).collect();
        let mut graph = ScopeGraph::new(f);
        let mut verified = Vec::new();
        for (i, (pass, enabled)) in self.registry.passes().enumerate() {
            if !enabled {
                continue;
            }
            let candidates = graph.match_patterns(&pass.define_patterns(), i);
            for s in candidates {
                let Some(scope) = graph.tree().get(s) else {
                    continue;
                };
                let nodes = graph.scope_nodes(s);
                let checked = pass
                    .generate_fusion_result(scope, &graph)
                    .and_then(|rs| check_results(f, &nodes, rs));
                match checked {
                    Ok(results) => verified.push(Verified {
                        nodes: {
                            let mut n: Vec<_> =
                                results.iter().flat_map(|r| r.inner_nodes.clone()).collect();
                            n.sort();
                            n
                        },
                        scope: s,
                        scope_name: scope.name().to_string(),
                        pass: i,
                        pass_name: pass.pass_name().to_string(),
                        results,
                    }),
                    Err(m) => report.failed.push(FailedMatch {
                        scope: scope.name().to_string(),
                        pass: pass.pass_name().to_string(),
                        reason: m.0,
                    }),
                }
            }
        }
        let candidates: Vec<Candidate<'_>> = verified
            .iter()
            .map(|v| Candidate {
                scope: v.scope,
                pass: v.pass,
                pass_name: &v.pass_name,
                nodes: &v.nodes,
            })
            .collect();
        let decisions = filter::filter(graph.tree(), &candidates);
        let mut accepted = Vec::new();
        for (v, decision) in verified.into_iter().zip(decisions) {
            if let Some(reason) = decision {
                report.discarded.push(DiscardedMatch {
                    scope: v.scope_name,
                    pass: v.pass_name,
                    reason,
                });
                continue;
            }
            for r in v.results {
                report.fused.push(FusedScope {
                    scope: v.scope_name.clone(),
                    pass: v.pass_name.clone(),
                    op_type: r.op.type_name().to_string(),
                    node: String::new(),
                    description: r.description.clone(),
                    inner_nodes: r.inner_nodes.len(),
                });
                accepted.push(Accepted {
                    scope: v.scope_name.clone(),
                    pass: v.pass_name.clone(),
                    result: r,
                });
            }
        }
        if accepted.is_empty() {
            return Ok(report);
        }
        let mut g = f.clone();
        let names = rewrite::apply(&mut g, &accepted)?;
        for (s, name) in report.fused.iter_mut().zip(names) {
            s.node = name;
        }
        *f = g;
        Ok(report)
    }
}

/// The framework's checks of a pass's results for one scope ([`rewrite::check_result`]),
/// and that they share no inner node.
fn check_results(
    f: &Function,
    scope: &HashSet<graphlift_ir::NodeId>,
    results: Vec<FusionScopesResult>,
) -> Result<Vec<FusionScopesResult>, StructureMismatch> {
    if results.is_empty() {
        return Err(StructureMismatch::new("the pass produced no fused op"));
    }
    let mut seen = HashSet::new();
    for r in &results {
        rewrite::check_result(f, scope, r)?;
        if let Some(n) = r.inner_nodes.iter().find(|&&n| !seen.insert(n)) {
            return Err(StructureMismatch::new(format!(
                "inner node {n} belongs to two fused ops"
            )));
        }
    }
    Ok(results)
}

impl Pass for ScopeFusion {
    fn name(&self) -> &'static str {
        PASS_NAME
    }

    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        Ok(!self.fuse(f)?.fused.is_empty())
    }

    fn run_with_report(&self, f: &mut Function) -> Result<PassOutcome, PassError> {
        let report = self.fuse(f)?;
        Ok(PassOutcome {
            changed: !report.fused.is_empty(),
            scope_fusion: Some(report),
            ..PassOutcome::default()
        })
    }
}
