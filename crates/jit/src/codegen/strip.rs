//! Strip-mined kernels: `f32` vector math as calls to the vector math library.
//!
//! A kernel of `f32` lanes ([`Lanes::X4`]) whose plan allows it ([`KernelPlan::veclib`])
//! computes `exp`, `sigmoid`, `tanh` and `erf` of per-element values by calling
//! [`crate::veclib`], whose code uses the host's widest vectors, instead of inline
//! four-lane code. It runs its iteration space in *strips* of at most [`StripPlan::strip`]
//! elements (Halide's `split`), and each strip in *stages*:
//!
//! - a slot's stage is the number of library calls on its longest path from the loads: a
//!   call's result is available from the stage after its argument's;
//! - stage `t`'s loop (the usual main and tail loops, over the strip) computes the
//!   arguments of the calls of stage `t + 1` into strip buffers; the last stage computes and
//!   stores the kernel's outputs; each loop computes only what its stores need, reads the
//!   results of earlier calls from their buffers, and recomputes cheap values it shares
//!   with an earlier stage (loads, constants, inline ops) rather than keeping them;
//! - between stages `t` and `t + 1` the library maps each call's argument buffer into its
//!   result buffer, one call per function per strip. An argument that is a contiguous
//!   kernel input is passed in place, without a copy.
//!
//! Strip buffers are one explicit stack slot of the kernel's frame, so each thread's call
//! has its own. Outputs are stored in the last stage only: every input element of a strip is
//! read (by a loop or a call) before any output element of it is written, as in the
//! one-loop kernel, so an output may share its buffer with an input.
//!
//! Results are bit-identical to the inline kernel: the library performs the inline code's
//! operations ([`crate::veclib`]), every other slot is lowered as before, and a value
//! passes through a buffer without rounding.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    Block, BlockArg, InstBuilder, SourceLoc, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::FunctionBuilder;
use graphlift_ir::ElementType;

use super::broadcast::Addressing;
use super::kernel::{arg_ptr, operands, vector_loops, Body, Frame};
use super::lanes::Lanes;
use super::plan::{KernelPlan, SlotId, SlotOp};
use crate::helpers::Helper;
use crate::provenance::slot_srcloc;
use crate::veclib::VecFn;
use crate::JitError;

/// Bytes of strip buffers a kernel's frame may hold: within a 48 KiB L1 data cache with
/// room for the strip's inputs and outputs.
const BUFFER_BYTES: usize = 16 << 10;
/// The most elements per strip: a library call and a stage's loop entry cost tens of
/// nanoseconds, a strip of 1,024 elements some hundreds.
const MAX_STRIP: usize = 1024;
/// The fewest elements per strip (a kernel with many calls gets shorter strips).
const MIN_STRIP: usize = 64;

/// Where a library call reads its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A strip buffer.
    Buffer(usize),
    /// A contiguous `f32` kernel input, from the strip's first element.
    Input(usize),
}

/// One library call per strip.
#[derive(Debug, Clone, Copy)]
struct Call {
    /// The slot it computes (into its own buffer).
    slot: SlotId,
    function: VecFn,
    source: Source,
}

/// How a strip-mined kernel runs: its calls, the stage of every slot, the strip buffers.
#[derive(Debug, Clone)]
pub(crate) struct StripPlan {
    calls: Vec<Call>,
    /// The stage from which each slot's value is available.
    stage: Vec<usize>,
    /// The strip buffer a slot's values go through (a call's result, or a call's argument
    /// that is not an input), if any.
    buffer: Vec<Option<usize>>,
    buffers: usize,
    /// Elements per strip.
    strip: usize,
}

/// The library function slot `k` calls in `plan`, if it is strip-mined.
fn call_of(plan: &KernelPlan, k: SlotId) -> Option<(VecFn, SlotId)> {
    let slot = &plan.slots[k];
    match slot.op {
        SlotOp::Unary(op, a) if plan.veclib && plan.lanes == Lanes::X4 && !slot.invariant => {
            VecFn::of(op, slot.ty).map(|f| (f, a))
        }
        _ => None,
    }
}

