//! Batch splitting: a batched Function whose samples are independent
//! ([`graphlift_passes::per_sample`]) compiles to the plan of one sample, which a call runs
//! once per sample. Whole rounds of samples run one per thread, each sample's steps on its
//! thread: a sample's activations then stay in its core's caches from one step to the
//! next, where the whole batch streams each step's through memory, and no step pays a fork
//! for work too small to split (BENCHMARKS.md, "Batch splitting"). The samples left over
//! (fewer than the threads) run at once, each on a group of threads ([`SampleSpread`]), so
//! no thread idles while the last round runs. [`decide`] is the one place that says when
//! a Function is split.

use std::fmt;
use std::sync::Arc;

use graphlift_ir::{Function, Op, Output};
use graphlift_kernels::parallel::{for_each, Parallel};
use graphlift_kernels::target::{Target, BATCH_SPLIT_ENV};
use graphlift_passes::{per_sample, PerSample};
use graphlift_runtime::trace::CallRecorder;
use graphlift_runtime::{function_signature, RuntimeError, Tensor, TensorSpec};

use super::{CpuJitBackend, CpuJitExecutable, ExecutablePlan};

/// How an executable runs a batch.
#[derive(Debug, Clone)]
pub(super) enum Schedule {
    /// Every step over the whole batch; why it is not split.
    Whole(String),
    /// Sample by sample: the plan is one sample's.
    Samples(Samples),
}

/// A Function run sample by sample.
#[derive(Debug, Clone)]
pub(super) struct Samples {
    /// Samples per call: axis 0 of every parameter and result.
    pub batch: usize,
    /// The batched Function's parameters and results (the plan's are one sample's).
    pub parameters: Vec<TensorSpec>,
    pub results: Vec<TensorSpec>,
}

impl Samples {
    /// How a call spreads these samples over `threads` threads.
    pub(super) fn spread(&self, threads: usize) -> SampleSpread {
        SampleSpread {
            batch: self.batch,
            threads,
        }
    }
}

/// How a call of a split Function spreads its `batch` samples over `threads` threads:
/// first rounds of one sample per thread, as many as fill every thread
/// ([`SampleSpread::in_rounds`]); then the rest, `batch mod threads` samples, at once,
/// each on a group of the threads ([`SampleSpread::groups`]), its steps split over its
/// group as a whole batch's are over all threads. With fewer samples than threads there
/// are no rounds, only groups. The groups share the threads as evenly as they can.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleSpread {
    /// Samples per call (at least 2).
    pub batch: usize,
    /// The backend's threads (at least 1).
    pub threads: usize,
}

impl SampleSpread {
    /// The samples that run in rounds, one per thread: the largest multiple of `threads`
    /// not above `batch`.
    pub fn in_rounds(&self) -> usize {
        self.batch - self.batch % self.threads.max(1)
    }

    /// The threads of each group that one of the samples after the rounds runs on: `batch
    /// mod threads` groups (none when the threads share the batch evenly), the first
    /// `threads mod groups` of them one thread larger than the rest.
    pub fn groups(&self) -> Vec<usize> {
        let t = self.threads.max(1);
        let r = self.batch % t;
        (0..r).map(|i| t / r + usize::from(i < t % r)).collect()
    }
}

impl fmt::Display for SampleSpread {
    /// For example "3 samples over 2 threads: 2 in rounds of one per thread, then the last on
    /// all 2 threads".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rounds, groups) = (self.in_rounds(), self.groups());
        if self.threads <= 1 {
            return write!(f, "{} samples, one after another on one thread", self.batch);
        }
        write!(f, "{} samples over {} threads: ", self.batch, self.threads)?;
        if rounds > 0 {
            write!(f, "{rounds} in rounds of one per thread")?;
        }
        let Some(&last) = groups.last() else {
            return Ok(());
        };
        if rounds > 0 {
            write!(f, ", then ")?;
        }
        match (groups.len(), groups[0]) {
            (1, g) => write!(f, "the last on all {g} threads"),
            (r, g) if g == last => write!(f, "{r} at once on {g} threads each"),
            (r, g) => write!(f, "{r} at once on {g} or {last} threads each"),
        }
    }
}

