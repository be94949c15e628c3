//! Accuracy of the inline `f32` vector math, measured through the kernels' own code.
//!
//! [`sweep_f32`] compiles a one-op kernel (the same lowering every fused kernel uses), runs
//! it over every `step`-th `f32` bit pattern (`step = 1`: all 2^32) and compares each result
//! with the reference interpreter's `f64` value (`graphlift_runtime::reference::unary_f64`,
//! before rounding to `f32`). It reports the largest error in ulp ([`vmath::ulp_error`]),
//! the largest relative error over results in the normal `f32` range, the inputs where
//! they occur, and every broken range or special-value guarantee ([`guarantee_holds`]).
//! `graphlift accuracy [--step K]` prints the table; the unit tests run a thinned sweep
//! against the documented bounds ([`vmath::max_ulp`]).
//!
//! Chunks of the sweep run on rayon's global pool.

use graphlift_ir::{ElementType, FunctionBuilder, Op, UnaryOp};
use graphlift_runtime::reference::unary_f64;
use graphlift_runtime::Tensor;
use rayon::prelude::*;

use crate::{vmath, JitError, JitKernel};

/// The functions with an inline `f32` approximation, in table order.
pub const F32_FUNCTIONS: [UnaryOp; 7] = [
    UnaryOp::Exp,
    UnaryOp::Expm1,
    UnaryOp::Log,
    UnaryOp::Log1p,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Erf,
];

/// Inputs per kernel call of a sweep.
const CHUNK: usize = 1 << 16;

/// Which loop of a kernel a sweep runs: both run the same operation sequence, lane for lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoopKind {
    /// The `F32X4` vector loop (a kernel whose values are all `f32`).
    Vector,
    /// The scalar loop ([`JitKernel::compile_scalar`]).
    Scalar,
}

/// The result of a sweep of one function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Accuracy {
    /// The function.
    pub op: UnaryOp,
    /// The loop measured.
    pub loop_kind: LoopKind,
    /// The documented bound in ulp ([`vmath::max_ulp`]).
    pub bound: f64,
    /// The largest error seen, in ulp of the exact result.
    pub max_ulp: f64,
    /// The input of the largest ulp error, and the result there.
    pub worst_ulp_at: (f32, f32),
    /// The largest relative error `|y − ref| / |ref|` over inputs whose exact result is a
    /// normal `f32` (`2^-126 ≤ |ref| ≤ f32::MAX`: in the subnormal range precision itself
    /// shrinks, and past `f32::MAX` the correctly rounded result is infinite).
    pub max_rel: f64,
    /// The input of the largest relative error.
    pub worst_rel_at: f32,
    /// Inputs checked.
    pub checked: u64,
    /// Inputs that broke a guarantee of [`guarantee_holds`].
    pub violations: u64,
    /// The first such input and its result.
    pub first_violation: Option<(f32, f32)>,
}

impl Accuracy {
    fn empty(op: UnaryOp, loop_kind: LoopKind) -> Accuracy {
        Accuracy {
            op,
            loop_kind,
            bound: vmath::max_ulp(op).unwrap_or(0.0),
            max_ulp: 0.0,
            worst_ulp_at: (0.0, 0.0),
            max_rel: 0.0,
            worst_rel_at: 0.0,
            checked: 0,
            violations: 0,
            first_violation: None,
        }
    }

    fn merge(mut self, o: Accuracy) -> Accuracy {
        if o.max_ulp > self.max_ulp {
            self.max_ulp = o.max_ulp;
            self.worst_ulp_at = o.worst_ulp_at;
        }
        if o.max_rel > self.max_rel {
            self.max_rel = o.max_rel;
            self.worst_rel_at = o.worst_rel_at;
        }
        self.checked += o.checked;
        self.violations += o.violations;
        self.first_violation = self.first_violation.or(o.first_violation);
        self
    }

    /// `true` when the error is within the documented bound and no guarantee broke.
    pub fn within_bound(&self) -> bool {
        self.max_ulp <= self.bound && self.violations == 0
    }
}

/// The range and special-value guarantees of [`vmath`]'s documentation for `op` at input
/// `x` with result `y`: NaN in gives NaN out; `exp(+inf) = +inf`, `exp(-inf) = 0`,
/// `exp ≥ 0`; `expm1 ≥ -1`, `expm1(±inf) = +inf / -1`, `expm1(±0) = ±0`; `log(±0) = -inf`,
/// `log(x < 0) = NaN`, `log(+inf) = +inf`; `log1p(-1) = -inf`, `log1p(x < -1) = NaN`,
/// `log1p(+inf) = +inf`, `log1p(±0) = ±0`; `tanh` and `erf` in
/// `[-1, 1]` and odd at zero (`f(±0) = ±0`); `sigmoid` in `[0, 1]`.
pub fn guarantee_holds(op: UnaryOp, x: f32, y: f32) -> bool {
    if x.is_nan() {
        return y.is_nan();
    }
    match op {
        UnaryOp::Exp => {
            (x != f32::INFINITY || y == f32::INFINITY)
                && (x != f32::NEG_INFINITY || y == 0.0)
                && (y.is_nan() || y >= 0.0)
        }
        UnaryOp::Log => {
            (x != 0.0 || y == f32::NEG_INFINITY)
                && (x >= 0.0 || y.is_nan())
                && (x != f32::INFINITY || y == f32::INFINITY)
        }
        UnaryOp::Expm1 => {
            y >= -1.0
                && (x != f32::INFINITY || y == f32::INFINITY)
                && (x != f32::NEG_INFINITY || y == -1.0)
                && (x != 0.0 || y.to_bits() == x.to_bits())
        }
        UnaryOp::Log1p => {
            (x != -1.0 || y == f32::NEG_INFINITY)
                && (x >= -1.0 || y.is_nan())
                && (x != f32::INFINITY || y == f32::INFINITY)
                && (x != 0.0 || y.to_bits() == x.to_bits())
        }
        UnaryOp::Tanh | UnaryOp::Erf => {
            (-1.0..=1.0).contains(&y) && (x != 0.0 || y.to_bits() == x.to_bits())
        }
        UnaryOp::Sigmoid => (0.0..=1.0).contains(&y),
        _ => true,
    }
}

