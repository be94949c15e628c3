//! `graphlift accuracy`: error tables of the inline `f32` and `f64` vector math and of
//! `Power`, measured through the JIT code kernels use, so a (thinned) sweep can gate a build
//! on the documented ulp bounds.

use graphlift::ir::{ElementType, UnaryOp};
use graphlift_harness::accuracy::{
    f64_sample, sweep_f32, sweep_f64, sweep_pow_f32, sweep_pow_f64, Accuracy, AccuracyF64,
    AccuracyPow, LoopKind, F32_FUNCTIONS, F64_FUNCTIONS, POW_EXPONENTS, POW_EXPONENTS_F64,
    POW_TARGETS, POW_TARGETS_F32,
};

use crate::error::CliError;
use crate::AccuracyArgs;

/// Runs the sweep of `args` and prints the table.
///
/// By default it sweeps every `f32` bit pattern (every K-th with `--step K`) through the JIT
/// code that kernels use ([`graphlift_harness::accuracy`]) and prints, per function, the
/// documented bound, the maximum error in ulp and where, the maximum relative error (normal
/// range) and where, and any broken range or special-value guarantee. `--f64` measures the
/// `f64` functions in the `F64X2` loop (or the scalar loop with `--scalar`) on the dense
/// sample of [`graphlift_harness::accuracy::f64_sample`] against 256-bit reference values
/// ([`graphlift_harness::accuracy::reference`]), with the same columns. `--pow` measures
/// `f32` `Power` ([`graphlift_harness::accuracy::sweep_pow_f32`]), and `--pow --f64` `f64`
/// `Power` against 256-bit references ([`graphlift_harness::accuracy::sweep_pow_f64`]).
///
/// # Errors
/// [`CliError::Usage`] for an unknown function name; [`CliError::Accuracy`] (a non-zero exit)
/// when a function exceeds its documented bound or breaks a guarantee; a JIT error as a
/// compile error.
pub fn accuracy(args: &AccuracyArgs) -> Result<(), CliError> {
    let ops = functions(&args.functions)?;
    let kind = match (args.scalar, args.library, args.assembled) {
        (true, false, false) => LoopKind::Scalar,
        (false, true, false) => LoopKind::Library,
        (false, false, true) => LoopKind::Assembled,
        (false, false, false) => LoopKind::Vector,
        _ => {
            return Err(CliError::Usage(
                "--scalar, --library and --assembled are different codes: give one".into(),
            ))
        }
    };
    match (args.pow, args.f64) {
        (true, _) => return accuracy_pow(args, kind),
        (false, true) => {
            let ops = if args.functions.is_empty() {
                F64_FUNCTIONS.to_vec()
            } else {
                ops
            };
            if let Some(op) = ops.iter().find(|op| !F64_FUNCTIONS.contains(op)) {
                return Err(CliError::Usage(format!(
                    "{} has no inline f64 code (on f64 it calls the reference's scalar \
                     function once per lane, exactly); the f64 vector math functions are {}",
                    op.name(),
                    F64_FUNCTIONS.map(|op| op.name()).join(", ")
                )));
            }
            return accuracy_f64(args, ops, kind);
        }
        (false, false) => {}
    }
    let step = args.step.max(1);
    let loop_name = kind.describe(ElementType::F32);
    let which = match step {
        1 => "every f32 bit pattern".to_string(),
        k => format!("every {k}-th f32 bit pattern"),
    };
    println!(
        "f32 vector math in the {loop_name}: {which} ({} inputs per function)",
        (1u64 << 32).div_ceil(step)
    );
    println!();
    println!("| function | bound (ulp) | max error (ulp) | at x | max relative error | at x | guarantees |");
    println!("|---|---|---|---|---|---|---|");
    let mut over = Vec::new();
    for op in ops {
        let start = std::time::Instant::now();
        let a = sweep_f32(op, step, kind)
            .map_err(|e| CliError::Runtime(e.into_compile_error(op.name())))?;
        println!("{}", row(&a));
        eprintln!("  {}: {:.1} s", op.name(), start.elapsed().as_secs_f64());
        if !a.within_bound() {
            over.push(op.name().to_string());
        }
    }
    if over.is_empty() {
        Ok(())
    } else {
        Err(CliError::Accuracy(over.join(", ")))
    }
}

fn functions(names: &[String]) -> Result<Vec<UnaryOp>, CliError> {
    if names.is_empty() {
        return Ok(F32_FUNCTIONS.to_vec());
    }
    names
        .iter()
        .map(|n| {
            F32_FUNCTIONS
                .iter()
                .copied()
                .find(|op| op.name().eq_ignore_ascii_case(n))
                .ok_or_else(|| {
                    let known: Vec<&str> = F32_FUNCTIONS.iter().map(|op| op.name()).collect();
                    CliError::Usage(format!(
                        "unknown function `{n}`; the f32 vector math functions are {}",
                        known.join(", ")
                    ))
                })
        })
        .collect()
}

