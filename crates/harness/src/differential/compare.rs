//! Running a built Function on both backends and comparing every result under the
//! documented tolerance.

use std::sync::Arc;

use graphlift_ir::{ElementType, Function};
use graphlift_jit::vmath;
use graphlift_runtime::reference::unary_f64;
use graphlift_runtime::{Backend, Executable, RuntimeError, Tensor};

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
    let both = Compiled::new(jit, interpreter, f)?;
    let mut stats = both.kernel_stats();
    let (got, want) = both.run(inputs)?;
    compare_results(&got, &want, sinks, &mut stats)?;
    Ok(stats)
}

/// A Function compiled on both backends.
pub(super) struct Compiled {
    jit: Arc<dyn Executable>,
    interpreter: Arc<dyn Executable>,
}

impl Compiled {
    /// Compiles `f` on CPU-JIT, then on the interpreter.
    ///
    /// # Errors
    /// [`Mismatch::Backend`] naming the backend that failed.
    pub(super) fn new(
        jit: &dyn Backend,
        interpreter: &dyn Backend,
        f: &Function,
    ) -> Result<Compiled, Mismatch> {
        Ok(Compiled {
            jit: jit.compile(f).map_err(fail("CPU-JIT"))?,
            interpreter: interpreter.compile(f).map_err(fail("INTERPRETER"))?,
        })
    }

    /// Runs one call on both (CPU-JIT first) and returns their results: CPU-JIT's, then
    /// the interpreter's.
    ///
    /// # Errors
    /// [`Mismatch::Backend`] naming the backend that failed.
    pub(super) fn run(&self, inputs: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>), Mismatch> {
        let got = self.jit.run(inputs).map_err(fail("CPU-JIT"))?;
        let want = self.interpreter.run(inputs).map_err(fail("INTERPRETER"))?;
        Ok((got, want))
    }

    /// The [`Stats`] of CPU-JIT's executable before anything is compared: its kernels,
    /// those with several outputs, and the variables they write in place.
    pub(super) fn kernel_stats(&self) -> Stats {
        let kernels = self.jit.kernels();
        Stats {
            kernels: kernels.len(),
            multi_output_kernels: kernels.iter().filter(|k| k.outputs > 1).count(),
            narrow_kernels: kernels
                .iter()
                .filter(|k| {
                    [
                        "load8", "load16", "load32", "istore8", "istore16", "istore32",
                    ]
                    .iter()
                    .any(|op| k.ir.contains(op))
                })
                .count(),
            in_place_writes: kernels.iter().map(|k| k.writes_in_place.len()).sum(),
            ..Stats::default()
        }
    }

    /// Compares every variable bit for bit (any NaN matching any NaN), counting the
    /// elements in `stats`.
    ///
    /// # Errors
    /// [`Mismatch::Variable`] for the first element that differs; [`Mismatch::Backend`]
    /// when CPU-JIT's variables are not the interpreter's (names and types) or one cannot
    /// be read.
    pub(super) fn compare_variables(&self, stats: &mut Stats) -> Result<(), Mismatch> {
        let specs = self.interpreter.variables();
        if self.jit.variables() != specs {
            return Err(Mismatch::Backend {
                backend: "CPU-JIT",
                error: format!(
                    "variables {:?}, INTERPRETER's {specs:?}",
                    self.jit.variables()
                ),
            });
        }
        for spec in specs {
            let g = self.jit.variable(&spec.name).map_err(fail("CPU-JIT"))?;
            let w = self
                .interpreter
                .variable(&spec.name)
                .map_err(fail("INTERPRETER"))?;
            if let Some(i) = first_difference(g.data(), w.data()) {
                return Err(Mismatch::Variable {
                    name: spec.name,
                    element: i,
                    jit: g.data().get_f64(i),
                    interpreter: w.data().get_f64(i),
                });
            }
            stats.variable_elements += g.len();
        }
        Ok(())
    }
}

/// A [`Mismatch::Backend`] from `backend`'s error.
fn fail(backend: &'static str) -> impl Fn(RuntimeError) -> Mismatch {
    move |e| Mismatch::Backend {
        backend,
        error: e.to_string(),
    }
}

/// Compares one call's results, CPU-JIT's `got` against the interpreter's `want`, under
/// the module's tolerance (`sinks` from [`build`]), counting the elements in `stats`.
///
/// # Errors
/// The first [`Mismatch`].
pub(super) fn compare_results(
    got: &[Tensor],
    want: &[Tensor],
    sinks: &Sinks,
    stats: &mut Stats,
) -> Result<(), Mismatch> {
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if g.tensor_type() != w.tensor_type() {
            return Err(Mismatch::Type {
                result: k,
                jit: format!("{:?}", g.tensor_type()),
                interpreter: format!("{:?}", w.tensor_type()),
            });
        }
        // Only float sinks may be approximate (the JIT's vector math); `f16` and `bf16`
        // ones are computed in `f32` and rounded, so they may differ by one ulp of their
        // type where the two `f32` values round to neighbours.
        let sink = sinks.get(k).copied().flatten();
        if sink.is_some() && matches!(w.element_type(), ElementType::F16 | ElementType::BF16) {
            for i in 0..g.len() {
                let (y, r) = (g.data().get_f64(i), w.data().get_f64(i));
                if let (Some(y), Some(r)) = (y, r) {
                    let ulp = ulp_distance_16(w.element_type(), y, r);
                    if ulp > 1 {
                        return Err(Mismatch::ApproximateHalf {
                            result: k,
                            element: i,
                            jit: y,
                            interpreter: r,
                            ulp,
                        });
                    }
                }
            }
            stats.approximate_elements += g.len();
            continue;
        }
        let approximate = matches!(w.element_type(), ElementType::F32 | ElementType::F64);
        match sink.filter(|_| approximate) {
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
    Ok(())
}

/// How many representable values of the 16-bit float type `t` lie between `a` and `b`
/// (values of that type, read as `f64`): 0 when equal or both NaN, `u32::MAX` when only one
/// is NaN. Counted on the bit patterns ordered as integers (negative values mirrored), so
/// `-0` and `+0` are one apart and the largest finite value and infinity are neighbours.
pub fn ulp_distance_16(t: ElementType, a: f64, b: f64) -> u32 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u32::MAX
        };
    }
    let bits = |x: f64| -> i32 {
        let h = if t == ElementType::BF16 {
            graphlift_ir::bf16::from_f64(x).to_bits()
        } else {
            graphlift_ir::f16::from_f64(x).to_bits()
        };
        let mag = i32::from(h & 0x7fff);
        if h & 0x8000 != 0 {
            -mag - 1
        } else {
            mag
        }
    };
    bits(a).abs_diff(bits(b))
}
