//! Nodes: ids, outputs, types, names, metadata, provenance and creation sites.

use std::collections::BTreeMap;
use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::{ElementType, Op, OutputTypes, ProvenanceTags, Shape};

/// The id of a node in its [`crate::Function`]'s arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// The arena index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// One output of a node: the handle by which other nodes use a value.
///
/// It is an index into one [`crate::Function`]: the `Function` API cannot tell an `Output`
/// of another function from one of its own (one out of range is an [`crate::IrError::Dangling`]).
/// The builder's [`crate::Value`] knows its function and rejects a foreign one
/// ([`crate::IrError::ForeignValue`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Output {
    /// The producing node.
    pub node: NodeId,
    /// Which of its outputs (0 for single-output ops).
    pub index: usize,
}

impl Output {
    /// Output `index` of `node`.
    pub fn new(node: NodeId, index: usize) -> Output {
        Output { node, index }
    }
}

impl From<NodeId> for Output {
    fn from(node: NodeId) -> Output {
        Output { node, index: 0 }
    }
}

/// Element type and shape of a value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// Element type.
    pub element_type: ElementType,
    /// Static shape.
    pub shape: Shape,
}

impl TensorType {
    /// A tensor type.
    pub fn new(element_type: ElementType, shape: impl Into<Shape>) -> TensorType {
        TensorType {
            element_type,
            shape: shape.into(),
        }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.element_type, self.shape)
    }
}

/// Where a node was created: the caller of the builder call, captured with `#[track_caller]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CreationSite {
    /// Source file (shared: every node made at one site, and every copy a pass makes of a
    /// node, holds the same text).
    pub file: Arc<str>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl CreationSite {
    /// The site of the caller of the `#[track_caller]` function that calls this.
    #[track_caller]
    pub fn caller() -> CreationSite {
        let l = Location::caller();
        CreationSite {
            file: l.file().into(),
            line: l.line(),
            column: l.column(),
        }
    }
}

impl fmt::Display for CreationSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A node's inputs: most ops take one or two (inline, no allocation; copying a Function
/// copies every node).
pub(crate) type Inputs = SmallVec<[Output; 2]>;
/// The users of each output: (user node, input slot); most values have one or two users.
pub(crate) type Users = SmallVec<[SmallVec<[(NodeId, usize); 2]>; 1]>;

/// A node of a [`crate::Function`].
///
/// Inputs are ordered [`Output`] handles; `other_deps` are control dependencies (nodes that
/// must run before this one without passing it a value, Nervana graph's `other_deps`).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub(crate) id: NodeId,
    pub(crate) name: Arc<str>,
    pub(crate) op: Op,
    pub(crate) inputs: Inputs,
    pub(crate) outputs: OutputTypes,
    pub(crate) metadata: BTreeMap<String, String>,
    pub(crate) tags: ProvenanceTags,
    pub(crate) pass_history: Vec<String>,
    pub(crate) site: CreationSite,
    pub(crate) other_deps: Vec<NodeId>,
    /// Users of each output: (user node, input slot).
    pub(crate) users: Users,
}

impl Node {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }
    /// The node's unique name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The name, shared: cloning it copies no text (for keeping it past a borrow of the
    /// node, e.g. in error messages of a later stage).
    pub fn shared_name(&self) -> &Arc<str> {
        &self.name
    }
    /// What the node computes.
    pub fn op(&self) -> &Op {
        &self.op
    }
    /// Ordered inputs.
    pub fn inputs(&self) -> &[Output] {
        &self.inputs
    }
    /// Types of the outputs, in order.
    pub fn outputs(&self) -> &[TensorType] {
        &self.outputs
    }
    /// Type of output 0 (every op but a multi-output fused kernel has exactly one;
    /// a Result's is its input's).
    pub fn output_type(&self) -> &TensorType {
        &self.outputs[0]
    }
    /// Free-form string metadata.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }
    /// Provenance tags.
    pub fn tags(&self) -> &ProvenanceTags {
        &self.tags
    }
    /// Names of the passes that created or rewrote this node, oldest first.
    pub fn pass_history(&self) -> &[String] {
        &self.pass_history
    }
    /// Where the node was created.
    pub fn creation_site(&self) -> &CreationSite {
        &self.site
    }
    /// Control dependencies.
    pub fn other_deps(&self) -> &[NodeId] {
        &self.other_deps
    }
    /// Users of output `index`: (user node, input slot).
    pub fn users(&self, index: usize) -> &[(NodeId, usize)] {
        self.users.get(index).map(|u| u.as_slice()).unwrap_or(&[])
    }
    /// `true` when any output has a user.
    pub fn has_users(&self) -> bool {
        self.users.iter().any(|u| !u.is_empty())
    }
}
