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
use crate::{BinaryOp, Op, Pad, ReduceOp, Reduction, Shape, SliceAxis, UnaryOp};

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
            Op::Reduce(r) => vec![Some(self.reduce_adjoint(r, x[0], y, g))],
            Op::MatMul => {
                let t = |v: Value<'b>| self.op(Op::Transpose(swap_last(rank(v))), &[v]);
                // Only the products asked for: a weight's is as costly as the data's.
                let da = wanted[0].then(|| self.op(Op::MatMul, &[g, t(x[1])]));
                let db = wanted[1].then(|| self.op(Op::MatMul, &[t(x[0]), g]));
                vec![
                    da.map(|d| sum_to(d, &shape(x[0]))),
                    db.map(|d| sum_to(d, &shape(x[1]))),
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
            Op::ScatterAdd(s) => {
                vec![Some(self.op(Op::Gather(s.axis), &[g, x[1]])), None]
            }
            Op::Pad(p) if p.mode != crate::PadMode::Constant => {
                return Err(format!(
                    "`{op}` has no adjoint: only constant-mode Pad is differentiable \
                     ({:?} padding copies elements of x)",
                    p.mode
                ))
            }
            Op::Pad(p) => {
                // The elements that came from `x`, and the rest for the padding value.
                let axes: Vec<SliceAxis> = shape(x[0])
                    .dims()
                    .iter()
                    .enumerate()
                    .map(|(a, &d)| SliceAxis {
                        start: p.low[a],
                        step: p.interior[a] as i64 + 1,
                        len: d,
                    })
                    .collect();
                let dx = self.op(Op::Slice(axes), &[g]);
                vec![Some(dx), Some(sum_all(g) - sum_all(dx))]
            }
            Op::Slice(axes) => vec![Some(self.slice_adjoint(axes, x[0], g))],
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
            // y[i] sums x[j] over the j at or before i in the scan direction, so x[j] feeds
            // every y[i] at or after it: dx is the scan of g the other way, equally exclusive.
            Op::CumSum(c) => {
                let back = crate::CumSum {
                    reverse: !c.reverse,
                    ..*c
                };
                vec![Some(self.op(Op::CumSum(back), &[g]))]
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

    /// `Slice`: the adjoint put back where the slice read, zeros elsewhere: one `Pad` whose
    /// low and high pads are the elements before the first and after the last read along
    /// each axis, with `|step| - 1` zeros between reads (axes read backwards are reversed
    /// first).
    fn slice_adjoint<'b>(&'b self, axes: &[SliceAxis], x: Value<'b>, g: Value<'b>) -> Value<'b> {
        let full = shape(x);
        let mut pad = Pad {
            low: Vec::new(),
            high: Vec::new(),
            interior: Vec::new(),
            mode: crate::PadMode::Constant,
        };
        let mut flip = Vec::new();
        for (s, &d) in axes.iter().zip(full.dims()) {
            let stride = s.step.unsigned_abs() as usize;
            let (low, high, interior) = match s.len.checked_sub(1) {
                None => (d, 0, 0),
                Some(gaps) => {
                    let first = if s.step > 0 {
                        s.start
                    } else {
                        s.start - gaps * stride
                    };
                    let last = first + gaps * stride;
                    (first, d - 1 - last, stride - 1)
                }
            };
            pad.low.push(low);
            pad.high.push(high);
            pad.interior.push(interior);
            flip.push(if s.step < 0 {
                SliceAxis {
                    start: s.len.saturating_sub(1),
                    step: -1,
                    len: s.len,
                }
            } else {
                SliceAxis::full(s.len)
            });
        }
        let g = if axes.iter().any(|s| s.step < 0 && s.len > 1) {
            self.op(Op::Slice(flip), &[g])
        } else {
            g
        };
        if pad
            .low
            .iter()
            .chain(&pad.high)
            .chain(&pad.interior)
            .all(|&p| p == 0)
        {
            return g;
        }
        self.op(Op::Pad(pad), &[g, g.scalar_like(0.0)])
    }

    /// `Reduce`: the adjoint broadcast back over the reduced axes (divided by the count for
    /// a mean; for a maximum or minimum, to the elements equal to it).
    fn reduce_adjoint<'b>(
        &'b self,
        r: &Reduction,
        x: Value<'b>,
        y: Value<'b>,
        g: Value<'b>,
    ) -> Value<'b> {
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
        match r.op {
            ReduceOp::Sum => expand(g),
            ReduceOp::Mean => {
                let n: usize = r.axes.iter().map(|&a| full.dims()[a]).product();
                expand(g) / n as f64
            }
            ReduceOp::Max | ReduceOp::Min => {
                let hit = x.eq(expand(y));
                select(hit, expand(g), g.scalar_like(0.0))
            }
            ReduceOp::Prod => {
                // The product of the other elements, without dividing by a zero: with no
                // zero in the group it is y / x; with one, the zero element gets the product
                // of the rest and the others 0; with two or more, everything is 0.
                let zero = x.scalar_like(0.0);
                let is_zero = x.eq(zero);
                let nonzero = select(is_zero, x.scalar_like(1.0), x);
                let rest = self.op(Op::Reduce(r.clone()), &[nonzero]);
                let zeros = self.op(
                    Op::Reduce(Reduction {
                        op: ReduceOp::Sum,
                        ..r.clone()
                    }),
                    &[select(is_zero, x.scalar_like(1.0), zero)],
                );
                let (rest, zeros) = (expand(rest), expand(zeros));
                let others = select(
                    zeros.eq(zeros.scalar_like(0.0)),
                    rest / nonzero,
                    select(
                        zeros.eq(zeros.scalar_like(1.0)),
                        select(is_zero, rest, zero),
                        zero,
                    ),
                );
                expand(g) * others
            }
        }
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
        UnaryOp::Sin => g * x.cos(),
        UnaryOp::Cos => -(g * x.sin()),
        UnaryOp::Tan => g * (1.0 + y * y),
        UnaryOp::Asin => g / (1.0 - x * x).sqrt(),
        UnaryOp::Acos => -(g / (1.0 - x * x).sqrt()),
        UnaryOp::Atan => g / (1.0 + x * x),
        UnaryOp::Sinh => g * x.cosh(),
        UnaryOp::Cosh => g * x.sinh(),
        UnaryOp::Asinh => g / (x * x + 1.0).sqrt(),
        UnaryOp::Acosh => g / (x * x - 1.0).sqrt(),
        UnaryOp::Atanh => g / (1.0 - x * x),
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
        // y = x0 - x1 * q with q the rounded quotient (trunc or floor), piecewise constant:
        // dy/dx0 = 1, dy/dx1 = -q = -(x0 - y) / x1.
        BinaryOp::Mod | BinaryOp::FloorMod => (g, -(g * (x0 - y)) / x1),
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

/// `v` summed over all its axes, a scalar.
fn sum_all<'b>(v: Value<'b>) -> Value<'b> {
    let r = Reduction {
        op: ReduceOp::Sum,
        axes: (0..rank(v)).collect(),
        keep_dims: false,
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
