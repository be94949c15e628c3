//! Where the batch goes through each op: the transfer function of batch splitting's
//! dataflow analysis, from the [`Batch`] of a node's inputs to its result's.

use graphlift_ir::{CoordinateTransform, Op, Shape, TensorData};

use super::{Batch, INVARIANT};

/// The batch of a node's result, from its inputs' (`shapes` their shapes, `out` its first
/// output's shape), or why it mixes samples.
pub(super) fn transfer(
    op: &Op,
    ins: &[Batch],
    shapes: &[&Shape],
    out: &Shape,
    batch: usize,
) -> Result<Batch, String> {
    let batched = |k: usize| match ins.get(k) {
        Some(&Batch::Axis { axis, group }) => Some((axis, group)),
        _ => None,
    };
    let all_invariant = ins.iter().all(Batch::is_invariant);
    let at = |axis, group| Ok(Batch::Axis { axis, group });
    match op {
        Op::Variable(_) | Op::ReadVariable | Op::Assign | Op::Random(_) | Op::ControlFlow(_) => {
            Err("state, random draws and control flow run once per call, not per sample".into())
        }
        Op::Parameter => at(0, 1),
        Op::Constant(data) => Ok(Batch::Invariant {
            spread: uniform_axes(data, out.dims(), batch),
        }),
        Op::Result => Ok(ins[0]),
        Op::Unary(_) | Op::Convert(_) | Op::Binary(_) | Op::Compare(_) | Op::Select => {
            elementwise(ins)
        }
        Op::Concat(c) => match elementwise(ins)? {
            Batch::Axis { axis, .. } if axis == *c => Err("it joins along the batch axis".into()),
            b => Ok(b),
        },
        _ if all_invariant => Ok(invariant_spread(op, ins, shapes, out)),
        Op::MatMul => matmul(ins, shapes),
        Op::Attention(_) => attention(ins, shapes, batch),
        Op::Gather(g) => match (ins[0], batched(1)) {
            (Batch::Invariant { .. }, Some((a, m))) => at(g + a, m),
            (Batch::Axis { axis, group }, None) => along(op, (axis, group), ins, shapes, batch),
            _ => Err("its indices select across samples".into()),
        },
        _ => {
            let Some((a, m)) = batched(0) else {
                return Err("only an operand after its first carries the batch".into());
            };
            along(op, (a, m), ins, shapes, batch)
        }
    }
}

