//! Strip-mined kernels (Halide's `split`): `f32` vector math and division as calls to the
//! full-width vector math library, and outputs written with non-temporal stores, run strip
//! by strip in stages, because Cranelift's inline code is four lanes wide.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::immediates::Ieee32;
use cranelift_codegen::ir::{
    Block, BlockArg, InstBuilder, SourceLoc, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::FunctionBuilder;
use foldhash::HashMap;
use graphlift_ir::ElementType;

use super::broadcast::Addressing;
use super::calls::LibraryCalls;
use super::lanes::Lanes;
use super::plan::{KernelPlan, SlotId, SlotOp};
use crate::helpers::Helper;
use crate::loops::{arg_ptr, vector_loops, Body, Frame};
use crate::provenance::slot_srcloc;
use crate::JitError;
use graphlift_kernels::veclib::{VecFn, MAX_PARAMS};

/// Bytes of strip buffers a kernel's frame may hold: within a 48 KiB L1 data cache with
/// room for the strip's inputs and outputs.
const BUFFER_BYTES: usize = 16 << 10;
/// The most elements per strip. Short strips keep the buffers in L1, and the out-of-order
/// core overlaps the end of one stage with the start of the next; but the library's loops
/// are software-pipelined over blocks of 64 elements, so a call of 128 is two blocks, its
/// start and end a large share. 256 measured fastest (figures in `BENCHMARKS.md`).
const MAX_STRIP: usize = 256;
/// The most elements per strip of a kernel that streams without calling the library (its
/// strips are copied out of a buffer by [`graphlift_kernels::stream`]): 128, which measured
/// faster than 256 for E4 at 2^24 elements on one thread and slower for E1, so the choice is
/// E4's (figures in `BENCHMARKS.md`).
const STREAM_STRIP: usize = 128;
/// The most stages a strip-mined kernel may have. Every stage is a loop of its own, with
/// its main and tail bodies, its buffer loads and stores: a kernel whose chain of library
/// calls is longer compiles its vector math inline instead, which compiles several times
/// faster for long chains (figures in `BENCHMARKS.md`).
const MAX_STAGES: usize = 8;
/// Values of at most this many operations are computed again by each stage that needs
/// them; larger ones are kept in a buffer by the stage that computes them first.
const RECOMPUTE: usize = 2;
/// The fewest elements per strip (a kernel with many calls gets shorter strips).
const MIN_STRIP: usize = 32;
/// Elements per strip of a kernel without strip buffers (its calls read inputs and write
/// outputs: `tanh(x)`, GELU, SiLU): no buffer has to stay in L1, so a strip is as long as a
/// call into the library is worth, and the call's entry and its loops' start and end are
/// paid once per 64 Ki elements instead of per 128 (figures in `BENCHMARKS.md`).
const DIRECT_STRIP: usize = 1 << 16;

/// Where a library call reads its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A strip buffer.
    Buffer(usize),
    /// A contiguous `f32` kernel input, from the strip's first element.
    Input(usize),
    /// A kernel output that an earlier call wrote, from the strip's first element.
    Output(usize),
}

/// Where a library call writes its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Its own strip buffer.
    Buffer(usize),
    /// A kernel output (an `f32` output that is the call's value), from the strip's first
    /// element: later stages read the value there.
    Output(usize),
}

/// One library call per strip.
#[derive(Debug, Clone)]
struct Call {
    /// The slot it computes.
    slot: SlotId,
    function: VecFn,
    /// Where each argument is read (in order).
    sources: Vec<(SlotId, Source)>,
    /// A form's parameters (`f32` bits).
    params: [u32; MAX_PARAMS],
    target: Target,
    /// Whether it writes its output with non-temporal stores ([`VecFn::streams`]).
    stream: bool,
}

impl Call {
    /// The library entry point it calls.
    fn helper(&self) -> Helper {
        if self.stream {
            Helper::VeclibStream(self.function)
        } else {
            Helper::Veclib(self.function)
        }
    }
}

