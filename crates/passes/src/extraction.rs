//! Subgraph extraction, generalising nGraph's `HalideSubgraphExtraction`: regions of
//! elementwise ops form in `region` (over the analysis view in `graph`) and `rewrite` turns each
//! into one fused kernel node ([`extract_subgraphs`]; invariants on [`SubgraphExtraction`]).

mod graph;
mod outside;
mod region;
mod remat;
mod rewrite;

#[cfg(test)]
mod outside_tests;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use graphlift_ir::{ElementType, Function, Node, NodeId, Op};

pub use outside::{OutsideNode, OutsideReason};

use crate::{Pass, PassError, PassOutcome};

/// Metadata key of the fusion barrier: a node with `"graphlift.stop_fusion"` = `"true"` is
/// never put in a fused kernel (TVM's `stop_fusion`).
pub const STOP_FUSION_KEY: &str = "graphlift.stop_fusion";

/// Metadata key set on every fused kernel node: the comma-separated names of the nodes it
/// fused, in topological order (copied Constants are not listed).
pub const FUSED_NODES_KEY: &str = "fused_nodes";

/// What subgraph extraction may fuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractionConfig {
    /// Most non-Constant nodes in one kernel (TVM caps a fused group at 256 ops). Values
    /// below 2 disable fusion, since a kernel needs at least 2.
    pub max_ops: usize,
    /// Op type names ([`Op::type_name`], e.g. `"Exp"`, `"Broadcast"`) never to fuse.
    pub excluded_ops: BTreeSet<String>,
    /// Whether a region of one op (with the Broadcasts and Constants it reads) becomes a
    /// kernel too. Off by default (nGraph's rule: a lone op runs as its own op); the CPU-JIT
    /// backend turns it on, since its only other kernel for a lone elementwise op is the
    /// reference one. Fusion stays off when `max_ops` is below 2.
    pub single_op_kernels: bool,
    /// The element types the backend's fused kernels lower (`None`: every type). A node
    /// that reads or writes another type stays outside every region
    /// ([`OutsideReason::ElementType`]) and runs on its own kernel.
    pub element_types: Option<BTreeSet<ElementType>>,
}

impl ExtractionConfig {
    /// The default [`ExtractionConfig::max_ops`]: TVM's cap.
    pub const DEFAULT_MAX_OPS: usize = 256;

    /// This configuration with `max_ops` set.
    pub fn with_max_ops(mut self, max_ops: usize) -> ExtractionConfig {
        self.max_ops = max_ops;
        self
    }

    /// This configuration with [`ExtractionConfig::single_op_kernels`] set.
    pub fn with_single_op_kernels(mut self, on: bool) -> ExtractionConfig {
        self.single_op_kernels = on;
        self
    }

    /// This configuration with fusion limited to `types` (kept to the types of an earlier
    /// limit too, if any): see [`ExtractionConfig::element_types`].
    pub fn with_element_types(
        mut self,
        types: impl IntoIterator<Item = ElementType>,
    ) -> ExtractionConfig {
        let types: BTreeSet<ElementType> = types.into_iter().collect();
        self.element_types = Some(match self.element_types.take() {
            Some(old) => old.intersection(&types).copied().collect(),
            None => types,
        });
        self
    }

    /// The first element type among `node`'s inputs (values of `f`) and outputs that
    /// [`ExtractionConfig::element_types`] leaves out, if any.
    pub fn unfusible_type(&self, f: &Function, node: &Node) -> Option<ElementType> {
        let allowed = self.element_types.as_ref()?;
        let inputs = node
            .inputs()
            .iter()
            .filter_map(|&o| f.output_type(o).ok().map(|t| t.element_type));
        let outputs = node.outputs().iter().map(|t| t.element_type);
        inputs.chain(outputs).find(|t| !allowed.contains(t))
    }

    /// This configuration with `op_type` (an [`Op::type_name`]) excluded from fusion.
    pub fn exclude(mut self, op_type: impl Into<String>) -> ExtractionConfig {
        self.excluded_ops.insert(op_type.into());
        self
    }

    /// Whether `node` may sit in a region: its op is elementwise (`Unary`, `Binary`,
    /// `Compare`, `Select`, `Convert`), a `Broadcast` or a `Constant`; its op type is not
    /// excluded; its inputs and outputs (values of `f`) are of the allowed element types
    /// ([`ExtractionConfig::element_types`]); and it carries no `stop_fusion` barrier. Parameters, Results and fused
    /// kernels never may, nor the ops of state (`Variable`, `ReadVariable`, `Assign`).
    /// (A Constant with control dependencies is, in addition, never copied into a
    /// region.)
    pub fn is_fusible(&self, f: &Function, node: &Node) -> bool {
        let op = node.op();
        let class_ok = op.is_elementwise() || matches!(op, Op::Broadcast(_) | Op::Constant(_));
        class_ok
            && !self.excluded_ops.contains(op.type_name())
            && self.unfusible_type(f, node).is_none()
            && node.metadata().get(STOP_FUSION_KEY).map(String::as_str) != Some("true")
    }
}