/// A one-op kernel of `op` over `CHUNK` `f32` elements, running `kind`'s loop.
///
/// # Errors
/// As [`JitKernel::compile`]; [`JitError::Unsupported`] if `op` has no `f32` approximation.
pub fn kernel_f32(op: UnaryOp, kind: LoopKind) -> Result<JitKernel, JitError> {
    if vmath::max_ulp(op).is_none() {
        return Err(JitError::Unsupported {
            kernel: op.name().to_string(),
            message: "no inline f32 approximation".into(),
        });
    }
    let b = FunctionBuilder::new(op.name());
    let x = b.parameter("x", ElementType::F32, [CHUNK]);
    let body = b.finish(&[b.op(Op::Unary(op), &[x])])?;
    let k = match kind {
        LoopKind::Vector => JitKernel::compile(&body)?,
        LoopKind::Scalar => JitKernel::compile_scalar(&body)?,
    };
    if k.is_vectorized() != (kind == LoopKind::Vector) {
        return Err(JitError::Unsupported {
            kernel: op.name().to_string(),
            message: format!("the sweep kernel did not get a {kind:?} loop"),
        });
    }
    Ok(k)
}

/// Measures `op`'s error over every `step`-th `f32` bit pattern (`0, step, 2·step, …`
/// below 2^32; `step = 0` is taken as 1) in `kind`'s loop.
///
/// Time: a full sweep (`step = 1`) takes about a minute per function on two cores.
///
/// # Errors
/// As [`kernel_f32`], or a failing kernel call.
pub fn sweep_f32(op: UnaryOp, step: u64, kind: LoopKind) -> Result<Accuracy, JitError> {
    let k = kernel_f32(op, kind)?;
    let step = step.max(1);
    let inputs = (1u64 << 32).div_ceil(step);
    let chunks = inputs.div_ceil(CHUNK as u64);
    (0..chunks)
        .into_par_iter()
        .map(|c| {
            let first = c * CHUNK as u64;
            let len = (inputs - first).min(CHUNK as u64) as usize;
            let mut xs = vec![0f32; CHUNK];
            for (i, x) in xs.iter_mut().take(len).enumerate() {
                *x = f32::from_bits(((first + i as u64) * step) as u32);
            }
            measure_chunk(&k, op, kind, xs, len)
        })
        .try_reduce(|| Accuracy::empty(op, kind), |a, b| Ok(a.merge(b)))
}

fn measure_chunk(
    k: &JitKernel,
    op: UnaryOp,
    kind: LoopKind,
    xs: Vec<f32>,
    len: usize,
) -> Result<Accuracy, JitError> {
    let buffer = |e: graphlift_runtime::RuntimeError| JitError::Buffer {
        kernel: op.name().to_string(),
        message: e.to_string(),
    };
    let input = Tensor::from_vec(xs, [CHUNK]).map_err(buffer)?;
    let mut out = [Tensor::zeros(ElementType::F32, [CHUNK]).map_err(buffer)?];
    k.call_range(&[&input], &mut out, 0, len)?;
    let xs = input.read::<f32>().map_err(buffer)?;
    let ys = out[0].read::<f32>().map_err(buffer)?;
    let mut acc = Accuracy::empty(op, kind);
    for (&x, &y) in xs.iter().zip(ys).take(len) {
        let exact = unary_f64(op, f64::from(x));
        let ulp = vmath::ulp_error(y, exact);
        if ulp > acc.max_ulp {
            acc.max_ulp = ulp;
            acc.worst_ulp_at = (x, y);
        }
        if (f64::from(f32::MIN_POSITIVE)..=f64::from(f32::MAX)).contains(&exact.abs()) {
            let rel = (f64::from(y) - exact).abs() / exact.abs();
            if rel > acc.max_rel {
                acc.max_rel = rel;
                acc.worst_rel_at = x;
            }
        }
        if !guarantee_holds(op, x, y) {
            acc.violations += 1;
            acc.first_violation.get_or_insert((x, y));
        }
    }
    acc.checked = len as u64;
    Ok(acc)
}
