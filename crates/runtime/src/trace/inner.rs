//! The inner steps of fused native ops, as a trace nests them under the op's record (issue
//! 26, after SameDiff's tracer, which shows a convolution's im2col): each op's computation
//! written out in IR ops on Parameters of the op's input types, its nodes named by the step
//! they belong to, so a collected trace can decompose the op and the nested records save,
//! load and re-run like a fused kernel's body.
//!
//! - `Convolution` (the native im2col + GEMM): `im2col/pad`, one `im2col/window i,j` strided
//!   slice per filter position, `im2col` (the columns `[N, groups, C/groups·K, O]`),
//!   `gemm/filter` and `gemm` (`[groups, M/groups, C/groups·K] · columns`), `gemm/output`.
//! - `LayerNorm`: `mean`, `centre`, `variance`, `normalise` (and their broadcasts).
//! - `Attention`: `heads/q`, `heads/k`, `heads/v` (the head split), `scores = Q·Kᵀ·scale`,
//!   `+ mask`, `softmax`, `· V`, `merge heads`, over all heads at once (the native kernel
//!   runs them one head block at a time).
//!
//! The steps compute the op's values (up to rounding: a different summation order), which
//! the trace tests check. They are not timed one by one: the Chrome export estimates each
//! step's share of the op's measured time from its work.

use graphlift_ir::{
    Attention, BinaryOp, Convolution, ElementType, Function, LayerNorm, Op, Output, Pad, PadMode,
    ReduceOp, Reduction, Shape, SliceAxis, TensorData, TensorType, UnaryOp,
};

/// The inner steps of `op` on inputs of `inputs`' types as a body Function (Parameters in
/// input order), or `None` for an op without inner steps, or one whose inputs do not fit
/// it (then the record simply has no nested records).
pub(super) fn decomposition(op: &Op, inputs: &[TensorType]) -> Option<Function> {
    let mut b = Body::new(op.type_name(), inputs)?;
    let out = match op {
        Op::Convolution(c) => convolution(&mut b, c)?,
        Op::LayerNorm(l) => layer_norm(&mut b, l)?,
        Op::Attention(a) => attention(&mut b, a)?,
        _ => return None,
    };
    b.f.add_result(out, None).ok()?;
    Some(b.f)
}

/// A body under construction: its parameters and an element type for its constants.
struct Body {
    f: Function,
    params: Vec<Output>,
    et: ElementType,
}

impl Body {
    fn new(name: &str, inputs: &[TensorType]) -> Option<Body> {
        let mut f = Function::new(name);
        let mut params = Vec::with_capacity(inputs.len());
        for (k, t) in inputs.iter().enumerate() {
            let id = f
                .add_parameter(format!("input_{k}"), t.element_type, t.shape.clone())
                .ok()?;
            params.push(Output::from(id));
        }
        let et = inputs.first()?.element_type;
        matches!(et, ElementType::F32 | ElementType::F64).then_some(Body { f, params, et })
    }

    /// A node of `op` on `inputs` named `name`.
    fn node(&mut self, name: &str, op: Op, inputs: &[Output]) -> Option<Output> {
        let id = self.f.add_node(op, inputs).ok()?;
        self.f.set_name(id, name.to_string()).ok()?;
        Some(id.into())
    }

    /// The scalar `v` broadcast to `shape`, named `name` (its constant `name/value`).
    fn splat(&mut self, name: &str, v: f64, shape: &[usize]) -> Option<Output> {
        let data = match self.et {
            ElementType::F64 => TensorData::F64(vec![v]),
            _ => TensorData::F32(vec![v as f32]),
        };
        let c = self.f.add_constant(data, Shape::new([])).ok()?;
        self.f.set_name(c, format!("{name}/value")).ok()?;
        self.node(name, Op::Broadcast(Shape::new(shape)), &[c.into()])
    }

    fn dims(&self, o: Output) -> Option<Vec<usize>> {
        Some(self.f.output_type(o).ok()?.shape.dims().to_vec())
    }
}

fn reshape(b: &mut Body, name: &str, x: Output, dims: &[usize]) -> Option<Output> {
    b.node(name, Op::Reshape(Shape::new(dims)), &[x])
}

