//! `graphlift accuracy`: the error tables of the inline `f32` and (`--f64`) `f64` vector
//! math.
//!
//! `--pow` measures `f32` `Power` ([`graphlift::jit::accuracy::sweep_pow_f32`]).
//!
//! `--f64` measures the `f64` functions in the `F64X2` loop (or the scalar loop with
//! `--scalar`) on the dense sample of [`graphlift::jit::accuracy::f64_sample`] against
//! correctly rounded MPFR values ([`graphlift::jit::accuracy::mpfr`]), with the same columns.
//!
//! Sweeps every `f32` bit pattern (every K-th with `--step K`) through the JIT code that
//! kernels use ([`graphlift::jit::accuracy`]) and prints, per function, the documented bound,
//! the maximum error in ulp and where, the maximum relative error (normal range) and where,
//! and any broken range or special-value guarantee. Exits non-zero when a function is past
//! its bound, so a thinned sweep can gate a build.

use graphlift::ir::UnaryOp;
use graphlift::jit::accuracy::{
    f64_sample, sweep_f32, sweep_f64, sweep_pow_f32, Accuracy, AccuracyF64, LoopKind,
    F32_FUNCTIONS, POW_EXPONENTS,
};

use crate::error::CliError;
use crate::AccuracyArgs;

/// Runs the sweep of `args` and prints the table.
///
/// # Errors
/// [`CliError::Usage`] for an unknown function name; [`CliError::Accuracy`] when a function
/// exceeds its documented bound or breaks a guarantee; a JIT error as a compile error.
pub fn accuracy(args: &AccuracyArgs) -> Result<(), CliError> {
    let ops = functions(&args.functions)?;
    let kind = if args.scalar {
        LoopKind::Scalar
    } else {
        LoopKind::Vector
    };
    if args.f64 {
        return accuracy_f64(args, ops, kind);
    }
    if args.pow {
        return accuracy_pow(args, kind);
    }
    let step = args.step.max(1);
    let loop_name = match kind {
        LoopKind::Vector => "F32X4 vector",
        LoopKind::Scalar => "scalar",
    };
    let which = match step {
        1 => "every f32 bit pattern".to_string(),
        k => format!("every {k}-th f32 bit pattern"),
    };
    println!(
        "f32 vector math in the {loop_name} loop: {which} ({} inputs per function)",
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
    let loop_name = match kind {
        LoopKind::Vector => "F64X2 vector",
        LoopKind::Scalar => "scalar",
    };
    let xs = f64_sample(args.per_binade);
    println!(
        "f64 vector math in the {loop_name} loop against MPFR: {} bit patterns per binade, special values, threshold neighbourhoods ({} inputs per function)",
        args.per_binade.clamp(1, 1 << 52),
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
    let step = args.step.max(1);
    let start = std::time::Instant::now();
    let a =
        sweep_pow_f32(step, kind).map_err(|e| CliError::Runtime(e.into_compile_error("pow")))?;
    let (x, y, r) = a.worst_ulp_at;
    println!(
        "f32 Power ({:?} loop): every {step}-th positive f32 base and its negation x {} exponents ({} pairs)",
        kind,
        POW_EXPONENTS.len(),
        a.checked
    );
    println!();
    println!("| function | bound (ulp) | max error (ulp) | at (x, y) | special cases |");
    println!("|---|---|---|---|---|");
    let specials = match a.first_violation {
        None => "all as the interpreter".to_string(),
        Some((vx, vy, vr)) => format!(
            "{} differ (first: pow({vx:e}, {vy:e}) = {vr:e})",
            a.violations
        ),
    };
    println!(
        "| Power | {} | {:.3} | ({x:e}, {y:e}) → {r:e} | {specials} |",
        a.bound, a.max_ulp
    );
    eprintln!("  Power: {:.1} s", start.elapsed().as_secs_f64());
    if a.within_bound() {
        Ok(())
    } else {
        Err(CliError::Accuracy("Power".into()))
    }
}
