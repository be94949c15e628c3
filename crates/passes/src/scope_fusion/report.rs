//! [`ScopeFusionReport`]: what scope fusion fused, discarded and refused, and why; shown by
//! `graphlift explain`.

use std::fmt;

use super::filter::DiscardReason;

/// A scope that became a fused op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FusedScope {
    /// The scope's full name.
    pub scope: String,
    /// The pass that matched it.
    pub pass: String,
    /// The fused op's type (`LayerNorm`).
    pub op_type: String,
    /// The fused node's name.
    pub node: String,
    /// The pass's description of the fused op.
    pub description: String,
    /// How many nodes the fused op stands for.
    pub inner_nodes: usize,
}

/// A match that passed its structure check but lost to another by the filtering rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscardedMatch {
    /// The scope's full name.
    pub scope: String,
    /// The pass that matched it.
    pub pass: String,
    /// Why it was discarded.
    pub reason: DiscardReason,
}

/// A scope whose patterns matched but whose data flow is not the fused op's computation;
/// the graph is left unchanged there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedMatch {
    /// The scope's full name.
    pub scope: String,
    /// The pass that matched it.
    pub pass: String,
    /// What the structure check found.
    pub reason: String,
}

/// What one run of scope fusion did ([`crate::PassRunReport::scope_fusion`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeFusionReport {
    /// The passes that ran, in registration order.
    pub passes: Vec<String>,
    /// Registered passes that were disabled.
    pub disabled: Vec<String>,
    /// Names asked to be disabled (environment) that no registered pass has.
    pub unknown_disabled: Vec<String>,
    /// Fused scopes, in the order they were matched.
    pub fused: Vec<FusedScope>,
    /// Verified matches discarded by the filtering rule.
    pub discarded: Vec<DiscardedMatch>,
    /// Matches refused by their structure check.
    pub failed: Vec<FailedMatch>,
}

impl fmt::Display for ScopeFusionReport {
    /// Passes, then one line per fused, discarded and refused match.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "passes: {}", list(&self.passes))?;
        if !self.disabled.is_empty() {
            writeln!(f, "disabled: {}", list(&self.disabled))?;
        }
        if !self.unknown_disabled.is_empty() {
            writeln!(
                f,
                "asked to disable, but no such pass: {}",
                list(&self.unknown_disabled)
            )?;
        }
        for s in &self.fused {
            writeln!(
                f,
                "fused  `{}` by {} -> {} `{}` ({} nodes): {}",
                s.scope, s.pass, s.op_type, s.node, s.inner_nodes, s.description
            )?;
        }
        for d in &self.discarded {
            writeln!(f, "discarded `{}` by {}: {}", d.scope, d.pass, d.reason)?;
        }
        for x in &self.failed {
            writeln!(f, "not fused `{}` by {}: {}", x.scope, x.pass, x.reason)?;
        }
        Ok(())
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}
