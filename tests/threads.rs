//! Multi-thread kernel calls on the peer expressions E1–E4: results split over threads equal
//! one thread's bit for bit, at sizes around chunk boundaries.

use graphlift::jit::{CpuJitBackend, ThreadConfig};
use graphlift::{Executable, Tensor};
use graphlift_harness::exprs::{peer_expression, peer_expression_inputs, PEER_EXPRESSIONS};

/// Deterministic inputs in [-8, 8).
fn input(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 16.0 - 8.0
        })
        .collect()
}

fn run(backend: &CpuJitBackend, expr: &str, n: usize) -> Vec<u32> {
    let f = peer_expression(expr, n).unwrap();
    let inputs: Vec<Tensor> = peer_expression_inputs(expr, n)
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(k, s)| Tensor::from_vec(input(s.element_count().unwrap(), k as u64 + 1), s).unwrap())
        .collect();
    let exe = backend.compile_executable(&f).unwrap();
    let out = exe.run(&inputs).unwrap();
    out[0]
        .read::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

fn assert_same(expr: &str, n: usize, config: ThreadConfig, got: &[u32], want: &[u32]) {
    assert_eq!(got.len(), want.len());
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{expr} N={n} {config:?}: element {i}: {} vs one thread {}",
            f32::from_bits(got[i]),
            f32::from_bits(want[i])
        );
    }
}

#[test]
fn peer_expressions_split_over_threads_match_one_thread_bit_for_bit() {
    let one = CpuJitBackend::new().with_threads(1);
    // A tiny threshold forces splitting into up to 4 tasks per thread.
    let configs = [2, 3].map(|threads| ThreadConfig {
        threads,
        min_bytes_per_task: 1,
    });
    for expr in PEER_EXPRESSIONS {
        let sizes: &[usize] = if expr == "E4" {
            &[1024, 2048, 3072, 5 * 1024]
        } else {
            &[
                1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 1000, 1023, 1025, 4097,
            ]
        };
        for &n in sizes {
            let want = run(&one, expr, n);
            for config in configs {
                let got = run(&CpuJitBackend::new().with_thread_config(config), expr, n);
                assert_same(expr, n, config, &got, &want);
            }
        }
    }
}

#[test]
fn large_calls_with_the_default_threshold_match_one_thread() {
    let one = CpuJitBackend::new().with_threads(1);
    let two = CpuJitBackend::new().with_threads(2);
    for expr in PEER_EXPRESSIONS {
        let n = (1 << 18) + 1024;
        assert_same(
            expr,
            n,
            two.thread_config(),
            &run(&two, expr, n),
            &run(&one, expr, n),
        );
    }
}
