//! `graphlift bench-expr EXPR N`: the peers benchmark harness's protocol for an external
//! program, so that harness can time graphlift in the same interleaved rounds as numpy, XLA,
//! Halide and onnxruntime.

use std::time::{Duration, Instant};

use graphlift::{Backend, ElementType, Tensor};
use graphlift_harness::exprs::{
    peer_expression, peer_expression_inputs, peer_expression_reference,
};
use rand::{rngs::StdRng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

use crate::error::CliError;

/// The protocol's tolerance on `|out - ref| / (1 + |ref|)`.
const TOLERANCE: f64 = 1e-3;
/// Minimum length of one timed batch.
const MIN_BATCH: Duration = Duration::from_millis(20);
/// Timed batches; the median counts.
const BATCHES: usize = 7;
/// Seed of the input generator.
const SEED: u64 = 12345;

/// Runs the protocol for expression `expr` (E1–E4) over `n` output elements on `backend`.
///
/// Inputs are N(0, 1) `f32` values from a fixed seed; the compiled kernel is checked against
/// an `f64` reference (`max |out - ref| / (1 + |ref|) <= 1e-3`, all finite), warmed up, then
/// timed in batches of at least 20 ms; the median batch gives `ns_per_element=<float>`.
///
/// # Errors
/// [`CliError::Usage`] for an unknown expression or a failed output check; any compile or
/// run error.
pub fn bench_expr(expr: &str, n: usize, backend: &str) -> Result<(), CliError> {
    let shapes = peer_expression_inputs(expr, n)
        .ok_or_else(|| CliError::Usage(format!("unknown expression `{expr}` for N = {n}")))?;
    let f = peer_expression(expr, n)?;
    let exe = Backend::create(backend)?.compile(&f)?;

    let mut rng = StdRng::seed_from_u64(SEED);
    let inputs = shapes
        .iter()
        .map(|s| {
            let len = s.element_count()?;
            let v: Vec<f32> = (0..len).map(|_| StandardNormal.sample(&mut rng)).collect();
            Ok(Tensor::from_vec(v, s.clone())?)
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let out_shape = f.result_types()[0].shape.clone();
    let mut outputs = vec![Tensor::zeros(ElementType::F32, out_shape)?];

    exe.call_with_validate(&mut outputs, &inputs)?;
    check(expr, &inputs, &outputs[0])?;

    // Warm-up, and the number of calls that fill one batch.
    let start = Instant::now();
    let mut calls = 0usize;
    while start.elapsed() < MIN_BATCH || calls < 3 {
        exe.call(&mut outputs, &inputs)?;
        calls += 1;
    }
    let per_batch = calls.max(1);
    let mut batch_ns: Vec<f64> = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let t = Instant::now();
        for _ in 0..per_batch {
            exe.call(&mut outputs, &inputs)?;
        }
        batch_ns.push(t.elapsed().as_nanos() as f64 / per_batch as f64);
    }
    batch_ns.sort_by(f64::total_cmp);
    let median = batch_ns[BATCHES / 2];
    println!("ns_per_element={}", median / n as f64);
    Ok(())
}

fn check(expr: &str, inputs: &[Tensor], out: &Tensor) -> Result<(), CliError> {
    let ins: Vec<&[f32]> = inputs
        .iter()
        .map(Tensor::read::<f32>)
        .collect::<Result<_, _>>()?;
    let got = out.read::<f32>()?;
    let mut worst = (0.0f64, 0usize);
    for (i, &y) in got.iter().enumerate() {
        let r = peer_expression_reference(expr, &ins, i);
        let err = (f64::from(y) - r).abs() / (1.0 + r.abs());
        if !y.is_finite() || err.is_nan() {
            return Err(CliError::Usage(format!(
                "{expr}: output {i} is {y}, reference {r}"
            )));
        }
        if err > worst.0 {
            worst = (err, i);
        }
    }
    if worst.0 > TOLERANCE {
        return Err(CliError::Usage(format!(
            "{expr}: output {} is off by {:e} (> {TOLERANCE:e}) relative to 1 + |ref|",
            worst.1, worst.0
        )));
    }
    Ok(())
}
