//! Accuracy sweeps of the inline vector math and `Power`, run through the kernels' own JIT
//! code against exact references, so the documented ulp bounds are checked on the code that
//! actually runs.

use graphlift_ir::{ElementType, Function, FunctionBuilder, Op, UnaryOp};
use graphlift_runtime::reference::unary_f64;
use graphlift_runtime::Tensor;
use rayon::prelude::*;

use graphlift_codegen::{vmath, JitError, JitKernel};

mod pow;
pub use graphlift_testkit::reference;
pub use graphlift_testkit::reference::pow_special_operands;
pub use pow::sweep_pow_f64;
pub use pow::{
    pow_f32_exponents, pow_f64_exponents, sweep_pow_f32, AccuracyPow, POW_EXPONENTS,
    POW_EXPONENTS_F64, POW_TARGETS, POW_TARGETS_F32,
};

/// The functions with an inline `f32` approximation, in table order: [`vmath::FUNCTIONS`],
/// then the trigonometric and hyperbolic ones ([`vmath::F32_ONLY`]).
pub const F32_FUNCTIONS: [UnaryOp; 18] = {
    let mut all = [UnaryOp::Exp; 18];
    let mut i = 0;
    while i < all.len() {
        all[i] = if i < vmath::FUNCTIONS.len() {
            vmath::FUNCTIONS[i]
        } else {
            vmath::F32_ONLY[i - vmath::FUNCTIONS.len()]
        };
        i += 1;
    }
    all
};

/// The functions with an inline `f64` approximation ([`vmath::FUNCTIONS`]; the
/// trigonometric and hyperbolic ones call the reference's scalar functions on `f64`).
pub const F64_FUNCTIONS: [UnaryOp; 7] = vmath::FUNCTIONS;

/// Inputs per kernel call of a sweep.
const CHUNK: usize = 1 << 16;

/// Which code of a kernel a sweep runs: all run the same operation sequence, lane for lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoopKind {
    /// The inline vector loop ([`JitKernel::compile_inline`]: `F32X4`, or `F64X2` for `f64`).
    Vector,
    /// The vector math library's wide code ([`JitKernel::compile`] on a host with AVX2 and
    /// FMA: `f32` `exp`, `sigmoid`, `tanh` and `erf` only).
    Library,
    /// The scalar loop ([`JitKernel::compile_scalar`]).
    Scalar,
    /// The assembled code of the host's widest instruction set (sixteen AVX-512 lanes, or
    /// eight AVX2 lanes: `graphlift_codegen::asm`; [`JitKernel::compile_for`] without the
    /// library), which computes the inline code's operations lane for lane.
    Assembled,
}

impl LoopKind {
    /// Compiles `body` to run this code.
    ///
    /// # Errors
    /// As [`JitKernel::compile`]; [`JitError::Unsupported`] when the kernel does not get this
    /// code (a scalar element type in a vector loop; for [`LoopKind::Library`], an op the
    /// library lacks, or a host without its wide code; for [`LoopKind::Assembled`], a host
    /// without AVX2 or a kernel the assembler refuses).
    pub fn compile(self, body: &Function) -> Result<JitKernel, JitError> {
        let k = match self {
            LoopKind::Vector => JitKernel::compile_inline(body)?,
            LoopKind::Library => JitKernel::compile(body)?,
            LoopKind::Scalar => JitKernel::compile_scalar(body)?,
            LoopKind::Assembled => {
                let target = graphlift_kernels::target::Target::from_env().with_veclib(false);
                JitKernel::compile_for(body, &target)?
            }
        };
        if k.is_vectorized() == (self == LoopKind::Scalar)
            || k.assembled().is_some() != (self == LoopKind::Assembled)
            || k.calls_library() != (self == LoopKind::Library)
        {
            return Err(JitError::Unsupported {
                kernel: body.name().to_string(),
                message: format!("the kernel did not get the {self:?} code"),
            });
        }
        Ok(k)
    }

