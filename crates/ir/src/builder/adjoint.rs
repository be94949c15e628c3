//! The adjoint of each op: given the forward inputs `x`, the output `y` and the output's
//! adjoint `g`, each input's contribution (`None`: the input carries no gradient). A rule may
//! leave out the inputs not `wanted` (no derivative asked for depends on them); the caller
//! drops their contributions anyway.
//!
//! Where the derivative is not defined the rule is fixed here, once: `Relu` and `Abs` at 0
//! and `Sign`, `Floor`, `Ceil`, `Round` everywhere have derivative 0; `Maximum` and `Minimum`
//! give a tie to their first operand; a reduction's maximum or minimum passes the adjoint to
//! every element equal to it; a `MaxPool` window passes its adjoint to one element only, the
//! first maximum in row-major window order (nGraph's and PyTorch's rule: a NaN counts as the
//! maximum, and padding never is one). Integer, boolean and comparison values carry no
//! gradient.

use super::{select, FunctionBuilder, Value};
use crate::{BinaryOp, Op, ReduceOp, Reduction, Shape, SliceAxis, UnaryOp};

/// The contributions to each input of one node.
type Contributions<'b> = Vec<Option<Value<'b>>>;

impl FunctionBuilder {
    /// The contributions of `op`'s adjoint; `Err` names an op without one.
    pub(super) fn adjoint<'b>(
        &'b self,
        op: &Op,
        x: &[Value<'b>],
        wanted: &[bool],
        y: Value<'b>,
        g: Value<'b>,
    ) -> Result<Contributions<'b>, String> {
        let float = |v: &Value<'b>| v.tensor_type().is_some_and(|t| t.0.is_float());
        if !float(&y) {
            return Ok(vec![None; x.len()]);
        }
        let zero = |v: Value<'b>| v.scalar_like(0.0);
        Ok(match op {
            Op::Parameter | Op::Constant(_) | Op::Variable(_) | Op::Random(_) => Vec::new(),
            Op::ReadVariable => vec![Some(g)],
            Op::Assign => vec![None, Some(g)],
            Op::Unary(u) => vec![Some(unary(*u, x[0], y, g))],
            Op::Binary(b) => binary(*b, x[0], x[1], y, g),
            Op::Select => vec![
                None,
                Some(select(x[0], g, zero(g))),
                Some(select(x[0], zero(g), g)),
            ],
            Op::Convert(_) => vec![float(&x[0]).then(|| g.convert(elem(x[0])))],
            Op::Broadcast(_) => vec![Some(sum_to(g, &shape(x[0])))],
            Op::Reshape(_) => vec![Some(self.op(Op::Reshape(shape(x[0])), &[g]))],
            Op::Transpose(perm) => {
                let mut inverse = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    inverse[p] = i;
                }
                vec![Some(self.op(Op::Transpose(inverse), &[g]))]
            }
            Op::Reduce(r) => vec![Some(self.reduce_adjoint(r, x[0], y, g)?)],
            Op::MatMul => {
                let t = |v: Value<'b>| self.op(Op::Transpose(swap_last(rank(v))), &[v]);
                let da = self.op(Op::MatMul, &[g, t(x[1])]);
                let db = self.op(Op::MatMul, &[t(x[0]), g]);
                vec![
                    Some(sum_to(da, &shape(x[0]))),
                    Some(sum_to(db, &shape(x[1]))),
                ]
            }
            Op::LayerNorm(l) => self.layer_norm_adjoint(l, x, g),
            Op::BatchNormInference(eps) => self.batch_norm_adjoint(*eps, x, wanted, g),
            Op::Convolution(c) => {
                let backprop = |of: Value<'b>| crate::ConvolutionBackprop {
                    convolution: c.clone(),
                    shape: shape(of),
                };
                let data = Op::ConvolutionBackpropData(backprop(x[0]));
                let filters = Op::ConvolutionBackpropFilters(backprop(x[1]));
                vec![
                    wanted[0].then(|| self.op(data, &[g, x[1]])),
                    wanted[1].then(|| self.op(filters, &[x[0], g])),
                ]
            }
            Op::MaxPool(w) => vec![Some(self.op(Op::MaxPoolBackprop(w.clone()), &[x[0], g]))],
            Op::Gather(axis) => {
                let scatter = crate::ScatterAdd {
                    axis: *axis,
                    shape: shape(x[0]),
                };
                vec![Some(self.op(Op::ScatterAdd(scatter), &[g, x[1]])), None]
            }
            Op::Slice(axes) => vec![Some(self.slice_adjoint(axes, x[0], g)?)],
            Op::Concat(axis) => {
                // Each input's part of the adjoint, sliced back out along the axis.
                let full = shape(g);
                let mut start = 0;
                x.iter()
                    .map(|&xi| {
                        let len = shape(xi).dims()[*axis];
                        let mut axes: Vec<SliceAxis> =
                            full.dims().iter().map(|&d| SliceAxis::full(d)).collect();
                        axes[*axis] = SliceAxis {
                            start,
                            step: 1,
                            len,
                        };
                        start += len;
                        Some(self.op(Op::Slice(axes), &[g]))
                    })
                    .collect()
            }
            Op::Softmax(axis) => {
                let s = sum_keep(g * y, &[*axis]).broadcast_to(shape(y));
                vec![Some(y * (g - s))]
            }
            other => return Err(format!("`{other}` has no adjoint yet")),
        })
    }

    /// `LayerNorm` over the axes `axis..` of `x` with `scale` and `bias`: with `x̂ = (x -
    /// mean) / σ` recomputed from `x`, `d bias = Σ g`, `d scale = Σ g x̂` (sums over the
    /// leading axes), and `dx = (gγ - mean(gγ) - x̂ mean(gγ x̂)) / σ` (means over the
    /// normalised axes).
    fn layer_norm_adjoint<'b>(
        &'b self,
        l: &crate::LayerNorm,
        x: &[Value<'b>],
        g: Value<'b>,
    ) -> Contributions<'b> {
        let (xs, scale) = (x[0], x[1]);
        let full = shape(xs);
        let normalised: Vec<usize> = (l.axis..full.rank()).collect();
        let leading: Vec<usize> = (0..l.axis).collect();
        let mean = |v: Value<'b>| {
            let r = Reduction {
                op: ReduceOp::Mean,
                axes: normalised.clone(),
                keep_dims: true,
            };
            self.op(Op::Reduce(r), &[v]).broadcast_to(full.clone())
        };
        let centred = xs - mean(xs);
        let sigma = (mean(centred * centred) + l.epsilon).sqrt();
        let x_hat = centred / sigma;
        let g_scaled = g * scale;
        let dx = (g_scaled - mean(g_scaled) - x_hat * mean(g_scaled * x_hat)) / sigma;
        let over_leading = |v: Value<'b>| {
            if leading.is_empty() {
                v
            } else {
                let r = Reduction {
                    op: ReduceOp::Sum,
                    axes: leading.clone(),
                    keep_dims: false,
                };
                self.op(Op::Reduce(r), &[v])
            }
        };
        vec![
            Some(dx),
            Some(over_leading(g * x_hat)),
            Some(over_leading(g)),
        ]
    }

    /// `BatchNormInference` of `x` `[N, C, ..]` with per-channel `scale`, `bias`, `mean`
    /// and `variance`: with `σ = sqrt(variance + ε)` and `x̂ = (x - mean) / σ`, `dx = g
    /// scale / σ`, `d bias = Σ g`, `d scale = Σ g x̂`, `d mean = -d bias · scale / σ` and
    /// `d variance = -d scale · scale / (2 σ²)` (sums over every axis but the channels).
    fn batch_norm_adjoint<'b>(
        &'b self,
        eps: f64,
        x: &[Value<'b>],
        wanted: &[bool],
        g: Value<'b>,
    ) -> Contributions<'b> {
        let full = shape(x[0]);
        // A `[C]` value along axis 1 of `x`.
        let channels = |v: Value<'b>| {
            let mut dims = vec![1; full.rank() - 1];
            dims[0] = full.dims()[1];
            self.op(Op::Reshape(Shape::new(dims)), &[v])
                .broadcast_to(full.clone())
        };
        let per_channel = |v: Value<'b>| {
            let r = Reduction {
                op: ReduceOp::Sum,
                axes: (0..full.rank()).filter(|&a| a != 1).collect(),
                keep_dims: false,
            };
            self.op(Op::Reduce(r), &[v])
        };
        let (scale, mean, variance) = (x[1], x[3], x[4]);
        let sigma = (variance + eps).sqrt();
        // `x̂` (which reads `x`) only when the scale's or the variance's adjoint is wanted,
        // so that a model's batch normalisation still folds into its convolution.
        let d_scale = (wanted[1] || wanted[4]).then(|| {
            let x_hat = (x[0] - channels(mean)) / channels(sigma);
            per_channel(g * x_hat)
        });
        let d_bias = (wanted[2] || wanted[3]).then(|| per_channel(g));
        vec![
            wanted[0].then(|| g * channels(scale / sigma)),
            d_scale,
            d_bias,
            d_bias.map(|d| -(d * scale / sigma)),
            d_scale.map(|d| -(d * scale) / (sigma * sigma * 2.0)),
        ]
    }

    /// `Slice` with unit steps: the adjoint put back where the slice read, zeros elsewhere,
    /// one axis at a time (a zero block before and after, joined by `Concat`).
    fn slice_adjoint<'b>(
        &'b self,
        axes: &[SliceAxis],
        x: Value<'b>,
        g: Value<'b>,
    ) -> Result<Value<'b>, String> {
        let full = shape(x);
        let mut grown = g;
        for (a, s) in axes.iter().enumerate() {
            let extent = full.dims()[a];
            if s.len == extent {
                continue;
            }
            if s.step != 1 {
                return Err(format!(
                    "`Slice` with step {} has no adjoint yet (unit steps have one)",
                    s.step
                ));
            }
            let mut parts = Vec::new();
            for len in [s.start, extent - s.start - s.len] {
                if len > 0 {
                    let mut dims = shape(grown).dims().to_vec();
                    dims[a] = len;
                    parts.push(g.scalar_like(0.0).broadcast_to(Shape::new(dims)));
                }
            }
            let before = usize::from(s.start > 0);
            parts.insert(before, grown);
            grown = self.op(Op::Concat(a), &parts);
        }
        Ok(grown)
    }

    /// `Reduce`: the adjoint broadcast back over the reduced axes (divided by the count for
    /// a mean; for a maximum or minimum, to the elements equal to it).
    fn reduce_adjoint<'b>(
        &'b self,
        r: &Reduction,
        x: Value<'b>,
        y: Value<'b>,
        g: Value<'b>,
    ) -> Result<Value<'b>, String> {
        let full = shape(x);
        // Reduced leading axes (all of them, for a scalar) broadcast back as they are
        // (numpy aligns at the right); others come back as extent 1 first.
        let leading = !r.keep_dims && r.axes.iter().enumerate().all(|(i, &a)| i == a);
        let expand = |v: Value<'b>| {
            if leading {
                return v.broadcast_to(full.clone());
            }
            let mut kept = full.dims().to_vec();
            for &a in &r.axes {
                kept[a] = 1;
            }
            self.op(Op::Reshape(Shape::new(kept)), &[v])
                .broadcast_to(full.clone())
        };
        Ok(match r.op {
            ReduceOp::Sum => expand(g),
            ReduceOp::Mean => {
                let n: usize = r.axes.iter().map(|&a| full.dims()[a]).product();
                expand(g) / n as f64
            }
            ReduceOp::Max | ReduceOp::Min => {
                let hit = x.eq(expand(y));
                select(hit, expand(g), g.scalar_like(0.0))
            }
            ReduceOp::Prod => return Err("`ReduceProd` has no adjoint yet".into()),
        })
    }
}

