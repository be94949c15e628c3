//! Buffers by liveness: temporaries assigned to recycled buffers after their last use,
//! and the peak bytes live at once.

use graphlift_ir::{ElementType, Function, Op, TensorType};
use graphlift_kernels::native;
use graphlift_runtime::RuntimeError;
use graphlift_runtime::Tensor;

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
    /// The bins a new executable's calls take their buffers from and leave them in (`None`:
    /// they allocate them and free them).
    pub(super) fn bins(&self) -> Option<std::sync::Arc<Bins>> {
        match self {
            Recycling::Own => Some(std::sync::Arc::default()),
            Recycling::Off => None,
            Recycling::Shared(bins) => Some(std::sync::Arc::clone(bins)),
        }
    }
}

/// Where each temporary of a plan lives while it is alive: a buffer, recycled from call to
/// call ([`Bins`]), shared by temporaries whose lifetimes do not overlap.
#[derive(Debug, Default)]
pub(super) struct BufferPlan {
    /// The buffer of each temporary.
    pub(super) of: Vec<usize>,
    /// The type of each temporary a step fills (`None` for those written in place).
    types: Vec<Option<TensorType>>,
    /// Number of buffers.
    pub(super) count: usize,
    /// Bytes of the buffers, each as large as its largest value.
    pub(super) bytes: usize,
}

impl BufferPlan {
    /// Assigns every temporary a buffer (greedy interval colouring in step order; a step's
    /// outputs never take the buffer of a value that dies at that step, which it may still
    /// be reading). Values of one element type whose lifetimes do not overlap share one,
    /// those of one element count in every plan. Where those buffers outgrow half the
    /// last-level cache (`cache_bytes`, [`Target::last_level_cache_bytes`]), values of
    /// [`ACROSS_SHAPES_BYTES`] or more share whatever their shapes ([`Class`]) if that
    /// takes a tenth fewer bytes ([`ACROSS_SHAPES_SAVING`]): fewer bytes, reused soon after
    /// they were last written, keep more of a call's large values in the caches, at the
    /// price of growing a buffer (zero-filling its new part, every call) where a larger
    /// value follows a smaller one. A reshape that forwards its input ([`Step::forwards`])
    /// leaves its output in the input's buffer; a step that allocates its own outputs (a
    /// native op outside [`native::writes_into_seed`], a control-flow node) gets buffers no
    /// other step shares, as its allocations, exactly its outputs' size, would otherwise
    /// land in buffers that must hold more.
    pub(super) fn assign(
        steps: &[Step],
        g: &Function,
        (temps, cache_bytes): (usize, usize),
    ) -> Result<BufferPlan, RuntimeError> {
        let exact = BufferPlan::assign_with(steps, g, temps, false)?;
        if exact.bytes <= cache_bytes / 2 {
            return Ok(exact);
        }
        let across = BufferPlan::assign_with(steps, g, temps, true)?;
        let saving = exact.bytes.saturating_sub(across.bytes) as f64 / exact.bytes as f64;
        Ok(if saving >= ACROSS_SHAPES_SAVING {
            across
        } else {
            exact
        })
    }

    /// [`BufferPlan::assign`] with or without values shared `across` shapes.
    fn assign_with(
        steps: &[Step],
        g: &Function,
        temps: usize,
        across: bool,
    ) -> Result<BufferPlan, RuntimeError> {
        let mut plan = BufferPlan {
            of: vec![usize::MAX; temps],
            types: vec![None; temps],
            count: 0,
            bytes: 0,
        };
        let mut buffers: Vec<Buffer> = Vec::new();
        for step in steps {
            let forwarded = step.forwards.zip(step.outputs.first().copied());
            let shared = writes_into_buffers(step, g)?;
            // A result only its epilogue reads, which the producer may leave unwritten.
            let unread = step.epilogue.as_ref().and(step.outputs.first());
            let unread = unread.filter(|t| step.free_after.contains(t));
            for (t, ty) in step.filled_outputs(g)? {
                let class = match (shared, unread == Some(&t)) {
                    (false, _) => Class::Unshared,
                    (true, true) => Class::OfItsCount,
                    (true, false) if across => Class::by_size(ty),
                    (true, false) => Class::OfItsCount,
                };
                plan.of[t] = match forwarded {
                    // The reshape's output is its input's buffer, under another shape.
                    Some((input, _)) => plan.of[input],
                    None => Buffer::take(&mut buffers, ty, class),
                };
                plan.types[t] = Some(ty.clone());
            }
            for &t in &step.free_after {
                if forwarded.is_some_and(|(input, _)| input == t) {
                    continue;
                }
                if let Some(b) = buffers.get_mut(plan.of[t]) {
                    b.free = b.class != Class::Unshared;
                }
            }
        }
        plan.count = buffers.len();
        plan.bytes = buffers
            .iter()
            .map(|b| b.elements.saturating_mul(b.element_type.size_bytes()))
            .fold(0, usize::saturating_add);
        Ok(plan)
    }

