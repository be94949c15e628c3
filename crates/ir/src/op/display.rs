//! How an [`Op`] prints: its name and attributes (`Convolution<...>`, `Reduce<Sum, axes=...>`),
//! as `Display` shows it in the text form, errors and `explain`.

use super::*;

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Convert(t) => write!(f, "Convert<{t}>"),
            Op::Broadcast(s) => write!(f, "Broadcast<{s}>"),
            Op::Reshape(s) => write!(f, "Reshape<{s}>"),
            Op::Transpose(p) => write!(f, "Transpose<{p:?}>"),
            Op::Slice(axes) => {
                f.write_str("Slice<")?;
                for (i, a) in axes.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{}:{}:{}", a.start, a.len, a.step)?;
                }
                f.write_str(">")
            }
            Op::Pad(p) => {
                write!(
                    f,
                    "Pad<low={:?}, high={:?}, interior={:?}",
                    p.low, p.high, p.interior
                )?;
                if p.mode != PadMode::Constant {
                    write!(f, ", mode={:?}", p.mode)?;
                }
                f.write_str(">")
            }
            Op::ArgReduce(r) => write!(
                f,
                "{}<axis={}{}{}>",
                self.type_name(),
                r.axis,
                keep(r.keep_dims),
                if r.select_last_index {
                    ", select_last_index"
                } else {
                    ""
                }
            ),
            Op::TopK(t) => write!(
                f,
                "TopK<axis={}, k={}, {}>",
                t.axis,
                t.k,
                if t.largest { "largest" } else { "smallest" }
            ),
            Op::CumSum(c) => write!(
                f,
                "CumSum<axis={}{}{}>",
                c.axis,
                if c.exclusive { ", exclusive" } else { "" },
                if c.reverse { ", reverse" } else { "" }
            ),
            Op::Resize(r) => write!(
                f,
                "Resize<{:?}, {:?}, shape={:?}, scales={:?}{}>",
                r.mode,
                r.coordinate_transform,
                r.shape,
                r.scales,
                if r.antialias { ", antialias" } else { "" }
            ),
            Op::GridSample(g) => write!(
                f,
                "GridSample<{:?}, {:?}{}>",
                g.mode,
                g.padding,
                if g.align_corners {
                    ", align_corners"
                } else {
                    ""
                }
            ),
            Op::Concat(axis) | Op::Gather(axis) | Op::Softmax(axis) => {
                write!(f, "{}<axis={axis}>", self.type_name())
            }
            Op::Reduce(r) => write!(f, "{}<{:?}{}>", self.type_name(), r.axes, keep(r.keep_dims)),
            Op::LayerNorm(l) => write!(f, "LayerNorm<axis={}, epsilon={:e}>", l.axis, l.epsilon),
            Op::Attention(a) => write!(f, "Attention<heads={}, scale={:e}>", a.heads, a.scale),
            Op::QuantizedMatMul(q) => write!(
                f,
                "QuantizedMatMul<x_scale={:e}, x_zero_point={}>",
                q.x_scale, q.x_zero_point
            ),
            Op::Recurrent(r) => write!(
                f,
                "{}<{:?}, hidden={}, activations={:?}, clip={:?}, batch_major={}{}{}>",
                r.type_name(),
                r.direction,
                r.hidden_size,
                r.activations,
                r.clip,
                r.batch_major,
                if r.input_forget { ", input_forget" } else { "" },
                if r.linear_before_reset {
                    ", linear_before_reset"
                } else {
                    ""
                },
            ),
            Op::BatchNormInference(eps) => write!(f, "BatchNormInference<epsilon={eps:e}>"),
            Op::Convolution(c) | Op::ConvolutionInteger(c) => {
                write!(
                    f,
                    "{}<{}, groups={}>",
                    self.type_name(),
                    WindowText(&c.window),
                    c.groups
                )
            }
            Op::ConvolutionBackpropData(b) | Op::ConvolutionBackpropFilters(b) => write!(
                f,
                "{}<{}, groups={}, shape={}>",
                self.type_name(),
                WindowText(&b.convolution.window),
                b.convolution.groups,
                b.shape
            ),
            Op::MaxPool(w) | Op::MaxPoolBackprop(w) | Op::MaxPoolIndices(w) => {
                write!(f, "{}<{}>", self.type_name(), WindowText(w))
            }
            Op::ScatterAdd(s) => write!(f, "ScatterAdd<axis={}, shape={}>", s.axis, s.shape),
            Op::ScatterNd(r) => write!(f, "ScatterNd<reduction={}>", r.name()),
            Op::Random(r) => {
                let t = crate::TensorType::new(r.element_type, r.shape.clone());
                match r.distribution {
                    Distribution::Uniform { low, high } => {
                        write!(
                            f,
                            "RandomUniform<{t}, low={low:e}, high={high:e}, seed={}>",
                            r.seed
                        )
                    }
                    Distribution::Normal { mean, scale } => {
                        write!(
                            f,
                            "RandomNormal<{t}, mean={mean:e}, scale={scale:e}, seed={}>",
                            r.seed
                        )
                    }
                }
            }
            Op::ControlFlow(c) => write!(f, "{c}"),
            _ => f.write_str(self.type_name()),
        }
    }
}

fn keep(keep_dims: bool) -> &'static str {
    if keep_dims {
        ", keep_dims"
    } else {
        ""
    }
}

/// A [`Window`] as `window=[3, 3], strides=[1, 1], ...`.
struct WindowText<'a>(&'a Window);

impl fmt::Display for WindowText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.0;
        write!(
            f,
            "window={:?}, strides={:?}, dilations={:?}, pads_begin={:?}, pads_end={:?}",
            w.shape, w.strides, w.dilations, w.pads_begin, w.pads_end
        )
    }
}
