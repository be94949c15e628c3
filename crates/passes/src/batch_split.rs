//! Batch splitting: the Function that computes one sample of a batched Function, when every
//! sample of its results depends only on the same sample of its parameters.
//!
//! A backend that runs such a Function sample by sample (each sample through every step
//! before the next starts) keeps one sample's activations in cache between steps, where
//! running the whole batch step by step streams every activation through memory; and it
//! can give whole samples to threads instead of splitting each step (the depth-first
//! schedule of layer fusion across a network, as in "Fused-Layer CNN Accelerators"
//! (Alwani et al., 2016), at the granularity of whole samples).
//!
//! [`per_sample`] proves the property by tracking, for each value, the axis that carries
//! the batch and in groups of how many ([`Batch`]; exporters merge the batch with the heads
//! or the rows), op by op (`transfer.rs`); it refuses (saying which node, and why) anything
//! it cannot follow: state, control flow, a constant with one row per sample, a reduction or
//! product over the batch axis. The proof is a dataflow one, on shapes, ops and constants'
//! values alone: it holds for every value of the parameters.

use std::collections::HashMap;

use graphlift_ir::{Function, NodeId, Op, Output, Shape, TensorData};

#[cfg(test)]
mod tests;
mod transfer;

/// A batched Function and the Function of one of its samples.
#[derive(Debug, Clone)]
pub struct PerSample {
    /// The Function of one sample: the source with every batch axis shrunk to one sample's
    /// extent (1, or the group where an exporter merged the batch with the next axis); each
    /// parameter and result has shape `[1, ..]` where the source's has `[batch, ..]`. Node
    /// names, tags, metadata and creation sites are the source's.
    pub function: Function,
    /// The batch: the source's extent on axis 0 of every parameter and result.
    pub batch: usize,
}

/// Where the batch is in one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batch {
    /// Depends on the parameters: extent `batch · group` on `axis`, its slices
    /// `b · group..(b + 1) · group` there depending only on sample `b` of every parameter
    /// (`group` above 1 where an exporter merged the batch with the next axis, as
    /// attention's `[B, H, S, D] -> [B·H, S, D]`).
    Axis { axis: usize, group: usize },
    /// Depends on no parameter. `spread`: the axes (a bit each) along which it is uniform
    /// (a `Broadcast` of a value without them), which it can be combined with a batched
    /// value along.
    Invariant { spread: u64 },
}

const INVARIANT: Batch = Batch::Invariant { spread: 0 };

impl Batch {
    fn is_invariant(&self) -> bool {
        matches!(self, Batch::Invariant { .. })
    }
}

/// The Function of one sample of `f`, or why `f` is not split: no parameter, parameters
/// or results without one common batch extent above 1 on axis 0, or a node whose
/// samples mix (the error names it and says how).
pub fn per_sample(f: &Function) -> Result<PerSample, String> {
    if f.variables().next().is_some() || !f.sinks().is_empty() {
        return Err("the Function has state (each call would update it once per sample)".into());
    }
    let batch = batch_extent(f)?;
    let order = f.topological_order().map_err(|e| e.to_string())?;
    let mut of: HashMap<Output, Batch> = HashMap::new();
    for &id in &order {
        let node = f.node(id).map_err(|e| e.to_string())?;
        let ins: Vec<Batch> = node.inputs().iter().map(|o| of[o]).collect();
        let shapes: Vec<&Shape> = node
            .inputs()
            .iter()
            .map(|&o| f.output_type(o).map(|t| &t.shape))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        let out = &node.output_type().shape;
        let b = transfer::transfer(node.op(), &ins, &shapes, out, batch)
            .map_err(|why| format!("node `{}` ({}): {why}", node.name(), node.op().type_name()))?;
        for k in 0..node.outputs().len() {
            of.insert(Output::new(id, k), b);
        }
    }
    for &r in f.results() {
        if of[&Output::new(r, 0)] != (Batch::Axis { axis: 0, group: 1 }) {
            let name = f.node(r).map_or("?", |n| n.name());
            return Err(format!("result `{name}` is not batched on its axis 0"));
        }
    }
    let shrink = demands(f, &order, &of)?;
    let function = rebuild(f, &order, &of, &shrink)?;
    Ok(PerSample { function, batch })
}