    /// Its name in reports.
    pub fn describe(self, t: ElementType) -> &'static str {
        match (self, t) {
            (LoopKind::Vector, ElementType::F64) => "F64X2 vector loop",
            (LoopKind::Vector, _) => "F32X4 vector loop",
            (LoopKind::Library, _) => "vector math library",
            (LoopKind::Scalar, _) => "scalar loop",
            (LoopKind::Assembled, _) => "assembled code",
        }
    }
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
            bound: vmath::max_ulp(op, ElementType::F32).unwrap_or(0.0),
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
/// `[-1, 1]` and odd at zero (`f(±0) = ±0`); `sigmoid` in `[0, 1]`; `sin`, `cos` in
/// `[-1, 1]`; `sin`, `tan`, `asin`, `atan`, `sinh`, `asinh`, `atanh` odd at zero; `cos(±0) =
/// cosh(±0) = 1`, `cosh ≥ 1`; `acos` in `[0, π]`; `acosh(1) = +0`, `acosh(x < 1) = NaN`;
/// `atanh(±1) = ±inf`; `asin`, `acos`, `atanh` NaN outside `[-1, 1]`.
pub fn guarantee_holds(op: UnaryOp, x: f32, y: f32) -> bool {
    // Widening keeps every value the guarantees look at (±0 with its sign, ±1, ±inf, NaN).
    range_guarantees(op, f64::from(x), f64::from(y))
}

/// The checks of [`guarantee_holds`], on `f64` values (of either element type).
fn range_guarantees(op: UnaryOp, x: f64, y: f64) -> bool {
    if x.is_nan() {
        return y.is_nan();
    }
    match op {
        UnaryOp::Exp => {
            (x != f64::INFINITY || y == f64::INFINITY)
                && (x != f64::NEG_INFINITY || y == 0.0)
                && (y.is_nan() || y >= 0.0)
        }
        UnaryOp::Log => {
            (x != 0.0 || y == f64::NEG_INFINITY)
                && (x >= 0.0 || y.is_nan())
                && (x != f64::INFINITY || y == f64::INFINITY)
        }
        UnaryOp::Expm1 => {
            y >= -1.0
                && (x != f64::INFINITY || y == f64::INFINITY)
                && (x != f64::NEG_INFINITY || y == -1.0)
                && (x != 0.0 || y.to_bits() == x.to_bits())
        }
        UnaryOp::Log1p => {
            (x != -1.0 || y == f64::NEG_INFINITY)
                && (x >= -1.0 || y.is_nan())
                && (x != f64::INFINITY || y == f64::INFINITY)
                && (x != 0.0 || y.to_bits() == x.to_bits())
        }
        UnaryOp::Tanh | UnaryOp::Erf => {
            (-1.0..=1.0).contains(&y) && (x != 0.0 || y.to_bits() == x.to_bits())
        }
        UnaryOp::Sigmoid => (0.0..=1.0).contains(&y),
        UnaryOp::Sin => (y.is_nan() || (-1.0..=1.0).contains(&y)) && odd_at_zero(x, y),
        UnaryOp::Cos => (y.is_nan() || (-1.0..=1.0).contains(&y)) && (x != 0.0 || y == 1.0),
        UnaryOp::Tan | UnaryOp::Atan | UnaryOp::Sinh | UnaryOp::Asinh => odd_at_zero(x, y),
        UnaryOp::Asin | UnaryOp::Atanh => {
            odd_at_zero(x, y)
                && (x.abs() <= 1.0 || y.is_nan())
                && (x.abs() != 1.0 || op == UnaryOp::Asin || y == x * f64::INFINITY)
        }
        UnaryOp::Acos => {
            (x.abs() <= 1.0 || y.is_nan())
                && (y.is_nan() || (0.0..=f64::from(std::f32::consts::PI)).contains(&y))
        }
        UnaryOp::Cosh => y >= 1.0 && (x != 0.0 || y == 1.0),
        UnaryOp::Acosh => (x >= 1.0 || y.is_nan()) && (x != 1.0 || y.to_bits() == 0),
        _ => true,
    }
}

/// `f(±0) = ±0`, sign included.
fn odd_at_zero(x: f64, y: f64) -> bool {
    x != 0.0 || y.to_bits() == x.to_bits()
}

/// A one-op kernel of `op` over `CHUNK` `f32` elements, running `kind`'s loop.
///
/// # Errors
/// As [`JitKernel::compile`]; [`JitError::Unsupported`] if `op` has no `f32` approximation.
pub fn kernel_f32(op: UnaryOp, kind: LoopKind) -> Result<JitKernel, JitError> {
    sweep_kernel(op, ElementType::F32, kind)
}

/// A one-op kernel of `op` over `CHUNK` elements of `t`, running `kind`'s loop.
fn sweep_kernel(op: UnaryOp, t: ElementType, kind: LoopKind) -> Result<JitKernel, JitError> {
    let unsupported = |message: String| JitError::Unsupported {
        kernel: op.name().to_string(),
        message,
    };
    if vmath::max_ulp(op, t).is_none() {
        return Err(unsupported(format!("no inline {t} approximation")));
    }
    let b = FunctionBuilder::new(op.name());
    let x = b.parameter("x", t, [CHUNK]);
    let body = b.finish(&[b.op(Op::Unary(op), &[x])])?;
    kind.compile(&body)
}

