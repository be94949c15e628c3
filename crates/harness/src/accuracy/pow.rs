//! Accuracy sweeps of `Power` on `f32` and `f64` ([`vmath::pow`]) over pairs `(x, y)`, run
//! through the kernels' own code, with the IEEE special cases checked bit for bit against the
//! interpreter.

use graphlift_ir::{BinaryOp, Element, ElementType, FunctionBuilder, Op};
use graphlift_runtime::Tensor;
use rayon::prelude::*;

use graphlift_testkit::reference::pow_special_operands;

use super::{LoopKind, CHUNK};
use graphlift_codegen::{vmath, JitError, JitKernel};

/// The result of a [`sweep_pow_f32`] or `sweep_pow_f64`: operands and
/// results of either element type are held as `f64`, exactly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccuracyPow {
    /// `f32` or `f64`.
    pub element_type: ElementType,
    /// The loop measured.
    pub loop_kind: LoopKind,
    /// The documented bound in ulp of the element type ([`vmath::pow::MAX_ULP`],
    /// [`vmath::pow::MAX_ULP_F64`]).
    pub bound: f64,
    /// The largest error seen, in ulp of the element type at the reference value.
    pub max_ulp: f64,
    /// `(x, y, x^y)` where the largest error was seen.
    pub worst_ulp_at: (f64, f64, f64),
    /// Pairs checked.
    pub checked: u64,
    /// Pairs of an IEEE special case ([`pow_special_operands`], or an exact result that is
    /// NaN or infinite) whose result is not the interpreter's bit for bit.
    pub violations: u64,
    /// The first such pair and its result.
    pub first_violation: Option<(f64, f64, f64)>,
}

impl AccuracyPow {
    fn empty(element_type: ElementType, loop_kind: LoopKind, bound: f64) -> AccuracyPow {
        AccuracyPow {
            element_type,
            loop_kind,
            bound,
            max_ulp: 0.0,
            worst_ulp_at: (0.0, 0.0, 0.0),
            checked: 0,
            violations: 0,
            first_violation: None,
        }
    }

    fn merge(mut self, o: AccuracyPow) -> AccuracyPow {
        if o.max_ulp > self.max_ulp {
            self.max_ulp = o.max_ulp;
            self.worst_ulp_at = o.worst_ulp_at;
        }
        self.checked += o.checked;
        self.violations += o.violations;
        self.first_violation = self.first_violation.or(o.first_violation);
        self
    }

    /// Records one pair: its error in ulp, and whether it broke a special case.
    fn record(&mut self, (x, y, r): (f64, f64, f64), ulp: f64, broken: bool) {
        if ulp > self.max_ulp {
            self.max_ulp = ulp;
            self.worst_ulp_at = (x, y, r);
        }
        if broken {
            self.violations += 1;
            self.first_violation.get_or_insert((x, y, r));
        }
        self.checked += 1;
    }

    /// `true` when the error is within the documented bound and every special case held.
    pub fn within_bound(&self) -> bool {
        self.max_ulp <= self.bound && self.violations == 0
    }
}

/// The exponents of [`sweep_pow_f32`]: the special ones (`±0`, `±inf`, NaN, `±1`, `±2`,
/// `±3`, `±0.5`, `2^24` and odd neighbours, ...) and spread ordinary ones.
pub const POW_EXPONENTS: [f32; 32] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    -2.0,
    3.0,
    -3.0,
    0.5,
    -0.5,
    1.5,
    -1.5,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    16_777_216.0,
    16_777_215.0,
    -16_777_215.0,
    0.333_333_34,
    7.0,
    -7.0,
    0.001,
    -0.001,
    10.5,
    -37.25,
    100.0,
    -100.0,
    149.5,
    1e10,
    -1e10,
    1e-30,
    f32::from_bits(1),
];

/// The values `t` of `y·ln|x|` that [`sweep_pow_f32`] aims at from every base
/// (`y = t/ln|x|`, rounded to `f32`): both sides of the zero threshold
/// (`ln 2^-150 ≈ −103.97`), the subnormal range, the smallest normal (`ln 2^-126 ≈ −87.34`),
/// moderate values, and both sides of the overflow threshold (`ln f32::MAX ≈ 88.72`), where
/// the error of `y·ln|x|` weighs most.
pub const POW_TARGETS_F32: [f32; 16] = [
    -104.5, -103.97, -103.3, -95.0, -87.34, -80.0, -40.0, -5.0, -0.75, 0.75, 5.0, 40.0, 80.0, 88.0,
    88.72, 89.5,
];