fn unary<'b>(u: UnaryOp, x: Value<'b>, y: Value<'b>, g: Value<'b>) -> Value<'b> {
    let zero = x.scalar_like(0.0);
    match u {
        UnaryOp::Negative => -g,
        UnaryOp::Abs => g * x.sign(),
        UnaryOp::Relu => select(x.gt(zero), g, zero),
        UnaryOp::Exp => g * y,
        UnaryOp::Log => g / x,
        UnaryOp::Sqrt => g * 0.5 / y,
        UnaryOp::Tanh => g * (1.0 - y * y),
        UnaryOp::Sigmoid => g * y * (1.0 - y),
        UnaryOp::Erf => g * std::f64::consts::FRAC_2_SQRT_PI * (-(x * x)).exp(),
        UnaryOp::Expm1 => g * (y + 1.0),
        UnaryOp::Log1p => g / (x + 1.0),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Sign | UnaryOp::Not => {
            zero.broadcast_to(shape(x))
        }
    }
}

fn binary<'b>(
    b: BinaryOp,
    x0: Value<'b>,
    x1: Value<'b>,
    y: Value<'b>,
    g: Value<'b>,
) -> Contributions<'b> {
    let zero = g.scalar_like(0.0);
    let (d0, d1) = match b {
        BinaryOp::Add => (g, g),
        BinaryOp::Subtract => (g, -g),
        BinaryOp::Multiply => (g * x1, g * x0),
        BinaryOp::Divide => (g / x1, -(g * y) / x1),
        BinaryOp::Maximum => {
            let first = x0.ge(x1);
            (select(first, g, zero), select(first, zero, g))
        }
        BinaryOp::Minimum => {
            let first = x0.le(x1);
            (select(first, g, zero), select(first, zero, g))
        }
        BinaryOp::Power => (g * x1 * x0.pow(x1 - 1.0), g * y * x0.log()),
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => return vec![None, None],
    };
    vec![Some(d0), Some(d1)]
}