/// Measures `op`'s error over every `step`-th `f32` bit pattern (`0, step, 2·step, …`
/// below 2^32; `step = 0` is taken as 1) in `kind`'s loop.
///
/// It compiles a one-op kernel (the same lowering every fused kernel uses), runs it over the
/// inputs in chunks on rayon's global pool, and compares each result with the reference
/// interpreter's `f64` value (`graphlift_runtime::reference::unary_f64`, before rounding to
/// `f32`). It reports the largest error in ulp ([`vmath::ulp_error`]), the largest relative
/// error over results in the normal `f32` range, the inputs where they occur, and every
/// broken range or special-value guarantee ([`guarantee_holds`]). `graphlift accuracy
/// [--step K]` prints the table; the unit tests run a thinned sweep against the documented
/// bounds ([`vmath::max_ulp`]).
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

// ---- f64 ----

/// The result of a sample of one `f64` function (errors in ulp of `f64`, against the 256-bit reference).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccuracyF64 {
    /// The function.
    pub op: UnaryOp,
    /// The loop measured ([`LoopKind::Vector`]: the `F64X2` loop).
    pub loop_kind: LoopKind,
    /// The documented bound in ulp ([`vmath::max_ulp`] for `f64`).
    pub bound: f64,
    /// The largest error seen, in ulp of `f64` at the exact result.
    pub max_ulp: f64,
    /// The input of the largest ulp error, and the result there.
    pub worst_ulp_at: (f64, f64),
    /// The largest relative error over inputs whose exact result is a normal `f64`.
    pub max_rel: f64,
    /// The input of the largest relative error.
    pub worst_rel_at: f64,
    /// Inputs checked.
    pub checked: u64,
    /// Inputs that broke a guarantee of [`guarantee_holds_f64`].
    pub violations: u64,
    /// The first such input and its result.
    pub first_violation: Option<(f64, f64)>,
}

impl AccuracyF64 {
    fn empty(op: UnaryOp, loop_kind: LoopKind) -> AccuracyF64 {
        AccuracyF64 {
            op,
            loop_kind,
            bound: vmath::max_ulp(op, ElementType::F64).unwrap_or(0.0),
            max_ulp: 0.0,
            worst_ulp_at: (0.0, 0.0),
            max_rel: 0.0,
            worst_rel_at: 0.0,
            checked: 0,
            violations: 0,
            first_violation: None,
        }
    }