/// Weights (elements) from which a product must reuse each weight [`MIN_REUSE`] times per
/// sample for the Function to be split: below, one sample's product reads weights it used
/// to read once per batch once per sample (a batch of vectors through a dense layer is a
/// matrix product, one sample of it a matrix-vector product).
const MIN_WEIGHTS: usize = 1 << 14;
/// Rows (output positions, for a convolution) a product of [`MIN_WEIGHTS`] weights or more
/// must compute per sample: enough for the packed product's row tiles to pay for streaming
/// its weights from L3 once per sample (BENCHMARKS.md: MiniLM at 4 sequences of 32 tokens
/// did not gain).
const MIN_REUSE: usize = 64;

/// Elements one sample's largest product (or convolution, or attention) must compute for a
/// split to pay: where every step is an elementwise kernel or small, the kernels already
/// stream the batch once, and a call per sample would only add calls.
const MIN_PRODUCT: usize = 1 << 12;

/// Whether `function` runs sample by sample on `target`, and its per-sample Function when it
/// does; else why not, in words. It does when batch splitting is on, its samples are
/// independent, one sample computes a product of [`MIN_PRODUCT`] elements or more, and no
/// product reads large weights for a few rows per sample. (How many samples there are
/// against the threads does not matter: [`SampleSpread`] keeps every thread busy.)
pub(super) fn decide(function: &Function, target: &Target) -> Result<PerSample, String> {
    if !target.batch_split() {
        return Err(format!("batch splitting is off ({BATCH_SPLIT_ENV}=0)"));
    }
    let split = per_sample(function)?;
    let has_product = split.function.nodes().any(|n| {
        let product = matches!(
            n.op(),
            Op::MatMul
                | Op::QuantizedMatMul(_)
                | Op::Convolution(_)
                | Op::ConvolutionInteger(_)
                | Op::Attention(_)
        );
        product
            && n.output_type()
                .shape
                .element_count()
                .is_ok_and(|c| c >= MIN_PRODUCT)
    });
    if !has_product {
        return Err(format!(
            "no product computes {MIN_PRODUCT} elements or more per sample, so a call per \
             sample would gain nothing"
        ));
    }
    reuses_weights(&split.function)?;
    Ok(split)
}

/// Refuses a per-sample Function `f` with a product of [`MIN_WEIGHTS`] constant weights or
/// more that computes fewer than [`MIN_REUSE`] rows (output positions) with them.
fn reuses_weights(f: &Function) -> Result<(), String> {
    for node in f.nodes() {
        let dims = |k: usize| {
            let t = node.inputs().get(k).and_then(|&o| f.output_type(o).ok());
            t.map_or(&[][..], |t| t.shape.dims())
        };
        let count = |d: &[usize]| d.iter().product::<usize>();
        let (weights, uses) = match node.op() {
            Op::MatMul if is_constant(f, node.inputs()[1]) => {
                let a = dims(0);
                (
                    count(dims(1)),
                    count(a) / a.last().copied().unwrap_or(1).max(1),
                )
            }
            Op::MatMul if is_constant(f, node.inputs()[0]) => {
                let b = dims(1);
                let k = b.len().checked_sub(2).map_or(1, |i| b[i]).max(1);
                (count(dims(0)), count(b) / k)
            }
            Op::Convolution(_) if is_constant(f, node.inputs()[1]) => {
                let out = node.output_type().shape.dims();
                (count(dims(1)), count(out.get(2..).unwrap_or(&[])))
            }
            _ => continue,
        };
        if weights >= MIN_WEIGHTS && uses < MIN_REUSE {
            return Err(format!(
                "one sample of `{}` would read its {weights} weights for {uses} row(s)",
                node.name()
            ));
        }
    }
    Ok(())
}

/// Whether `value` is a constant, possibly reshaped, transposed, converted or broadcast.
fn is_constant(f: &Function, value: Output) -> bool {
    let Ok(node) = f.node(value.node) else {
        return false;
    };
    match node.op() {
        Op::Constant(_) => true,
        Op::Reshape(_) | Op::Transpose(_) | Op::Convert(_) | Op::Broadcast(_) => {
            node.inputs().len() == 1 && is_constant(f, node.inputs()[0])
        }
        _ => false,
    }
}

