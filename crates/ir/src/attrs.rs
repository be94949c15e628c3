//! Attributes of the ops that are not elementwise (reductions, slices, normalisations,
//! convolution and pooling), static and already normalised, so that an op's meaning never
//! depends on the importer it came from.

use serde::{Deserialize, Serialize};

mod grid_sample;
mod recurrent;
mod resize;

pub use grid_sample::{GridMode, GridPadding, GridSample};
pub use recurrent::{RecurrentActivation, RecurrentCell, RecurrentDirection, RecurrentSequence};
pub use resize::{CoordinateTransform, NearestMode, Resize, ResizeMode};

/// How a [`Reduction`] combines the elements of the reduced axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ReduceOp {
    /// Sum (`0` over no elements).
    Sum,
    /// Arithmetic mean (floats only; NaN over no elements).
    Mean,
    /// Maximum (`-inf` / the type's minimum over no elements; NaN propagates).
    Max,
    /// Minimum (`+inf` / the type's maximum over no elements; NaN propagates).
    Min,
    /// Product (`1` over no elements).
    Prod,
}

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 5] = [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Prod,
    ];

    /// The op's name (`Sum`, `Mean`, ...), as in nGraph's `ReduceSum` without the prefix.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "Sum",
            ReduceOp::Mean => "Mean",
            ReduceOp::Max => "Max",
            ReduceOp::Min => "Min",
            ReduceOp::Prod => "Prod",
        }
    }

    /// The reduction named `name` (as [`ReduceOp::name`] spells it).
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// A reduction over some axes (nGraph's `ReduceSum`/`ReduceMean`/..., ONNX's `Reduce*`).
///
/// `axes` are sorted, distinct and `< rank`; an empty list reduces nothing (the output is
/// the input). With `keep_dims` the reduced axes stay as extent 1, otherwise they are
/// removed. Like every attribute here, the axes are already normalised (non-negative and in
/// range): importers resolve their conventions (ONNX's negative axes, opset differences)
/// into this form, and what the op computes is defined by the reference interpreter in
/// `graphlift-runtime`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reduction {
    /// How elements are combined.
    pub op: ReduceOp,
    /// The reduced axes, ascending.
    pub axes: Vec<usize>,
    /// Keep reduced axes as extent 1.
    pub keep_dims: bool,
}

/// One axis of a [`Op::Slice`](crate::Op::Slice): output element `i` of this axis reads
/// input element `start + i * step`, for `i` in `0..len`.
///
/// `step` is non-zero and may be negative (ONNX `Slice` with negative steps); when `len > 0`
/// both `start` and `start + (len - 1) * step` lie inside the input extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceAxis {
    /// First input index read.
    pub start: usize,
    /// Distance between consecutive input indices (non-zero).
    pub step: i64,
    /// Output extent.
    pub len: usize,
}

impl SliceAxis {
    /// The whole axis of extent `dim`, in order.
    pub fn full(dim: usize) -> SliceAxis {
        SliceAxis {
            start: 0,
            step: 1,
            len: dim,
        }
    }
}

/// Geometry shared by convolution and pooling over the spatial axes of an `N, C, D1, ...`
/// tensor: one entry per spatial axis in each vector.
///
/// The output extent of spatial axis `a` is
/// `(in + pads_begin + pads_end - dilation * (window - 1) - 1) / stride + 1` (rounded down),
/// the formula of ONNX and nGraph with explicit padding. Padding is always explicit per
/// spatial axis: importers resolve ONNX's `auto_pad` and `ceil_mode` into it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    /// Window (kernel) extent per spatial axis; for a convolution this is the filter's
    /// spatial shape.
    pub shape: Vec<usize>,
    /// Strides, each `>= 1`.
    pub strides: Vec<usize>,
    /// Dilations, each `>= 1`.
    pub dilations: Vec<usize>,
    /// Padding before each spatial axis.
    pub pads_begin: Vec<usize>,
    /// Padding after each spatial axis.
    pub pads_end: Vec<usize>,
}

