//! CANN's scope features and patterns: what a [`Scope`] must contain to match.
//! A pattern ([`ScopePattern`]) is a list of features that must all hold; a pass declares
//! batches of patterns ([`ScopeFusionPatterns`]), each batch typing the scopes it matches so
//! that a later batch can ask for sub-scopes of that type (CANN's `SetSubType`).

use graphlift_ir::{Function, Op};

use super::tree::{Scope, ScopeTree};

/// How many of something a feature asks for (CANN's `num` and `step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Exactly `n` (CANN: `num = n, step = 0`).
    Exactly(usize),
    /// A positive multiple of `n`: `n`, `2n`, ... (CANN: `step = n`); `MultipleOf(0)` never
    /// holds.
    MultipleOf(usize),
}

impl Count {
    /// Whether `k` satisfies the count.
    pub fn holds(self, k: usize) -> bool {
        match self {
            Count::Exactly(n) => k == n,
            Count::MultipleOf(n) => n > 0 && k >= n && k.is_multiple_of(n),
        }
    }
}

/// CANN's `NodeOpTypeFeature`: nodes of op type `op_type` (`Op::type_name`, e.g.
/// `ReduceMean`) occur in the scope (sub-scopes included) a number of times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeOpTypeFeature {
    /// The op type, as `Op::type_name` spells it.
    pub op_type: String,
    /// How many times.
    pub count: Count,
}

impl NodeOpTypeFeature {
    /// The feature "`op_type` occurs `count` times".
    pub fn new(op_type: &str, count: Count) -> NodeOpTypeFeature {
        NodeOpTypeFeature {
            op_type: op_type.to_string(),
            count,
        }
    }

    /// Whether `scope` has it.
    pub fn matches(&self, scope: &Scope) -> bool {
        self.count.holds(scope.op_type_count(&self.op_type))
    }
}

/// An attribute value of an op, as [`op_attribute`] reads it (CANN's `ScopeAttrValue`).
#[derive(Debug, Clone, PartialEq)]
pub enum ScopeAttrValue {
    /// An integer (`axis`).
    Int(i64),
    /// A list of integers (`axes`, `perm`, `shape`).
    Ints(Vec<i64>),
    /// A float (`epsilon`).
    Float(f64),
    /// A boolean (`keep_dims`).
    Bool(bool),
    /// A string (`to`: an element type's name).
    Str(String),
}

/// The attribute `name` of `op`, if it has one: `axes` and `keep_dims` of reductions,
/// `axis` of Softmax, Concat, Gather and LayerNorm, `epsilon` of LayerNorm and
/// BatchNormInference, `perm` of Transpose, `shape` of Reshape and Broadcast, `to` of
/// Convert (names after ONNX's, in graphlift's spelling).
pub fn op_attribute(op: &Op, name: &str) -> Option<ScopeAttrValue> {
    let ints = |v: &[usize]| ScopeAttrValue::Ints(v.iter().map(|&x| x as i64).collect());
    Some(match (op, name) {
        (Op::Reduce(r), "axes") => ints(&r.axes),
        (Op::Reduce(r), "keep_dims") => ScopeAttrValue::Bool(r.keep_dims),
        (Op::Softmax(a) | Op::Concat(a) | Op::Gather(a), "axis") => ScopeAttrValue::Int(*a as i64),
        (Op::LayerNorm(l), "axis") => ScopeAttrValue::Int(l.axis as i64),
        (Op::LayerNorm(l), "epsilon") => ScopeAttrValue::Float(l.epsilon),
        (Op::BatchNormInference(e), "epsilon") => ScopeAttrValue::Float(*e),
        (Op::Transpose(p), "perm") => ints(p),
        (Op::Reshape(s) | Op::Broadcast(s), "shape") => ints(s.dims()),
        (Op::Convert(t), "to") => ScopeAttrValue::Str(t.to_string()),
        _ => return None,
    })
}

/// CANN's `NodeAttrFeature`: some node of op type `op_type` in the scope (sub-scopes
/// included) has attribute `attr` equal to `value`.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeAttrFeature {
    /// The op type, as `Op::type_name` spells it.
    pub op_type: String,
    /// The attribute's name (see [`op_attribute`]).
    pub attr: String,
    /// The value it must have.
    pub value: ScopeAttrValue,
}