/// How a strip-mined kernel runs: its calls, the stage of every slot, the strip buffers.
///
/// A kernel of `f32` lanes ([`Lanes::X4`]) whose plan allows it ([`KernelPlan::veclib`])
/// computes activation forms (GELU, SiLU), `exp`, `sigmoid`, `tanh` and `erf` of
/// per-element values, and divisions of two per-element values, by calling
/// [`graphlift_kernels::veclib`], whose code uses the host's widest vectors, instead of
/// inline four-lane code ([`super::calls`] finds the calls). It runs its iteration space in
/// *strips* of at most `MAX_STRIP` elements, and each strip in *stages*:
///
/// - a slot's stage is the number of library calls on its longest path from the loads: a
///   call's result is available from the stage after its arguments';
/// - stage `t`'s loop (the usual main and tail loops, over the strip) stores into strip
///   buffers the values of stage `t` that later calls take as arguments or that later
///   stages need and would take more than `RECOMPUTE` operations to compute again; the
///   last stage computes and stores the kernel's outputs; each loop computes only what its
///   stores need, reads what earlier stages and calls left in buffers, and recomputes the
///   cheap values it shares with an earlier stage (loads, constants, short chains);
/// - between stages `t` and `t + 1` the library maps each call's argument buffers into its
///   result, one call per function per strip. An argument that is a contiguous kernel
///   input is passed in place, without a copy; a result that is a kernel output is written
///   there directly (and later stages read it there), so a kernel of one call, like
///   `tanh(x)` or `x / y`, is a loop of calls with no buffer.
///
/// A kernel whose plan streams ([`KernelPlan::stream`], [`graphlift_kernels::stream`]) is
/// strip-mined too, with or without calls: a call that writes an output calls the library's
/// streaming entry where the function has one ([`VecFn::streams`]: it writes whole 64-byte
/// lines with non-temporal stores, no copy), its last stage stores the other `f32` and `i32`
/// outputs into strip buffers, each strip is copied out with non-temporal stores, and the
/// kernel fences them once before it returns.
///
/// A kernel with more than `MAX_STAGES` stages keeps its vector math inline. Strip buffers
/// are one explicit stack slot of the kernel's frame, so each thread's call has its own.
/// Strips are at most `MAX_STRIP` elements (`STREAM_STRIP` for a kernel that only streams);
/// a kernel without buffers runs long strips (`DIRECT_STRIP`). Calls write outputs before
/// later stages read inputs: sound because the runtime never passes an output that overlaps
/// an input (outputs are distinct `&mut` borrows).
///
/// Results are bit-identical to the inline kernel (a NaN for a NaN): the library performs
/// the inline code's operations ([`graphlift_kernels::veclib`]), every other slot is lowered
/// as before, and a value passes through a buffer without rounding.
#[derive(Debug, Clone)]
pub struct StripPlan {
    /// Which slots are calls, and what each call takes.
    library: LibraryCalls,
    calls: Vec<Call>,
    /// The stage from which each slot's value is available.
    stage: Vec<usize>,
    /// The strip buffer a slot's values go through (a call's argument that is not an input,
    /// a call's result that is not an output, a value kept for later stages), if any.
    buffer: Vec<Option<usize>>,
    /// The computed values that go through buffers (a call's argument, or a value a later
    /// stage needs: [`spills`]), stored by the loop of their own stage.
    materialized: Vec<SlotId>,
    buffers: usize,
    /// Outputs copied out of a buffer with non-temporal stores after the last stage, as
    /// `(output, buffer)` ([`graphlift_kernels::stream`]).
    copies: Vec<(usize, usize)>,
    /// Elements per strip.
    strip: usize,
    /// The last stage (the one that stores the outputs): the stage of the last calls.
    last: usize,
}

