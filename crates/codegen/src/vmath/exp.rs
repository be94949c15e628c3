//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::exp`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
pub use graphlift_kernels::vmath::exp::*;

/// Emits `e^x` for the `f32` value `x`.
pub fn emit(e: &mut Emit, x: Value) -> Value {
    emit_parts(e, x).0
}

/// Emits `e^x` as an unevaluated sum `hi + lo`: `hi` is exactly what [`emit`] returns, `lo`
/// the rounding error of its last addition, scaled alike (for callers that need more than
/// `f32` precision, like [`super::sigmoid`]; unused parts are removed by Cranelift).
pub fn emit_parts(e: &mut Emit, x: Value) -> (Value, Value) {
    let lo = e.f32(LO);
    let hi = e.f32(HI);
    let below = e.fcmp(FloatCC::LessThan, x, lo);
    let x = e.select(below, lo, x);
    let above = e.fcmp(FloatCC::GreaterThan, x, hi);
    let x = e.select(above, hi, x);

    let (n, nf, r) = reduce(e, x);
    scale_reduced(e, (n, nf), r)
}

/// `e^(n·ln2 + r) = 2^n·(1 + (e^r − 1))` for `i32` lanes `n` in `[-150, 129]` (and `nf`,
/// the same integers as `f32` lanes) and a reduced `|r| ≤ ln2/2`, as an unevaluated sum
/// `hi + lo` (see [`emit_parts`]): the polynomial of [`expm1_reduced`], then the scale by
/// `2^n` in two steps `2^(n/2)·2^(n − n/2)` so that results in the subnormal range round
/// once and overflow gives `+inf`.
pub fn scale_reduced(e: &mut Emit, (n, nf): (Value, Value), r: Value) -> (Value, Value) {
    let y = expm1_reduced(e, r);
    let one = e.f32(1.0);
    // Fast2Sum (|y| < 1): p + p_lo = 1 + y exactly.
    let (p, p_lo) = super::fast_two_sum(e, one, y);
    if let Some(scaled) = scale_native(e, nf, (p, p_lo)) {
        return scaled;
    }

    let n1 = e.b.ins().sshr_imm_u(n, 1);
    let n2 = e.b.ins().isub(n, n1);
    let s1 = pow2(e, n1);
    let s2 = pow2(e, n2);
    let hi = e.b.ins().fmul(p, s1);
    let hi = e.b.ins().fmul(hi, s2);
    let lo = e.b.ins().fmul(p_lo, s1);
    let lo = e.b.ins().fmul(lo, s2);
    (hi, lo)
}

/// [`scale_reduced`]'s scale in code only translated into an AVX-512 program
/// ([`Emit::allow_native`]): `vscalefps` by `nf` (`n` as an `f32`, as the reduction has
/// it), which rounds a subnormal result once and overflows to `+inf` as the two steps do,
/// the same bits; `None` where the code is compiled by Cranelift.
fn scale_native(e: &mut Emit, nf: Value, (p, p_lo): (Value, Value)) -> Option<(Value, Value)> {
    if !e.allows_native() {
        return None;
    }
    let hi = e.scale(p, nf)?;
    let lo = e.scale(p_lo, nf)?;
    Some((hi, lo))
}

/// `n = round(x/ln2)` (ties to even) for a finite (clamped) `x`, as `f32` and as `i32`
/// lanes (the 1.5·2^23 magic add).
pub fn round_to_ln2_multiple(e: &mut Emit, x: Value) -> (Value, Value) {
    let log2e = e.f32(LOG2E);
    let magic = e.f32(MAGIC);
    let t = e.b.ins().fma(x, log2e, magic);
    let nf = e.b.ins().fsub(t, magic);
    let t_bits = e.f32_bits(t);
    let magic_bits = e.i32(MAGIC.to_bits() as i32);
    let n = e.b.ins().isub(t_bits, magic_bits);
    (nf, n)
}

/// Cody–Waite reduction of a finite (clamped) `x`: `(n, nf, r)` with `x = n·ln2 + r`,
/// `|r| ≤ ln2/2`, `n` as `i32` lanes (ties to even) and `nf` the same as `f32` lanes. NaN
/// gives a NaN `r`.
pub fn reduce(e: &mut Emit, x: Value) -> (Value, Value, Value) {
    let (nf, n) = round_to_ln2_multiple(e, x);

    let neg_ln2_hi = e.f32(-LN2_HI);
    let neg_ln2_lo = e.f32(-LN2_LO);
    let r = e.b.ins().fma(nf, neg_ln2_hi, x);
    let r = e.b.ins().fma(nf, neg_ln2_lo, r);
    (n, nf, r)
}

/// `e^r − 1 = r + r²·Q(r)` for a reduced `|r| ≤ ln2/2`, with relative accuracy near 0.
pub fn expm1_reduced(e: &mut Emit, r: Value) -> Value {
    let q = e.horner(r, &Q);
    let r2 = e.b.ins().fmul(r, r);
    e.b.ins().fma(r2, q, r)
}

/// `2^n` for `i32` lanes `n` in `[-126, 127]`, from exponent bits.
pub fn pow2(e: &mut Emit, n: Value) -> Value {
    let bias = e.i32(127);
    let biased = e.b.ins().iadd(n, bias);
    let bits = e.b.ins().ishl_imm_u(biased, 23);
    e.f32_from_bits(bits)
}

