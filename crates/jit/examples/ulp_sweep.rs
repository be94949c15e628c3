//! Measures the error of the inline vector math over every `f32` bit pattern.
//!
//! ```text
//! cargo run --release -p graphlift-jit --example ulp_sweep [-- [--stride N] [--scalar] [FUNCTION...]]
//! ```
//!
//! For each of `exp`, `log`, `tanh`, `sigmoid`, `erf` (or the ones named), compiles a
//! one-op kernel (an `F32X4` loop; `--scalar` adds an `f64` round trip so the scalar loop
//! runs instead), feeds it every `N`-th bit pattern (default 1: all 2^32), and compares each
//! result with the reference's `f64` value in ulp (`graphlift_jit::vmath::ulp_error`). Prints
//! the maximum error, where it occurs, and any broken range or special-value guarantee.

use std::sync::Mutex;

use graphlift_ir::{ElementType, FunctionBuilder, Op, UnaryOp};
use graphlift_jit::{vmath, JitKernel};
use graphlift_runtime::reference::unary_f64;
use graphlift_runtime::Tensor;

const CHUNK: usize = 1 << 20;

#[derive(Default, Clone, Copy)]
struct Stats {
    max_ulp: f64,
    worst_input: f32,
    worst_output: f32,
    checked: u64,
    violations: u64,
    first_violation: Option<(f32, f32)>,
}

fn kernel(op: UnaryOp, scalar: bool) -> JitKernel {
    let b = FunctionBuilder::new(op.name());
    let x = b.parameter("x", ElementType::F32, [CHUNK]);
    let x = if scalar {
        x.convert(ElementType::F64).convert(ElementType::F32)
    } else {
        x
    };
    let body = b.finish(&[b.op(Op::Unary(op), &[x])]).expect("body");
    let k = JitKernel::compile(&body).expect("compile");
    assert_eq!(k.is_vectorized(), !scalar);
    k
}

/// The range and special-value guarantees of the module documentation.
fn guarantee_holds(op: UnaryOp, x: f32, y: f32) -> bool {
    if x.is_nan() {
        return y.is_nan();
    }
    match op {
        UnaryOp::Exp => {
            (x != f32::INFINITY || y == f32::INFINITY)
                && (x != f32::NEG_INFINITY || y == 0.0)
                && (y.is_nan() || y >= 0.0)
        }
        UnaryOp::Log => {
            (x != 0.0 || y == f32::NEG_INFINITY)
                && (x >= 0.0 || y.is_nan())
                && (x != f32::INFINITY || y == f32::INFINITY)
        }
        UnaryOp::Tanh | UnaryOp::Erf => {
            (-1.0..=1.0).contains(&y) && (x != 0.0 || y.to_bits() == x.to_bits())
        }
        UnaryOp::Sigmoid => (0.0..=1.0).contains(&y),
        _ => true,
    }
}

fn sweep(op: UnaryOp, stride: u64, scalar: bool) -> Stats {
    let k = kernel(op, scalar);
    let total: u64 = 1 << 32;
    let next = Mutex::new(0u64);
    let result = Mutex::new(Stats::default());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut local = Stats::default();
                let mut xs = vec![0f32; CHUNK];
                let mut out = [Tensor::zeros(ElementType::F32, [CHUNK]).expect("tensor")];
                loop {
                    let start = {
                        let mut n = next.lock().expect("lock");
                        let s = *n;
                        *n += CHUNK as u64 * stride;
                        s
                    };
                    if start >= total {
                        break;
                    }
                    let mut len = 0;
                    for (i, slot) in xs.iter_mut().enumerate() {
                        let bits = start + i as u64 * stride;
                        if bits >= total {
                            break;
                        }
                        *slot = f32::from_bits(bits as u32);
                        len = i + 1;
                    }
                    let input = Tensor::from_vec(xs.clone(), [CHUNK]).expect("tensor");
                    k.call_range(&[&input], &mut out, 0, len).expect("call");
                    let ys = out[0].read::<f32>().expect("f32");
                    for i in 0..len {
                        let (x, y) = (xs[i], ys[i]);
                        let err = vmath::ulp_error(y, unary_f64(op, f64::from(x)));
                        if err > local.max_ulp {
                            local.max_ulp = err;
                            local.worst_input = x;
                            local.worst_output = y;
                        }
                        if !guarantee_holds(op, x, y) {
                            local.violations += 1;
                            local.first_violation.get_or_insert((x, y));
                        }
                    }
                    local.checked += len as u64;
                }
                let mut r = result.lock().expect("lock");
                if local.max_ulp > r.max_ulp {
                    r.max_ulp = local.max_ulp;
                    r.worst_input = local.worst_input;
                    r.worst_output = local.worst_output;
                }
                r.checked += local.checked;
                r.violations += local.violations;
                if r.first_violation.is_none() {
                    r.first_violation = local.first_violation;
                }
            });
        }
    });
    result.into_inner().expect("lock")
}

fn main() {
    let mut stride = 1u64;
    let mut scalar = false;
    let mut ops = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--stride" => stride = args.next().and_then(|s| s.parse().ok()).unwrap_or(1).max(1),
            "--scalar" => scalar = true,
            name => match UnaryOp::ALL
                .iter()
                .find(|u| u.name().eq_ignore_ascii_case(name))
            {
                Some(&u) if vmath::max_ulp(u).is_some() => ops.push(u),
                _ => eprintln!("unknown function {name}"),
            },
        }
    }
    if ops.is_empty() {
        ops = vec![
            UnaryOp::Exp,
            UnaryOp::Log,
            UnaryOp::Tanh,
            UnaryOp::Sigmoid,
            UnaryOp::Erf,
        ];
    }
    println!(
        "| function | bound (ulp) | max error (ulp) | at x | result | checked | guarantee violations |"
    );
    println!("|---|---|---|---|---|---|---|");
    for op in ops {
        let t = std::time::Instant::now();
        let s = sweep(op, stride, scalar);
        println!(
            "| {} | {} | {:.3} | {:e} ({:#010x}) | {:e} | {} | {} {} |",
            op.name(),
            vmath::max_ulp(op).unwrap_or(0.0),
            s.max_ulp,
            s.worst_input,
            s.worst_input.to_bits(),
            s.worst_output,
            s.checked,
            s.violations,
            s.first_violation
                .map(|(x, y)| format!("(first: {x:e} -> {y:e})"))
                .unwrap_or_default(),
        );
        eprintln!("  {} took {:.1}s", op.name(), t.elapsed().as_secs_f64());
    }
}
