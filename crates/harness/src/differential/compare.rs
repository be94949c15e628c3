//! Running a built Function on both backends and comparing every result under the
//! documented tolerance.

use graphlift_ir::{ElementType, Function};
use graphlift_jit::vmath;
use graphlift_runtime::reference::unary_f64;
use graphlift_runtime::{Backend, Tensor};

use super::*;

use graphlift_testkit::first_difference;

/// Runs `f` on both backends with `inputs` and compares every result under the module's
/// tolerance; `sinks` comes from [`build`].
///
/// # Errors
/// The first [`Mismatch`]. An interpreter error on a Function the builder accepted is a
/// mismatch too (the reference must run everything that builds).
pub fn compare_backends(
    jit: &dyn Backend,
    interpreter: &dyn Backend,
    f: &Function,
    sinks: &Sinks,
    inputs: &[Tensor],
) -> Result<Stats, Mismatch> {
    let fail = |backend: &'static str| {
        move |e: graphlift_runtime::RuntimeError| Mismatch::Backend {
            backend,
            error: e.to_string(),
        }
    };
    let exe = jit.compile(f).map_err(fail("CPU-JIT"))?;
    let kernels = exe.kernels();
    let mut stats = Stats {
        kernels: kernels.len(),
        multi_output_kernels: kernels.iter().filter(|k| k.outputs > 1).count(),
        ..Stats::default()
    };
    let got = exe.run(inputs).map_err(fail("CPU-JIT"))?;
    let want = interpreter
        .compile(f)
        .and_then(|e| e.run(inputs))
        .map_err(fail("INTERPRETER"))?;
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        if g.tensor_type() != w.tensor_type() {
            return Err(Mismatch::Type {
                result: k,
                jit: format!("{:?}", g.tensor_type()),
                interpreter: format!("{:?}", w.tensor_type()),
            });
        }
        match sinks.get(k).copied().flatten() {
            Some(Sink::Power) => {
                let power = |i: usize, jit: f64, interpreter: f64, ulp: f64, bound: f64| {
                    Mismatch::ApproximatePower {
                        result: k,
                        element: i,
                        jit,
                        interpreter,
                        ulp,
                        bound,
                    }
                };
                if let (Ok(y), Ok(r)) = (g.read::<f64>(), w.read::<f64>()) {
                    let bound = vmath::pow::MAX_ULP_F64 + POWER_REFERENCE_ULP;
                    for (i, (&yi, &ri)) in y.iter().zip(r.iter()).enumerate() {
                        // In the coarser ulp of the two (they differ at a binade edge).
                        let ulp = vmath::ulp_error_f64(yi, ri, 0.0)
                            .min(vmath::ulp_error_f64(ri, yi, 0.0));
                        if ulp > bound {
                            return Err(power(i, yi, ri, ulp, bound));
                        }
                    }
                    stats.approximate_elements += y.len();
                    continue;
                }
                let (Ok(y), Ok(r)) = (g.read::<f32>(), w.read::<f32>()) else {
                    return Err(Mismatch::Backend {
                        backend: "CPU-JIT",
                        error: format!("sink {k} of Power is neither f32 nor f64"),
                    });
                };
                let bound = vmath::pow::MAX_ULP + POWER_REFERENCE_ULP;
                for (i, (&yi, &ri)) in y.iter().zip(r.iter()).enumerate() {
                    let ulp = vmath::ulp_error(yi, f64::from(ri));
                    if ulp > bound {
                        return Err(power(i, f64::from(yi), f64::from(ri), ulp, bound));
                    }
                }
                stats.approximate_elements += y.len();
            }
            Some(Sink::Unary(op, input)) => {
                let approximate =
                    |i: usize, x: f64, y: f64, ulp: f64, bound: f64| Mismatch::Approximate {
                        result: k,
                        element: i,
                        op,
                        x,
                        y,
                        ulp,
                        bound,
                    };
                if let (Ok(x), Ok(y)) = (want[input].read::<f64>(), g.read::<f64>()) {
                    // f64: against the interpreter's own f64 value, which is itself up to
                    // F64_REFERENCE_ULP from the exact one.
                    let bound =
                        vmath::max_ulp(op, ElementType::F64).unwrap_or(0.0) + F64_REFERENCE_ULP;
                    for (i, (&xi, &yi)) in x.iter().zip(y.iter()).enumerate() {
                        // In the coarser ulp of the two (they differ at a binade edge).
                        let r = unary_f64(op, xi);
                        let ulp =
                            vmath::ulp_error_f64(yi, r, 0.0).min(vmath::ulp_error_f64(r, yi, 0.0));
                        if ulp > bound {
                            return Err(approximate(i, xi, yi, ulp, bound));
                        }
                    }
                    stats.approximate_elements += y.len();
                    continue;
                }
                let bound = vmath::max_ulp(op, ElementType::F32).unwrap_or(0.0);
                let (Ok(x), Ok(y)) = (want[input].read::<f32>(), g.read::<f32>()) else {
                    return Err(Mismatch::Backend {
                        backend: "CPU-JIT",
                        error: format!("sink {k} of {} is neither f32 nor f64", op.name()),
                    });
                };
                for (i, (&xi, &yi)) in x.iter().zip(y.iter()).enumerate() {
                    let ulp = vmath::ulp_error(yi, unary_f64(op, f64::from(xi)));
                    if ulp > bound {
                        return Err(approximate(i, f64::from(xi), f64::from(yi), ulp, bound));
                    }
                }
                stats.approximate_elements += y.len();
            }
            None => {
                if let Some(i) = first_difference(g.data(), w.data()) {
                    return Err(Mismatch::Exact {
                        result: k,
                        element: i,
                        jit: g.data().get_f64(i),
                        interpreter: w.data().get_f64(i),
                    });
                }
                stats.exact_elements += g.len();
            }
        }
    }
    Ok(stats)
}