fn row(a: &Accuracy) -> String {
    let (x, y) = a.worst_ulp_at;
    let guarantees = match a.first_violation {
        None => "all hold".to_string(),
        Some((vx, vy)) => format!("{} broken (first: {vx:e} -> {vy:e})", a.violations),
    };
    format!(
        "| {} | {} | {:.3} | {x:e} (→ {y:e}) | {:.2e} | {:e} | {guarantees} |",
        a.op.name(),
        a.bound,
        a.max_ulp,
        a.max_rel,
        a.worst_rel_at,
    )
}

fn accuracy_f64(args: &AccuracyArgs, ops: Vec<UnaryOp>, kind: LoopKind) -> Result<(), CliError> {
    let loop_name = kind.describe(ElementType::F64);
    let per_binade = args.per_binade.unwrap_or(4096);
    let xs = f64_sample(per_binade);
    println!(
        "f64 vector math in the {loop_name} against 256-bit references: {} bit patterns per binade, special values, threshold neighbourhoods ({} inputs per function)",
        per_binade.clamp(1, 1 << 52),
        xs.len()
    );
    println!();
    println!("| function | bound (ulp) | max error (ulp) | at x | max relative error | at x | guarantees |");
    println!("|---|---|---|---|---|---|---|");
    let mut over = Vec::new();
    for op in ops {
        let start = std::time::Instant::now();
        let a = sweep_f64(op, &xs, kind)
            .map_err(|e| CliError::Runtime(e.into_compile_error(op.name())))?;
        println!("{}", row_f64(&a));
        eprintln!("  {}: {:.1} s", op.name(), start.elapsed().as_secs_f64());
        if !a.within_bound() {
            over.push(op.name().to_string());
        }
    }
    if over.is_empty() {
        Ok(())
    } else {
        Err(CliError::Accuracy(over.join(", ")))
    }
}

fn row_f64(a: &AccuracyF64) -> String {
    let (x, y) = a.worst_ulp_at;
    let guarantees = match a.first_violation {
        None => "all hold".to_string(),
        Some((vx, vy)) => format!("{} broken (first: {vx:e} -> {vy:e})", a.violations),
    };
    format!(
        "| {} | {} | {:.3} | {x:e} (→ {y:e}) | {:.2e} | {:e} | {guarantees} |",
        a.op.name(),
        a.bound,
        a.max_ulp,
        a.max_rel,
        a.worst_rel_at,
    )
}

fn accuracy_pow(args: &AccuracyArgs, kind: LoopKind) -> Result<(), CliError> {
    let start = std::time::Instant::now();
    let compile = |e: graphlift::jit::JitError| CliError::Runtime(e.into_compile_error("pow"));
    let a = if args.f64 {
        let per_binade = args.per_binade.unwrap_or(64);
        let a = sweep_pow_f64(per_binade, kind).map_err(compile)?;
        println!(
            "f64 Power ({kind:?} loop) against 256-bit references: the bases of the f64 sample ({} per binade, special values, threshold neighbourhoods) x {} exponents and, from every base, the exponents aiming at {} values of y·ln|x| ({} pairs)",
            per_binade.clamp(1, 1 << 52),
            POW_EXPONENTS_F64.len(),
            POW_TARGETS.len(),
            a.checked
        );
        a
    } else {
        let step = args.step.max(1);
        let a = sweep_pow_f32(step, kind).map_err(compile)?;
        println!(
            "f32 Power ({kind:?} loop): every {step}-th positive f32 base and its negation x {} exponents and, from every base, the exponents aiming at {} values of y·ln|x| ({} pairs)",
            POW_EXPONENTS.len(),
            POW_TARGETS_F32.len(),
            a.checked
        );
        a
    };
    println!();
    println!("| function | bound (ulp) | max error (ulp) | at (x, y) | special cases |");
    println!("|---|---|---|---|---|");
    println!("{}", row_pow(&a));
    eprintln!("  Power: {:.1} s", start.elapsed().as_secs_f64());
    if a.within_bound() {
        Ok(())
    } else {
        Err(CliError::Accuracy("Power".into()))
    }
}

fn row_pow(a: &AccuracyPow) -> String {
    let (x, y, r) = a.worst_ulp_at;
    let specials = match a.first_violation {
        None => "all as the interpreter".to_string(),
        Some((vx, vy, vr)) => format!(
            "{} differ (first: pow({vx:e}, {vy:e}) = {vr:e})",
            a.violations
        ),
    };
    format!(
        "| Power ({}) | {} | {:.3} | ({x:e}, {y:e}) → {r:e} | {specials} |",
        a.element_type, a.bound, a.max_ulp
    )
}
