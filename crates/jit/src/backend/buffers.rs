//! Buffers by liveness: temporaries assigned to recycled buffers after their last use,
//! and the peak bytes live at once.

use graphlift_ir::{Function, Op, TensorType};
use graphlift_runtime::RuntimeError;

use super::*;

/// Frees each temporary after its last use (results are kept to the end).
/// The most bytes of temporaries live at once: each step's outputs are allocated before it
/// runs (its inputs still live) and `free_after` releases after it.
pub(super) fn peak_bytes(steps: &[Step], g: &Function) -> Result<usize, RuntimeError> {
    let (mut live, mut peak) = (0usize, 0usize);
    let mut size = std::collections::HashMap::new();
    for step in steps {
        for (t, ty) in step.filled_outputs(g)? {
            // Saturating: a shape too large for memory compiles (and fails to run) cleanly.
            let bytes = ty
                .shape
                .element_count()?
                .saturating_mul(ty.element_type.size_bytes());
            size.insert(t, bytes);
            live = live.saturating_add(bytes);
        }
        peak = peak.max(live);
        for t in &step.free_after {
            live = live.saturating_sub(size.get(t).copied().unwrap_or(0));
        }
    }
    Ok(peak)
}

/// Bins of recycled temporaries kept between calls, at most this many or one per thread of
/// the backend (one per call running at once, as a plan run sample by sample runs one on
/// each thread; more concurrent calls allocate afresh).
pub(super) const MAX_RECYCLE_BINS: usize = 4;

/// Bins of dead temporaries from earlier calls, each indexed by buffer: a step's output
/// takes its buffer's tensor from the bin of its call (kernels and MatMul write into it)
/// when it has the output's type, instead of allocating and page-faulting a new one.
pub(super) type Bins = std::sync::Mutex<Vec<Vec<Option<graphlift_runtime::Tensor>>>>;

/// Where an executable keeps its dead temporaries when a call ends
/// ([`CpuJitBackend::with_buffer_recycling`], [`CpuJitBackend::with_shared_buffers`]).
#[derive(Debug, Clone)]
pub(super) enum Recycling {
    /// In bins of its own (the default).
    Own,
    /// Nowhere: they are freed.
    Off,
    /// In bins shared by every executable compiled by the backends cloned from the one
    /// that made them.
    Shared(std::sync::Arc<Bins>),
}

impl Recycling {
    /// The bins of a new executable, and whether its calls leave their bins there.
    pub(super) fn bins(&self) -> (std::sync::Arc<Bins>, bool) {
        match self {
            Recycling::Own => (std::sync::Arc::default(), true),
            Recycling::Off => (std::sync::Arc::default(), false),
            Recycling::Shared(bins) => (std::sync::Arc::clone(bins), true),
        }
    }
}

/// Assigns every temporary a buffer: temporaries of one tensor type whose lifetimes do not
/// overlap share one (greedy interval colouring in step order; a step's outputs never take
/// the buffer of a value that dies at that step, which it may still be reading). Returns the
/// buffer of each temporary and the number of buffers.
pub(super) fn assign_buffers(
    steps: &[Step],
    g: &Function,
    temps: usize,
) -> Result<(Vec<usize>, usize), RuntimeError> {
    let mut buffer_of = vec![usize::MAX; temps];
    // Per buffer: its tensor type and whether it is free for the next step.
    let mut buffers: Vec<(TensorType, bool)> = Vec::new();
    for step in steps {
        for (t, ty) in step.filled_outputs(g)? {
            let b = match buffers.iter().position(|(bt, free)| *free && bt == ty) {
                Some(b) => b,
                None => {
                    buffers.push(((*ty).clone(), true));
                    buffers.len() - 1
                }
            };
            buffers[b].1 = false;
            buffer_of[t] = b;
        }
        for &t in &step.free_after {
            if let Some(b) = buffers.get_mut(buffer_of[t]) {
                b.1 = true;
            }
        }
    }
    Ok((buffer_of, buffers.len()))
}

pub(super) fn plan_lifetimes(steps: &mut [Step], results: &[Loc], temps: usize) {
    let mut last: Vec<Option<usize>> = vec![None; temps];
    for (s, step) in steps.iter().enumerate() {
        for &t in &step.outputs {
            last[t] = Some(s);
        }
        for l in &step.inputs {
            if let Loc::Temp(t) = l {
                last[*t] = Some(s);
            }
        }
    }
    for l in results {
        if let Loc::Temp(t) = l {
            last[*t] = None;
        }
    }
    for (t, s) in last.into_iter().enumerate() {
        if let Some(s) = s {
            steps[s].free_after.push(t);
        }
    }
}

/// Marks each `Reshape` step that forwards its input ([`Step::forwards`]): a native step
/// with no epilogue whose one input is a temporary of the output's element type dying at
/// that step. Its buffer then holds the output (the same elements in the same order), and
/// no copy runs.
pub(super) fn plan_forwarding(steps: &mut [Step], g: &Function) -> Result<(), RuntimeError> {
    for step in steps.iter_mut() {
        let node = g.node(step.node)?;
        let (Op::Reshape(_), StepKind::Native, None, [Loc::Temp(t)], [out]) = (
            node.op(),
            &step.kind,
            &step.epilogue,
            step.inputs.as_slice(),
            node.outputs(),
        ) else {
            continue;
        };
        let input = g.output_type(node.inputs()[0])?;
        let dies = step.free_after.contains(t);
        if dies && step.in_place.is_empty() && input.element_type == out.element_type {
            step.forwards = Some(*t);
        }
    }
    Ok(())
}