/// The batch of an op whose first operand carries it on axis `a` in groups of `m`.
fn along(
    op: &Op,
    (a, m): (usize, usize),
    ins: &[Batch],
    shapes: &[&Shape],
    batch: usize,
) -> Result<Batch, String> {
    let at = |axis, group| Ok(Batch::Axis { axis, group });
    let rest_invariant = ins[1..].iter().all(Batch::is_invariant);
    let unless = |axis: usize, why: &str| {
        if a == axis {
            Err(why.to_string())
        } else {
            at(a, m)
        }
    };
    match op {
        Op::Broadcast(target) => at(a + target.rank() - shapes[0].rank(), m),
        Op::Reshape(target) => reshape((a, m), shapes[0].dims(), target.dims(), batch)
            .ok_or_else(|| format!("its new shape {target} splits a sample")),
        Op::Transpose(perm) => at(perm.iter().position(|&p| p == a).unwrap_or(a), m),
        Op::Slice(axes) => {
            let s = &axes[a];
            if s.start == 0 && s.step == 1 && s.len == batch * m {
                at(a, m)
            } else {
                Err("it slices the batch axis".into())
            }
        }
        Op::Pad(p) if rest_invariant => {
            let pads = [&p.low, &p.high, &p.interior];
            if pads.iter().any(|v| v.get(a).is_some_and(|&n| n != 0)) {
                Err("it pads the batch axis".into())
            } else {
                at(a, m)
            }
        }
        Op::Gather(g) if rest_invariant && a != *g => {
            at(if a < *g { a } else { a - 1 + shapes[1].rank() }, m)
        }
        Op::Reduce(r) => {
            if r.axes.contains(&a) {
                return Err("it reduces over the batch axis".into());
            }
            let removed = if r.keep_dims {
                0
            } else {
                r.axes.iter().filter(|&&x| x < a).count()
            };
            at(a - removed, m)
        }
        Op::ArgReduce(r) if a > r.axis && !r.keep_dims => at(a - 1, m),
        Op::ArgReduce(r) => unless(r.axis, "it reduces over the batch axis"),
        Op::TopK(t) => unless(t.axis, "it runs along the batch axis"),
        Op::CumSum(c) => unless(c.axis, "it runs along the batch axis"),
        Op::Softmax(axis) => unless(*axis, "it runs along the batch axis"),
        Op::LayerNorm(l) if rest_invariant && a < l.axis => at(a, m),
        Op::QuantizedMatMul(_) if rest_invariant && a + 1 < shapes[0].rank() => at(a, m),
        Op::Resize(r) => {
            // Along an axis it keeps (scale 1), every transform but TensorFlow's two maps an
            // output index to the same source index, and every mode copies that element.
            let keeps = r.scales.get(a) == Some(&1.0)
                && r.shape.get(a) == shapes[0].dims().get(a)
                && !matches!(
                    r.coordinate_transform,
                    CoordinateTransform::TfHalfPixelForNn | CoordinateTransform::TfCropAndResize
                );
            if keeps {
                at(a, m)
            } else {
                Err("it resizes the batch axis".into())
            }
        }
        Op::GridSample(_) if a == 0 && ins[1] == ins[0] => at(0, m),
        Op::GridSample(_) => Err("its grid does not follow the data's batch".into()),
        Op::Convolution(_)
        | Op::ConvolutionInteger(_)
        | Op::ConvolutionBackpropData(_)
        | Op::BatchNormInference(_)
        | Op::MaxPool(_)
        | Op::MaxPoolIndices(_)
            if a == 0 && rest_invariant =>
        {
            at(0, m)
        }
        Op::Pad(_) | Op::Gather(_) | Op::LayerNorm(_) | Op::QuantizedMatMul(_) => {
            Err("its other operands carry the batch, or it runs along the batch axis".into())
        }
        Op::Convolution(_)
        | Op::ConvolutionInteger(_)
        | Op::ConvolutionBackpropData(_)
        | Op::BatchNormInference(_)
        | Op::MaxPool(_)
        | Op::MaxPoolIndices(_) => Err("its filter or statistics are batched".into()),
        _ => Err("batch splitting does not follow this op".into()),
    }
}

/// Where a `Reshape` from `dims` to `target` puts the batch of axis `a` in groups of `m`:
/// the axis `j` with as many elements before it (so each sample stays in its place within
/// every outer index) whose extent is a multiple of the batch and whose samples span as many
/// elements as before (`[B, H, S, D] -> [B·H, S, D]` groups the heads; back, they ungroup).
fn reshape(
    (a, m): (usize, usize),
    dims: &[usize],
    target: &[usize],
    batch: usize,
) -> Option<Batch> {
    let before: usize = dims[..a].iter().product();
    let sample: usize = m * dims[a + 1..].iter().product::<usize>();
    (0..target.len()).find_map(|j| {
        let group = target[j] / batch;
        let fits = target[j] > 0
            && target[j].is_multiple_of(batch)
            && target[..j].iter().product::<usize>() == before
            && group * target[j + 1..].iter().product::<usize>() == sample;
        fits.then_some(Batch::Axis { axis: j, group })
    })
}

/// The batch of an elementwise op's result: its batched operands' common axis and groups,
/// along which each invariant operand must be uniform; else invariant, uniform along the
/// axes all are.
fn elementwise(ins: &[Batch]) -> Result<Batch, String> {
    let mut batched = None;
    let mut spread = u64::MAX;
    for &b in ins {
        match b {
            Batch::Axis { .. } if batched.is_some_and(|x| x != b) => {
                return Err("its operands are batched on different axes".into())
            }
            Batch::Axis { .. } => batched = Some(b),
            Batch::Invariant { spread: s } => spread &= s,
        }
    }
    match batched {
        Some(Batch::Axis { axis, .. }) if axis < 64 && spread >> axis & 1 == 0 => {
            Err("an operand without the batch is not uniform along the batch axis".into())
        }
        Some(b) => Ok(b),
        None => Ok(Batch::Invariant { spread }),
    }
}

/// Constants of more elements than this are not searched for uniform axes.
const MAX_SEARCHED: usize = 1 << 22;

