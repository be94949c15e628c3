//! Constant folding: elementwise and data-movement nodes whose inputs are all Constants (or
//! Broadcasts of Constants) become Constants.

use std::collections::BTreeSet;

use graphlift_ir::{Function, Node, NodeId, Op, Output, Shape, TensorData};
use graphlift_runtime::reference::{self, evaluate_node};
use graphlift_runtime::Tensor;

use crate::rewrite::{record_pass_once, replace_by_value, rewrite_on_copy, splat};
use crate::{Pass, PassError};

#[cfg(test)]
mod tests;

/// Evaluates, at compile time, every elementwise node whose inputs are all constant and
/// replaces it by a Constant holding its value (nGraph's and TVM's `ConstantFolding`).
///
/// Folded: elementwise ops (`Unary`, `Binary`, `Compare`, `Select`, `Convert`) and
/// data-movement ops (`Reshape`, `Transpose`, `Slice`, `Pad`, `Concat`, `Gather`) with one
/// output, whose every input is a Constant or a Broadcast (chain) of a Constant. A
/// data-movement op is evaluated at full size, within the cap below.
/// - When every input is a Broadcast from sources of one shape `s`, the op is evaluated on
///   the sources and the result is a Constant of shape `s` broadcast to the node's shape:
///   `bcast(2.0) * bcast(3.0)` becomes `bcast(6.0)`, exactly (an elementwise op commutes
///   with broadcasting), however large the shape.
/// - Otherwise the inputs are broadcast and the op evaluated at the node's shape, if it has
///   at most [`ConstantFolding::max_elements`] elements; a bigger node is left alone.
///
/// Not folded: Parameters, Results, Constants, fused kernels, and a Broadcast itself:
/// materializing `Broadcast(Constant)` only costs memory (inside a fused kernel it is a
/// stride-0 load), so a scalar broadcast to any shape, huge or small, stays a Broadcast; it
/// is folded through when its users are. Nor is state: a `ReadVariable` is never a constant
/// input, whatever its variable's initializer (the value is whatever the last assign
/// wrote), and `Variable`, `ReadVariable` and `Assign` are not elementwise, so none is
/// folded. A node is not folded when one of its inputs (or a Broadcast or Constant behind
/// it) has control dependencies: the ordering would be lost.
/// Folding works in topological order, so chains of constant nodes fold in one run.
///
/// Values come from the runtime's reference kernels
/// ([`graphlift_runtime::reference::evaluate_node`] and the elementwise kernels it calls),
/// so a folded constant is bit for bit what the INTERPRETER computes; for ops that the JIT
/// approximates (`Exp`, `Tanh`, ...) it is the reference value, within the JIT's stated
/// error of what the unfolded kernel gives.
///
/// Provenance: the new Constant (or Broadcast of one) replaces the folded node through
/// [`Function::replace_node_unpruned`]: it takes the node's tags, control dependencies and
/// dependents, then the tags of the input Constants and Broadcasts (nGraph's rule: the
/// replacement shares no argument with the folded node, so the removed subgraph is the node
/// and its inputs; this keeps the tags of a chain folded step by step). New nodes keep the
/// folded node's creation site and have [`ConstantFolding::NAME`] in their pass history.
/// Inputs nobody else uses are removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantFolding {
    /// Largest number of elements of a value evaluated at full size; bigger nodes are left
    /// alone.
    pub max_elements: usize,
}

impl ConstantFolding {
    /// The pass's name, recorded in the pass history of every node it creates.
    pub const NAME: &'static str = "constant_folding";

    /// The default cap on a value evaluated at full size: 2^20 elements (4 MiB of `f32`).
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

    /// Whether `op` is of a kind this pass folds (elementwise: `Unary`, `Binary`,
    /// `Compare`, `Select`, `Convert`).
    pub fn folds_op(op: &Op) -> bool {
        op.is_elementwise() || ConstantFolding::moves_data(op)
    }

    /// The data-movement ops folded at full size ([`Op::moves_data`] but `Broadcast`, which
    /// stays a stride-0 read): a `Transpose` of a constant weight, as a derivative writes for
    /// `MatMul`, costs a copy on every call otherwise.
    fn moves_data(op: &Op) -> bool {
        op.moves_data() && !matches!(op, Op::Broadcast(_))
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
        rewrite_on_copy(f, ConstantFolding::NAME, any_foldable, |g| self.fold(g))
    }
}

fn broken(node: &Node, message: impl std::fmt::Display) -> PassError {
    PassError::Broken {
        pass: ConstantFolding::NAME,
        message: format!("folding `{}`: {message}", node.name()),
    }
}

/// A constant input of a node: a Constant's data, possibly behind Broadcasts.
struct ConstantInput<'f> {
    /// The Constant's data.
    data: &'f TensorData,
    /// The Constant's shape.
    shape: &'f Shape,
    /// Whether there are Broadcasts between the Constant and the node.
    broadcast: bool,
    /// The Broadcasts and the Constant, from the node outwards.
    path: Vec<NodeId>,
}

