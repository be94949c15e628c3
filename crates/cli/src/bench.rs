//! `graphlift bench MODEL`: median latency of a model on a backend, after warm-up, with a
//! progress line on stderr.

use std::io::Write;
use std::time::{Duration, Instant};

use graphlift::runtime::trace::Tracer;
use graphlift::{ElementType, Tensor, TensorData};
use rand::{rngs::StdRng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};

use crate::error::CliError;
use crate::grad::chosen_function;
use crate::profile;
use crate::run::import_for;
use crate::tensor_io::read_tensor;
use crate::BenchArgs;

/// Seed of generated float inputs.
const SEED: u64 = 7;

/// Runs `graphlift bench`.
///
/// # Errors
/// Any import, compile or run error; [`CliError::Usage`] for a wrong number of inputs or
/// zero timed runs.
pub fn bench(args: &BenchArgs) -> Result<(), CliError> {
    if args.runs == 0 {
        return Err(CliError::Usage("--runs must be at least 1".into()));
    }
    let given = args
        .inputs
        .iter()
        .map(|p| read_tensor(p))
        .collect::<Result<Vec<_>, _>>()?;
    let (model, given) = import_for(&args.model, &given, &args.shapes)?;
    let inputs = if given.is_empty() {
        let mut rng = StdRng::seed_from_u64(SEED);
        model
            .inputs
            .iter()
            .map(|v| generated(v.tensor_type.element_type, &v.tensor_type.shape, &mut rng))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        given
    };
    if inputs.len() != model.inputs.len() {
        return Err(CliError::Usage(format!(
            "the model takes {} input(s), {} given with --input",
            model.inputs.len(),
            inputs.len()
        )));
    }
    let backend = args.scope.backend(&args.backend, args.threads)?;
    let (function, what) = chosen_function(&model, &args.gradient)?;
    let start = Instant::now();
    let exe = backend.compile(&function)?;
    let compile = start.elapsed();
    let shapes: Vec<String> = model
        .inputs
        .iter()
        .map(|v| format!("{}: {}", v.name, v.tensor_type))
        .collect();
    println!(
        "model: {} ({}), {what}",
        args.model.display(),
        shapes.join(", ")
    );
    let threads = args
        .threads
        .map_or_else(|| "default".to_string(), |t| t.to_string());
    println!(
        "backend: {} (threads: {threads}), compile {:.2} ms",
        backend.name(),
        ms(compile)
    );
    for _ in 0..args.warmup {
        exe.run(&inputs)?;
    }
    let mut times = Vec::with_capacity(args.runs);
    let mut err = std::io::stderr();
    for k in 0..args.runs {
        let t = Instant::now();
        exe.run(&inputs)?;
        times.push(t.elapsed());
        // Progress goes to stderr, overwritten in place.
        let _ = write!(
            err,
            "\r  run {}/{}: {:.3} ms   ",
            k + 1,
            args.runs,
            ms(times[k])
        );
        let _ = err.flush();
    }
    let _ = writeln!(err);
    times.sort();
    let median = times[times.len() / 2];
    println!(
        "latency: median {:.3} ms, min {:.3} ms, max {:.3} ms over {} runs ({} warm-up)",
        ms(median),
        ms(times[0]),
        ms(times[times.len() - 1]),
        args.runs,
        args.warmup
    );
    if let Some(calls) = args.profile.filter(|&n| n > 0) {
        let tracer = Tracer::start();
        for _ in 0..calls {
            exe.run(&inputs)?;
        }
        let trace = tracer.finish();
        let (rows, gaps) = (profile::by_op(&trace, calls), profile::gaps(&trace, calls));
        print!("{}", profile::report(&rows, calls, &gaps));
        println!("  slowest steps:");
        for (name, op, ms) in profile::slowest_steps(&trace, calls, args.slowest) {
            println!("  {ms:>10.4} ms  {op:<16} {name}");
        }
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A generated input: floats N(0, 1), integers 1 (a valid token id and an unmasked
/// position), booleans true.
fn generated(
    et: ElementType,
    shape: &graphlift::Shape,
    rng: &mut StdRng,
) -> Result<Tensor, CliError> {
    let n = shape
        .element_count()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let data = match et {
        ElementType::F32 => TensorData::F32((0..n).map(|_| StandardNormal.sample(rng)).collect()),
        ElementType::F64 => TensorData::F64((0..n).map(|_| StandardNormal.sample(rng)).collect()),
        ElementType::I32 => TensorData::I32(vec![1; n]),
        ElementType::I64 => TensorData::I64(vec![1; n]),
        ElementType::Bool => TensorData::Bool(vec![true; n]),
        // The other floats: N(0, 1) rounded; the other integers: 1; strings: "1".
        other if other.is_float() => {
            let normal: Vec<f64> = (0..n).map(|_| StandardNormal.sample(rng)).collect();
            TensorData::from_f64(other, &normal)
        }
        other => TensorData::from_f64(other, &vec![1.0; n]),
    };
    Ok(Tensor::from_data(data, shape.clone())?)
}