/// Emits `e^x` for the `f64` value `x`.
///
/// The `f32` method at `f64` precision: clamp to `[-746, 710]` (NaN passes), Cody–Waite
/// reduction `x = n·ln2 + r` (`n` rounded with the 1.5·2^52 magic add; `ln 2` in two parts,
/// the first with 42 bits), `e^r = 1 + (r + r²·Q(r))` with a degree-10 `Q`, and the scale by
/// `2^n` in two exact-or-rounding-once steps `2^n1·2^n2` (`n1 = round(n/2)`) built in the
/// exponent field with integer adds and a shift, so subnormal results round once and
/// overflow gives `+inf`. `exp(-inf) = 0`, `exp(+inf) = +inf`, NaN stays NaN.
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; the measured errors are in
/// `BENCHMARKS.md`).
pub fn emit_f64(e: &mut Emit, x: Value) -> Value {
    emit_parts_f64(e, x).0
}

/// [`emit_f64`] as an unevaluated sum `hi + lo` (as [`emit_parts`]).
pub fn emit_parts_f64(e: &mut Emit, x: Value) -> (Value, Value) {
    let lo = e.f64(LO_F64);
    let hi = e.f64(HI_F64);
    let below = e.fcmp(FloatCC::LessThan, x, lo);
    let x = e.select(below, lo, x);
    let above = e.fcmp(FloatCC::GreaterThan, x, hi);
    let x = e.select(above, hi, x);

    let (nf, n, r) = reduce_f64(e, x);
    let y = expm1_reduced_f64(e, r);
    let one = e.f64(1.0);
    let p = e.b.ins().fadd(y, one);
    let p_minus_one = e.b.ins().fsub(p, one);
    let p_lo = e.b.ins().fsub(y, p_minus_one);

    let (s1, s2) = pow2_halves_f64(e, nf, n);
    let hi = e.b.ins().fmul(p, s1);
    let hi = e.b.ins().fmul(hi, s2);
    let lo = e.b.ins().fmul(p_lo, s1);
    let lo = e.b.ins().fmul(lo, s2);
    (hi, lo)
}

/// The integer `k` of `t = k + 1.5·2^52` (a value built by the magic add), as `i64` lanes.
fn magic_to_int(e: &mut Emit, t: Value) -> Value {
    let bits = e.f64_bits(t);
    let magic_bits = e.i64(MAGIC_F64.to_bits() as i64);
    e.b.ins().isub(bits, magic_bits)
}

/// `2^n` as two factors `(2^n1, 2^n2)`, `n1 = round(n/2)` (exact: `|n| < 2^11`),
/// `n2 = n − n1`, both in `[-539, 513]`, for `n` given as `f64` and as `i64` lanes: `v·2^n1`
/// is exact for a `v` near 1 and `(v·2^n1)·2^n2` rounds once, into the subnormals or to
/// infinity where the result goes there.
pub fn pow2_halves_f64(e: &mut Emit, nf: Value, n: Value) -> (Value, Value) {
    let half = e.f64(0.5);
    let magic = e.f64(MAGIC_F64);
    let t1 = e.b.ins().fma(nf, half, magic);
    let n1 = magic_to_int(e, t1);
    let n2 = e.b.ins().isub(n, n1);
    (pow2_f64(e, n1), pow2_f64(e, n2))
}

/// `n = round(x/ln2)` (ties to even) for a finite (clamped) `f64` `x`, as `f64` and as `i64`
/// lanes.
pub fn round_to_ln2_multiple_f64(e: &mut Emit, x: Value) -> (Value, Value) {
    let log2e = e.f64(std::f64::consts::LOG2_E);
    let magic = e.f64(MAGIC_F64);
    let t = e.b.ins().fma(x, log2e, magic);
    let nf = e.b.ins().fsub(t, magic);
    (nf, magic_to_int(e, t))
}

/// Cody–Waite reduction of a finite (clamped) `f64` `x`: `(n as f64, n as i64, r)` with
/// `x = n·ln2 + r`, `|r| ≤ ln2/2`.
pub fn reduce_f64(e: &mut Emit, x: Value) -> (Value, Value, Value) {
    let (nf, n) = round_to_ln2_multiple_f64(e, x);
    let neg_ln2_hi = e.f64(-LN2_HI_F64);
    let neg_ln2_lo = e.f64(-LN2_LO_F64);
    // Exact: n·LN2_HI_F64 has at most 53 bits and is within a factor 2 of x (or n = 0).
    let r = e.b.ins().fma(nf, neg_ln2_hi, x);
    let r = e.b.ins().fma(nf, neg_ln2_lo, r);
    (nf, n, r)
}

/// `e^r − 1 = r + r²·Q(r)` (`f64`) for a reduced `|r| ≤ ln2/2`, with relative accuracy near 0.
pub fn expm1_reduced_f64(e: &mut Emit, r: Value) -> Value {
    let q = e.horner_f64(r, &Q_F64);
    let r2 = e.b.ins().fmul(r, r);
    e.b.ins().fma(r2, q, r)
}

/// `2^n` for `i64` lanes `n` in `[-1022, 1023]`, from exponent bits.
pub fn pow2_f64(e: &mut Emit, n: Value) -> Value {
    let bias = e.i64(1023);
    let biased = e.b.ins().iadd(n, bias);
    let bits = e.b.ins().ishl_imm_u(biased, 52);
    e.f64_from_bits(bits)
}