/// `g` summed over the axes that broadcasting added or stretched, to `target`'s shape.
fn sum_to<'b>(g: Value<'b>, target: &Shape) -> Value<'b> {
    let from = shape(g);
    if &from == target {
        return g;
    }
    let lead = from.rank() - target.rank();
    let axes: Vec<usize> = (0..from.rank())
        .filter(|&a| a < lead || (target.dims()[a - lead] == 1 && from.dims()[a] != 1))
        .collect();
    let summed = if axes.is_empty() {
        g
    } else {
        sum_keep(g, &axes)
    };
    g.builder.op(Op::Reshape(target.clone()), &[summed])
}

/// `v` summed over `axes`, which stay as extent 1.
fn sum_keep<'b>(v: Value<'b>, axes: &[usize]) -> Value<'b> {
    let r = Reduction {
        op: ReduceOp::Sum,
        axes: axes.to_vec(),
        keep_dims: true,
    };
    v.builder.op(Op::Reduce(r), &[v])
}

fn shape(v: Value<'_>) -> Shape {
    v.tensor_type().map_or_else(Shape::scalar, |t| t.1)
}

fn elem(v: Value<'_>) -> crate::ElementType {
    v.tensor_type().map_or(crate::ElementType::F32, |t| t.0)
}

fn rank(v: Value<'_>) -> usize {
    shape(v).rank()
}

/// The permutation that swaps the last two of `rank` axes.
fn swap_last(rank: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..rank).collect();
    p.swap(rank - 2, rank - 1);
    p
}
