//! Filtering of nested and overlapping matches, by one rule:
//!
//! 0. **The same nodes, the innermost scope**: matches whose fused ops stand for exactly the
//!    same nodes (an enclosing scope that holds nothing else) are one match; the innermost
//!    scope, which names the block, keeps it.
//! 1. **The outermost wins**: of two verified matches whose scopes nest, the one on the
//!    enclosing scope is kept (whichever pass made it), and the inner one is discarded.
//! 2. **Of two overlapping, the first registered wins**: two passes matching the same scope
//!    keep the one registered first.
//!
//! Scopes form a tree, so two scopes overlap only when they are equal or nest; only matches
//! that passed their structure check take part (a failed outer match discards nothing).

use graphlift_ir::NodeId;

use super::tree::{ScopeId, ScopeTree};

/// Why a verified match was not rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscardReason {
    /// A match inside its scope stands for the same nodes (the innermost scope keeps it).
    SameNodes {
        /// The inner scope's full name.
        scope: String,
    },
    /// Its scope lies inside the scope of a kept match (the outermost wins).
    NestedIn {
        /// The enclosing scope's full name.
        scope: String,
        /// The pass that matched it.
        pass: String,
    },
    /// A pass registered earlier matched the same scope.
    SameScope {
        /// That pass.
        pass: String,
    },
}

impl std::fmt::Display for DiscardReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiscardReason::SameNodes { scope } => {
                write!(f, "the same nodes as the match of scope `{scope}` inside it")
            }
            DiscardReason::NestedIn { scope, pass } => {
                write!(f, "nested in scope `{scope}` matched by `{pass}` (the outermost wins)")
            }
            DiscardReason::SameScope { pass } => write!(
                f,
                "the same scope was matched by `{pass}`, registered earlier (the first registered wins)"
            ),
        }
    }
}

/// A verified match to filter: its scope and its pass's registry position and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Candidate<'a> {
    pub scope: ScopeId,
    pub pass: usize,
    pub pass_name: &'a str,
    /// The nodes its fused ops stand for, sorted.
    pub nodes: &'a [NodeId],
}

/// For each candidate, in order, `None` when it is kept, else why it is discarded.
pub(crate) fn filter(tree: &ScopeTree, candidates: &[Candidate<'_>]) -> Vec<Option<DiscardReason>> {
    let name = |s: ScopeId| tree.get(s).map_or(String::new(), |x| x.name().to_string());
    let strictly_inside = |a: ScopeId, b: ScopeId| a != b && tree.is_within(a, b);
    // Rule 0 first: a match with the same nodes as one inside its scope drops out.
    let alias: Vec<Option<ScopeId>> = candidates
        .iter()
        .map(|c| {
            candidates
                .iter()
                .filter(|o| strictly_inside(o.scope, c.scope) && o.nodes == c.nodes)
                .max_by_key(|o| depth(tree, o.scope))
                .map(|o| o.scope)
        })
        .collect();
    let live: Vec<&Candidate<'_>> = candidates
        .iter()
        .zip(&alias)
        .filter(|(_, a)| a.is_none())
        .map(|(c, _)| c)
        .collect();
    candidates
        .iter()
        .zip(&alias)
        .map(|(c, alias)| {
            if let Some(inner) = alias {
                return Some(DiscardReason::SameNodes {
                    scope: name(*inner),
                });
            }
            let candidates = &live;
            // The winner against c: an earlier-registered match of the same scope, else the
            // outermost match of a strictly enclosing scope.
            let same = candidates
                .iter()
                .filter(|o| o.scope == c.scope && o.pass < c.pass)
                .min_by_key(|o| o.pass);
            if let Some(o) = same {
                return Some(DiscardReason::SameScope {
                    pass: o.pass_name.to_string(),
                });
            }
            let outer = candidates
                .iter()
                .filter(|o| o.scope != c.scope && tree.is_within(c.scope, o.scope))
                .min_by_key(|o| (depth(tree, o.scope), o.pass));
            outer.map(|o| DiscardReason::NestedIn {
                scope: name(o.scope),
                pass: o.pass_name.to_string(),
            })
        })
        .collect()
}

fn depth(tree: &ScopeTree, s: ScopeId) -> usize {
    let mut d = 0;
    let mut at = tree.get(s).and_then(|x| x.parent());
    while let Some(p) = at {
        d += 1;
        at = tree.get(p).and_then(|x| x.parent());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::{ElementType::F32, FunctionBuilder};

    fn tree() -> ScopeTree {
        let b = FunctionBuilder::new("t");
        let x = b.parameter("x", F32, [2]);
        let y = x
            .exp()
            .named("a/b/c/x")
            .exp()
            .named("a/b/y")
            .exp()
            .named("d/z");
        ScopeTree::new(&b.finish(&[y]).unwrap())
    }

    #[test]
    fn the_outermost_wins_then_the_first_registered() {
        let t = tree();
        let id = |n: &str| t.find(n).unwrap().id();
        let (n1, n2) = ([], [t.all_nodes(id("a/b"))[0]]);
        let c = |scope: &str, pass: usize, pass_name, nodes| Candidate {
            scope: id(scope),
            pass,
            pass_name,
            nodes,
        };
        let cands = [
            c("a/b/c", 0, "inner", &n1[..]),
            c("a/b", 1, "outer", &n2[..]),
            c("a/b", 2, "late", &n2[..]),
            c("d", 2, "late", &n2[..]),
            c("a", 1, "outer", &n2[..]),
        ];
        let out = filter(&t, &cands);
        assert_eq!(
            out[0],
            Some(DiscardReason::NestedIn {
                scope: "a/b".into(),
                pass: "outer".into()
            })
        );
        assert_eq!(out[1], None);
        assert_eq!(
            out[2],
            Some(DiscardReason::SameScope {
                pass: "outer".into()
            })
        );
        assert_eq!(out[3], None);
        assert_eq!(
            out[4],
            Some(DiscardReason::SameNodes {
                scope: "a/b".into()
            })
        );
        assert!(out[0].as_ref().unwrap().to_string().contains("outermost"));
    }
}