impl CpuJitBackend {
    /// The plan of `function` as [`decide`] schedules it: one sample's, compiled for one
    /// thread, or the whole batch's. Keeps a copy of `function` as the plan's source when
    /// `keep_source`.
    pub(super) fn scheduled_plan(
        &self,
        function: &Function,
        keep_source: bool,
    ) -> Result<ExecutablePlan, RuntimeError> {
        let source = keep_source.then(|| function.clone());
        match decide(function, &self.target) {
            Ok(split) => {
                function.validate()?;
                let (parameters, results) = function_signature(function)?;
                let samples = Samples {
                    batch: split.batch,
                    parameters,
                    results,
                };
                let single = self.clone().with_threads(1);
                single.compile_plan(&split.function, source, Schedule::Samples(samples))
            }
            Err(why) => self.compile_plan(function, source, Schedule::Whole(why)),
        }
    }

    /// The executables the samples after the rounds of a split `plan` run on, one per group
    /// of [`SampleSpread::groups`]: the same plan, each with its group's threads, all on
    /// the backend's pool ([`Parallel::group`]). None for a whole-batch plan.
    pub(super) fn group_executables(&self, plan: &Arc<ExecutablePlan>) -> Vec<CpuJitExecutable> {
        let Schedule::Samples(s) = &plan.schedule else {
            return Vec::new();
        };
        let all = self.parallel.config().threads;
        let group = |threads: usize| {
            let parallel = if threads == all {
                Arc::clone(&self.parallel)
            } else {
                Arc::new(Parallel::group(&self.parallel, threads))
            };
            self.executable_on(Arc::clone(plan), (Arc::clone(&parallel), parallel), None)
        };
        s.spread(all).groups().into_iter().map(group).collect()
    }
}

impl CpuJitExecutable {
    /// Runs the plan once per sample of `s.batch` (arguments validated against the batched
    /// Function) as [`SampleSpread`] says: rounds of one sample per thread of the backend's,
    /// then the rest at once on the group executables; on the calling thread alone while a
    /// tracer records, so that every sample's call is in the trace.
    pub(super) fn call_samples(
        &self,
        s: &Samples,
        outputs: &mut [Tensor],
        inputs: &[Tensor],
    ) -> Result<(), RuntimeError> {
        let n = s.batch;
        let sample = |exe: &CpuJitExecutable, b: usize| -> Result<Vec<Tensor>, RuntimeError> {
            let ins = inputs.iter().zip(&self.plan.parameters).map(|(t, p)| {
                let len = t.len() / n;
                let data = t.data().range(b * len, len).ok_or_else(|| {
                    RuntimeError::Data(format!("input `{}` has no sample {b}", p.name))
                })?;
                Tensor::from_data(data, p.tensor_type.shape.clone())
            });
            let ins = ins.collect::<Result<Vec<_>, _>>()?;
            let outs =
                self.plan.results.iter().map(|r| {
                    Tensor::zeros(r.tensor_type.element_type, r.tensor_type.shape.clone())
                });
            let mut outs = outs.collect::<Result<Vec<_>, _>>()?;
            exe.call_whole(&mut outs, &ins)?;
            Ok(outs)
        };
        let mut done: Vec<Option<Result<Vec<Tensor>, RuntimeError>>> =
            (0..n).map(|_| None).collect();
        if CallRecorder::tracing() {
            for (b, slot) in done.iter_mut().enumerate() {
                *slot = Some(sample(self, b));
            }
        } else {
            let head = n - self.groups.len().min(n);
            let (rounds, rest) = done.split_at_mut(head);
            let run = |(b, slot): (usize, &mut Option<_>)| *slot = Some(sample(self, b));
            match self.batch_pool.team_of(head, 1) {
                Some(team) => for_each(team, rounds.iter_mut().enumerate(), run),
                None => rounds.iter_mut().enumerate().for_each(run),
            }
            let tasks = self.groups.iter().zip(head..).zip(rest.iter_mut());
            let run = |((exe, b), slot): ((&CpuJitExecutable, usize), &mut Option<_>)| {
                *slot = Some(sample(exe, b))
            };
            match self.batch_pool.team_of(self.groups.len(), 1) {
                Some(team) => for_each(team, tasks, run),
                None => tasks.for_each(run),
            }
        }
        for (b, outs) in done.into_iter().enumerate() {
            let outs =
                outs.ok_or_else(|| RuntimeError::Data(format!("sample {b} did not run")))??;
            for (k, o) in outs.iter().enumerate() {
                if !outputs[k].data_mut().write_range(b * o.len(), o.data()) {
                    return Err(RuntimeError::Data(format!(
                        "sample {b} of result `{}` does not fit",
                        s.results[k].name
                    )));
                }
            }
        }
        Ok(())
    }
}
