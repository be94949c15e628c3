//! Speed of the `f64` transcendental functions in a fused kernel: one-op kernels of `exp`,
//! `log`, `tanh`, `sigmoid`, `erf`, `expm1`, `log1p` over 2^16 `f64` elements (the `F64X2`
//! vector loop, single thread), best of 200 calls, in ns per element; and `Power` on 2^16
//! `f32` pairs (the `F32X4` loop).
//!
//! Run: `cargo run --release --example f64_math_speed`

use std::time::Instant;

use graphlift::ir::{BinaryOp, ElementType, FunctionBuilder, Op, UnaryOp};
use graphlift::jit::JitKernel;
use graphlift::runtime::Tensor;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const N: usize = 1 << 16;
    let xs: Vec<f64> = (0..N)
        .map(|i| (i as f64 / N as f64) * 20.0 - 10.0)
        .collect();
    for op in [
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Erf,
        UnaryOp::Expm1,
        UnaryOp::Log1p,
    ] {
        let b = FunctionBuilder::new(op.name());
        let x = b.parameter("x", ElementType::F64, [N]);
        let body = b.finish(&[b.op(Op::Unary(op), &[x])])?;
        let k = JitKernel::compile(&body)?;
        let input = Tensor::from_vec(xs.clone(), [N])?;
        let mut out = [Tensor::zeros(ElementType::F64, [N])?];
        let mut best = f64::INFINITY;
        for _ in 0..200 {
            let t = Instant::now();
            k.call(&[&input], &mut out)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{:8} lanes {} : {:.2} ns/element",
            op.name(),
            k.lanes(),
            best * 1e9 / N as f64
        );
    }
    let b = FunctionBuilder::new("pow");
    let x = b.parameter("x", ElementType::F32, [N]);
    let y = b.parameter("y", ElementType::F32, [N]);
    let body = b.finish(&[b.op(Op::Binary(BinaryOp::Power), &[x, y])])?;
    let k = JitKernel::compile(&body)?;
    let xs: Vec<f32> = (0..N).map(|i| 0.01 + i as f32 / N as f32 * 10.0).collect();
    let ys: Vec<f32> = (0..N).map(|i| (i % 17) as f32 * 0.37 - 3.0).collect();
    let ins = [Tensor::from_vec(xs, [N])?, Tensor::from_vec(ys, [N])?];
    let mut out = [Tensor::zeros(ElementType::F32, [N])?];
    let mut best = f64::INFINITY;
    for _ in 0..200 {
        let t = Instant::now();
        k.call(&[&ins[0], &ins[1]], &mut out)?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{:8} lanes {} : {:.2} ns/element (f32)",
        "Power",
        k.lanes(),
        best * 1e9 / N as f64
    );
    Ok(())
}
