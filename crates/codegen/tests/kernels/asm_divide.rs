//! Division by a constant in assembled code ([`graphlift_codegen::reciprocal`]): the product
//! form where the divisor has one and the dividend never needs the division
//! ([`graphlift_codegen::magnitude`]), else the division, bit for bit the Cranelift code's
//! `fdiv` and the interpreter's on both instruction sets; the listing shows which code ran.

use super::asm::{avx2_beside_avx512, same_bits_on};
use super::{check, Expect, F32_SPECIALS};
use graphlift_codegen::asm::host_isa;
use graphlift_codegen::reciprocal::ExactReciprocal;
use graphlift_codegen::JitKernel;
use graphlift_ir::{ElementType, Function, FunctionBuilder};
use graphlift_kernels::target::{Target, VectorIsa};
use graphlift_runtime::Tensor;

const F32: ElementType = ElementType::F32;

/// Dividends: the special values, values at and around every divisor's `tiny` (so that
/// some vectors take the division and others not), subnormals, and a sweep of magnitudes
/// from 2^-40 to 2^40 of both signs, `n` in all.
fn dividends(n: usize) -> Vec<f32> {
    let mut xs: Vec<f32> = F32_SPECIALS.to_vec();
    xs.extend([
        1e-45,
        -3e-42,
        1e-39,
        1.1e-38,
        -2.4e-30,
        2.3e-30,
        1e-28,
        f32::MAX,
        -1e38,
    ]);
    xs.extend((-40..40).map(|i| f32::from_bits((-3f32).to_bits().wrapping_add_signed(i))));
    let mut i = 0usize;
    while xs.len() < n {
        let t = (i as f32 * 0.618_034).fract();
        let v = 2f32.powf((t - 0.5) * 80.0) * if i.is_multiple_of(2) { 1.0 } else { -1.0 };
        // (Runs of normal values between the odd ones: vectors without a small lane.)
        xs.push(if i % 97 == 3 { v * 1e-32 } else { v });
        i += 1;
    }
    xs.truncate(n);
    xs
}

/// `x / c`, `(x + 3) / c`, `round(x) / c` and `relu6(x + 3) / 6 · x` (Keras' hard swish)
/// over `[n]`.
fn quotients(c: f32, n: usize) -> Function {
    let b = FunctionBuilder::new(format!("divide_by_{c}"));
    let x = b.parameter("x", F32, [n]);
    let c = f64::from(c);
    let hard = ((x + 3.0).max(x.scalar_like(0.0)).min(x.scalar_like(6.0)) / 6.0) * x;
    b.finish(&[x / c, (x + 3.0) / c, x.round() / c, hard])
        .unwrap()
}

/// Quotients of any `x` added to constants: `clip(x / c + 0.5, 0, 1)` (a hard sigmoid
/// written out; the sum absorbs tiny quotients), `1e-3 − x / c`, and `(x / c + 0.5) · (x /
/// c)` (a quotient read by a product as well) over `[n]`.
fn absorbed(c: f32, n: usize) -> Function {
    let b = FunctionBuilder::new(format!("absorb_{c}"));
    let x = b.parameter("x", F32, [n]);
    let c = f64::from(c);
    let sigmoid = (x / c + 0.5)
        .max(x.scalar_like(0.0))
        .min(x.scalar_like(1.0));
    let shared = x / c;
    b.finish(&[
        sigmoid,
        x.scalar_like(1e-3) - x / c,
        (shared + 0.5) * shared,
    ])
    .unwrap()
}

/// The targets to check and the code each gives: the host's widest, and AVX2 where the host
/// has AVX-512 too.
fn targets() -> Vec<(Target, Option<VectorIsa>)> {
    let host = Target::from_env().with_veclib(false);
    let avx2 = avx2_beside_avx512().map(|t| (t, Some(VectorIsa::Avx2)));
    std::iter::once((host, host_isa())).chain(avx2).collect()
}

#[test]
fn division_by_a_constant_has_the_divisions_bits() {
    // Sixths, a negative, images' 255, GELU's √2, a power of two, a huge reciprocal, and
    // one without the form (its `x · lo` would be subnormal for ordinary `x`). The inputs
    // put `x + 3` at every distance from zero.
    let divisors = [
        6.0f32,
        -3.0,
        255.0,
        std::f32::consts::SQRT_2,
        0.125,
        1e-30,
        3e30,
    ];
    for c in divisors {
        for n in [1, 17, 1000] {
            let ins = vec![Tensor::from_vec(dividends(n), [n]).unwrap()];
            for (what, body) in [("x", quotients(c, n)), ("sums of x", absorbed(c, n))] {
                let what = format!("{what} / {c} [{n}]");
                for (target, isa) in targets() {
                    same_bits_on(&what, &body, &ins, &target, isa);
                }
                check(&what, &body, &ins, Expect::Exact);
            }
        }
    }
}

#[test]
fn the_listing_shows_the_product_form_or_the_division() {
    let Some(isa) = host_isa() else {
        return;
    };
    let listing_of = |body: &Function| {
        let target = Target::from_env().with_veclib(false);
        JitKernel::compile_for(body, &target)
            .unwrap()
            .ir()
            .to_string()
    };
    let listing = |shifted: bool, c: f64| {
        let b = FunctionBuilder::new("divide");
        let x = b.parameter("x", F32, [1000]);
        let dividend = if shifted { x + 3.0 } else { x };
        listing_of(&b.finish(&[dividend / c]).unwrap())
    };
    let absorbed = |also_output: bool| {
        let b = FunctionBuilder::new("absorbed");
        let x = b.parameter("x", F32, [1000]);
        let q = x / 6.0;
        let sum = q + 0.5;
        let outs = if also_output { vec![sum, q] } else { vec![sum] };
        listing_of(&b.finish(&outs).unwrap())
    };
    let width = match isa {
        VectorIsa::Avx512 => "zmm",
        VectorIsa::Avx2 => "ymm",
    };
    // `x + 3` is zero or at least 2^-23: the product form.
    let sixth = listing(true, 6.0);
    assert!(sixth.contains(&format!("vfmadd231ps {width}")), "{sixth}");
    assert!(!sixth.contains("vdivps"), "{sixth}");
    // Any `x`: the division, but for a power of two.
    let plain = listing(false, 6.0);
    assert!(
        plain.contains(&format!("vdivps {width}")) && !plain.contains("vfmadd"),
        "{plain}"
    );
    let quarter = listing(false, 0.25);
    assert!(
        !quarter.contains("vdivps") && !quarter.contains("vfmadd"),
        "{quarter}"
    );
    assert!(quarter.contains(&format!("vmulps {width}")), "{quarter}");
    // Any `x`, but the quotient only added to 0.5: the product form; the quotient an output
    // as well: the division.
    let sum = absorbed(false);
    assert!(sum.contains(&format!("vfmadd231ps {width}")), "{sum}");
    assert!(!sum.contains("vdivps"), "{sum}");
    let both = absorbed(true);
    assert!(both.contains(&format!("vdivps {width}")), "{both}");
    assert_eq!(ExactReciprocal::of(3e30), None);
    let huge = listing(true, 3e30);
    assert!(
        huge.contains(&format!("vdivps {width}")) && !huge.contains("vfmadd"),
        "{huge}"
    );
}
