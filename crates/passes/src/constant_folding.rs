//! Constant folding: nodes whose inputs are all Constants become Constants.

use std::collections::BTreeSet;

use graphlift_ir::{Function, NodeId, Op, TensorData};
use graphlift_runtime::reference::evaluate_node;
use graphlift_runtime::Tensor;

use crate::rewrite::{record_pass_once, replace_by_value, rewrite_on_copy};

#[cfg(test)]
mod tests;
use crate::{Pass, PassError};

/// Evaluates, at compile time, every node whose inputs are all Constants and replaces it by
/// a Constant holding its value (nGraph's and TVM's `ConstantFolding`).
///
/// Folded: elementwise ops (`Unary`, `Binary`, `Compare`, `Select`, `Convert`) and
/// `Broadcast`, with a single output of at most [`ConstantFolding::max_elements`] elements.
/// Not folded: Parameters, Results, Constants, fused kernels, and any node above the cap —
/// a `Broadcast` of a scalar to a huge shape stays a Broadcast instead of being
/// materialized (subgraph extraction then turns it into a stride-0 load). Folding works in
/// topological order, so chains of constant nodes fold in one run.
///
/// Values come from the runtime's reference kernels
/// ([`graphlift_runtime::reference::evaluate_node`]), so a folded constant is bit for bit
/// what the INTERPRETER computes; for ops that the JIT approximates (`Exp`, `Tanh`, ...) it
/// is the reference value, within the JIT's stated error of what the unfolded kernel gives.
///
/// Provenance: the new Constant replaces the folded node through
/// [`Function::replace_node_unpruned`]: it takes the node's tags, control dependencies and
/// dependents, and then the tags of the input Constants (nGraph's rule: a Constant shares no
/// argument with the folded node, so the removed subgraph is the node and its inputs; this
/// keeps the tags of a chain folded step by step). It keeps the folded node's creation
/// site, and has [`ConstantFolding::NAME`] in its pass history. Input Constants nobody else
/// uses are removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantFolding {
    /// Largest number of elements of a folded value; bigger nodes are left alone.
    pub max_elements: usize,
}

impl ConstantFolding {
    /// The pass's name, recorded in the pass history of every Constant it creates.
    pub const NAME: &'static str = "constant_folding";

    /// The default cap on a folded value: 2^20 elements (4 MiB of `f32`).
    pub const DEFAULT_MAX_ELEMENTS: usize = 1 << 20;

    /// The pass with the default cap.
    pub fn new() -> ConstantFolding {
        ConstantFolding {
            max_elements: ConstantFolding::DEFAULT_MAX_ELEMENTS,
        }
    }

    /// The pass with `max_elements` as the cap.
    pub fn with_max_elements(max_elements: usize) -> ConstantFolding {
        ConstantFolding { max_elements }
    }

    /// Whether `op` is of a kind this pass folds.
    pub fn folds_op(op: &Op) -> bool {
        op.is_elementwise() || matches!(op, Op::Broadcast(_))
    }
}

impl Default for ConstantFolding {
    fn default() -> ConstantFolding {
        ConstantFolding::new()
    }
}

impl Pass for ConstantFolding {
    fn name(&self) -> &'static str {
        ConstantFolding::NAME
    }

    /// Folds every foldable node; `true` when at least one was folded.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` does not validate; [`PassError::Broken`] if a reference
    /// kernel rejects a node of a valid function (a bug). `f` is then unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        rewrite_on_copy(f, ConstantFolding::NAME, |g| self.fold(g))
    }
}

impl ConstantFolding {
    fn fold(&self, g: &mut Function) -> Result<bool, PassError> {
        let mut created = BTreeSet::new();
        for id in g.topological_order()? {
            let node = g.node(id)?;
            if !ConstantFolding::folds_op(node.op()) || node.outputs().len() != 1 {
                continue;
            }
            let out = node.output_type().clone();
            if out.shape.element_count()? > self.max_elements {
                continue;
            }
            let Some(inputs) = constant_inputs(g, id)? else {
                continue;
            };
            let refs: Vec<&Tensor> = inputs.iter().collect();
            let value = evaluate_node(node, &refs).map_err(|e| PassError::Broken {
                pass: ConstantFolding::NAME,
                message: format!("evaluating `{}`: {e}", node.name()),
            })?;
            let data = value
                .into_iter()
                .next()
                .ok_or_else(|| PassError::Broken {
                    pass: ConstantFolding::NAME,
                    message: format!("`{}` evaluated to no value", node.name()),
                })?
                .into_data();
            let site = node.creation_site().clone();
            let sources: Vec<NodeId> = node.inputs().iter().map(|o| o.node).collect();
            let c = g.add_constant_at(data, out.shape, site)?;
            replace_by_value(g, id, c.into(), &sources, ConstantFolding::NAME)?;
            created.insert(c);
        }
        record_pass_once(g, &created, ConstantFolding::NAME)?;
        Ok(!created.is_empty())
    }
}

/// The values of the inputs of `id` when every one is a Constant, else `None`.
fn constant_inputs(g: &Function, id: NodeId) -> Result<Option<Vec<Tensor>>, PassError> {
    let node = g.node(id)?;
    let mut values = Vec::with_capacity(node.inputs().len());
    for &o in node.inputs() {
        let producer = g.node(o.node)?;
        let Op::Constant(d) = producer.op() else {
            return Ok(None);
        };
        let data: TensorData = (**d).clone();
        let t = Tensor::from_data(data, producer.output_type().shape.clone()).map_err(|e| {
            PassError::Broken {
                pass: ConstantFolding::NAME,
                message: format!("constant `{}`: {e}", producer.name()),
            }
        })?;
        values.push(t);
    }
    Ok(Some(values))
}
