//! Times one fused kernel per element type and two mixed-width kernels through
//! [`JitKernel::call`] on one thread, to compare vector loops by lane width and against the
//! scalar loop.

use std::time::{Duration, Instant};

use graphlift_ir::{ElementType, FunctionBuilder, TensorData};
use graphlift_jit::JitKernel;
use graphlift_runtime::Tensor;

/// Deterministic values in [-2, 2) (`i64`: in [-1000, 1000)).
fn input(t: ElementType, n: usize, seed: u64) -> TensorData {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let unit = |r: u64| (r >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0;
    match t {
        ElementType::F32 => TensorData::F32((0..n).map(|_| unit(next()) as f32).collect()),
        ElementType::I64 => {
            TensorData::I64((0..n).map(|_| (next() % 2000) as i64 - 1000).collect())
        }
        _ => TensorData::F64((0..n).map(|_| unit(next())).collect()),
    }
}

/// Times `relu((a + b) * c) + d` on `f32`, `f64` and `i64` (`i64`: `max((a + b) * c, 0) +
/// d`), the mixed-width attention-mask kernel `convert<f32>(mask_i64) * -10000.0 +
/// scores_f32` and `convert<f32>(convert<f64>(x_f32) * s_f64)`, the mixed-width ones also
/// compiled as the scalar loop ([`JitKernel::compile_scalar`]) for comparison.
///
/// ```text
/// cargo run --release -p graphlift-jit --example lane_speed [-- LOG2_N [REPS]]
/// ```
///
/// Prints, per kernel, its lanes per vector body and the median, minimum and maximum time of
/// `REPS` calls (default 101) on `2^LOG2_N` elements (default 20), after five warm-up calls.
/// A measurement, not a test: compare medians within one run, on a quiet machine if you can.
fn main() {
    let mut args = std::env::args().skip(1);
    let log2_n: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let reps: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(101)
        .max(1);
    let n = 1usize << log2_n;
    println!("relu((a + b) * c) + d, 2^{log2_n} elements, {reps} calls, one thread");
    for t in [ElementType::F32, ElementType::F64, ElementType::I64] {
        let b = FunctionBuilder::new(format!("e1_{t}"));
        let [a, bb, c, d] = ["a", "b", "c", "d"].map(|p| b.parameter(p, t, [n]));
        let body = b
            .finish(&[((a + bb) * c).relu() + d])
            .expect("a valid body");
        let ins: Vec<Tensor> = (0..4)
            .map(|s| Tensor::from_data(input(t, n, s + 1), [n]).expect("a tensor"))
            .collect();
        let k = JitKernel::compile(&body).expect("the kernel compiles");
        time(&format!("{t}"), &k, &ins, t, reps);
    }
    // The attention-mask kernel: an i64 0/1 mask scaled in f32 and added to f32 scores.
    let b = FunctionBuilder::new("mask");
    let mask = b.parameter("mask", ElementType::I64, [n]);
    let scores = b.parameter("scores", ElementType::F32, [n]);
    let body = b
        .finish(&[mask.convert(ElementType::F32) * -10000.0 + scores])
        .expect("a valid body");
    let mask_data = match input(ElementType::I64, n, 7) {
        TensorData::I64(v) => TensorData::I64(v.iter().map(|x| x & 1).collect()),
        other => other,
    };
    let ins = [
        Tensor::from_data(mask_data, [n]).expect("a tensor"),
        Tensor::from_data(input(ElementType::F32, n, 8), [n]).expect("a tensor"),
    ];
    let k = JitKernel::compile(&body).expect("the kernel compiles");
    time("mask i64->f32", &k, &ins, ElementType::F32, reps);
    // The scalar loop such mixed-width kernels ran before they had a vector loop.
    let k = JitKernel::compile_scalar(&body).expect("the kernel compiles");
    time(
        "mask i64->f32 scalar loop",
        &k,
        &ins,
        ElementType::F32,
        reps,
    );
    // f32 data scaled in f64 and rounded back: fvpromote / fvdemote.
    let b = FunctionBuilder::new("promote");
    let x = b.parameter("x", ElementType::F32, [n]);
    let s = b.parameter("s", ElementType::F64, [n]);
    let body = b
        .finish(&[(x.convert(ElementType::F64) * s).convert(ElementType::F32)])
        .expect("a valid body");
    let ins = [
        Tensor::from_data(input(ElementType::F32, n, 9), [n]).expect("a tensor"),
        Tensor::from_data(input(ElementType::F64, n, 10), [n]).expect("a tensor"),
    ];
    let k = JitKernel::compile(&body).expect("the kernel compiles");
    time("f32->f64 * f64 ->f32", &k, &ins, ElementType::F32, reps);
    let k = JitKernel::compile_scalar(&body).expect("the kernel compiles");
    time(
        "f32->f64 * f64 ->f32 scalar loop",
        &k,
        &ins,
        ElementType::F32,
        reps,
    );
}

/// Calls `k` five times, then `reps` times, and prints the times.
fn time(what: &str, k: &JitKernel, ins: &[Tensor], out: ElementType, reps: usize) {
    let n = k.element_count();
    let refs: Vec<&Tensor> = ins.iter().collect();
    let mut out = [Tensor::zeros(out, [n]).expect("a tensor")];
    for _ in 0..5 {
        k.call(&refs, &mut out).expect("the call runs");
    }
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            k.call(&refs, &mut out).expect("the call runs");
            start.elapsed()
        })
        .collect();
    times.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let median = times[times.len() / 2];
    println!(
        "{what}: lanes {}  median {:10.1} us ({:.3} ns/element)  min {:10.1} us  max {:10.1} us",
        k.lanes(),
        us(median),
        median.as_secs_f64() * 1e9 / n as f64,
        us(times[0]),
        us(times[times.len() - 1]),
    );
}