/// The axes (a bit each) of extent a multiple of `batch` along which the constant `data` of
/// extents `dims` repeats one slice (a constant the importer folded from a broadcast, such
/// as token type ids of zeros, embedded): slices compared bit for bit.
fn uniform_axes(data: &TensorData, dims: &[usize], batch: usize) -> u64 {
    if data.len() > MAX_SEARCHED {
        return 0;
    }
    let uniform = |j: usize| {
        let (n, inner): (usize, usize) = (dims[j], dims[j + 1..].iter().product());
        let outer: usize = dims[..j].iter().product();
        let slice = |o: usize, i: usize| data.range((o * n + i) * inner, inner);
        (0..outer).all(|o| {
            (1..n).all(|i| match (slice(o, 0), slice(o, i)) {
                (Some(a), Some(b)) => a.same_bits(&b),
                _ => false,
            })
        })
    };
    (0..dims.len().min(64))
        .filter(|&j| dims[j] > 1 && dims[j].is_multiple_of(batch) && uniform(j))
        .fold(0u64, |s, j| s | 1 << j)
}

/// An invariant value's batch: a `Broadcast` is uniform along the axes it adds or stretches
/// from 1 and along its input's; a `Gather` along the axes its indices are uniform along;
/// anything else along none (as far as this analysis knows).
fn invariant_spread(op: &Op, ins: &[Batch], shapes: &[&Shape], out: &Shape) -> Batch {
    let spread_of = |b: Option<&Batch>| match b {
        Some(Batch::Invariant { spread }) => *spread,
        _ => 0,
    };
    let spread = match op {
        Op::Broadcast(_) => {
            let (dims, from) = (out.dims(), shapes[0].dims());
            let off = dims.len() - from.len();
            let inherited = spread_of(ins.first()).checked_shl(off as u32).unwrap_or(0);
            (0..dims.len().min(64))
                .filter(|&j| j < off || from[j - off] == 1)
                .fold(inherited, |s, j| s | 1 << j)
        }
        Op::Gather(axis) => spread_of(ins.get(1)).checked_shl(*axis as u32).unwrap_or(0),
        _ => 0,
    };
    Batch::Invariant { spread }
}

/// `MatMul`'s result batch: a batched row operand (`a`'s rows or batch axes) or column
/// operand (`b`'s columns or batch axes) beside an invariant one without those samples, or
/// both batched on the same batch axis.
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
    let per_sample = || "its other operand has one matrix per sample".to_string();
    match (ins[0], ins[1]) {
        (Batch::Axis { axis, group }, Batch::Invariant { .. }) => {
            let o = place(axis, ra, true).ok_or_else(contracted)?;
            single(o, shapes[1])
                .then_some(Batch::Axis { axis: o, group })
                .ok_or_else(per_sample)
        }
        (Batch::Invariant { .. }, Batch::Axis { axis, group }) => {
            let o = place(axis, rb, false).ok_or_else(contracted)?;
            single(o, shapes[0])
                .then_some(Batch::Axis { axis: o, group })
                .ok_or_else(per_sample)
        }
        (Batch::Axis { axis: x, group: g }, Batch::Axis { axis: y, group: h }) => {
            let same = x + 2 < ra && y + 2 < rb && x + ro - ra == y + ro - rb && g == h;
            same.then_some(Batch::Axis {
                axis: x + ro - ra,
                group: g,
            })
            .ok_or_else(|| "its operands' batch axes do not meet in one axis of its result".into())
        }
        _ => Ok(INVARIANT),
    }
}

/// `Attention`'s result batch: `q`, `k`, `v` batched on axis 0, the mask too or the same
/// for every sample.
fn attention(ins: &[Batch], shapes: &[&Shape], batch: usize) -> Result<Batch, String> {
    let first = Batch::Axis { axis: 0, group: 1 };
    if ins[..3].iter().any(|&b| b != first) {
        return Err("its q, k and v are not all batched on axis 0".into());
    }
    match ins.get(3) {
        None => Ok(first),
        Some(&b) if b == first && shapes[3].rank() == 4 => Ok(first),
        Some(Batch::Invariant { spread }) => {
            let m = shapes[3].dims();
            if m.len() < 4 || m[0] != batch || spread & 1 != 0 {
                Ok(first)
            } else {
                Err("its mask has one block per sample but does not depend on them".into())
            }
        }
        _ => Err("its mask is batched on another axis".into()),
    }
}