impl Window {
    /// The output extents for input spatial extents `input`, or a message naming the axis
    /// whose window does not fit (or whose attributes are malformed).
    pub fn output_extents(&self, input: &[usize]) -> Result<Vec<usize>, String> {
        let n = input.len();
        for (what, v) in [
            ("window shape", &self.shape),
            ("strides", &self.strides),
            ("dilations", &self.dilations),
            ("pads_begin", &self.pads_begin),
            ("pads_end", &self.pads_end),
        ] {
            if v.len() != n {
                return Err(format!(
                    "{what} has {} entries for {n} spatial axes",
                    v.len()
                ));
            }
        }
        (0..n)
            .map(|a| {
                let (k, s, d) = (self.shape[a], self.strides[a], self.dilations[a]);
                if k == 0 || s == 0 || d == 0 {
                    return Err(format!(
                        "spatial axis {a}: window {k}, stride {s} and dilation {d} must be >= 1"
                    ));
                }
                let padded = input[a]
                    .checked_add(self.pads_begin[a])
                    .and_then(|v| v.checked_add(self.pads_end[a]))
                    .ok_or_else(|| format!("spatial axis {a}: padding overflows"))?;
                let reach = (k - 1)
                    .checked_mul(d)
                    .and_then(|r| r.checked_add(1))
                    .ok_or_else(|| format!("spatial axis {a}: dilated window overflows"))?;
                if padded < reach {
                    return Err(format!(
                        "spatial axis {a}: dilated window {reach} is larger than the padded input {padded}"
                    ));
                }
                Ok((padded - reach) / s + 1)
            })
            .collect()
    }
}

/// A convolution (ONNX `Conv`, nGraph `GroupConvolution`): input `[N, C, D1, ...]`, filter
/// `[M, C / groups, K1, ...]`, output `[N, M, O1, ...]`; `groups` divides both `C` and `M`.
/// Cross-correlation, as in every ML framework: the filter is not flipped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Convolution {
    /// Strides, dilations and padding; `window.shape` is the filter's spatial shape.
    pub window: Window,
    /// Number of groups (`>= 1`).
    pub groups: usize,
}

/// The attribute of the two adjoints of a [`Convolution`] (nGraph's
/// `ConvolutionBackpropData` and `ConvolutionBackpropFilters`): the forward convolution, and
/// the shape of the forward operand whose adjoint the op computes.
///
/// For `ConvolutionBackpropData`, `shape` is the forward data's `[N, C, D..]` (nGraph's
/// `data_batch_shape`): with a stride above 1, several data extents give one output extent,
/// so the adjoint's shape cannot be recovered from `dy`. For `ConvolutionBackpropFilters` it
/// is the filter's `[M, C / groups, K..]` (nGraph's `filters_shape`), whose spatial part is
/// `convolution.window.shape`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConvolutionBackprop {
    /// The forward convolution: strides, dilations, padding, window and groups.
    pub convolution: Convolution,
    /// The output's shape: the forward data's (`BackpropData`) or filter's
    /// (`BackpropFilters`).
    pub shape: crate::Shape,
}

/// Parameters of layer normalisation (ONNX `LayerNormalization`): normalise over the axes
/// `axis..rank`, then scale and shift.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerNorm {
    /// First normalised axis (`< rank`).
    pub axis: usize,
    /// Added to the variance before the square root.
    pub epsilon: f64,
}

/// Parameters of fused multi-head scaled dot-product attention ([`crate::Op::Attention`]):
/// the number of heads the last axis of `q`, `k` and `v` splits into, and the factor the
/// scores `q · kᵀ` are multiplied by (`1 / sqrt(head size)` in "Attention Is All You Need";
/// the value the exporter wrote, whatever it is).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Attention {
    /// Heads (`>= 1`); the model width of `q`, `k` and `v` is a multiple of it.
    pub heads: usize,
    /// Multiplies every score before the mask is added (finite).
    pub scale: f64,
}

/// Parameters of [`crate::Op::QuantizedMatMul`]: how its FLOAT operand `x` is quantized to
/// UINT8 before the integer product (ONNX `QuantizeLinear`, per tensor:
/// `clamp(round_half_even(x / x_scale) + x_zero_point, 0, 255)`). An INT8 activation is
/// carried as UINT8 by adding 128 to its zero point (exact: `q_i8 + 128 = q_u8`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantizedMatMul {
    /// The activation scale (finite, nonzero).
    pub x_scale: f32,
    /// The activation zero point in the UINT8 domain.
    pub x_zero_point: u8,
}

/// The distribution of a [`RandomFill`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform on `[low, high)` (ONNX `RandomUniform`); `low < high`, both finite.
    Uniform {
        /// Lower bound (included).
        low: f64,
        /// Upper bound (excluded before rounding to the element type).
        high: f64,
    },
    /// Normal with mean `mean` and standard deviation `scale` (ONNX `RandomNormal`);
    /// `scale >= 0`, both finite.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        scale: f64,
    },
}

