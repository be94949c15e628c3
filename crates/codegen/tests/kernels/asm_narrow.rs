//! Narrow storage types in assembled code ([`graphlift_codegen::asm`]): 16-bit floats and 8-
//! and 16-bit integers in AVX2 code, `f16` in AVX-512 code, loaded (contiguous, as row
//! vectors and as invariants), computed with their rounding or wrapping, and stored, bit for
//! bit the Cranelift code's on every range shape and the interpreter's.

use super::asm::same_bits_on;
use super::{check, Expect};
use graphlift_ir::ElementType::{self, BF16, F16, F32, I16, I32, I8, U16, U8};
use graphlift_ir::{Function, FunctionBuilder};
use graphlift_kernels::target::{CpuFeatures, Target, VectorIsa};
use graphlift_testkit::inputs_of;

/// AVX2 code where the host runs it (on an AVX-512 host too), the library off.
fn avx2() -> (Target, Option<VectorIsa>) {
    let target = Target::from_env().with_avx512(false).with_veclib(false);
    let isa = CpuFeatures::host()
        .has_avx2_kernels()
        .then_some(VectorIsa::Avx2);
    (target, isa)
}

/// `t` in, `t` out: `x · row + s` and `exp(x) − x` rounded or wrapped to `t` at every op,
/// `x` passed through, and an `f32` view, over `[m, k]` with a `[k]` row and a scalar.
fn float_chain(t: ElementType, m: usize, k: usize) -> Function {
    let b = FunctionBuilder::new(format!("chain_{t}"));
    let x = b.parameter("x", t, [m, k]);
    let row = b.parameter("row", t, [k]);
    let s = b.parameter("s", t, []);
    let wide = x.convert(F32);
    let affine = (wide * row.convert(F32) + s.convert(F32)).convert(t);
    let curve = (wide.exp() - wide).convert(t);
    b.finish(&[affine, curve, x, (affine.convert(F32) * 0.5)])
        .unwrap()
}

/// Quantize and dequantize: `f32` to the integer type `t` (scaled, rounded, saturated) and
/// `t` back to `f32`, with wrapping integer arithmetic on `t` in between.
fn integer_round_trip(t: ElementType, n: usize) -> Function {
    let b = FunctionBuilder::new(format!("quantize_{t}"));
    let x = b.parameter("x", F32, [n]);
    let q = b.parameter("q", t, [n]);
    let quantized = (x * 37.0).round().convert(t);
    let wrapped = q * 3.0 + 100.0;
    let widened = (q.convert(I32) * 3.0 - 7.0).convert(t);
    let dequantized = (q.convert(F32) - 3.0) * 0.25;
    b.finish(&[quantized, wrapped, widened, dequantized])
        .unwrap()
}

#[test]
fn narrow_types_are_assembled_with_cranelifts_bits() {
    let (target, isa) = avx2();
    for t in [F16, BF16] {
        for (m, k) in [(2, 3), (3, 7), (5, 17), (4, 100)] {
            let body = float_chain(t, m, k);
            let ins = inputs_of(&body, 2);
            let what = format!("{t} chain [{m}, {k}]");
            same_bits_on(&what, &body, &ins, &target, isa);
            check(&what, &body, &ins, Expect::Exact);
        }
    }
    for t in [I8, U8, I16, U16] {
        for n in [2, 7, 8, 9, 31, 100] {
            let body = integer_round_trip(t, n);
            let ins = inputs_of(&body, 3);
            let what = format!("{t} round trip [{n}]");
            same_bits_on(&what, &body, &ins, &target, isa);
            check(&what, &body, &ins, Expect::Exact);
        }
    }
}

/// AVX-512 code takes `f16`: sixteen halves converted at a time, the tail masked (ranges of
/// every length and start, from the helper), with Cranelift's bits.
#[test]
fn f16_is_assembled_in_avx512_code_with_cranelifts_bits() {
    let target = Target::from_env().with_veclib(false);
    let isa = CpuFeatures::host()
        .has_avx512_kernels()
        .then_some(VectorIsa::Avx512);
    if isa.is_none() {
        return;
    }
    for (m, k) in [(2, 3), (3, 7), (5, 17), (4, 100), (3, 64), (40, 33)] {
        let body = float_chain(F16, m, k);
        let ins = inputs_of(&body, 4);
        let what = format!("f16 chain [{m}, {k}] on AVX-512");
        same_bits_on(&what, &body, &ins, &target, isa);
        check(&what, &body, &ins, Expect::Exact);
    }
    // `bf16` stays with Cranelift there (its output is neither `f32` nor `f16`).
    let body = float_chain(BF16, 4, 100);
    let k = graphlift_codegen::JitKernel::compile_for(&body, &target).unwrap();
    assert_eq!(k.assembled(), None);
    let why = k.compiled().assembler_refusal().map(|r| r.to_string());
    assert_eq!(why.as_deref(), Some("a value is not f32"));
}

/// `bool` inputs and outputs (bytes, held as masks): a mask read per element, a row of
/// them and a scalar (invariant) picking between `f32` values, with `and`, `or` and `xor`
/// between them, and comparisons stored as `bool`, `[m, k]` over every range shape
/// (AVX-512's tail masked, AVX2's staged), bit for bit the Cranelift code's and the
/// interpreter's, on each instruction set the host runs.
#[test]
fn bool_values_are_assembled_with_cranelifts_bits() {
    use graphlift_ir::ElementType::Bool;
    let select = |m: usize, k: usize| {
        let b = FunctionBuilder::new("bool_values");
        let x = b.parameter("x", F32, [m, k]);
        let mask = b.parameter("mask", Bool, [m, k]);
        let row = b.parameter("row", Bool, [k]);
        let flag = b.parameter("flag", Bool, []);
        let pick = |c, a, z| graphlift_ir::select(c, a, z);
        let both = mask.and(row.broadcast_to([m, k]));
        let either = mask.or(flag.broadcast_to([m, k]));
        let one = mask.xor(row.broadcast_to([m, k]));
        let below = x.lt(x.scalar_like(0.5).broadcast_to([m, k]));
        // (Four inputs and three outputs: the seven pointer registers.)
        let body = b.finish(&[
            pick(both, x, x * -2.0)
                + pick(flag.broadcast_to([m, k]), x, x * 0.5)
                + pick(either, x + 1.0, x.scalar_like(0.0).broadcast_to([m, k]))
                - pick(one, x * x - 1.0, x),
            below,
            below.and(either),
        ]);
        body.unwrap()
    };
    let avx512 = Target::from_env().with_veclib(false);
    let on_512 = CpuFeatures::host()
        .has_avx512_kernels()
        .then_some(VectorIsa::Avx512);
    for (target, isa) in [(avx512, on_512), avx2()] {
        for (m, k) in [(1, 3), (3, 7), (5, 17), (4, 100), (40, 33)] {
            let body = select(m, k);
            for seed in [5, 6] {
                let ins = inputs_of(&body, seed);
                let what = format!("bool values [{m}, {k}] on {isa:?}");
                same_bits_on(&what, &body, &ins, &target, isa);
                check(&what, &body, &ins, Expect::Exact);
            }
        }
    }
}