impl Default for ExtractionConfig {
    fn default() -> ExtractionConfig {
        ExtractionConfig {
            max_ops: ExtractionConfig::DEFAULT_MAX_OPS,
            excluded_ops: BTreeSet::new(),
            single_op_kernels: false,
            element_types: None,
        }
    }
}

/// One fused kernel created by [`extract_subgraphs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelReport {
    /// The `FusedKernel` node in the rewritten function.
    pub node: NodeId,
    /// Its name, `FusedKernel_<k>`.
    pub name: String,
    /// Names of the nodes it replaced, in topological order.
    pub fused_nodes: Vec<String>,
    /// Names of the Constants copied into its body (they may stay in the function too).
    pub copied_constants: Vec<String>,
    /// Number of live-ins (inputs of the fused node).
    pub live_ins: usize,
    /// Number of outputs of the fused node.
    pub outputs: usize,
}

/// What [`extract_subgraphs`] did: the kernels, in the order they were created (a
/// topological order of the rewritten function), and the computing nodes left outside.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtractionReport {
    /// One entry per fused kernel.
    pub kernels: Vec<KernelReport>,
    /// Every live node other than Parameters, Results, Constants and Variables that no
    /// kernel contains, in topological order, with the reason it was not fused.
    pub outside: Vec<OutsideNode>,
}

/// Gathers every maximal region of fusible ops of `f` into a `FusedKernel` node, under the
/// invariants listed on [`SubgraphExtraction`].
///
/// Each fused node is `Op::FusedKernel` with a body `Function` named like the node
/// (`FusedKernel_<k>`, the first `k` from 0 whose name is free): the body's parameters are
/// the live-ins, in the fused node's input order (by first use in topological order,
/// deduplicated); its results are the kernel outputs, in the fused node's output order
/// (topological order of their producers). Body nodes are copies ([`Function::import_node`])
/// that keep names, tags, metadata, creation sites and pass histories; internal control
/// dependencies are dropped. The fused node takes the creation site of the node the region
/// grew from, the union of the provenance tags of the fused nodes (in topological order)
/// and then of the copied Constants, `"subgraph_extraction"` in its pass history, and
/// [`FUSED_NODES_KEY`] metadata. Control
/// dependencies of fused nodes on outside nodes move to the fused node, and dependencies on
/// fused nodes point at it; the replaced nodes are removed (as are nodes that reached no
/// result before).
///
/// Deterministic: the same function and configuration give the same output.
///
/// # Errors
/// [`PassError::Ir`] if `f` does not validate (e.g. it has a cycle);
/// [`PassError::Broken`] if the rewrite goes wrong (a bug). On error `f` is unchanged.
///
/// ```
/// use graphlift_ir::{ElementType::F32, FunctionBuilder, Op};
/// use graphlift_passes::{extract_subgraphs, ExtractionConfig};
///
/// // nGraph's halide_subgraph test: relu((A + B) * C) + D over f32[8].
/// let b = FunctionBuilder::new("halide_subgraph");
/// let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
/// let mut f = b.finish(&[((a + bb) * c).relu() + d])?;
/// let report = extract_subgraphs(&mut f, &ExtractionConfig::default())?;
/// assert_eq!(report.kernels.len(), 1);
/// assert_eq!((report.kernels[0].live_ins, report.kernels[0].outputs), (4, 1));
/// let kernel = f.node(report.kernels[0].node)?;
/// assert!(matches!(kernel.op(), Op::FusedKernel(_)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn extract_subgraphs(
    f: &mut Function,
    config: &ExtractionConfig,
) -> Result<ExtractionReport, PassError> {
    f.validate()?;
    let mut view = graph::GraphView::new(f)?;
    let (mut regions, mut outside) = region::form_regions(f, &mut view, config)?;
    if regions.is_empty() {
        return Ok(ExtractionReport {
            kernels: Vec::new(),
            outside,
        });
    }
    // Regions that read a Broadcast exported by another get their own copies, and the
    // regions are formed again on that function (once: copies are never shared). Should a
    // copy then fall outside every region, the first regions stand.
    let mut copied = None;
    if let Some((g, copies)) = remat::copy_shared_broadcasts(f, &regions)? {
        let mut view = graph::GraphView::new(&g)?;
        let (again, again_outside) = region::form_regions(&g, &mut view, config)?;
        let in_region = |c: &NodeId| again.iter().any(|r| r.members.contains(c));
        if copies.iter().all(in_region) {
            (regions, outside) = (again, again_outside);
            copied = Some(g);
        }
    }
    let src = copied.as_ref().unwrap_or(f);
    // Rewrite a copy, so that `f` is untouched if anything fails.
    let mut g = src.clone();
    let mut rewriter = rewrite::Rewriter::default();
    let kernels = regions
        .iter()
        .map(|r| rewriter.fuse(src, &mut g, r))
        .collect::<Result<Vec<_>, _>>()?;
    g.remove_dead_nodes();
    g.validate().map_err(|e| PassError::Broken {
        pass: SubgraphExtraction::NAME,
        message: format!("the rewritten function does not validate: {e}"),
    })?;
    *f = g;
    Ok(ExtractionReport { kernels, outside })
}