/// The exponents [`sweep_pow_f32`] pairs with base `x`: [`POW_EXPONENTS`], and for each
/// target `t` of [`POW_TARGETS_F32`] the exponent `t/ln|x|` (rounded to `f32`) and its
/// nearest integer (where `|x|` is finite, non-zero and not 1), so that results from every
/// base cover the whole range, the overflow and underflow thresholds and the subnormals.
pub fn pow_f32_exponents(x: f32) -> Vec<f32> {
    let mut ys = POW_EXPONENTS.to_vec();
    let l = f64::from(x).abs().ln();
    if l.is_finite() && l != 0.0 {
        for t in POW_TARGETS_F32 {
            let y = (f64::from(t) / l) as f32;
            ys.push(y);
            ys.push(y.round());
        }
    }
    ys
}

/// The fixed exponents of `sweep_pow_f64` for every base: the special
/// ones (`±0`, `±inf`, NaN, small integers of both parities, halves, `2^53` and the odd
/// `2^53 − 1`), tiny and huge ones (where `y·ln|x|` underflows or overflows), and spread
/// ordinary ones.
pub const POW_EXPONENTS_F64: [f64; 32] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    -2.0,
    3.0,
    -3.0,
    0.5,
    -0.5,
    1.5,
    -1.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    9_007_199_254_740_992.0,
    9_007_199_254_740_991.0,
    -9_007_199_254_740_991.0,
    1.0 / 3.0,
    7.0,
    -7.0,
    0.001,
    -0.001,
    10.5,
    -37.25,
    100.0,
    -1000.0,
    1e15,
    -1e300,
    1e-300,
    -4.9e-324,
    1.000_000_000_000_000_2,
];

/// The values `t` of `y·ln|x|` that `sweep_pow_f64` aims at from every
/// base (`y = t/ln|x|`): both sides of the zero threshold (`ln 2^-1075 ≈ −745.13`), the
/// subnormal range, the smallest normal (`ln 2^-1022 ≈ −708.40`), moderate values, and both
/// sides of the overflow threshold (`ln f64::MAX ≈ 709.78`).
pub const POW_TARGETS: [f64; 16] = [
    -745.6, -745.13, -744.4, -720.0, -708.4, -700.0, -300.0, -20.0, -0.75, 0.75, 20.0, 300.0,
    700.0, 709.0, 709.78, 710.5,
];

/// A one-op `Power` kernel over `CHUNK` elements of `t` (`f32` or `f64`) running `kind`'s
/// loop.
fn pow_kernel(t: ElementType, kind: LoopKind) -> Result<JitKernel, JitError> {
    let b = FunctionBuilder::new("pow");
    let x = b.parameter("x", t, [CHUNK]);
    let y = b.parameter("y", t, [CHUNK]);
    let p = b.op(Op::Binary(BinaryOp::Power), &[x, y]);
    let body = b.finish(&[p])?;
    kind.compile(&body)
}

/// Runs `k` on up to `CHUNK` pairs, returning the results (the tensors are padded to
/// `CHUNK`; the padding is not computed).
fn apply_pairs<T: Element>(
    k: &JitKernel,
    t: ElementType,
    xs: Vec<T>,
    ys: Vec<T>,
) -> Result<Vec<T>, JitError> {
    let buffer = |e: graphlift_runtime::RuntimeError| JitError::Buffer {
        kernel: "pow".into(),
        message: e.to_string(),
    };
    let len = xs.len();
    let pad = |mut v: Vec<T>| {
        v.resize(CHUNK, T::default());
        v
    };
    let xt = Tensor::from_vec(pad(xs), [CHUNK]).map_err(buffer)?;
    let yt = Tensor::from_vec(pad(ys), [CHUNK]).map_err(buffer)?;
    let mut out = vec![Tensor::zeros(t, [CHUNK]).map_err(buffer)?];
    k.call_range(&[&xt, &yt], &mut out, 0, len)?;
    Ok(out[0].read::<T>().map_err(buffer)?[..len].to_vec())
}

/// Whether `r` is the interpreter's result bit for bit (any NaN for NaN).
fn same<T: Into<f64>>(r: T, want: T) -> bool {
    let (r, want) = (r.into(), want.into());
    r.to_bits() == want.to_bits() || r.is_nan() && want.is_nan()
}

