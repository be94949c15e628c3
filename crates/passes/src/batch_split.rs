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
//! the batch ([`Batch`]), op by op; it refuses (saying which node, and why) anything it
//! cannot follow: state, control flow, a constant with one row per sample, a reduction or
//! product over the batch axis. The proof is a dataflow one, on shapes and ops alone: it
//! holds for every value of the parameters.

use std::collections::HashMap;

use graphlift_ir::{Function, NodeId, Op, Output, Shape, TensorData};

#[cfg(test)]
mod tests;

/// A batched Function and the Function of one of its samples.
#[derive(Debug, Clone)]
pub struct PerSample {
    /// The Function of one sample: the source with extent 1 on every batch axis (each
    /// parameter and result has shape `[1, ..]` where the source's has `[batch, ..]`). Node
    /// names, tags, metadata and creation sites are the source's.
    pub function: Function,
    /// The batch: the source's extent on axis 0 of every parameter and result.
    pub batch: usize,
}

/// Where the batch is in one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Batch {
    /// Depends on the parameters; its slice at index `b` of this axis depends only on
    /// sample `b` of every parameter.
    Axis(usize),
    /// Depends on no parameter. `spread`: the axes (a bit each) of extent `batch` along
    /// which it is uniform (a `Broadcast` of a value without them), which it can be
    /// combined with a batched value along.
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
        let b = transfer(node.op(), &ins, &shapes, out, batch)
            .map_err(|why| format!("node `{}` ({}): {why}", node.name(), node.op().type_name()))?;
        for k in 0..node.outputs().len() {
            of.insert(Output::new(id, k), b);
        }
    }
    for &r in f.results() {
        if of[&Output::new(r, 0)] != Batch::Axis(0) {
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

/// The batch of each output of one node, from its inputs' (`shapes` their shapes, `out`
/// its first output's shape), or why it mixes samples.
fn transfer(
    op: &Op,
    ins: &[Batch],
    shapes: &[&Shape],
    out: &Shape,
    batch: usize,
) -> Result<Batch, String> {
    let axis_of = |k: usize| match ins.get(k) {
        Some(Batch::Axis(a)) => Some(*a),
        _ => None,
    };
    let all_invariant = ins.iter().all(|b| matches!(b, Batch::Invariant { .. }));
    let one = Ok;
    match op {
        Op::Variable(_) | Op::ReadVariable | Op::Assign | Op::Random(_) | Op::ControlFlow(_) => {
            Err("state, random draws and control flow run once per call, not per sample".into())
        }
        Op::Parameter => one(Batch::Axis(0)),
        Op::Constant(data) => one(Batch::Invariant {
            spread: uniform_axes(data, out.dims(), batch),
        }),
        Op::Result => one(ins[0]),
        Op::Unary(_) | Op::Convert(_) | Op::Binary(_) | Op::Compare(_) | Op::Select => {
            one(elementwise(ins)?)
        }
        Op::Concat(axis) => match elementwise(ins)? {
            Batch::Axis(a) if a == *axis => Err("it joins along the batch axis".into()),
            b => one(b),
        },
        _ if all_invariant => one(invariant_spread(op, ins, shapes, out, batch)),
        Op::Broadcast(target) => {
            let a = axis_of(0).unwrap_or(0) + target.rank() - shapes[0].rank();
            one(Batch::Axis(a))
        }
        Op::Reshape(target) => {
            let a = axis_of(0).unwrap_or(0);
            let dims = shapes[0].dims();
            let before: usize = dims[..a].iter().product();
            let after: usize = dims[a + 1..].iter().product();
            let t = target.dims();
            (0..t.len())
                .find(|&j| {
                    t[j] == batch
                        && t[..j].iter().product::<usize>() == before
                        && t[j + 1..].iter().product::<usize>() == after
                })
                .map(Batch::Axis)
                .ok_or_else(|| format!("its new shape {target} merges or splits the batch axis"))
        }
        Op::Transpose(perm) => {
            let a = axis_of(0).unwrap_or(0);
            one(Batch::Axis(perm.iter().position(|&p| p == a).unwrap_or(a)))
        }
        Op::Slice(axes) => {
            let a = axis_of(0).unwrap_or(0);
            let s = &axes[a];
            if s.start == 0 && s.step == 1 && s.len == batch {
                one(Batch::Axis(a))
            } else {
                Err("it slices the batch axis".into())
            }
        }
        Op::Pad(p) => {
            let a = axis_of(0).ok_or("its padding value depends on the samples")?;
            let pads = [&p.low, &p.high, &p.interior];
            if pads.iter().any(|v| v.get(a).is_some_and(|&n| n != 0)) {
                Err("it pads the batch axis".into())
            } else {
                one(Batch::Axis(a))
            }
        }
        Op::Gather(axis) => match (ins[0], ins[1]) {
            (Batch::Invariant { .. }, Batch::Axis(a)) => one(Batch::Axis(axis + a)),
            (Batch::Axis(a), Batch::Invariant { .. }) if a != *axis => {
                let at = if a < *axis {
                    a
                } else {
                    a - 1 + shapes[1].rank()
                };
                one(Batch::Axis(at))
            }
            _ => Err("its indices select across samples".into()),
        },
        Op::Reduce(r) => {
            let a = axis_of(0).unwrap_or(0);
            if r.axes.contains(&a) {
                return Err("it reduces over the batch axis".into());
            }
            let removed = if r.keep_dims {
                0
            } else {
                r.axes.iter().filter(|&&x| x < a).count()
            };
            one(Batch::Axis(a - removed))
        }
        Op::ArgReduce(r) => {
            let a = axis_of(0).unwrap_or(0);
            match a.cmp(&r.axis) {
                std::cmp::Ordering::Equal => Err("it reduces over the batch axis".into()),
                std::cmp::Ordering::Greater if !r.keep_dims => one(Batch::Axis(a - 1)),
                _ => one(Batch::Axis(a)),
            }
        }
        Op::TopK(t) => along_other_axis(axis_of(0), t.axis),
        Op::CumSum(c) => along_other_axis(axis_of(0), c.axis),
        Op::Softmax(axis) => along_other_axis(axis_of(0), *axis),
        Op::LayerNorm(l) => match (axis_of(0), axis_of(1), axis_of(2)) {
            (Some(a), None, None) if a < l.axis => one(Batch::Axis(a)),
            _ => Err("it normalises over the batch axis, or its scale or bias is batched".into()),
        },
        Op::MatMul => matmul(ins, shapes),
        Op::QuantizedMatMul(_) => match (axis_of(0), ins[1..].iter().all(|b| b.is_invariant())) {
            (Some(a), true) if a + 1 < shapes[0].rank() => one(Batch::Axis(a)),
            _ => Err("it contracts the batch axis, or its weights are batched".into()),
        },
        Op::Attention(_) => attention(ins, shapes, batch),
        Op::Convolution(_)
        | Op::ConvolutionInteger(_)
        | Op::BatchNormInference(_)
        | Op::MaxPool(_)
        | Op::MaxPoolIndices(_) => {
            if axis_of(0) == Some(0)
                && ins[1..]
                    .iter()
                    .all(|b| matches!(b, Batch::Invariant { .. }))
            {
                one(Batch::Axis(0))
            } else {
                Err("its filter or statistics are batched".into())
            }
        }
        _ => Err("batch splitting does not follow this op".into()),
    }
}

/// An op along `axis` of a batched value: the batch stays where it is unless it is that axis.
fn along_other_axis(a: Option<usize>, axis: usize) -> Result<Batch, String> {
    match a {
        Some(a) if a != axis => Ok(Batch::Axis(a)),
        _ => Err("it runs along the batch axis".into()),
    }
}

/// The batch of an elementwise op's result: its batched operands' common axis, along which
/// each invariant operand must be uniform; else invariant, uniform along the axes all are.
fn elementwise(ins: &[Batch]) -> Result<Batch, String> {
    let mut axis = None;
    let mut spread = u64::MAX;
    for b in ins {
        match *b {
            Batch::Axis(a) if axis.is_some_and(|x| x != a) => {
                return Err("its operands are batched on different axes".into())
            }
            Batch::Axis(a) => axis = Some(a),
            Batch::Invariant { spread: s } => spread &= s,
        }
    }
    match axis {
        Some(a) if a < 64 && spread & (1 << a) != 0 => Ok(Batch::Axis(a)),
        Some(_) => Err("an operand without the batch is not uniform along the batch axis".into()),
        None => Ok(Batch::Invariant { spread }),
    }
}

/// Constants of more elements than this are not searched for uniform axes.
const MAX_SEARCHED: usize = 1 << 22;

/// The axes (a bit each) of extent `batch` along which the constant `data` of extents
/// `dims` repeats one slice (a constant the importer folded from a broadcast, such as
/// token type ids of zeros, embedded): slices compared bit for bit.
fn uniform_axes(data: &TensorData, dims: &[usize], batch: usize) -> u64 {
    if data.len() > MAX_SEARCHED {
        return 0;
    }
    let uniform = |j: usize| {
        let inner: usize = dims[j + 1..].iter().product();
        let outer: usize = dims[..j].iter().product();
        let slice = |o: usize, i: usize| data.range((o * batch + i) * inner, inner);
        (0..outer).all(|o| {
            (1..batch).all(|i| match (slice(o, 0), slice(o, i)) {
                (Some(a), Some(b)) => a.same_bits(&b),
                _ => false,
            })
        })
    };
    (0..dims.len().min(64))
        .filter(|&j| dims[j] == batch && uniform(j))
        .fold(0u64, |m, j| m | 1 << j)
}

/// Slice 0 along axis `a` of the constant `data` of extents `dims` (uniform along it).
fn first_slice(data: &TensorData, dims: &[usize], a: usize) -> Option<TensorData> {
    let inner: usize = dims[a + 1..].iter().product();
    let outer: usize = dims[..a].iter().product();
    let mut out = TensorData::zeros(data.element_type(), outer * inner);
    for o in 0..outer {
        let block = data.range(o * dims[a] * inner, inner)?;
        if !out.write_range(o * inner, &block) {
            return None;
        }
    }
    Some(out)
}

/// An invariant value's batch: a `Broadcast` is uniform along the axes of extent `batch`
/// it adds or stretches from 1; a `Gather` along the axes its indices are uniform along;
/// anything else along none (as far as this analysis knows).
fn invariant_spread(op: &Op, ins: &[Batch], shapes: &[&Shape], out: &Shape, batch: usize) -> Batch {
    let spread = match (op, ins.get(1)) {
        (Op::Broadcast(_), _) => {
            let (dims, from) = (out.dims(), shapes[0].dims());
            let off = dims.len() - from.len();
            (0..dims.len().min(64))
                .filter(|&j| dims[j] == batch && (j < off || from[j - off] == 1))
                .fold(0u64, |m, j| m | 1 << j)
        }
        (Op::Gather(axis), Some(Batch::Invariant { spread })) => {
            spread.checked_shl(*axis as u32).unwrap_or(0)
        }
        _ => 0,
    };
    Batch::Invariant { spread }
}

/// `MatMul`'s result batch: a batched row operand (`a`'s rows or batch axes) or column
/// operand (`b`'s columns or batch axes) beside an invariant one without those samples.
fn matmul(ins: &[Batch], shapes: &[&Shape]) -> Result<Batch, String> {
    let (ra, rb) = (shapes[0].rank(), shapes[1].rank());
    let ro = ra.max(rb);
    // The result axis of operand axis `x` of rank `r`, when it is not contracted.
    let place = |x: usize, r: usize, rows: bool| {
        if x + 2 < r {
            Some(x + ro - r)
        } else if (rows && x + 2 == r) || (!rows && x + 1 == r) {
            Some(if rows { ro - 2 } else { ro - 1 })
        } else {
            None
        }
    };
    // Whether the other operand has extent 1 (or no axis) at result axis `o`.
    let single = |o: usize, shape: &Shape| {
        let r = shape.rank();
        o + 2 >= ro || o + r < ro || shape.dims()[o + r - ro] == 1
    };
    let contracted = || "it contracts the batch axis".to_string();
    match (ins[0], ins[1]) {
        (Batch::Axis(x), Batch::Invariant { .. }) => {
            let o = place(x, ra, true).ok_or_else(contracted)?;
            single(o, shapes[1])
                .then_some(Batch::Axis(o))
                .ok_or_else(|| "its other operand has one matrix per sample".to_string())
        }
        (Batch::Invariant { .. }, Batch::Axis(y)) => {
            let o = place(y, rb, false).ok_or_else(contracted)?;
            single(o, shapes[0])
                .then_some(Batch::Axis(o))
                .ok_or_else(|| "its other operand has one matrix per sample".to_string())
        }
        (Batch::Axis(x), Batch::Axis(y)) => match (x + 2 < ra, y + 2 < rb) {
            (true, true) if x + ro - ra == y + ro - rb => Ok(Batch::Axis(x + ro - ra)),
            _ => Err("its operands' batch axes do not meet in one axis of its result".into()),
        },
        _ => Ok(INVARIANT),
    }
}

/// `Attention`'s result batch: `q`, `k`, `v` batched on axis 0, the mask too or the same
/// for every sample.
fn attention(ins: &[Batch], shapes: &[&Shape], batch: usize) -> Result<Batch, String> {
    if ins[..3].iter().any(|b| *b != Batch::Axis(0)) {
        return Err("its q, k and v are not all batched on axis 0".into());
    }
    match ins.get(3) {
        None => Ok(Batch::Axis(0)),
        Some(Batch::Axis(0)) if shapes[3].rank() == 4 => Ok(Batch::Axis(0)),
        Some(Batch::Invariant { spread }) => {
            let m = shapes[3].dims();
            let leading = m.len() == 4 && m[0] == batch;
            if !leading || m[0] == 1 || spread & 1 != 0 {
                Ok(Batch::Axis(0))
            } else {
                Err("its mask has one block per sample but does not depend on them".into())
            }
        }
        _ => Err("its mask is batched on another axis".into()),
    }
}

/// The axis each invariant value is shrunk to extent 1 along in the per-sample Function:
/// the batch axis of the batched op that reads it ([`demand`]), carried back through the
/// invariant ops it came through to the `Broadcast` that spread it.
fn demands(
    f: &Function,
    order: &[NodeId],
    of: &HashMap<Output, Batch>,
) -> Result<HashMap<Output, usize>, String> {
    let mut shrink: HashMap<Output, usize> = HashMap::new();
    for &id in order.iter().rev() {
        let node = f.node(id).map_err(|e| e.to_string())?;
        let me = Output::new(id, 0);
        let axis = match (of[&me], shrink.get(&me)) {
            (Batch::Axis(a), _) | (Batch::Invariant { .. }, Some(&a)) => a,
            _ => continue,
        };
        for (k, &input) in node.inputs().iter().enumerate() {
            let Batch::Invariant { spread } = of[&input] else {
                continue;
            };
            let Some(a) = demand(node.op(), k, axis).filter(|&a| a < 64 && spread >> a & 1 != 0)
            else {
                continue;
            };
            if shrink.insert(input, a).is_some_and(|old| old != a) {
                let name = f.node(input.node).map_or("?", |n| n.name());
                return Err(format!("`{name}` meets the batch on two different axes"));
            }
        }
    }
    // A shrunk value must shrink for every reader: one that needs it whole (a reduction
    // over it, a product with it) would read one row of it instead.
    for (&v, &a) in &shrink {
        let node = f.node(v.node).map_err(|e| e.to_string())?;
        for &(user, k) in node.users(v.index) {
            let Ok(u) = f.node(user) else { continue };
            let out = Output::new(user, 0);
            let axis = match of.get(&out) {
                None => continue, // dead
                Some(Batch::Axis(x)) => Some(*x),
                Some(Batch::Invariant { .. }) => shrink.get(&out).copied(),
            };
            if axis.and_then(|x| demand(u.op(), k, x)) != Some(a) {
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

/// The per-sample Function: `f`'s parameters in their order, its other nodes in `order`,
/// its results in their order, with extent 1 on the batch axis of each parameter,
/// `Reshape`, `Broadcast` and `Slice`, and on the axis each invariant `Broadcast` is shrunk
/// along; other shapes follow by inference.
fn rebuild(
    f: &Function,
    order: &[NodeId],
    of: &HashMap<Output, Batch>,
    shrink: &HashMap<Output, usize>,
) -> Result<Function, String> {
    let err = |e: graphlift_ir::IrError| e.to_string();
    let one = |s: &Shape, a: usize| {
        let mut d = s.dims().to_vec();
        d[a] = 1;
        Shape::new(d)
    };
    let mut g = Function::new(f.name());
    g.set_provenance_enabled(f.provenance_enabled());
    let mut map: HashMap<NodeId, NodeId> = HashMap::new();
    for &id in f.parameters() {
        let node = f.node(id).map_err(err)?;
        let t = node.output_type();
        let new = g
            .add_parameter(node.name(), t.element_type, one(&t.shape, 0))
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
            Batch::Axis(a) => Some(a),
            Batch::Invariant { .. } => shrink.get(&me).copied(),
        };
        let inputs: Vec<Output> = node.inputs().iter().map(|o| mapped(&map, o)).collect();
        let new = if let Op::Constant(data) = node.op() {
            match axis {
                None => g.import_node(node, &inputs).map_err(err)?,
                Some(a) => {
                    let shape = &node.output_type().shape;
                    let data = first_slice(data, shape.dims(), a)
                        .ok_or_else(|| format!("constant `{}` does not slice", node.name()))?;
                    let new = g.add_constant(data, one(shape, a)).map_err(err)?;
                    g.set_name(new, node.name()).map_err(err)?;
                    annotate(&mut g, new, node).map_err(err)?;
                    new
                }
            }
        } else {
            let op = match (node.op(), axis) {
                (Op::Reshape(s), Some(a)) => Op::Reshape(one(s, a)),
                (Op::Broadcast(s), Some(a)) => Op::Broadcast(one(s, a)),
                (Op::Slice(axes), Some(a)) => {
                    let mut axes = axes.clone();
                    axes[a].len = 1;
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