/// A tensor of pseudo-random numbers from a seed (ONNX `RandomUniform` / `RandomNormal`
/// with their `seed` attribute), for random initialisation: a pure op, the same values on
/// every call, backend and thread count. Element `i` (row-major) is the `i`-th draw of
/// rand's portable `Xoshiro256PlusPlus` seeded with `seed_from_u64(seed)`, through
/// `rand_distr`'s `Uniform` or `Normal` in `f64`, rounded to the element type.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomFill {
    /// What is drawn.
    pub distribution: Distribution,
    /// `f32` or `f64`.
    pub element_type: crate::ElementType,
    /// The output's shape.
    pub shape: crate::Shape,
    /// The generator's seed.
    pub seed: u64,
}

impl RandomFill {
    /// Checks the attributes; returns what is wrong.
    pub fn check(&self) -> Result<(), String> {
        if !self.element_type.is_float() {
            return Err(format!(
                "draws floats: element type {} is not f32 or f64",
                self.element_type
            ));
        }
        self.shape
            .element_count()
            .map_err(|e| format!("shape invalid: {e}"))?;
        match self.distribution {
            Distribution::Uniform { low, high }
                if !(low.is_finite() && high.is_finite() && low < high) =>
            {
                Err(format!(
                    "needs finite low < high, got low {low}, high {high}"
                ))
            }
            Distribution::Normal { mean, scale }
                if !(mean.is_finite() && scale.is_finite() && scale >= 0.0) =>
            {
                Err(format!(
                    "needs a finite mean and scale >= 0, got mean {mean}, scale {scale}"
                ))
            }
            _ => Ok(()),
        }
    }
}

/// How [`Pad`] fills the elements it adds (ONNX `Pad`'s `mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PadMode {
    /// The padding value (the op's second operand); the only mode with interior padding.
    #[default]
    Constant,
    /// The mirror image without the edge element: `[1, 2, 3]` padded by 2 on both sides is
    /// `[3, 2, 1, 2, 3, 2, 1]` (numpy's `reflect`); padding beyond the extent reflects again
    /// (a period of `2 (d - 1)`), and an axis of extent 1 repeats its element.
    Reflect,
    /// The edge element repeated (numpy's `edge`).
    Edge,
    /// The axis repeated periodically (numpy's `wrap`): `[1, 2, 3]` padded by 2 on both sides
    /// is `[2, 3, 1, 2, 3, 1, 2]`.
    Wrap,
}

/// Padding of every axis (XLA's `Pad`; ONNX `Pad` with non-negative pads): `low[a]` elements
/// before axis `a`, `high[a]` after, and `interior[a]` between each two neighbours. In
/// [`PadMode::Constant`] the added elements are the padding value (the op's second operand);
/// the other modes take them from the data (and have one operand, no interior padding, and
/// no empty padded axis). An axis of extent `d` becomes
/// `low + d + interior * (d - 1) + high` (`low + high` when `d` is 0). The adjoint of a
/// strided `Slice` is the slice's adjoint padded back with zeros this way.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pad {
    /// Elements added before each axis.
    pub low: Vec<usize>,
    /// Elements added after each axis.
    pub high: Vec<usize>,
    /// Elements added between each two neighbours along each axis.
    pub interior: Vec<usize>,
    /// Where the added elements come from.
    pub mode: PadMode,
}

impl Pad {
    /// The padded extents of `input`, or a message naming the attribute whose length is not
    /// the rank, or an extent that overflows.
    pub fn output_extents(&self, input: &[usize]) -> Result<Vec<usize>, String> {
        for (what, v) in [
            ("low", &self.low),
            ("high", &self.high),
            ("interior", &self.interior),
        ] {
            if v.len() != input.len() {
                return Err(format!(
                    "{what} has {} entries for {} axes",
                    v.len(),
                    input.len()
                ));
            }
        }
        if self.mode != PadMode::Constant {
            if self.interior.iter().any(|&i| i != 0) {
                return Err(format!("{:?} padding has no interior padding", self.mode));
            }
            let padded = |a: usize| self.low[a] > 0 || self.high[a] > 0;
            if let Some(a) = (0..input.len()).find(|&a| input[a] == 0 && padded(a)) {
                return Err(format!(
                    "axis {a} is empty: {:?} padding has nothing to copy",
                    self.mode
                ));
            }
        }
        input
            .iter()
            .enumerate()
            .map(|(a, &d)| {
                let inner = d.checked_sub(1).map_or(Some(0), |gaps| {
                    gaps.checked_mul(self.interior[a])?.checked_add(d)
                });
                inner
                    .and_then(|n| n.checked_add(self.low[a])?.checked_add(self.high[a]))
                    .ok_or_else(|| format!("axis {a}: the padded extent overflows"))
            })
            .collect()
    }
}