/// `im2col` then one `gemm` per group (batched), as the native convolution runs.
fn convolution(b: &mut Body, c: &Convolution) -> Option<Output> {
    let (x, w) = (*b.params.first()?, *b.params.get(1)?);
    let (xd, wd) = (b.dims(x)?, b.dims(w)?);
    let win = &c.window;
    let spatial = xd.len().checked_sub(2)?;
    let fits = [&win.strides, &win.dilations, &win.pads_begin, &win.pads_end]
        .iter()
        .all(|v| v.len() == spatial);
    if b.params.len() != 2 || wd.len() != xd.len() || win.shape.len() != spatial || !fits {
        return None;
    }
    let (n, ch, m, g) = (xd[0], xd[1], wd[0], c.groups);
    let zero = b.splat("im2col/pad/zero", 0.0, &[])?;
    let mut low = vec![0, 0];
    low.extend(&win.pads_begin);
    let mut high = vec![0, 0];
    high.extend(&win.pads_end);
    let pad = Pad {
        low,
        high,
        interior: vec![0; xd.len()],
        mode: PadMode::Constant,
    };
    let xp = b.node("im2col/pad", Op::Pad(pad), &[x, zero])?;
    let pd = b.dims(xp)?;
    let out: Vec<usize> = (0..spatial)
        .map(|a| {
            let span = win.dilations[a] * win.shape[a].checked_sub(1)? + 1;
            Some(pd[a + 2].checked_sub(span)?.checked_div(win.strides[a])? + 1)
        })
        .collect::<Option<_>>()?;
    let per_group = ch.checked_div(g)?;
    let positions: usize = win.shape.iter().product();
    let o: usize = out.iter().product();
    let mut windows = Vec::with_capacity(positions);
    for p in 0..positions {
        // The filter position `p` in row-major order of the window.
        let mut rest = p;
        let mut at = vec![0; spatial];
        for a in (0..spatial).rev() {
            at[a] = rest % win.shape[a];
            rest /= win.shape[a];
        }
        let mut axes = vec![SliceAxis::full(n), SliceAxis::full(ch)];
        axes.extend((0..spatial).map(|a| SliceAxis {
            start: at[a] * win.dilations[a],
            step: i64::try_from(win.strides[a]).unwrap_or(i64::MAX),
            len: out[a],
        }));
        let label = at.iter().map(ToString::to_string).collect::<Vec<_>>();
        let name = format!("im2col/window {}", label.join(","));
        let s = b.node(&name, Op::Slice(axes), &[xp])?;
        windows.push(reshape(b, &format!("{name}/flat"), s, &[n, ch, 1, o])?);
    }
    let cols = b.node("im2col/columns", Op::Concat(2), &windows)?;
    let cols = reshape(b, "im2col", cols, &[n, g, per_group * positions, o])?;
    let wf = reshape(
        b,
        "gemm/filter",
        w,
        &[g, m.checked_div(g)?, per_group * positions],
    )?;
    let y = b.node("gemm", Op::MatMul, &[wf, cols])?;
    let mut dims = vec![n, m];
    dims.extend(&out);
    reshape(b, "gemm/output", y, &dims)
}

/// `(x - mean) / sqrt(var + epsilon) * scale + bias` over the axes `axis..`.
fn layer_norm(b: &mut Body, l: &LayerNorm) -> Option<Output> {
    let [x, scale, bias] = b.params[..] else {
        return None;
    };
    let xd = b.dims(x)?;
    let axes: Vec<usize> = (l.axis..xd.len()).collect();
    let mean_op = Op::Reduce(Reduction {
        op: ReduceOp::Mean,
        axes,
        keep_dims: true,
    });
    let mean = b.node("mean", mean_op.clone(), &[x])?;
    let mean = b.node("mean/broadcast", Op::Broadcast(Shape::new(&xd)), &[mean])?;
    let d = b.node("centre", Op::Binary(BinaryOp::Subtract), &[x, mean])?;
    let sq = b.node("variance/square", Op::Binary(BinaryOp::Multiply), &[d, d])?;
    let var = b.node("variance", mean_op, &[sq])?;
    let vd = b.dims(var)?;
    let eps = b.splat("normalise/epsilon", l.epsilon, &vd)?;
    let ve = b.node(
        "normalise/add epsilon",
        Op::Binary(BinaryOp::Add),
        &[var, eps],
    )?;
    let sd = b.node("normalise/sqrt", Op::Unary(UnaryOp::Sqrt), &[ve])?;
    let sd = b.node("normalise/broadcast", Op::Broadcast(Shape::new(&xd)), &[sd])?;
    let norm = b.node("normalise/divide", Op::Binary(BinaryOp::Divide), &[d, sd])?;
    let s = b.node("normalise/scale", Op::Broadcast(Shape::new(&xd)), &[scale])?;
    let t = b.node("normalise/bias", Op::Broadcast(Shape::new(&xd)), &[bias])?;
    let y = b.node(
        "normalise/multiply",
        Op::Binary(BinaryOp::Multiply),
        &[norm, s],
    )?;
    b.node("normalise", Op::Binary(BinaryOp::Add), &[y, t])
}

/// `softmax(Q·Kᵀ·scale + mask)·V` per head, heads split and merged by layout ops.
fn attention(b: &mut Body, a: &Attention) -> Option<Output> {
    let (q, k, v) = (*b.params.first()?, *b.params.get(1)?, *b.params.get(2)?);
    let mask = b.params.get(3).copied();
    let h = a.heads;
    let split = |b: &mut Body, name: &str, x: Output, perm: Vec<usize>| {
        let &[n, s, w] = &b.dims(x)?[..] else {
            return None;
        };
        let r = reshape(
            b,
            &format!("{name}/split"),
            x,
            &[n, s, h, w.checked_div(h)?],
        )?;
        b.node(name, Op::Transpose(perm), &[r])
    };
    let qh = split(b, "heads/q", q, vec![0, 2, 1, 3])?;
    let kt = split(b, "heads/k", k, vec![0, 2, 3, 1])?;
    let vh = split(b, "heads/v", v, vec![0, 2, 1, 3])?;
    let s = b.node("scores = Q·Kᵀ", Op::MatMul, &[qh, kt])?;
    let sd = b.dims(s)?;
    let scale = b.splat("scores = Q·Kᵀ·scale/scale", a.scale, &sd)?;
    let mut s = b.node(
        "scores = Q·Kᵀ·scale",
        Op::Binary(BinaryOp::Multiply),
        &[s, scale],
    )?;
    if let Some(m) = mask {
        let mb = b.node("+ mask/broadcast", Op::Broadcast(Shape::new(&sd)), &[m])?;
        s = b.node("+ mask", Op::Binary(BinaryOp::Add), &[s, mb])?;
    }
    let p = b.node("softmax", Op::Softmax(3), &[s])?;
    let ctx = b.node("· V", Op::MatMul, &[p, vh])?;
    let &[n, heads, s, d] = &b.dims(ctx)?[..] else {
        return None;
    };
    let t = b.node(
        "merge heads/transpose",
        Op::Transpose(vec![0, 2, 1, 3]),
        &[ctx],
    )?;
    reshape(b, "merge heads", t, &[n, s, heads * d])
}