/// Measures `f32` `Power` (inline, in `f32` arithmetic: [`vmath::pow`]) over every
/// `step`-th positive `f32` bit pattern and its negation as bases, each with every exponent
/// of [`pow_f32_exponents`] (the fixed [`POW_EXPONENTS`] and 32 aimed at the thresholds of
/// the result), in `kind`'s loop: the error in `f32` ulp against the interpreter's `f64`
/// `powf` value before rounding, and bit equality with the interpreter wherever its result
/// or an operand is special.
///
/// # Errors
/// As [`JitKernel::compile`], or a failing kernel call.
pub fn sweep_pow_f32(step: u64, kind: LoopKind) -> Result<AccuracyPow, JitError> {
    use graphlift_runtime::reference::{binary_f32, binary_f64};
    let k = pow_kernel(ElementType::F32, kind)?;
    let step = step.max(1);
    let bases: Vec<f32> = (0..(1u64 << 31).div_ceil(step))
        .flat_map(|i| {
            let v = f32::from_bits((i * step) as u32);
            [v, -v]
        })
        .collect();
    let empty = AccuracyPow::empty(ElementType::F32, kind, vmath::pow::MAX_ULP);
    let per_base = POW_EXPONENTS.len() + 2 * POW_TARGETS_F32.len();
    bases
        .par_chunks(CHUNK / per_base)
        .map(|chunk| -> Result<AccuracyPow, JitError> {
            let (xs, ys): (Vec<f32>, Vec<f32>) = chunk
                .iter()
                .flat_map(|&x| pow_f32_exponents(x).into_iter().map(move |y| (x, y)))
                .unzip();
            let rs = apply_pairs(&k, ElementType::F32, xs.clone(), ys.clone())?;
            let mut acc = empty;
            for ((&x, &y), &r) in xs.iter().zip(&ys).zip(&rs) {
                let exact = binary_f64(BinaryOp::Power, f64::from(x), f64::from(y));
                let special =
                    !exact.is_finite() || pow_special_operands(f64::from(x), f64::from(y));
                let broken = special && !same(r, binary_f32(BinaryOp::Power, x, y));
                let pair = (f64::from(x), f64::from(y), f64::from(r));
                acc.record(pair, vmath::ulp_error(r, exact), broken);
            }
            Ok(acc)
        })
        .try_reduce(|| empty, |a, b| Ok(a.merge(b)))
}

/// The exponents `sweep_pow_f64` pairs with base `x`:
/// [`POW_EXPONENTS_F64`], and for each target `t` of [`POW_TARGETS`] the exponent `t/ln|x|`
/// and its nearest integer (where `|x|` is finite, non-zero and not 1), so that results from
/// every base cover the whole range, the overflow and underflow thresholds and the
/// subnormals.
pub fn pow_f64_exponents(x: f64) -> Vec<f64> {
    let mut ys = POW_EXPONENTS_F64.to_vec();
    let l = x.abs().ln();
    if l.is_finite() && l != 0.0 {
        for t in POW_TARGETS {
            let y = t / l;
            ys.push(y);
            ys.push(y.round());
        }
    }
    ys
}

/// Measures `Power` on `f64` ([`vmath::pow`]) in `kind`'s loop against correctly rounded
/// 256-bit reference values ([`graphlift_testkit::reference::exact_pow`]): every base of
/// [`super::f64_sample`]`(per_binade)` with every exponent of [`pow_f64_exponents`]. Errors
/// are in ulp of `f64` at the exact value ([`graphlift_testkit::reference::ulp_error`]); wherever an operand
/// is special ([`pow_special_operands`]) the result must be the interpreter's bit for bit.
///
/// # Errors
/// As [`JitKernel::compile`], or a failing kernel call.
pub fn sweep_pow_f64(per_binade: u64, kind: LoopKind) -> Result<AccuracyPow, JitError> {
    use graphlift_runtime::reference::binary_f64;
    let k = pow_kernel(ElementType::F64, kind)?;
    let pairs: Vec<(f64, f64)> = super::f64_sample(per_binade)
        .into_iter()
        .flat_map(|x| pow_f64_exponents(x).into_iter().map(move |y| (x, y)))
        .collect();
    let empty = AccuracyPow::empty(ElementType::F64, kind, vmath::pow::MAX_ULP_F64);
    pairs
        .par_chunks(CHUNK)
        .map(|chunk| -> Result<AccuracyPow, JitError> {
            let (xs, ys): (Vec<f64>, Vec<f64>) = chunk.iter().copied().unzip();
            let rs = apply_pairs(&k, ElementType::F64, xs, ys)?;
            let mut acc = empty;
            for (&(x, y), &r) in chunk.iter().zip(&rs) {
                let exact = graphlift_testkit::reference::exact_pow(x, y);
                let broken =
                    pow_special_operands(x, y) && !same(r, binary_f64(BinaryOp::Power, x, y));
                acc.record(
                    (x, y, r),
                    graphlift_testkit::reference::ulp_error(r, &exact),
                    broken,
                );
            }
            Ok(acc)
        })
        .try_reduce(|| empty, |a, b| Ok(a.merge(b)))
}