/// Which extreme an [`ArgReduction`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgOp {
    /// The largest element (ONNX `ArgMax`).
    Max,
    /// The smallest element (ONNX `ArgMin`).
    Min,
}

/// The index of the largest or smallest element along one axis (ONNX `ArgMax`/`ArgMin`):
/// an `i64` tensor of the input's shape without the axis (or with extent 1 there when
/// `keep_dims`). Of equal extremes the first index is taken, or the last with
/// `select_last_index`; a NaN is the extreme (numpy's rule: the first NaN wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgReduction {
    /// Maximum or minimum.
    pub op: ArgOp,
    /// The reduced axis (`< rank`; the input's extent there is at least 1).
    pub axis: usize,
    /// Keep the axis as extent 1.
    pub keep_dims: bool,
    /// Of equal extremes take the last index instead of the first.
    pub select_last_index: bool,
}

/// The adjoint of `Gather(axis)` from data of shape `shape` (what TensorFlow's
/// `UnsortedSegmentSum` and ONNX `ScatterND` with `reduction = "add"` compute for it): the
/// `updates`, of the gather's output shape `shape[..axis] ++ indices.shape ++
/// shape[axis + 1..]`, added into zeros of `shape` at the gathered positions. Repeated
/// indices add up; a negative index counts from the end; one outside `[-d, d)` is an error
/// at run time, as for `Gather`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScatterAdd {
    /// The gathered axis.
    pub axis: usize,
    /// The output's shape (the gathered data's).
    pub shape: crate::Shape,
}

/// The positions of the `k` largest (or smallest) elements along one axis (ONNX `TopK`,
/// opsets 1, 10, 11): an `i64` tensor of the input's shape with extent `k` on the axis,
/// holding for each lane the indices of its `k` extremes in order, the most extreme first
/// (ONNX `sorted = 1`; a sorted result is also a valid `sorted = 0` one). Of equal values the
/// lower index comes first, as the ONNX specification asks. NaN orders above every number
/// (numpy's sort order): the largest elements start with the NaNs, the smallest end with them.
/// The values are the input gathered at these indices (the ONNX importer's second step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TopK {
    /// The axis searched (`< rank`).
    pub axis: usize,
    /// How many elements to pick (`<=` the axis extent).
    pub k: usize,
    /// The largest elements (`true`) or the smallest.
    pub largest: bool,
}

/// The running sum along one axis (ONNX `CumSum`, opsets 11 and 14; nGraph's and
/// OpenVINO's `CumSum`, opset 3): an output of the input's shape and numeric element type
/// whose element at position `i` of its lane along `axis` (extent `n`) is
///
/// ```text
/// forward,   inclusive:  y[i] = x[0] + x[1] + .. + x[i]
/// forward,   exclusive:  y[i] = x[0] + .. + x[i-1]        (y[0] = 0)
/// reverse,   inclusive:  y[i] = x[n-1] + .. + x[i]
/// reverse,   exclusive:  y[i] = x[n-1] + .. + x[i+1]      (y[n-1] = 0)
/// ```
///
/// Each sum runs sequentially in the scan direction, one `Add` at a time in the element type
/// (the reference's `Add`: integers wrap, `f16`/`bf16` are added in `f32` and rounded after
/// each step), so an element enters only the sums after it in that direction: an infinity
/// or NaN never reaches an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CumSum {
    /// The summed axis (`< rank`; ONNX's negative axis is normalised by the importer).
    pub axis: usize,
    /// Each element is left out of its own sum (ONNX `exclusive = 1`).
    pub exclusive: bool,
    /// The sums run from the end of the axis to its start (ONNX `reverse = 1`).
    pub reverse: bool,
}

/// How [`Op::ScatterNd`](crate::Op::ScatterNd) combines an update with the element it lands
/// on (ONNX `ScatterND` / `ScatterElements` `reduction`, opsets 16 and 18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScatterReduction {
    /// The update replaces the element (of repeated positions, the last update wins).
    #[default]
    None,
    /// `element + update`.
    Add,
    /// `element * update`.
    Mul,
    /// The larger of the two (`Maximum`'s rule: NaN propagates).
    Max,
    /// The smaller of the two (`Minimum`'s rule: NaN propagates).
    Min,
}

impl ScatterReduction {
    /// The ONNX attribute value (`none`, `add`, `mul`, `max`, `min`).
    pub fn name(self) -> &'static str {
        match self {
            ScatterReduction::None => "none",
            ScatterReduction::Add => "add",
            ScatterReduction::Mul => "mul",
            ScatterReduction::Max => "max",
            ScatterReduction::Min => "min",
        }
    }
}
