//! CANN's `ScopeTree` and `Scope`: the scopes that exporters write into node names
//! (`/encoder/layer.0/attention/LayerNorm/ReduceMean`, `bert/encoder/layer_0/.../moments/mean`),
//! built from the names alone. Any string is a valid name: nothing here panics or fails.

use std::collections::BTreeMap;

use graphlift_ir::{Function, NodeId, Op};

/// The index of a [`Scope`] in its [`ScopeTree`] (the root is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(pub(crate) usize);

/// One scope: a `/`-separated prefix shared by node names (CANN's `Scope`).
///
/// A node named `a/b/Add_1` lies directly in scope `a/b` (its last component names the node,
/// not a scope); the root scope (full name `""`) holds nodes whose names have no `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    id: ScopeId,
    name: String,
    last_name: String,
    parent: Option<ScopeId>,
    children: BTreeMap<String, ScopeId>,
    nodes: Vec<NodeId>,
    op_types: BTreeMap<String, usize>,
    pub(crate) scope_type: Option<String>,
}

impl Scope {
    /// The scope's id in its tree.
    pub fn id(&self) -> ScopeId {
        self.id
    }

    /// The full name, components joined by `/` without a leading one
    /// (`encoder/layer.0/attention/LayerNorm`); `""` for the root (CANN's `Name`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The last component (`LayerNorm_1`; CANN's `LastName`).
    pub fn last_name(&self) -> &str {
        &self.last_name
    }

    /// [`Scope::last_name`] without a numeric suffix that exporters add to repeated names
    /// (`LayerNorm_1` and `layer.0` give `LayerNorm` and `layer`).
    pub fn base_name(&self) -> &str {
        base_name(&self.last_name)
    }

    /// The type a pattern gave the scope when it matched (CANN's `SubType`), if any.
    pub fn scope_type(&self) -> Option<&str> {
        self.scope_type.as_deref()
    }

    /// The enclosing scope (`None` for the root; CANN's `GetFatherScope`).
    pub fn parent(&self) -> Option<ScopeId> {
        self.parent
    }

    /// The direct sub-scopes, by last name.
    pub fn sub_scopes(&self) -> impl Iterator<Item = ScopeId> + '_ {
        self.children.values().copied()
    }

    /// The nodes directly in this scope (not in a sub-scope), in function order.
    pub fn own_nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// How many nodes of each op type (`Op::type_name`) the scope holds, its sub-scopes
    /// included.
    pub fn op_types(&self) -> &BTreeMap<String, usize> {
        &self.op_types
    }

    /// How many nodes of op type `op_type` the scope holds, sub-scopes included.
    pub fn op_type_count(&self, op_type: &str) -> usize {
        self.op_types.get(op_type).copied().unwrap_or(0)
    }
}

/// `name` without one trailing `_<digits>` or `.<digits>` (`Add_1` -> `Add`; `_1` stays).
pub(crate) fn base_name(name: &str) -> &str {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits == name.len() {
        return name;
    }
    let head = &name[..name.len() - digits];
    match head.strip_suffix(['_', '.']) {
        Some(base) if !base.is_empty() => base,
        _ => name,
    }
}

/// The scope components of a node name: every `/`-separated component but the last, empty
/// ones (a leading `/`, `//`) skipped.
pub(crate) fn scope_components(name: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = name.split('/').collect();
    parts.pop();
    parts.retain(|p| !p.is_empty());
    parts
}

/// CANN's `ScopeTree`: every scope named by some node, with its nodes and op-type counts.
///
/// Parameters and Results are never in a scope (they are the graph's boundary); every other
/// node is, Constants included. Nodes sharing a name (possible through
/// [`ScopeTree::from_names`]) both go into that name's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeTree {
    scopes: Vec<Scope>,
}

impl ScopeTree {
    /// The tree of `f`'s node names (nodes other than Parameters and Results).
    pub fn new(f: &Function) -> ScopeTree {
        ScopeTree::from_names(
            f.nodes()
                .filter(|n| !matches!(n.op(), Op::Parameter | Op::Result))
                .map(|n| (n.id(), n.name(), n.op().type_name())),
        )
    }

    /// The tree of `(node, name, op type)` triples, in the given order.
    pub fn from_names<'a>(
        nodes: impl IntoIterator<Item = (NodeId, &'a str, &'a str)>,
    ) -> ScopeTree {
        let mut tree = ScopeTree {
            scopes: vec![Scope::new(ScopeId(0), String::new(), String::new(), None)],
        };
        for (id, name, op_type) in nodes {
            let mut at = ScopeId(0);
            *tree.scopes[0]
                .op_types
                .entry(op_type.to_string())
                .or_default() += 1;
            for part in scope_components(name) {
                at = tree.child(at, part);
                *tree.scopes[at.0]
                    .op_types
                    .entry(op_type.to_string())
                    .or_default() += 1;
            }
            tree.scopes[at.0].nodes.push(id);
        }
        tree
    }

    fn child(&mut self, parent: ScopeId, part: &str) -> ScopeId {
        if let Some(&c) = self.scopes[parent.0].children.get(part) {
            return c;
        }
        let id = ScopeId(self.scopes.len());
        let p = &self.scopes[parent.0];
        let name = if p.name.is_empty() {
            part.to_string()
        } else {
            format!("{}/{part}", p.name)
        };
        self.scopes
            .push(Scope::new(id, name, part.to_string(), Some(parent)));
        self.scopes[parent.0].children.insert(part.to_string(), id);
        id
    }

    /// The root scope (full name `""`).
    pub fn root(&self) -> &Scope {
        &self.scopes[0]
    }

    /// The scope `id` (`None` for an id of another tree that is out of range).
    pub fn get(&self, id: ScopeId) -> Option<&Scope> {
        self.scopes.get(id.0)
    }

    /// The scope of full name `name` (a leading `/` and empty components ignored).
    pub fn find(&self, name: &str) -> Option<&Scope> {
        let mut at = &self.scopes[0];
        for part in name.split('/').filter(|p| !p.is_empty()) {
            at = &self.scopes[at.children.get(part)?.0];
        }
        Some(at)
    }

    /// Every scope, the root first, parents before their sub-scopes.
    pub fn scopes(&self) -> impl Iterator<Item = &Scope> {
        self.scopes.iter()
    }

    /// Every node in scope `id` and its sub-scopes (CANN's `AllNodesMap`), parents' first.
    pub fn all_nodes(&self, id: ScopeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(s) = stack.pop() {
            if let Some(scope) = self.scopes.get(s.0) {
                out.extend_from_slice(&scope.nodes);
                stack.extend(scope.children.values().rev());
            }
        }
        out
    }

    /// Whether scope `inner` is `outer` or lies inside it.
    pub fn is_within(&self, inner: ScopeId, outer: ScopeId) -> bool {
        let mut at = Some(inner);
        while let Some(s) = at {
            if s == outer {
                return true;
            }
            at = self.scopes.get(s.0).and_then(|x| x.parent);
        }
        false
    }

    pub(crate) fn set_type(&mut self, id: ScopeId, scope_type: Option<String>) {
        if let Some(s) = self.scopes.get_mut(id.0) {
            s.scope_type = scope_type;
        }
    }
}

impl Scope {
    fn new(id: ScopeId, name: String, last_name: String, parent: Option<ScopeId>) -> Scope {
        Scope {
            id,
            name,
            last_name,
            parent,
            children: BTreeMap::new(),
            nodes: Vec::new(),
            op_types: BTreeMap::new(),
            scope_type: None,
        }
    }
}