/// The common extent of axis 0 of the parameters and results, when it is above 1.
fn batch_extent(f: &Function) -> Result<usize, String> {
    let types = f.parameter_types().into_iter().chain(f.result_types());
    let mut batch = None;
    for t in types {
        let first = t.shape.dims().first().copied();
        match (batch, first) {
            (_, None) => return Err("a parameter or result is a scalar".into()),
            (None, Some(n)) => batch = Some(n),
            (Some(b), Some(n)) if b != n => {
                return Err(format!("parameters and results lead with {b} and {n}"))
            }
            _ => {}
        }
    }
    match batch {
        Some(n) if n > 1 => Ok(n),
        Some(n) => Err(format!("the batch is {n}")),
        None => Err("the Function has no parameters".into()),
    }
}

/// Where each value is shrunk in the per-sample Function, as (axis, new extent): a batched
/// value to its group on its batch axis; an invariant one where the batched op that reads
/// it needs ([`demand`]), carried back through the invariant ops it came through to the
/// `Broadcast` or constant it was spread by. Every reader of a shrunk value must read it so.
fn demands(
    f: &Function,
    order: &[NodeId],
    of: &HashMap<Output, Batch>,
) -> Result<HashMap<Output, (usize, usize)>, String> {
    let err = |e: graphlift_ir::IrError| e.to_string();
    let key = |shrink: &HashMap<Output, (usize, usize)>, o: &Output| match of.get(o) {
        Some(&Batch::Axis { axis, group }) => Some((axis, group)),
        Some(Batch::Invariant { .. }) => shrink.get(o).copied(),
        None => None,
    };
    let mut shrink: HashMap<Output, (usize, usize)> = HashMap::new();
    for &id in order.iter().rev() {
        let node = f.node(id).map_err(err)?;
        let Some((axis, extent)) = key(&shrink, &Output::new(id, 0)) else {
            continue;
        };
        for (k, &input) in node.inputs().iter().enumerate() {
            let Batch::Invariant { spread } = of[&input] else {
                continue;
            };
            let Some(a) = demand(node.op(), k, axis).filter(|&a| a < 64 && spread >> a & 1 != 0)
            else {
                continue;
            };
            if shrink
                .insert(input, (a, extent))
                .is_some_and(|old| old != (a, extent))
            {
                let name = f.node(input.node).map_or("?", |n| n.name());
                return Err(format!(
                    "`{name}` meets the batch on two different axes or groups"
                ));
            }
        }
    }
    // A shrunk value must shrink for every reader: one that needs it whole (a reduction
    // over it, a product with it) would read part of it instead.
    for (&v, &(a, extent)) in &shrink {
        let node = f.node(v.node).map_err(err)?;
        for &(user, k) in node.users(v.index) {
            let Ok(u) = f.node(user) else { continue };
            let out = Output::new(user, 0);
            if !of.contains_key(&out) {
                continue; // dead
            }
            let reads = key(&shrink, &out)
                .filter(|&(_, e)| e == extent)
                .and_then(|(x, _)| demand(u.op(), k, x));
            if reads != Some(a) {
                return Err(format!(
                    "`{}` is read along the batch by some nodes and whole by `{}`",
                    node.name(),
                    u.name()
                ));
            }
        }
    }
    Ok(shrink)
}

/// The axis of input `k` of `op` that lines up with its result's batch axis `axis`, where
/// an invariant input there must shrink with it: every operand of an elementwise op or
/// `Concat`, `Attention`'s mask, a `Gather`'s indices.
fn demand(op: &Op, k: usize, axis: usize) -> Option<usize> {
    match op {
        Op::Unary(_) | Op::Convert(_) | Op::Binary(_) | Op::Compare(_) | Op::Select => Some(axis),
        Op::Concat(_) => Some(axis),
        Op::Attention(_) if k == 3 => Some(0),
        Op::Gather(g) if k == 1 => axis.checked_sub(*g),
        _ => None,
    }
}

/// The first `extent` slices along axis `a` of the constant `data` of extents `dims`
/// (uniform along it, so any `extent` of them).
fn first_slices(data: &TensorData, dims: &[usize], a: usize, extent: usize) -> Option<TensorData> {
    let inner: usize = dims[a + 1..].iter().product::<usize>() * extent;
    let outer: usize = dims[..a].iter().product();
    let mut out = TensorData::zeros(data.element_type(), outer * inner);
    for o in 0..outer {
        let block = data.range(o * dims[a] * inner / extent, inner)?;
        if !out.write_range(o * inner, &block) {
            return None;
        }
    }
    Some(out)
}

