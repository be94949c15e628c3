//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::log`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use graphlift_ir::ElementType;
pub use graphlift_kernels::vmath::log::*;

/// Emits `ln(x)` for the `f32` value `x`.
pub fn emit(e: &mut Emit, x: Value) -> Value {
    let (dk, f) = reduce(e, x);
    let two = e.f32(2.0);
    let half = e.f32(0.5);
    let den = e.b.ins().fadd(two, f);
    let s = e.b.ins().fdiv(f, den);
    let z = e.b.ins().fmul(s, s);
    let rz = e.horner(z, &R);
    let r = e.b.ins().fmul(z, rz);
    let hf = e.b.ins().fmul(half, f);
    let hfsq = e.b.ins().fmul(hf, f);

    // dk·ln2_hi − ((hfsq − (s·(hfsq + R) + dk·ln2_lo)) − f)
    let ln2_lo = e.f32(LN2_LO);
    let ln2_hi = e.f32(LN2_HI);
    let hr = e.b.ins().fadd(hfsq, r);
    let klo = e.b.ins().fmul(dk, ln2_lo);
    let t = e.b.ins().fma(s, hr, klo);
    let t = e.b.ins().fsub(hfsq, t);
    let t = e.b.ins().fsub(t, f);
    let khi = e.b.ins().fmul(dk, ln2_hi);
    let res = e.b.ins().fsub(khi, t);

    // Special values: `special` where x is not in (0, inf). Each comparison feeds one
    // select, right after it (an AVX-512 compare into a mask register and a blend); in
    // AVX-512 programs one `vfixupimmps` by x's class: NaN stays NaN, ±0 gives −inf, +inf
    // gives +inf, −inf and negative values NaN, +1 and positive values keep `res`.
    if let Some(fixed) = e.fixup(res, x, LOG_SPECIALS) {
        return fixed;
    }
    let zero = e.f32(0.0);
    let inf = e.f32(f32::INFINITY);
    let neg_inf = e.f32(f32::NEG_INFINITY);
    let nan = e.constant(ElementType::F32, u64::from(f32::NAN.to_bits()));
    let is_inf = e.fcmp(FloatCC::Equal, x, inf);
    let special = e.select(is_inf, inf, nan);
    let is_zero = e.fcmp(FloatCC::Equal, x, zero);
    let special = e.select(is_zero, neg_inf, special);
    let below_inf = e.fcmp(FloatCC::LessThan, x, inf);
    let res = e.select(below_inf, res, special);
    let positive = e.fcmp(FloatCC::GreaterThan, x, zero);
    e.select(positive, res, special)
}

/// The argument reduction of [`emit`] (and of [`super::pow`]): for a positive `x`, `(k, f)`
/// with `x = 2^k·(1 + f)`, `1 + f ∈ [√½, √2)` (so `f ∈ [−0.293, 0.415)`, exact), `k` as an
/// `f32`. Subnormal `x` are scaled by `2^23` first (and `k` corrected). The values for `0`,
/// `inf`, NaN and negative `x` are meaningless: callers select their special cases. Where
/// the code is only translated into an AVX-512 program ([`Emit::allow_native`]), the same
/// `(k, f)` come from `vgetmantps` and `vgetexpps`.
pub fn reduce(e: &mut Emit, x: Value) -> (Value, Value) {
    if let Some(reduced) = reduce_native(e, x) {
        return reduced;
    }
    // Subnormals: scale into the normal range, remember the exponent shift.
    let min_normal = e.f32(f32::MIN_POSITIVE);
    let tiny = e.fcmp(FloatCC::LessThan, x, min_normal);
    let scale = e.f32(8_388_608.0); // 2^23
    let scaled = e.b.ins().fmul(x, scale);
    let xs = e.select(tiny, scaled, x);
    let adj_tiny = e.i32(-23);
    let adj_none = e.i32(0);
    let adj = e.select(tiny, adj_tiny, adj_none);

    // x = 2^k · m, m in [√½, √2).
    let bits = e.f32_bits(xs);
    let shift = e.i32(0x3f80_0000 - SQRT_HALF_BITS);
    let ix = e.b.ins().iadd(bits, shift);
    let k = e.b.ins().sshr_imm_u(ix, 23);
    let bias = e.i32(127);
    let k = e.b.ins().isub(k, bias);
    let k = e.b.ins().iadd(k, adj);
    let mant_mask = e.i32(0x007f_ffff);
    let mant = e.b.ins().band(ix, mant_mask);
    let sqrt_half = e.i32(SQRT_HALF_BITS);
    let mbits = e.b.ins().iadd(mant, sqrt_half);
    let m = e.f32_from_bits(mbits);
    let one = e.f32(1.0);
    let f = e.b.ins().fsub(m, one);
    let fty = e.f32_ty();
    let dk = e.b.ins().fcvt_from_sint(fty, k);
    (dk, f)
}

