//! Epilogue fusion in the plan: a fused kernel that consumes a `MatMul` or `Convolution`
//! result runs inside that step's output loop on each block as soon as it is written
//! ([`graphlift_kernels::native::Epilogue`]), instead of reading the whole result back later.

use graphlift_ir::{ElementType, Function, Op};
use graphlift_runtime::RuntimeError;

use super::{Loc, Step, StepKind};
use graphlift_codegen::plan::KernelPlan;

/// A kernel step moved into the output loop of a native step.
#[derive(Debug, Clone)]
pub(super) struct EpilogueStep {
    /// The kernel's step as it was planned (its node, kernel, inputs and outputs).
    pub step: Step,
    /// The kernel's live-ins that read the producer's result (each read contiguously).
    pub reads: Vec<usize>,
}

/// Whether a native step of this op can run an epilogue in its output loop.
fn is_producer(op: &Op) -> bool {
    matches!(op, Op::MatMul | Op::Convolution(_) | Op::QuantizedMatMul(_))
}

/// Moves each kernel step that can run as the epilogue of an earlier `MatMul`,
/// `QuantizedMatMul` or `Convolution` step into it. A kernel qualifies for the producer's
/// result `t` when
/// - its iteration space is `t`'s elements, and every live-in that is `t` has `t`'s element
///   type (`f32`, `f64` or `i32`, the types of the native producers) and is read
///   contiguously, so a block of `t` is all the kernel needs of `t` to compute the same
///   block of its outputs;
/// - every other input exists before the producer runs (a Parameter, a Constant, or the
///   result of an earlier step), so moving the kernel up changes no value.
///
/// The first qualifying consumer of each producer is moved (others read `t` as before).
/// The merged step lists the producer's inputs and outputs, then the kernel's; `t` is still
/// written whole, so other users and results see it as before.
///
/// # Errors
/// [`RuntimeError::Ir`] if a step's node is missing from `g`.
pub(super) fn fuse_epilogues(
    steps: Vec<Step>,
    g: &Function,
    plans: &[KernelPlan],
) -> Result<Vec<Step>, RuntimeError> {
    // The step that computes each temporary.
    let mut made_by = Vec::new();
    for (s, step) in steps.iter().enumerate() {
        for &t in &step.outputs {
            if made_by.len() <= t {
                made_by.resize(t + 1, usize::MAX);
            }
            made_by[t] = s;
        }
    }
    let available_before = |loc: &Loc, s: usize| match *loc {
        Loc::Temp(u) => made_by.get(u).is_some_and(|&p| p < s),
        Loc::Input(_) | Loc::Constant(_) => true,
        // Assigns do not move: a kernel reading a variable's storage stays where it is.
        Loc::Variable(_) => false,
    };
    let mut absorbed_into: Vec<Option<usize>> = vec![None; steps.len()];
    let mut reads_of: Vec<Vec<usize>> = vec![Vec::new(); steps.len()];
    for s in 0..steps.len() {
        let producer = &steps[s];
        let node = g.node(producer.node)?;
        let (StepKind::Native, [t]) = (producer.kind, producer.outputs.as_slice()) else {
            continue;
        };
        let ty = node.output_type();
        if !is_producer(node.op())
            || !matches!(
                ty.element_type,
                ElementType::F32 | ElementType::F64 | ElementType::I32
            )
        {
            continue;
        }
        let Ok(count) = ty.shape.element_count() else {
            continue;
        };
        let consumer = (s + 1..steps.len()).find_map(|j| {
            let step = &steps[j];
            let StepKind::Kernel(k) = step.kind else {
                return None;
            };
            let plan = plans.get(k)?;
            let reads: Vec<usize> = (0..step.inputs.len())
                .filter(|&i| step.inputs[i] == Loc::Temp(*t))
                .collect();
            let fits = absorbed_into[j].is_none()
                && !reads.is_empty()
                && plan.count == count
                && reads.iter().all(|&r| {
                    plan.args.get(r).is_some_and(|a| a.ty == ty.element_type)
                        && plan.reads_contiguously(r)
                })
                && step
                    .inputs
                    .iter()
                    .all(|l| *l == Loc::Temp(*t) || available_before(l, s));
            fits.then_some((j, reads))
        });
        if let Some((j, reads)) = consumer {
            absorbed_into[j] = Some(s);
            reads_of[j] = reads;
        }
    }
    let mut merged: Vec<Step> = Vec::with_capacity(steps.len());
    let mut position: Vec<usize> = vec![usize::MAX; steps.len()];
    let mut epilogues: Vec<(usize, EpilogueStep)> = Vec::new();
    for (j, step) in steps.into_iter().enumerate() {
        match absorbed_into[j] {
            Some(s) => epilogues.push((
                s,
                EpilogueStep {
                    step,
                    reads: std::mem::take(&mut reads_of[j]),
                },
            )),
            None => {
                position[j] = merged.len();
                merged.push(step);
            }
        }
    }
    for (s, e) in epilogues {
        if let Some(p) = merged.get_mut(position[s]) {
            p.inputs.extend(e.step.inputs.iter().copied());
            p.outputs.extend(e.step.outputs.iter().copied());
            p.epilogue = Some(Box::new(e));
        }
    }
    Ok(merged)
}