/// The per-sample Function: `f`'s parameters in their order, its other nodes in `order`,
/// its results in their order, with the extents of `shrink` on the batch axes of each
/// parameter, `Reshape`, `Broadcast`, `Slice`, `Resize` and transposed convolution, and of
/// each shrunk invariant `Broadcast` and constant; other shapes follow by inference.
fn rebuild(
    f: &Function,
    order: &[NodeId],
    of: &HashMap<Output, Batch>,
    shrink: &HashMap<Output, (usize, usize)>,
) -> Result<Function, String> {
    let err = |e: graphlift_ir::IrError| e.to_string();
    let shrunk = |s: &Shape, (a, extent): (usize, usize)| {
        let mut d = s.dims().to_vec();
        d[a] = extent;
        Shape::new(d)
    };
    let mut g = Function::new(f.name());
    g.set_provenance_enabled(f.provenance_enabled());
    let mut map: HashMap<NodeId, NodeId> = HashMap::new();
    for &id in f.parameters() {
        let node = f.node(id).map_err(err)?;
        let t = node.output_type();
        let new = g
            .add_parameter(node.name(), t.element_type, shrunk(&t.shape, (0, 1)))
            .map_err(err)?;
        annotate(&mut g, new, node).map_err(err)?;
        map.insert(id, new);
    }
    let mapped = |map: &HashMap<NodeId, NodeId>, o: &Output| Output::new(map[&o.node], o.index);
    for &id in order {
        let node = f.node(id).map_err(err)?;
        if matches!(node.op(), Op::Parameter | Op::Result) {
            continue;
        }
        let me = Output::new(id, 0);
        let axis = match of[&me] {
            Batch::Axis { axis, group } => Some((axis, group)),
            Batch::Invariant { .. } => shrink.get(&me).copied(),
        };
        let inputs: Vec<Output> = node.inputs().iter().map(|o| mapped(&map, o)).collect();
        let new = if let Op::Constant(data) = node.op() {
            match axis {
                None => g.import_node(node, &inputs).map_err(err)?,
                Some((a, extent)) => {
                    let shape = &node.output_type().shape;
                    let data = first_slices(data, shape.dims(), a, extent)
                        .ok_or_else(|| format!("constant `{}` does not slice", node.name()))?;
                    let new = g
                        .add_constant(data, shrunk(shape, (a, extent)))
                        .map_err(err)?;
                    g.set_name(new, node.name()).map_err(err)?;
                    annotate(&mut g, new, node).map_err(err)?;
                    new
                }
            }
        } else {
            let op = match (node.op(), axis) {
                (Op::Reshape(s), Some(to)) => Op::Reshape(shrunk(s, to)),
                (Op::Broadcast(s), Some(to)) => Op::Broadcast(shrunk(s, to)),
                (Op::ConvolutionBackpropData(c), Some((a, extent))) => {
                    let mut c = c.clone();
                    let mut d = c.shape.dims().to_vec();
                    d[a] = extent;
                    c.shape = Shape::new(d);
                    Op::ConvolutionBackpropData(c)
                }
                (Op::Resize(r), Some((a, extent))) => {
                    let mut r = r.clone();
                    r.shape[a] = extent;
                    Op::Resize(r)
                }
                (Op::Slice(axes), Some((a, extent))) => {
                    let mut axes = axes.clone();
                    axes[a].len = extent;
                    Op::Slice(axes)
                }
                (op, _) => op.clone(),
            };
            let new = g
                .add_node_at(op, &inputs, node.creation_site().clone())
                .map_err(err)?;
            g.set_name(new, node.name()).map_err(err)?;
            annotate(&mut g, new, node).map_err(err)?;
            new
        };
        for dep in node.other_deps() {
            if let Some(&d) = map.get(dep) {
                g.add_control_dependency(new, d).map_err(err)?;
            }
        }
        map.insert(id, new);
    }
    for &id in f.results() {
        let node = f.node(id).map_err(err)?;
        let value = mapped(&map, &node.inputs()[0]);
        let new = g
            .add_result(value, Some(node.name().to_string()))
            .map_err(err)?;
        annotate(&mut g, new, node).map_err(err)?;
    }
    Ok(g)
}

/// Gives node `id` of `g` the tags and metadata of `src`.
fn annotate(
    g: &mut Function,
    id: NodeId,
    src: &graphlift_ir::Node,
) -> Result<(), graphlift_ir::IrError> {
    g.add_tags(id, src.tags())?;
    for (k, v) in src.metadata() {
        g.set_metadata(id, k, v)?;
    }
    Ok(())
}
