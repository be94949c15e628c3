//! Speed of the `f64` transcendental functions in a fused kernel: one-op kernels of `exp`,
//! `log`, `tanh`, `sigmoid`, `erf`, `expm1`, `log1p` over 2^16 `f64` elements (the `F64X2`
//! vector loop, single thread), best of 200 calls, in ns per element; and `Power` on 2^16
//! `f32` pairs (the `F32X4` loop) and `f64` pairs (`F64X2`), each beside a Rust loop of
//! `f64::powf` (what the interpreter computes).
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
        eprintln!("{}: {} bytes of code", op.name(), k.code_size());
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
    let xs: Vec<f64> = (0..N).map(|i| 0.01 + i as f64 / N as f64 * 10.0).collect();
    let ys: Vec<f64> = (0..N).map(|i| (i % 17) as f64 * 0.37 - 3.0).collect();
    let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let (xs32, ys32) = (f32s(&xs), f32s(&ys));
    let kernel = time_power(
        ElementType::F32,
        Tensor::from_vec(xs32.clone(), [N])?,
        Tensor::from_vec(ys32.clone(), [N])?,
    )?;
    let rust = best_of(|| {
        let r: Vec<f32> = xs32
            .iter()
            .zip(&ys32)
            .map(|(&x, &y)| (f64::from(x).powf(f64::from(y))) as f32)
            .collect();
        std::hint::black_box(r);
    });
    println!(
        "Power    f32 : {:.2} ns/element (Rust f64::powf loop, as the interpreter: {:.2})",
        kernel * 1e9 / N as f64,
        rust * 1e9 / N as f64
    );
    let kernel = time_power(
        ElementType::F64,
        Tensor::from_vec(xs.clone(), [N])?,
        Tensor::from_vec(ys.clone(), [N])?,
    )?;
    let rust = best_of(|| {
        let r: Vec<f64> = xs.iter().zip(&ys).map(|(&x, &y)| x.powf(y)).collect();
        std::hint::black_box(r);
    });
    println!(
        "Power    f64 : {:.2} ns/element (Rust f64::powf loop: {:.2})",
        kernel * 1e9 / N as f64,
        rust * 1e9 / N as f64
    );
    Ok(())
}

/// The best time of 200 runs of `f`, in seconds.
fn best_of(mut f: impl FnMut()) -> f64 {
    (0..200)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// The best time of a one-op `Power` kernel of element type `t` on `x`, `y`, in seconds.
fn time_power(t: ElementType, x: Tensor, y: Tensor) -> Result<f64, Box<dyn std::error::Error>> {
    let n = x.len();
    let b = FunctionBuilder::new("pow");
    let xp = b.parameter("x", t, [n]);
    let yp = b.parameter("y", t, [n]);
    let body = b.finish(&[b.op(Op::Binary(BinaryOp::Power), &[xp, yp])])?;
    let k = JitKernel::compile(&body)?;
    eprintln!("pow {t}: {} bytes of code", k.code_size());
    let mut out = [Tensor::zeros(t, [n])?];
    let mut failed = None;
    let best = best_of(|| {
        if let Err(e) = k.call(&[&x, &y], &mut out) {
            failed = Some(e);
        }
    });
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(best),
    }
}