    /// The buffer for temporary `t` (`None` where `bin` has none): taken from `bin` and
    /// made `t`'s type in its own allocation ([`Tensor::refit`]), its elements unspecified.
    pub(super) fn seed(&self, t: usize, bin: &mut [Option<Tensor>]) -> Option<Tensor> {
        let buffer = bin.get_mut(*self.of.get(t)?)?.take()?;
        match self.types.get(t) {
            Some(Some(ty)) => buffer.refit(ty),
            _ => Some(buffer),
        }
    }
}

/// Values of at least this many bytes may share buffers whatever their shapes: a buffer that
/// a larger value takes after a smaller one grows, zero-filling its new part on every call
/// ([`Tensor::refit`]), which pays where it keeps values that would miss the caches in
/// them. Smaller values share only with values of their element count (no growth): they
/// stay in the caches anyway, and the zero-fills cost more than they save (BENCHMARKS.md,
/// the thirty-second session).
const ACROSS_SHAPES_BYTES: usize = 128 << 10;

/// The least share of its bytes that sharing across shapes must save a plan: a transformer
/// whose buffers it shrank by 6 % ran 3 % slower for the zero-fills, MobileNetV2 (29 %) 9 %
/// faster (BENCHMARKS.md, the thirty-second session).
const ACROSS_SHAPES_SAVING: f64 = 0.1;

/// Whether `step` writes its outputs into the buffers it is handed (else it allocates them).
fn writes_into_buffers(step: &Step, g: &Function) -> Result<bool, RuntimeError> {
    Ok(match step.kind {
        StepKind::Kernel(_) | StepKind::Read(_) => true,
        StepKind::Native => step.epilogue.is_some() || native::writes_into_seed(g.node(step.node)?),
        _ => false,
    })
}

/// Which values share a buffer ([`BufferPlan::assign`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Values of [`ACROSS_SHAPES_BYTES`] or more, whatever their shapes.
    AcrossShapes,
    /// Values of one element count: smaller ones, and a result that only its epilogue
    /// reads (its producer may leave it unwritten: in a buffer that grew, zero-filled for
    /// nothing).
    OfItsCount,
    /// None: the value of a step that allocates its own outputs.
    Unshared,
}

impl Class {
    /// The class of a value of type `ty` that a step writes into its buffer.
    fn by_size(ty: &TensorType) -> Class {
        let n = ty.shape.element_count().unwrap_or(usize::MAX);
        if n.saturating_mul(ty.element_type.size_bytes()) >= ACROSS_SHAPES_BYTES {
            Class::AcrossShapes
        } else {
            Class::OfItsCount
        }
    }
}

/// A buffer of [`BufferPlan::assign`]: the element type of its values, the most elements one
/// of them has and its latest one's (its length when the next value takes it), the class of
/// values that share it, and whether it is free now.
struct Buffer {
    element_type: ElementType,
    elements: usize,
    last: usize,
    class: Class,
    free: bool,
}

impl Buffer {
    /// The buffer a value of type `ty` and class `class` takes (see [`BufferPlan::assign`]):
    /// a free one of its element type and class (of its element count, in
    /// [`Class::OfItsCount`]) whose latest value holds it most tightly, else the one whose
    /// latest value is largest if that is at least half this one (it grows); else, or in
    /// [`Class::Unshared`], a new one.
    fn take(buffers: &mut Vec<Buffer>, ty: &TensorType, class: Class) -> usize {
        let n = ty.shape.element_count().unwrap_or(usize::MAX);
        let candidates = || {
            buffers.iter().enumerate().filter(move |(_, b)| {
                b.free
                    && b.element_type == ty.element_type
                    && b.class == class
                    && match class {
                        Class::AcrossShapes => true,
                        Class::OfItsCount => b.elements == n,
                        Class::Unshared => false,
                    }
            })
        };
        // No growth where a buffer's latest value holds this one, else the least, at most
        // half this value (past that a buffer of its own costs less than the zero-fill).
        let no_growth = candidates()
            .filter(|(_, b)| b.last >= n)
            .min_by_key(|(_, b)| b.last);
        let least = || {
            candidates()
                .max_by_key(|(_, b)| b.last)
                .filter(|(_, b)| b.last.saturating_mul(2) >= n)
        };
        let chosen = no_growth.or_else(least);
        let b = match chosen {
            Some((b, _)) => b,
            None => {
                buffers.push(Buffer {
                    element_type: ty.element_type,
                    elements: 0,
                    last: 0,
                    class,
                    free: true,
                });
                buffers.len() - 1
            }
        };
        let taken = &mut buffers[b];
        taken.elements = taken.elements.max(n);
        taken.last = n;
        taken.free = false;
        b
    }
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