impl StripPlan {
    /// The strip plan of `plan`, or `None` when it neither calls the library nor streams (or
    /// its chain of calls is longer than `MAX_STAGES`).
    pub fn of(plan: &KernelPlan) -> Option<StripPlan> {
        let library = LibraryCalls::of(plan);
        let stream = plan.stream && plan.lanes == Lanes::X4;
        if library.is_empty() && !stream {
            return None;
        }
        let uses = plan.use_counts();
        let n = plan.slots.len();
        let mut stage = vec![0; n];
        let mut buffer: Vec<Option<usize>> = vec![None; n];
        let mut buffers = 0;
        let mut calls = Vec::new();
        // Calls that write a kernel output, by slot: later calls read them there.
        let mut target_of: HashMap<SlotId, Source> = HashMap::default();
        for k in 0..n {
            let ops = library.inputs(plan, k);
            let from = ops.iter().map(|&a| stage[a]).max().unwrap_or(0);
            let Some(call) = library.get(k) else {
                stage[k] = from;
                continue;
            };
            stage[k] = from + 1;
            let mut sources = Vec::with_capacity(ops.len());
            for a in ops {
                let source = match (&plan.slots[a].op, buffer[a], target_of.get(&a)) {
                    (_, Some(buf), _) => Source::Buffer(buf),
                    (_, None, Some(&t)) => t,
                    (
                        SlotOp::Load {
                            arg,
                            addressing: Addressing::Contiguous,
                        },
                        None,
                        None,
                    ) if plan.reads_contiguously(*arg)
                        && plan.args[*arg].ty == plan.slots[a].ty =>
                    {
                        Source::Input(*arg)
                    }
                    _ => {
                        buffer[a] = Some(buffers);
                        buffers += 1;
                        Source::Buffer(buffers - 1)
                    }
                };
                sources.push((a, source));
            }
            // An output of a storage type is written by the loops, which convert.
            let target = match plan
                .outputs
                .iter()
                .position(|&(s, t)| s == k && t == plan.slots[k].ty)
            {
                Some(o) => {
                    target_of.insert(k, Source::Output(o));
                    Target::Output(o)
                }
                None => {
                    buffer[k] = Some(buffers);
                    buffers += 1;
                    Target::Buffer(buffers - 1)
                }
            };
            calls.push(Call {
                slot: k,
                function: call.function,
                sources,
                params: call.params,
                target,
                // Written once and not read back (a later stage would read it from memory).
                stream: stream
                    && call.function.streams()
                    && matches!(target, Target::Output(_))
                    && uses[k] == 1,
            });
        }
        let last = calls.iter().map(|c| stage[c.slot]).max().unwrap_or(0);
        if calls.is_empty() && !stream || last > MAX_STAGES {
            return None;
        }
        // Outputs streamed out of buffers: the 4-byte ones no call writes.
        let mut copies = Vec::new();
        if stream {
            for (o, &(k, ty)) in plan.outputs.iter().enumerate() {
                let written = calls.iter().any(|c| c.target == Target::Output(o));
                if written || !matches!(ty, ElementType::F32 | ElementType::I32) {
                    continue;
                }
                let buf = *buffer[k].get_or_insert_with(|| {
                    buffers += 1;
                    buffers - 1
                });
                copies.push((o, buf));
            }
        }
        // Values a later stage needs, too costly to compute again there: kept in buffers.
        for v in spills(plan, &library, &stage, last) {
            if buffer[v].is_none() {
                buffer[v] = Some(buffers);
                buffers += 1;
            }
        }
        let mut materialized: Vec<SlotId> = (0..n)
            .filter(|&k| buffer[k].is_some() && library.get(k).is_none())
            .collect();
        materialized.sort_unstable();
        let per_element = 4 * buffers.max(1);
        let strip = if buffers == 0 {
            DIRECT_STRIP
        } else {
            let most = if calls.is_empty() {
                STREAM_STRIP
            } else {
                MAX_STRIP
            };
            (BUFFER_BYTES / per_element).clamp(MIN_STRIP, most) / 16 * 16
        };
        Some(StripPlan {
            library,
            calls,
            copies,
            stage,
            buffer,
            materialized,
            buffers,
            strip,
            last,
        })
    }

    /// How many computed values are kept in buffers for later stages without being a call's
    /// argument.
    pub fn kept_for_later_stages(&self) -> usize {
        let argument = |k: SlotId| {
            self.calls
                .iter()
                .any(|c| c.sources.iter().any(|s| s.0 == k))
        };
        self.materialized.iter().filter(|&&k| !argument(k)).count()
    }

