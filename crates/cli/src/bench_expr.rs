//! `graphlift bench-expr EXPR N`: the peers benchmark harness's protocol for an external
//! program, so that harness can time graphlift in the same interleaved rounds as numpy, XLA,
//! Halide and onnxruntime. `EXPR` is one of E1–E4, or an ONNX file of any expression.

use std::path::Path;
use std::time::{Duration, Instant};

use graphlift::{Backend, ElementType, Executable, Tensor};
use graphlift_harness::exprs::{
    peer_expression, peer_expression_inputs, peer_expression_reference,
};
use rand::{rngs::StdRng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

use crate::error::CliError;
use crate::run::import_for;

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
    if expr.ends_with(".onnx") {
        return bench_onnx(Path::new(expr), n, backend);
    }
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
    time_calls(exe.as_ref(), &mut outputs, &inputs, n)
}

/// The protocol for the expression of an ONNX file: static shapes (a symbolic dimension is
/// an error), every input `f32` N(0, 1) from the fixed seed, the first output of `n`
/// elements, every output preallocated and checked against the INTERPRETER's run of the
/// same file by the tolerance of E1–E4.
///
/// # Errors
/// [`CliError::Usage`] for a model whose inputs are not `f32`, whose first output does not
/// have `n` elements, or whose outputs fail the check; any import, compile or run error.
fn bench_onnx(path: &Path, n: usize, backend: &str) -> Result<(), CliError> {
    let (model, _) = import_for(path, &[], &[])?;
    let f = &model.function;
    let counts = f
        .result_types()
        .iter()
        .map(|t| t.shape.element_count())
        .collect::<Result<Vec<_>, _>>()?;
    if counts.first() != Some(&n) {
        return Err(CliError::Usage(format!(
            "{}: N is {n}, the first output has {} elements",
            path.display(),
            counts
                .first()
                .map_or_else(|| "no".to_string(), usize::to_string)
        )));
    }
    let mut rng = StdRng::seed_from_u64(SEED);
    let inputs = f
        .parameter_types()
        .iter()
        .zip(&model.inputs)
        .map(|(t, v)| {
            if t.element_type != ElementType::F32 {
                return Err(CliError::Usage(format!(
                    "input `{}` is {t}: bench-expr generates f32 inputs only",
                    v.name
                )));
            }
            let len = t.shape.element_count()?;
            let v: Vec<f32> = (0..len).map(|_| StandardNormal.sample(&mut rng)).collect();
            Ok(Tensor::from_vec(v, t.shape.clone())?)
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let exe = Backend::create(backend)?.compile(f)?;
    let mut outputs = f
        .result_types()
        .into_iter()
        .map(|t| Tensor::zeros(t.element_type, t.shape))
        .collect::<Result<Vec<_>, _>>()?;
    exe.call_with_validate(&mut outputs, &inputs)?;
    let reference = Backend::create("INTERPRETER")?.compile(f)?.run(&inputs)?;
    for ((got, want), v) in outputs.iter().zip(&reference).zip(&model.outputs) {
        let (got, want) = (got.read::<f32>()?, want.read::<f32>()?);
        let rows = got.iter().zip(want).map(|(&y, &r)| (y, f64::from(r)));
        within_tolerance(&format!("output `{}`", v.name), rows)?;
    }
    time_calls(exe.as_ref(), &mut outputs, &inputs, n)
}

/// Warms `exe` up, times batches of calls of at least [`MIN_BATCH`], and prints the median
/// batch's time per call divided by `n` as `ns_per_element=<float>`.
fn time_calls(
    exe: &dyn Executable,
    outputs: &mut [Tensor],
    inputs: &[Tensor],
    n: usize,
) -> Result<(), CliError> {
    // Warm-up, and the number of calls that fill one batch.
    let start = Instant::now();
    let mut calls = 0usize;
    while start.elapsed() < MIN_BATCH || calls < 3 {
        exe.call(outputs, inputs)?;
        calls += 1;
    }
    let per_batch = calls.max(1);
    let mut batch_ns: Vec<f64> = Vec::with_capacity(BATCHES);
    for _ in 0..BATCHES {
        let t = Instant::now();
        for _ in 0..per_batch {
            exe.call(outputs, inputs)?;
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
    let rows = got
        .iter()
        .enumerate()
        .map(|(i, &y)| (y, peer_expression_reference(expr, &ins, i)));
    within_tolerance(expr, rows)
}

/// Checks `(output, reference)` pairs: every output finite, `max |out - ref| / (1 + |ref|)`
/// within [`TOLERANCE`]; errors name `what` and the element.
fn within_tolerance(what: &str, rows: impl Iterator<Item = (f32, f64)>) -> Result<(), CliError> {
    let mut worst = (0.0f64, 0usize);
    for (i, (y, r)) in rows.enumerate() {
        let err = (f64::from(y) - r).abs() / (1.0 + r.abs());
        if !y.is_finite() || err.is_nan() {
            return Err(CliError::Usage(format!(
                "{what}: element {i} is {y}, reference {r}"
            )));
        }
        if err > worst.0 {
            worst = (err, i);
        }
    }
    if worst.0 > TOLERANCE {
        return Err(CliError::Usage(format!(
            "{what}: element {} is off by {:e} (> {TOLERANCE:e}) relative to 1 + |ref|",
            worst.1, worst.0
        )));
    }
    Ok(())
}
