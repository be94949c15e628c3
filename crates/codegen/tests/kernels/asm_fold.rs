//! Programs folded over a constant operand (the assembler's constant folding): `Power` with a
//! constant base or exponent gives the bits of the same program reading the value from a
//! register, and of the Cranelift code, on both instruction sets; the listing shows what was
//! left out.

use super::asm::{avx2_beside_avx512, math_inputs, same_bits_on};
use super::{bits, outputs_of_range};
use graphlift_codegen::asm::host_isa;
use graphlift_codegen::JitKernel;
use graphlift_ir::{ElementType, Function, FunctionBuilder, Shape};
use graphlift_kernels::target::{Target, VectorIsa};
use graphlift_runtime::Tensor;

const F32: ElementType = ElementType::F32;

/// Bases and exponents: decibels' 10, 2, sRGB's 2.4 and its reciprocal, halves, negative
/// integers (odd and even), ±1, the zeros, the infinities, NaN, a subnormal, a huge value.
const CONSTANTS: [f32; 19] = [
    10.0,
    2.0,
    2.4,
    1.0 / 2.4,
    0.5,
    -0.5,
    -2.0,
    -3.0,
    -1.0,
    1.0,
    0.0,
    -0.0,
    3.0,
    0.1,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1e-40,
    1e30,
];

/// The parameter `x: [n]` of `b`, and `k`: the constant `c` (`Some`) or a 0-d parameter
/// after `x` (`None`), broadcast to `[n]`.
fn of_constant<'b>(
    b: &'b FunctionBuilder,
    c: Option<f32>,
    n: usize,
) -> (graphlift_ir::Value<'b>, graphlift_ir::Value<'b>) {
    let x = b.parameter("x", F32, [n]);
    let k = match c {
        Some(c) => x.scalar_like(f64::from(c)),
        None => b.parameter("c", F32, Shape::scalar()),
    }
    .broadcast_to([n]);
    (x, k)
}

/// `c^x`, `x^c` and `|x|^c + x` over `[n]` ([`of_constant`]).
fn powers(c: Option<f32>, n: usize) -> Function {
    let b = FunctionBuilder::new("powers");
    let (x, k) = of_constant(&b, c, n);
    b.finish(&[k.pow(x), x.pow(k), x.abs().pow(k) + x]).unwrap()
}

/// `sin(c) + x`, `sin(c · x)`, `cos(c) · x`, `log(c) + x` and `log(c · x)` over `[n]`
/// ([`of_constant`]).
fn functions_of(c: Option<f32>, n: usize) -> Function {
    let b = FunctionBuilder::new("functions");
    let (x, k) = of_constant(&b, c, n);
    let outputs = [
        k.sin() + x,
        (k * x).sin(),
        k.cos() * x,
        k.log() + x,
        (k * x).log(),
    ];
    b.finish(&outputs).unwrap()
}

/// The targets: the host's widest (the library off), and AVX2 beside AVX-512.
fn targets() -> Vec<(Target, Option<VectorIsa>)> {
    let host = Target::from_env().with_veclib(false);
    let avx2 = avx2_beside_avx512().map(|t| (t, Some(VectorIsa::Avx2)));
    std::iter::once((host, host_isa())).chain(avx2).collect()
}

/// Output bits with every NaN alike (x86 keeps the first operand's payload).
fn nan_blind(outs: &[Tensor]) -> Vec<Vec<u32>> {
    let canonical = |b: u32| {
        if f32::from_bits(b).is_nan() {
            0x7FC0_0000
        } else {
            b
        }
    };
    bits(outs)
        .into_iter()
        .map(|o| o.into_iter().map(canonical).collect())
        .collect()
}

/// Checks, for each of `constants` on every target, that `build(Some(c))` over `x` is the
/// expected code with the Cranelift code's bits, and that it gives the bits (NaNs alike) of
/// `build(None)`, which reads `c` from a register (nothing folded).
fn same_bits_folded_and_unfolded(
    what: &str,
    build: impl Fn(Option<f32>, usize) -> Function,
    constants: &[f32],
    x: &Tensor,
) {
    let n = x.len();
    let unfolded = build(None, n);
    for &c in constants {
        let folded = build(Some(c), n);
        let with_c = [
            x.clone(),
            Tensor::from_vec(vec![c], Shape::scalar()).unwrap(),
        ];
        for (target, isa) in targets() {
            let what = format!("{what} of {c:e} on {isa:?}");
            same_bits_on(&what, &folded, std::slice::from_ref(x), &target, isa);
            let (f, u) = (
                JitKernel::compile_for(&folded, &target).unwrap(),
                JitKernel::compile_for(&unfolded, &target).unwrap(),
            );
            assert_eq!(u.assembled(), isa, "{what}");
            let run = |k: &JitKernel, ins: &[Tensor]| {
                let refs: Vec<&Tensor> = ins.iter().collect();
                nan_blind(&outputs_of_range(k, &refs, n, (0, n)))
            };
            assert_eq!(run(&f, std::slice::from_ref(x)), run(&u, &with_c), "{what}");
        }
    }
}

#[test]
fn power_with_a_constant_operand_has_the_bits_of_the_unfolded_program() {
    let x = Tensor::from_vec(math_inputs(1000, 7), [1000]).unwrap();
    same_bits_folded_and_unfolded("powers", powers, &CONSTANTS, &x);
}

/// `Sin`, `Cos` and `Log` of a constant fold to constants (a constant range mask for the
/// first two, within the inline code's range and beyond it, where the lanes are the
/// reference's; log's special values by the constant's class): the bits of the unfolded
/// program and of the Cranelift code.
#[test]
fn functions_of_a_constant_have_the_bits_of_the_unfolded_program() {
    let x = Tensor::from_vec(math_inputs(100, 3), [100]).unwrap();
    let constants = [2.0f32, -0.5, 1e30, 0.0, 1.0, f32::INFINITY, f32::NAN, 1e-40];
    same_bits_folded_and_unfolded("functions", functions_of, &constants, &x);
}

#[test]
fn the_listing_leaves_out_what_the_constant_decides() {
    let Some(isa) = host_isa() else {
        return;
    };
    let target = Target::from_env().with_veclib(false);
    let listing = |body: &Function| {
        let k = JitKernel::compile_for(body, &target).unwrap();
        assert_eq!(k.assembled(), Some(isa));
        k.ir().to_string()
    };
    let width = match isa {
        VectorIsa::Avx512 => "zmm",
        VectorIsa::Avx2 => "ymm",
    };
    let instructions = |l: &str| l.lines().filter(|line| line.contains(width)).count();
    let power = |base: bool, c: Option<f32>| {
        let b = FunctionBuilder::new("power");
        let (x, k) = of_constant(&b, c, 1000);
        listing(&b.finish(&[if base { k.pow(x) } else { x.pow(k) }]).unwrap())
    };
    // `10^x`: the logarithm of 10 is known, and with it its one division.
    let (folded, unfolded) = (power(true, Some(10.0)), power(true, None));
    assert!(unfolded.contains("vdivps"), "{unfolded}");
    assert!(!folded.contains("vdivps"), "{folded}");
    assert!(
        instructions(&folded) * 3 < instructions(&unfolded) * 2,
        "{folded}\n{unfolded}"
    );
    // `x^2.4`: the exponent's tests (integer, odd, zero, infinite) are known.
    let (folded, unfolded) = (power(false, Some(2.4)), power(false, None));
    assert!(
        instructions(&folded) < instructions(&unfolded),
        "{folded}\n{unfolded}"
    );
}
