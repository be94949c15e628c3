//! CANN's `ScopeBasePass` (a scope fusion pass: patterns, then a structural check that
//! produces fused ops) and its `FusionScopesResult`.

use graphlift_ir::{NodeId, Op, Output, Shape, TensorData};

use super::features::ScopeFusionPatterns;
use super::graph::ScopeGraph;
use super::tree::Scope;

/// One fused op a scope becomes (CANN's `FusionScopesResult`); one scope may yield several.
///
/// The rewrite adds a node computing `op` on `inputs`, named `name` (suffixed if taken),
/// and points every user of `outputs[i]` at its output `i`; it refuses (and reports) a
/// result whose inner nodes are not all in the matched scope, whose outputs are not inner
/// nodes' values, whose other inner values are used outside the inner nodes, whose inputs
/// are inner values, or whose op's output types differ from the outputs'.
#[derive(Debug, Clone, PartialEq)]
pub struct FusionScopesResult {
    /// The fused node's name (CANN's `SetName`).
    pub name: String,
    /// The fused op; its type (CANN's `SetType`) is `op.type_name()`.
    pub op: Op,
    /// The op's inputs, in its order: values computed outside the inner nodes, or new
    /// constants and reshapes of such values (CANN's `InsertInputs`).
    pub inputs: Vec<FusedInput>,
    /// The scope's values the op's outputs replace, in its output order (CANN's
    /// `InsertOutputs`).
    pub outputs: Vec<Output>,
    /// What the fused op computes, for reports (CANN's `SetDescription`).
    pub description: String,
    /// The nodes the op stands for (CANN's `AddNodes`); they carry the provenance tags the
    /// fused node takes, and are removed when nothing else uses them.
    pub inner_nodes: Vec<NodeId>,
}

/// An input of a fused op: a value of the function, or one the rewrite makes for it.
#[derive(Debug, Clone, PartialEq)]
pub enum FusedInput {
    /// A value computed outside the inner nodes.
    Value(Output),
    /// A new constant of this data and shape (e.g. LayerNorm's scale of ones when the
    /// scope has no `Mul`).
    Constant(TensorData, Shape),
    /// A value reshaped (`Op::Reshape`: same elements, new shape).
    Reshape(Output, Shape),
    /// A value broadcast (`Op::Broadcast`, numpy's rule).
    Broadcast(Output, Shape),
    /// A new node computing this op on these inputs (e.g. the `conv_bn_activation` pass's
    /// Convolution with the batch normalisation folded into its filter); it takes the
    /// fused node's provenance tags and pass history.
    Node(Op, Vec<FusedInput>),
}

impl FusedInput {
    /// The function's values it reads (through a [`FusedInput::Node`]'s inputs too).
    pub fn sources(&self) -> Vec<Output> {
        match self {
            FusedInput::Value(o) | FusedInput::Reshape(o, _) | FusedInput::Broadcast(o, _) => {
                vec![*o]
            }
            FusedInput::Constant(..) => Vec::new(),
            FusedInput::Node(_, inputs) => inputs.iter().flat_map(FusedInput::sources).collect(),
        }
    }
}

/// Why a matched scope was not fused: its data flow is not the computation of the fused op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructureMismatch(pub String);

impl StructureMismatch {
    /// A mismatch saying `why`.
    pub fn new(why: impl Into<String>) -> StructureMismatch {
        StructureMismatch(why.into())
    }
}

impl std::fmt::Display for StructureMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A scope fusion pass (CANN's `ScopeBasePass`): any crate can implement it and register it
/// in a [`super::ScopeFusionRegistry`].
///
/// Names propose, data flow decides: [`ScopeBasePass::define_patterns`] selects candidate
/// scopes by their contents, and [`ScopeBasePass::generate_fusion_result`] must check that
/// the candidate's data flow is exactly the computation of the op it returns (which input
/// feeds which op, axes, constants) before returning it.
pub trait ScopeBasePass: Send + Sync {
    /// The pass's name (CANN's `PassName`): the registry's key, the name
    /// `--disable-scope-pass` takes, and the `scope_fusion:<name>` pass history of the
    /// nodes it creates.
    fn pass_name(&self) -> &str;

    /// The patterns candidate scopes must match (CANN's `DefinePatterns`).
    fn define_patterns(&self) -> ScopeFusionPatterns;

    /// Checks the structure of a candidate `scope` of `graph` and returns the fused ops it
    /// becomes (CANN's `LastMatchScopesAndOPs` and `GenerateFusionResult` in one).
    ///
    /// # Errors
    /// A [`StructureMismatch`] saying why the scope's data flow is not the fused op's
    /// computation; the scope is then left as it is and the reason reported.
    fn generate_fusion_result(
        &self,
        scope: &Scope,
        graph: &ScopeGraph<'_>,
    ) -> Result<Vec<FusionScopesResult>, StructureMismatch>;
}