/// Emits `ln(x)` for the `f64` value `x`.
///
/// The `f32` method (after fdlibm's `log`) at `f64` precision: subnormal inputs are scaled
/// by `2^54`; `x = 2^k·m`, `m ∈ [√½, √2)`, `f = m − 1`, `s = f/(2 + f)`,
/// `ln(1 + f) = f − f²/2 + s·(f²/2 + R(s²))` with a degree-6 `R`, plus `k·ln2` in two parts.
/// `k` is turned into a float without an `i64 → f64` conversion (none lowers on `F64X2`):
/// the biased exponent is put into the mantissa of `2^52`. Special values by select:
/// `ln(±0) = -inf`, `ln(x < 0) = NaN`, `ln(+inf) = +inf`, NaN stays NaN.
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; the measured errors are in
/// `BENCHMARKS.md`).
pub fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let (dk, f) = reduce_f64(e, x);
    let two = e.f64(2.0);
    let half = e.f64(0.5);
    let den = e.b.ins().fadd(two, f);
    let s = e.b.ins().fdiv(f, den);
    let z = e.b.ins().fmul(s, s);
    let rz = e.horner_f64(z, &R_F64);
    let r = e.b.ins().fmul(z, rz);
    let hf = e.b.ins().fmul(half, f);
    let hfsq = e.b.ins().fmul(hf, f);

    let ln2_lo = e.f64(super::exp::LN2_LO_F64);
    let ln2_hi = e.f64(super::exp::LN2_HI_F64);
    let hr = e.b.ins().fadd(hfsq, r);
    let klo = e.b.ins().fmul(dk, ln2_lo);
    let t = e.b.ins().fma(s, hr, klo);
    let t = e.b.ins().fsub(hfsq, t);
    let t = e.b.ins().fsub(t, f);
    let khi = e.b.ins().fmul(dk, ln2_hi);
    let res = e.b.ins().fsub(khi, t);

    let zero = e.f64(0.0);
    let inf = e.f64(f64::INFINITY);
    let neg_inf = e.f64(f64::NEG_INFINITY);
    let nan = e.f64(f64::NAN);
    let positive = e.fcmp(FloatCC::GreaterThan, x, zero);
    let finite = e.fcmp(FloatCC::LessThan, x, inf);
    let regular = e.b.ins().band(positive, finite);
    let is_zero = e.fcmp(FloatCC::Equal, x, zero);
    let is_inf = e.fcmp(FloatCC::Equal, x, inf);
    let special = e.select(is_inf, inf, nan);
    let special = e.select(is_zero, neg_inf, special);
    e.select(regular, res, special)
}

/// The argument reduction of [`emit_f64`] (and of [`super::pow`]): for a positive `x`,
/// `(k, f)` with `x = 2^k·(1 + f)`, `1 + f ∈ [√½, √2)` (so `f ∈ [−0.293, 0.415)`, exact), `k`
/// as an `f64`. Subnormal `x` are scaled by `2^54` first (and `k` corrected). The values for
/// `0`, `inf`, NaN and negative `x` are meaningless: callers select their special cases.
pub fn reduce_f64(e: &mut Emit, x: Value) -> (Value, Value) {
    let min_normal = e.f64(f64::MIN_POSITIVE);
    let tiny = e.fcmp(FloatCC::LessThan, x, min_normal);
    let scale = e.f64(18_014_398_509_481_984.0); // 2^54
    let scaled = e.b.ins().fmul(x, scale);
    let xs = e.select(tiny, scaled, x);
    // The exponent bias, plus 54 for scaled inputs, as an f64.
    let bias_tiny = e.f64(1023.0 + 54.0);
    let bias_none = e.f64(1023.0);
    let bias = e.select(tiny, bias_tiny, bias_none);

    let bits = e.f64_bits(xs);
    let shift = e.i64(0x3ff0_0000_0000_0000 - SQRT_HALF_BITS_F64);
    let ix = e.b.ins().iadd(bits, shift);
    // Biased exponent (0..=2047 for positive finite x), as 2^52 + it, minus 2^52.
    let kb = e.b.ins().ushr_imm_u(ix, 52);
    let two52_bits = e.i64(0x4330_0000_0000_0000);
    let kf = e.b.ins().bor(kb, two52_bits);
    let kf = e.f64_from_bits(kf);
    let two52 = e.f64(4_503_599_627_370_496.0);
    let kf = e.b.ins().fsub(kf, two52);
    let dk = e.b.ins().fsub(kf, bias);
    let mant_mask = e.i64(0x000f_ffff_ffff_ffff);
    let mant = e.b.ins().band(ix, mant_mask);
    let sqrt_half = e.i64(SQRT_HALF_BITS_F64);
    let mbits = e.b.ins().iadd(mant, sqrt_half);
    let m = e.f64_from_bits(mbits);
    let one = e.f64(1.0);
    let f = e.b.ins().fsub(m, one);
    (dk, f)
}

/// `vfixupimmps`'s table of log's special values, four bits a class of `x` (responses: 0 keep
/// the result, 2 `x` quieted, 3 the default NaN, 4 −inf, 5 +inf): QNaN 2, SNaN 2, zero 4,
/// +1 0, −inf 3, +inf 5, negative 3, positive 0.
const LOG_SPECIALS: u32 = 0x0353_0422;

/// [`reduce`] in code only translated into an AVX-512 program: the same `(k, f)` for every
/// positive `x` from `vgetmantps` and `vgetexpps`, which take subnormals as they are: `x =
/// 2^e·m1`, `m1 ∈ [1, 2)`; `m = m1/2` from the bits of `√2` on (where the integer code's
/// carry moves the mantissa down a binade), else `m1`; `k = e − getexp(m)`, all exact.
/// `None` where the code is compiled by Cranelift.
fn reduce_native(e: &mut Emit, x: Value) -> Option<(Value, Value)> {
    let m1 = e.get_mant(x)?;
    let ex = e.get_exp(x)?;
    let sqrt2 = e.f32(f32::from_bits((SQRT_HALF_BITS + (1 << 23)) as u32));
    let upper = e.fcmp(FloatCC::GreaterThanOrEqual, m1, sqrt2);
    let half = e.f32(0.5);
    let halved = e.b.ins().fmul(m1, half);
    let m = e.select(upper, halved, m1);
    let em = e.get_exp(m)?;
    let dk = e.b.ins().fsub(ex, em);
    let one = e.f32(1.0);
    let f = e.b.ins().fsub(m, one);
    Some((dk, f))
}