    /// The functions called, each once, in order.
    pub fn functions(&self) -> Vec<VecFn> {
        self.library.functions()
    }

    /// Whether output `o` is written by a call (and not by the last stage's loop).
    pub fn writes_output(&self, o: usize) -> bool {
        self.calls.iter().any(|c| c.target == Target::Output(o))
            || self.copies.iter().any(|&(s, _)| s == o)
    }

    /// Whether the kernel writes outputs with non-temporal stores (and must fence them
    /// before it returns).
    pub fn streams(&self) -> bool {
        !self.copies.is_empty() || self.calls.iter().any(|c| c.stream)
    }

    /// The host functions the kernel's code calls: its library functions, and the strip
    /// copy and the fence when it streams.
    pub fn helpers(&self) -> impl Iterator<Item = Helper> + '_ {
        let copies = (!self.copies.is_empty()).then_some(Helper::StreamStrip);
        let fence = self.streams().then_some(Helper::StoreFence);
        let mut calls: Vec<Helper> = self.calls.iter().map(Call::helper).collect();
        calls.sort_unstable();
        calls.dedup();
        calls.into_iter().chain(copies).chain(fence)
    }

    /// The values stage `t`'s loop stores to strip buffers (for later calls and stages).
    fn stored_by(&self, t: usize) -> impl Iterator<Item = SlotId> + '_ {
        self.materialized
            .iter()
            .copied()
            .filter(move |&k| self.stage[k] == t)
    }

    /// Whether stage `t` reads slot `k` from a buffer (or an output): a call of an earlier or
    /// the same stage, or a value stored by an earlier stage.
    fn read_at(&self, k: SlotId, t: usize) -> bool {
        self.buffer[k].is_some() && self.stage[k] < t
            || self.calls.iter().any(|c| c.slot == k && self.stage[k] <= t)
    }

    /// Which slots stage `t`'s loop must compute to produce `roots`: their operands, back
    /// to the invariants and to what it reads from buffers.
    fn needed(&self, plan: &KernelPlan, roots: &[SlotId], t: usize) -> Vec<bool> {
        let mut need = vec![false; plan.slots.len()];
        let mut stack: Vec<SlotId> = roots.to_vec();
        while let Some(k) = stack.pop() {
            if need[k] || plan.slots[k].invariant {
                continue;
            }
            need[k] = true;
            if !self.read_at(k, t) {
                stack.extend(self.library.inputs(plan, k));
            }
        }
        need
    }
}

/// Computed values a later stage would compute again, of more than [`RECOMPUTE`] operations:
/// 4-byte (`f32`, `i32`) values used by a slot of a later stage, or outputs of an earlier
/// stage than the last. Cheaper values (and `bool`s) are recomputed where needed.
fn spills(plan: &KernelPlan, library: &LibraryCalls, stage: &[usize], last: usize) -> Vec<SlotId> {
    let n = plan.slots.len();
    let computing = |k: SlotId| {
        let s = &plan.slots[k];
        !s.invariant
            && library.get(k).is_none()
            && !library.inside(k)
            && !matches!(s.op, SlotOp::Load { .. } | SlotOp::Const(_))
    };
    // The operations a stage repeats to compute each value: its own and its operands', back
    // to loads, constants, invariants and calls (an upper bound where operands share some).
    let mut cost = vec![0usize; n];
    for k in 0..n {
        if computing(k) {
            cost[k] = library
                .inputs(plan, k)
                .into_iter()
                .map(|a| cost[a])
                .fold(1usize, usize::saturating_add);
        }
    }
    let mut later = vec![false; n];
    for k in 0..n {
        for a in library.inputs(plan, k) {
            if stage[k] > stage[a] {
                later[a] = true;
            }
        }
    }
    for &(s, _) in &plan.outputs {
        if stage[s] < last {
            later[s] = true;
        }
    }
    (0..n)
        .filter(|&k| {
            later[k]
                && computing(k)
                && cost[k] > RECOMPUTE
                && matches!(plan.slots[k].ty, ElementType::F32 | ElementType::I32)
        })
        .collect()
}

