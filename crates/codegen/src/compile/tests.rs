//! The compile path's fallback: a plan the assembler takes but fails to write runs as
//! Cranelift code.

use graphlift_ir::{ElementType, FunctionBuilder};
use graphlift_runtime::Tensor;

use crate::asm::{host_isa, Refusal, FAIL};
use crate::JitKernel;

/// A plan the assembler takes but fails to write runs as Cranelift code, with the same
/// results, and the failure is the kernel's refusal (what `explain` shows).
#[test]
fn a_failed_assembly_falls_back_to_cranelift() {
    if host_isa().is_none() {
        return;
    }
    let n = 100;
    let b = FunctionBuilder::new("fallback");
    let x = b.parameter("x", ElementType::F32, [n]);
    let body = b.finish(&[(x * 2.0).exp() + x]).unwrap();
    let good = JitKernel::compile(&body).unwrap();
    assert!(good.assembled().is_some());
    FAIL.set(true);
    let fell_back = JitKernel::compile(&body);
    FAIL.set(false);
    let fell_back = fell_back.unwrap();
    assert!(fell_back.assembled().is_none());
    let Some(Refusal::Failed(why)) = fell_back.compiled().assembler_refusal() else {
        panic!("{:?}", fell_back.compiled().assembler_refusal());
    };
    assert!(why.contains("injected"), "{why}");
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.05 - 2.0).collect();
    let input = Tensor::from_vec(xs, [n]).unwrap();
    let mut outs = [Tensor::zeros(ElementType::F32, [n]).unwrap()];
    let mut want = [Tensor::zeros(ElementType::F32, [n]).unwrap()];
    fell_back.call(&[&input], &mut outs).unwrap();
    good.call(&[&input], &mut want).unwrap();
    // Both within the inline `exp`'s bound of each other (the same inline math).
    let (got, want) = (
        outs[0].data().as_slice::<f32>().unwrap(),
        want[0].data().as_slice::<f32>().unwrap(),
    );
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 4.0 * f32::EPSILON * w.abs().max(1.0),
            "{g} vs {w}"
        );
    }
}