    fn merge(mut self, o: AccuracyF64) -> AccuracyF64 {
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

/// The guarantees of [`guarantee_holds`] for `f64` lanes, and one more: at the special
/// inputs `±0`, `±inf` and NaN the result is the reference interpreter's, bit for bit (any
/// NaN for NaN).
pub fn guarantee_holds_f64(op: UnaryOp, x: f64, y: f64) -> bool {
    if x.is_nan() || x.is_infinite() || x == 0.0 {
        let want = unary_f64(op, x);
        if !(want.is_nan() && y.is_nan() || want.to_bits() == y.to_bits()) {
            return false;
        }
    }
    range_guarantees(op, x, y)
}

/// A one-op kernel of `op` over `CHUNK` `f64` elements, running `kind`'s loop: `F64X2` for
/// [`LoopKind::Vector`], the scalar loop ([`JitKernel::compile_scalar`]) for
/// [`LoopKind::Scalar`].
///
/// # Errors
/// As [`JitKernel::compile`]; [`JitError::Unsupported`] if `op` has no `f64` approximation
/// or the kernel did not get the loop asked for.
pub fn kernel_f64(op: UnaryOp, kind: LoopKind) -> Result<JitKernel, JitError> {
    sweep_kernel(op, ElementType::F64, kind)
}

/// The bound, in `f64` ulp against the 256-bit reference, on the error of the reference
/// interpreter's own `f64` transcendental functions (Rust's `exp`, `ln`, `exp_m1`, `ln_1p`
/// and `tanh`, `libm::erf`, and the reference's `sigmoid` formula). Differential checks allow
/// it for the reference's side; a unit test keeps it true on the dense sample.
pub const INTERPRETER_F64_MAX_ULP: f64 = 2.0;

/// The dense `f64` sample of the accuracy method: in every binade of both signs (the
/// subnormals counting as one binade), `per_binade` bit patterns evenly spaced over the
/// 2^52 mantissas (a per-binade offset keeps them from all sharing one mantissa), then the
/// special values (`±0`, `±inf`, NaN, the extreme normals and subnormals) and the 64 `f64`
/// neighbours on each side of every threshold in [`F64_THRESHOLDS`] and of its negation.
pub fn f64_sample(per_binade: u64) -> Vec<f64> {
    let per_binade = per_binade.clamp(1, 1 << 52);
    let step = (1u64 << 52) / per_binade;
    let mut xs = Vec::new();
    for sign in [0u64, 1 << 63] {
        for e in 0..2047u64 {
            let offset = e.wrapping_mul(0x9e37_79b9_7f4a_7c15) % step.max(1);
            for i in 0..per_binade {
                xs.push(f64::from_bits(sign | e << 52 | (i * step + offset)));
            }
        }
    }
    xs.extend([
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(1),
    ]);
    for &t in F64_THRESHOLDS.iter() {
        for t in [t, -t] {
            let bits = t.to_bits();
            for d in 0..=64u64 {
                xs.push(f64::from_bits(bits.wrapping_add(d)));
                xs.push(f64::from_bits(bits.wrapping_sub(d)));
            }
        }
    }
    xs
}

/// Inputs near which some function changes method or behaviour: `exp` overflow
/// (`ln f64::MAX`), its subnormal and zero results (`ln 2^-1022`, `ln 2^-1075`) and its
/// clamps, `expm1`'s `-1` and exact-`2^n − 1` limits, `log`/`log1p` near 1, `√½`, `√2` and
/// the subnormals' edge, `tanh`'s switch (0.55) and saturation, `erf`'s switches (1, 2.5)
/// and saturation (5.86, 6), and the tiny arguments where `x` itself is the result.
pub const F64_THRESHOLDS: [f64; 22] = [
    709.782_712_893_384,
    -708.396_418_532_264_1,
    -745.133_219_101_941_1,
    -746.0,
    710.0,
    -37.0,
    -40.0,
    36.7,
    1.0,
    std::f64::consts::FRAC_1_SQRT_2,
    std::f64::consts::SQRT_2,
    0.55,
    19.06,
    2.5,
    5.863_584_748_755_167,
    6.0,
    1e-8,
    1.110_223_024_625_156_5e-16,
    0.346_573_590_279_972_6,
    1.039_720_770_839_917_9,
    0.5,
    2.0,
];

/// Measures `op`'s `f64` error over `inputs` in `kind`'s loop against the 256-bit reference
/// ([`reference::exact`], correctly rounded), with [`reference::ulp_error`].
///
/// # Errors
/// As [`kernel_f64`], or a failing kernel call.
pub fn sweep_f64(op: UnaryOp, inputs: &[f64], kind: LoopKind) -> Result<AccuracyF64, JitError> {
    let k = kernel_f64(op, kind)?;
    inputs
        .par_chunks(CHUNK)
        .map(|xs| measure_chunk_f64(&k, op, kind, xs))
        .try_reduce(|| AccuracyF64::empty(op, kind), |a, b| Ok(a.merge(b)))
}

fn measure_chunk_f64(
    k: &JitKernel,
    op: UnaryOp,
    kind: LoopKind,
    xs: &[f64],
) -> Result<AccuracyF64, JitError> {
    let buffer = |e: graphlift_runtime::RuntimeError| JitError::Buffer {
        kernel: op.name().to_string(),
        message: e.to_string(),
    };
    let len = xs.len();
    let mut padded = xs.to_vec();
    padded.resize(CHUNK, 0.0);
    let input = Tensor::from_vec(padded, [CHUNK]).map_err(buffer)?;
    let mut out = vec![Tensor::zeros(ElementType::F64, [CHUNK]).map_err(buffer)?];
    k.call_range(&[&input], &mut out, 0, len)?;
    let ys = out[0].read::<f64>().map_err(buffer)?;
    let mut acc = AccuracyF64::empty(op, kind);
    for (&x, &y) in xs.iter().zip(ys) {
        let exact = reference::exact(op, x);
        let ulp = reference::ulp_error(y, &exact);
        if ulp > acc.max_ulp {
            acc.max_ulp = ulp;
            acc.worst_ulp_at = (x, y);
        }
        if let Some(rel) = reference::relative_error(y, &exact) {
            if rel > acc.max_rel {
                acc.max_rel = rel;
                acc.worst_rel_at = x;
            }
        }
        if !guarantee_holds_f64(op, x, y) {
            acc.violations += 1;
            acc.first_violation.get_or_insert((x, y));
        }
    }
    acc.checked = len as u64;
    Ok(acc)
}