/// Emits the strip loop of a strip-mined kernel over `begin..end` (`begin < end`), from the
/// preheader; it leaves to `exit`.
///
/// # Errors
/// [`JitError::Codegen`] if an op cannot be lowered or a library function was not imported.
pub fn loops(
    b: &mut FunctionBuilder,
    fr: &Frame,
    sp: &StripPlan,
    (begin, end): (Value, Value),
    exit: Block,
) -> Result<(), JitError> {
    let plan = fr.plan;
    let ptr = fr.ptr;
    let strip_bytes = sp.strip * 4;
    // One stack slot holds every buffer (none for a kernel whose calls read inputs and
    // write outputs only).
    let mut buffers = Vec::with_capacity(sp.buffers);
    if sp.buffers > 0 {
        let size = u32::try_from(strip_bytes * sp.buffers)
            .map_err(|_| codegen(plan, "strip buffers too large"))?;
        let slot =
            b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, size, 6));
        for k in 0..sp.buffers {
            buffers.push(b.ins().stack_addr(ptr, slot, (k * strip_bytes) as i32));
        }
    }
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

    let last = sp.last;
    for t in 0..=last {
        if t > 0 {
            for c in sp.calls.iter().filter(|c| sp.stage[c.slot] == t) {
                b.set_srcloc(slot_srcloc(c.slot));
                let at_strip = |b: &mut FunctionBuilder, base: Value| b.ins().iadd(base, offset);
                let mut args = Vec::with_capacity(c.sources.len() + 2);
                for &(_, source) in &c.sources {
                    args.push(match source {
                        Source::Buffer(buf) => buffers[buf],
                        Source::Input(arg) => at_strip(b, arg_ptr(fr, arg)?),
                        Source::Output(o) => at_strip(b, fr.outs[o]),
                    });
                }
                args.push(match c.target {
                    Target::Buffer(buf) => buffers[buf],
                    Target::Output(o) => at_strip(b, fr.outs[o]),
                });
                args.push(len);
                for &bits in &c.params[..c.function.params()] {
                    args.push(b.ins().f32const(Ieee32::with_bits(bits)));
                }
                let f = fr.helpers.get(c.helper(), &plan.name)?;
                b.ins().call(f, &args);
                b.set_srcloc(SourceLoc::default());
            }
        }
        let mut stores: Vec<(SlotId, Value, ElementType)> = sp
            .stored_by(t)
            .map(|a| {
                let base = buffer_of(a).ok_or_else(|| codegen(plan, "value buffer"))?;
                Ok((a, base, plan.slots[a].ty))
            })
            .collect::<Result<_, JitError>>()?;
        if t == last {
            stores.extend(
                plan.outputs
                    .iter()
                    .zip(&fr.outs)
                    .enumerate()
                    .filter(|&(o, _)| !sp.writes_output(o))
                    .map(|(_, (&(slot, ty), &base))| (slot, base, ty)),
            );
        }
        if stores.is_empty() {
            continue;
        }
        let roots: Vec<SlotId> = stores.iter().map(|&(k, _, _)| k).collect();
        let mut reads = vec![None; plan.slots.len()];
        for k in sp.materialized.iter().copied().filter(|&k| sp.stage[k] < t) {
            reads[k] = buffer_of(k);
        }
        for c in sp.calls.iter().filter(|c| sp.stage[c.slot] <= t) {
            reads[c.slot] = match c.target {
                Target::Buffer(_) => buffer_of(c.slot),
                // Element i of an output is at out + 4·i already.
                Target::Output(o) => Some(fr.outs[o]),
            };
        }
        let body = Body {
            compute: sp.needed(plan, &roots, t),
            reads,
            stores,
        };
        let next = b.create_block();
        vector_loops(b, fr, &body, (s, e), next)?;
        b.switch_to_block(next);
    }
    if !sp.copies.is_empty() {
        let f = fr.helpers.get(Helper::StreamStrip, &plan.name)?;
        for &(o, buf) in &sp.copies {
            let dst = b.ins().iadd(fr.outs[o], offset);
            b.ins().call(f, &[buffers[buf], dst, len]);
        }
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