/// The library functions `plan`'s code calls (to import into its function).
pub(crate) fn library_helpers(plan: &KernelPlan) -> Vec<Helper> {
    let mut fs: Vec<VecFn> = (0..plan.slots.len())
        .filter_map(|k| call_of(plan, k).map(|(f, _)| f))
        .collect();
    fs.sort();
    fs.dedup();
    fs.into_iter().map(Helper::Veclib).collect()
}

impl StripPlan {
    /// The strip plan of `plan`, or `None` when it calls no library function.
    pub(crate) fn of(plan: &KernelPlan) -> Option<StripPlan> {
        let n = plan.slots.len();
        let mut stage = vec![0; n];
        let mut buffer: Vec<Option<usize>> = vec![None; n];
        let mut buffers = 0;
        let mut calls = Vec::new();
        for k in 0..n {
            if let Some((function, a)) = call_of(plan, k) {
                stage[k] = stage[a] + 1;
                let source = match (&plan.slots[a].op, buffer[a]) {
                    (_, Some(buf)) => Source::Buffer(buf),
                    (
                        SlotOp::Load {
                            arg,
                            addressing: Addressing::Contiguous,
                        },
                        None,
                    ) if plan.reads_contiguously(*arg) => Source::Input(*arg),
                    _ => {
                        buffer[a] = Some(buffers);
                        buffers += 1;
                        Source::Buffer(buffers - 1)
                    }
                };
                buffer[k] = Some(buffers);
                buffers += 1;
                calls.push(Call {
                    slot: k,
                    function,
                    source,
                });
            } else {
                stage[k] = operands(&plan.slots[k].op)
                    .into_iter()
                    .map(|a| stage[a])
                    .max()
                    .unwrap_or(0);
            }
        }
        if calls.is_empty() {
            return None;
        }
        let per_element = 4 * buffers;
        let strip = (BUFFER_BYTES / per_element).clamp(MIN_STRIP, MAX_STRIP) / 16 * 16;
        Some(StripPlan {
            calls,
            stage,
            buffer,
            buffers,
            strip,
        })
    }

    /// The last stage (the one that stores the outputs).
    fn last(&self) -> usize {
        self.calls.iter().map(|c| self.stage[c.slot]).max().unwrap_or(0)
    }

    /// The slots stage `t` stores to strip buffers: the arguments of the next stage's calls
    /// that are computed (not inputs, not results of earlier calls).
    fn arguments_of(&self, plan: &KernelPlan, t: usize) -> Vec<SlotId> {
        let mut args: Vec<SlotId> = self
            .calls
            .iter()
            .filter(|c| self.stage[c.slot] == t + 1)
            .filter_map(|c| match (plan.slots[c.slot].op.clone(), c.source) {
                (SlotOp::Unary(_, a), Source::Buffer(_)) if call_of(plan, a).is_none() => {
                    Some(a)
                }
                _ => None,
            })
            .collect();
        args.sort_unstable();
        args.dedup();
        args
    }

    /// Which slots a loop must compute to produce `roots`: their operands, back to the
    /// invariants and to results of calls (read from buffers).
    fn needed(&self, plan: &KernelPlan, roots: &[SlotId]) -> Vec<bool> {
        let mut need = vec![false; plan.slots.len()];
        let mut stack: Vec<SlotId> = roots.to_vec();
        while let Some(k) = stack.pop() {
            if need[k] || plan.slots[k].invariant {
                continue;
            }
            need[k] = true;
            if call_of(plan, k).is_none() {
                stack.extend(operands(&plan.slots[k].op));
            }
        }
        need
    }
}