/// The subgraph extraction pass: runs [`extract_subgraphs`].
///
/// The generalisation of nGraph's `HalideSubgraphExtraction` (which handled one result, f32
/// Add/Multiply/Relu, and stopped the whole walk at the first op outside its whitelist). For
/// every result the pass walks back over fusible ops, in reverse topological order, and grows
/// every maximal region greedily (OpenVINO snippets' strategy) under these invariants:
///
/// - **Convex**: no path between two nodes of a region leaves the region, over data edges and
///   control dependencies (`other_deps`). Checked on the graph in which every region formed so
///   far is already one node, so the rewritten graph stays acyclic even when several regions
///   interleave. A merge that would break it is rejected, as OpenVINO snippets do, with
///   depth-first searches bounded by topological ranks.
/// - **One iteration space**: every non-Constant node of a region has the output shape `S` of
///   the node the region grew from. A Broadcast in a region outputs `S`; its input is a live-in
///   or a Constant copied into the region. Constants are copied into every region that uses
///   them (they cost no live-in); a Constant alone is never a region.
/// - **No duplicated work**: every value of a region used outside it (by a Result too) becomes
///   a kernel output, so kernels may have several outputs. The one exception is a Broadcast,
///   which only repeats elements of its input: when regions are formed, a region that reads
///   a Broadcast from another region gets its own copy of it (tagged like it, with this pass
///   in its history), and the regions are formed once more (XLA's fusion duplicates such
///   cheap producers into each consumer). Writing the full broadcast tensor once and reading
///   it back in every other region would cost far more than repeating the element in each.
/// - **Size**: a kernel has at least 2 and at most [`ExtractionConfig::max_ops`] non-Constant
///   nodes (TVM's cap of 256 by default).
/// - **Barriers**: a node whose metadata has [`STOP_FUSION_KEY`] = `"true"` (TVM's
///   `stop_fusion`), or whose op type is in [`ExtractionConfig::excluded_ops`], is never fused.
/// - **State**: `Variable`, `ReadVariable` and `Assign` are never fused and keep their control
///   dependencies: a kernel takes a read's value as a live-in, and a value an assign writes
///   is a kernel output. The dependencies that order reads and assigns count for convexity,
///   so no kernel both feeds an assign and reads what a read after it saw. Regions form over
///   the live nodes, sinks included, so the value a main-stream assign writes fuses too.
///
/// Growth: the region of a seed (an unassigned fusible node, taken in reverse topological
/// order) takes in neighbours of the same shape, producers and users alike, highest
/// topological rank first; a neighbour that would break convexity or the Broadcast rule is
/// set aside and tried again once the region has grown, until nothing more fits. A
/// Broadcast brings in no neighbours of its own: regions that share only a Broadcast (the
/// bounds of every ReLU6 of a network, once CSE has merged them) stay apart, each with its
/// own copy, so each can still be its own producer's epilogue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubgraphExtraction {
    /// What may be fused.
    pub config: ExtractionConfig,
}

impl SubgraphExtraction {
    /// The pass's name, recorded in the pass history of every fused kernel node.
    pub const NAME: &'static str = "subgraph_extraction";

    /// The pass with the given configuration.
    pub fn new(config: ExtractionConfig) -> SubgraphExtraction {
        SubgraphExtraction { config }
    }
}

impl Pass for SubgraphExtraction {
    fn name(&self) -> &'static str {
        SubgraphExtraction::NAME
    }

    /// Runs [`extract_subgraphs`]; `true` when at least one kernel was created.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        extract_subgraphs(f, &self.config).map(|r| !r.kernels.is_empty())
    }

    /// Runs [`extract_subgraphs`] and hands its report on.
    fn run_with_report(&self, f: &mut Function) -> Result<PassOutcome, PassError> {
        let report = extract_subgraphs(f, &self.config)?;
        Ok(PassOutcome {
            changed: !report.kernels.is_empty(),
            extraction: Some(report),
            ..PassOutcome::default()
        })
    }
}