impl ConstantFolding {
    fn fold(&self, g: &mut Function) -> Result<bool, PassError> {
        let mut created = BTreeSet::new();
        for id in g.topological_order()? {
            let node = g.node(id)?;
            if !ConstantFolding::folds_op(node.op()) || node.outputs().len() != 1 {
                continue;
            }
            let Some(inputs) = constant_inputs(g, node)? else {
                continue;
            };
            let out = node.output_type().shape.clone();
            let site = node.creation_site().clone();
            let sources: Vec<NodeId> = inputs.iter().flat_map(|i| i.path.clone()).collect();
            let small = inputs[0].shape;
            let from_sources = node.op().is_elementwise()
                && small != &out
                && inputs.iter().all(|i| i.broadcast && i.shape == small);
            let value = if from_sources {
                // Evaluate at the sources' shape, broadcast the result.
                if small.element_count()? > self.max_elements {
                    continue;
                }
                let data: Vec<&TensorData> = inputs.iter().map(|i| i.data).collect();
                let value = elementwise(node.op(), &data).map_err(|e| broken(node, e))?;
                let small = small.clone();
                let c = g.add_constant_at(value, small, site.clone())?;
                let b = g.add_node_at(Op::Broadcast(out), &[c.into()], site)?;
                created.insert(c);
                b
            } else {
                // Each input at its own shape (an elementwise op's are the node's).
                let shapes: Vec<Shape> = node
                    .inputs()
                    .iter()
                    .map(|&o| g.output_type(o).map(|t| t.shape.clone()))
                    .collect::<Result<_, _>>()?;
                let mut sizes = shapes.iter().map(Shape::element_count);
                if out.element_count()? > self.max_elements
                    || sizes.try_fold(false, |big, n| {
                        Ok::<_, graphlift_ir::IrError>(big || n? > self.max_elements)
                    })?
                {
                    continue;
                }
                let tensors = inputs
                    .iter()
                    .zip(&shapes)
                    .map(|(i, shape)| {
                        let data = if i.broadcast {
                            reference::broadcast(i.data, i.shape, shape)
                                .map_err(|e| broken(node, e))?
                        } else {
                            i.data.clone()
                        };
                        Tensor::from_data(data, shape.clone()).map_err(|e| broken(node, e))
                    })
                    .collect::<Result<Vec<Tensor>, PassError>>()?;
                let refs: Vec<&Tensor> = tensors.iter().collect();
                let value = evaluate_node(node, &refs)
                    .map_err(|e| broken(node, e))?
                    .into_iter()
                    .next()
                    .ok_or_else(|| broken(node, "no value"))?
                    .into_data();
                g.add_constant_at(value, out, site)?
            };
            replace_by_value(g, id, value.into(), &sources, ConstantFolding::NAME)?;
            created.insert(value);
        }
        record_pass_once(g, &created, ConstantFolding::NAME)?;
        Ok(!created.is_empty())
    }
}

/// Whether some node of a foldable op has only constant inputs (folding may still skip it
/// for its size).
fn any_foldable(g: &Function) -> Result<bool, PassError> {
    for node in g.nodes() {
        if ConstantFolding::folds_op(node.op())
            && node.outputs().len() == 1
            && constant_inputs(g, node)?.is_some()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The inputs of `node` when every one is constant, else `None` (also when a node on the
/// way has control dependencies).
fn constant_inputs<'f>(
    g: &'f Function,
    node: &Node,
) -> Result<Option<Vec<ConstantInput<'f>>>, PassError> {
    let mut inputs = Vec::with_capacity(node.inputs().len());
    for &o in node.inputs() {
        let Some(input) = constant_input(g, o)? else {
            return Ok(None);
        };
        inputs.push(input);
    }
    Ok(if inputs.is_empty() {
        None
    } else {
        Some(inputs)
    })
}

fn constant_input(g: &Function, o: Output) -> Result<Option<ConstantInput<'_>>, PassError> {
    let Some((data, path)) = splat(g, o)? else {
        return Ok(None);
    };
    let Some(&constant) = path.last() else {
        return Ok(None);
    };
    Ok(Some(ConstantInput {
        data,
        shape: &g.node(constant)?.output_type().shape,
        broadcast: path.len() > 1,
        path: path.to_vec(),
    }))
}

/// An elementwise op on flat data of any (equal) length, by the reference kernels.
fn elementwise(op: &Op, d: &[&TensorData]) -> Result<TensorData, String> {
    let arity = |n: usize| {
        if d.len() == n {
            Ok(())
        } else {
            Err(format!("{op} on {} operands", d.len()))
        }
    };
    match op {
        Op::Unary(u) => arity(1).and_then(|()| reference::unary(*u, d[0])),
        Op::Binary(b) => arity(2).and_then(|()| reference::binary(*b, d[0], d[1])),
        Op::Compare(c) => arity(2).and_then(|()| reference::compare(*c, d[0], d[1])),
        Op::Select => arity(3).and_then(|()| reference::select(d[0], d[1], d[2])),
        Op::Convert(t) => arity(1).and_then(|()| reference::convert(d[0], *t)),
        other => Err(format!("{other} is not elementwise")),
    }
}