impl NodeAttrFeature {
    /// The feature "a `op_type` node has `attr` = `value`".
    pub fn new(op_type: &str, attr: &str, value: ScopeAttrValue) -> NodeAttrFeature {
        NodeAttrFeature {
            op_type: op_type.to_string(),
            attr: attr.to_string(),
            value,
        }
    }

    /// Whether `scope` of `tree` (nodes of `f`) has it.
    pub fn matches(&self, scope: &Scope, tree: &ScopeTree, f: &Function) -> bool {
        tree.all_nodes(scope.id()).into_iter().any(|id| {
            f.get(id).is_some_and(|n| {
                n.op().type_name() == self.op_type
                    && op_attribute(n.op(), &self.attr).as_ref() == Some(&self.value)
            })
        })
    }
}

/// CANN's `ScopeFeature`: about the scope itself, not its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeFeature {
    /// The scope has `count` direct sub-scopes whose type (given by an earlier batch of
    /// patterns) or, untyped, whose [`Scope::base_name`] is `sub_type`.
    SubScopes {
        /// The sub-scopes' type.
        sub_type: String,
        /// How many.
        count: Count,
    },
    /// The scope's [`Scope::base_name`] ends with the suffix (`LayerNorm` matches
    /// `attention/output/LayerNorm_1`).
    NameSuffix(String),
}

impl ScopeFeature {
    /// Whether `scope` of `tree` has it.
    pub fn matches(&self, scope: &Scope, tree: &ScopeTree) -> bool {
        match self {
            ScopeFeature::SubScopes { sub_type, count } => {
                let k = scope
                    .sub_scopes()
                    .filter_map(|s| tree.get(s))
                    .filter(|s| s.scope_type().unwrap_or(s.base_name()) == sub_type)
                    .count();
                count.holds(k)
            }
            ScopeFeature::NameSuffix(suffix) => scope.base_name().ends_with(suffix.as_str()),
        }
    }
}

/// CANN's `ScopePattern`: features a scope must all have; a scope that does gets the
/// pattern's `sub_type` as its type.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScopePattern {
    /// The type given to matched scopes (CANN's `SetSubType`).
    pub sub_type: String,
    /// Op-type counts.
    pub op_types: Vec<NodeOpTypeFeature>,
    /// Attribute values.
    pub attrs: Vec<NodeAttrFeature>,
    /// Sub-scopes and names.
    pub scopes: Vec<ScopeFeature>,
}

impl ScopePattern {
    /// A pattern without features (it matches every scope) giving type `sub_type`.
    pub fn new(sub_type: &str) -> ScopePattern {
        ScopePattern {
            sub_type: sub_type.to_string(),
            ..ScopePattern::default()
        }
    }

    /// Adds a [`NodeOpTypeFeature`] (CANN's `AddNodeOpTypeFeature`).
    pub fn op_type(mut self, op_type: &str, count: Count) -> ScopePattern {
        self.op_types.push(NodeOpTypeFeature::new(op_type, count));
        self
    }

    /// Adds a [`NodeAttrFeature`] (CANN's `AddNodeAttrFeature`).
    pub fn attr(mut self, op_type: &str, attr: &str, value: ScopeAttrValue) -> ScopePattern {
        self.attrs.push(NodeAttrFeature::new(op_type, attr, value));
        self
    }

    /// Adds a [`ScopeFeature`] (CANN's `AddScopeFeature`).
    pub fn scope(mut self, feature: ScopeFeature) -> ScopePattern {
        self.scopes.push(feature);
        self
    }

    /// Whether `scope` has every feature.
    pub fn matches(&self, scope: &Scope, tree: &ScopeTree, f: &Function) -> bool {
        self.op_types.iter().all(|x| x.matches(scope))
            && self.scopes.iter().all(|x| x.matches(scope, tree))
            && self.attrs.iter().all(|x| x.matches(scope, tree, f))
    }
}

/// CANN's `ScopeFusionPatterns`: batches of alternative patterns. Batch `k` is matched
/// against every scope after batch `k - 1` typed the scopes it matched; the scopes the last
/// batch matches are the pass's candidates.
pub type ScopeFusionPatterns = Vec<Vec<ScopePattern>>;