/// Emits the strip loop of a strip-mined kernel over `begin..end` (`begin < end`), from the
/// preheader; it leaves to `exit`.
///
/// # Errors
/// [`JitError::Codegen`] if an op cannot be lowered or a library function was not imported.
pub(super) fn loops(
    b: &mut FunctionBuilder,
    fr: &Frame,
    sp: &StripPlan,
    (begin, end): (Value, Value),
    exit: Block,
) -> Result<(), JitError> {
    let plan = fr.plan;
    let ptr = fr.ptr;
    let strip_bytes = sp.strip * 4;
    let frame_slot = b.create_sized_stack_slot(StackSlotData::new(
        StackSlotKind::ExplicitSlot,
        u32::try_from(strip_bytes * sp.buffers).map_err(|_| codegen(plan, "strip buffers"))?,
        6,
    ));
    let buffers: Vec<Value> = (0..sp.buffers)
        .map(|k| b.ins().stack_addr(ptr, frame_slot, (k * strip_bytes) as i32))
        .collect();
    let head = b.create_block();
    b.ins().jump(head, &[BlockArg::Value(begin)]);

    // One strip: elements s..e.
    b.switch_to_block(head);
    let s = b.append_block_param(head, ptr);
    let rem = b.ins().isub(end, s);
    let max = b.ins().iconst(ptr, sp.strip as i64);
    let len = b.ins().umin(rem, max);
    let e = b.ins().iadd(s, len);
    // Element i of the iteration space at biased[k] + 4·i within buffer k.
    let offset = b.ins().ishl_imm_u(s, 2);
    let biased: Vec<Value> = buffers.iter().map(|&p| b.ins().isub(p, offset)).collect();
    let buffer_of = |k: SlotId| sp.buffer[k].map(|buf| biased[buf]);

    let last = sp.last();
    for t in 0..=last {
        if t > 0 {
            for c in sp.calls.iter().filter(|c| sp.stage[c.slot] == t) {
                b.set_srcloc(slot_srcloc(c.slot));
                let src = match c.source {
                    Source::Buffer(buf) => buffers[buf],
                    Source::Input(arg) => {
                        let base = arg_ptr(fr, arg)?;
                        b.ins().iadd(base, offset)
                    }
                };
                let dst = sp.buffer[c.slot]
                    .map(|buf| buffers[buf])
                    .ok_or_else(|| codegen(plan, "a call without a result buffer"))?;
                let f = fr
                    .helpers
                    .0
                    .get(&Helper::Veclib(c.function))
                    .copied()
                    .ok_or_else(|| codegen(plan, "library function not imported"))?;
                b.ins().call(f, &[src, dst, len]);
                b.set_srcloc(SourceLoc::default());
            }
        }
        let stores: Vec<(SlotId, Value, ElementType)> = if t == last {
            plan.outputs
                .iter()
                .zip(&fr.outs)
                .map(|(&(slot, ty), &base)| (slot, base, ty))
                .collect()
        } else {
            sp.arguments_of(plan, t)
                .into_iter()
                .map(|a| {
                    let base = buffer_of(a).ok_or_else(|| codegen(plan, "argument buffer"))?;
                    Ok((a, base, ElementType::F32))
                })
                .collect::<Result<_, JitError>>()?
        };
        if stores.is_empty() {
            continue;
        }
        let roots: Vec<SlotId> = stores.iter().map(|&(k, _, _)| k).collect();
        let body = Body {
            compute: sp.needed(plan, &roots),
            reads: (0..plan.slots.len())
                .map(|k| {
                    call_of(plan, k)
                        .filter(|_| sp.stage[k] <= t)
                        .and_then(|_| buffer_of(k))
                })
                .collect(),
            stores,
        };
        let next = b.create_block();
        vector_loops(b, fr, &body, (s, e), next)?;
        b.switch_to_block(next);
    }
    let more = b.ins().icmp(IntCC::UnsignedLessThan, e, end);
    b.ins().brif(more, head, &[BlockArg::Value(e)], exit, &[]);
    Ok(())
}

fn codegen(plan: &KernelPlan, what: &str) -> JitError {
    JitError::Codegen {
        kernel: plan.name.clone(),
        message: format!("strip-mined kernel: {what}"),
    }
}
