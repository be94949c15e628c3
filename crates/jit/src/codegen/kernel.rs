//! The loop structure and calling convention of a fused kernel.
//!
//! Every kernel is one Cranelift function with the range ABI
//!
//! ```text
//! unsafe extern "C" fn(inputs: *const *const u8, outputs: *const *mut u8, begin: usize, end: usize)
//! ```
//!
//! that computes elements `begin..end` of its iteration space (nothing if `begin >= end`).
//! `inputs` holds one pointer per live-in, then one per hidden constant buffer; `outputs` one
//! per kernel output. Loads and stores are `notrap` and never `aligned`: buffers may be
//! unaligned.
//!
//! Vector kernels of `n` lanes ([`Lanes::X4`]: `n = 4`, [`Lanes::X2`]: `n = 2`) run
//! 1. a preheader: buffer pointers, constants and every loop-invariant slot (splat loads and
//!    what is computed from them) — Cranelift does not hoist, so this is done here;
//! 2. a main loop over `2n` elements per trip (two vector bodies: unrolled 2×), entered
//!    only with a full trip left and tested at the bottom (one branch per trip);
//! 3. a tail loop over the last 1 to `2n − 1` elements, `n` per trip, that runs **the same
//!    vector body** on lanes whose indices are `i + min(lane, r − 1)` (`r` elements left):
//!    the extra lanes of the last trip recompute the last element, and the lanes are stored
//!    back to those same indices, so the tail computes exactly what full vectors compute and
//!    never touches memory outside `begin..end`. (A separate `n`-element body for the first
//!    tail trip would be a fourth copy of the body: a quarter more code to compile, for one
//!    vector per call.)
//!
//! Mixed-width kernels ([`Lanes::Mixed`], `n = 4`) run the same loops; a body computes each
//! 32-bit value as one `X4` vector and each 64-bit value as two `X2` vectors (elements
//! `i..i+2` and `i+2..i+4`; in the tail, lanes `0..2` and `2..4` of the index list), see
//! [`super::mixed`]. A kernel at the scalar width [`Lanes::X1`] runs one element per trip;
//! [`Lanes::for_types`] never picks it, [`crate::JitKernel::compile_scalar`] does.
//!
//! A vector kernel that calls the vector math library ([`super::strip`]) runs these loops
//! once per stage of each strip of elements, each time computing only what that stage
//! stores ([`Body`]).

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, BlockArg, ConstantData, InstBuilder, Signature, SourceLoc, Type, Value,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::FunctionBuilder;
use graphlift_ir::ElementType;
use smallvec::{smallvec, SmallVec};

use super::broadcast::Addressing;
use super::divide::ConstDivisor;
use super::lanes::{cast_flags, data_flags, Emit, Lanes};
use super::lower::{bool_to_mask_lane, lower, HelperRefs};
use super::mixed::{convert_across, forms, parts, reform};
use super::plan::{KernelPlan, SlotId, SlotOp};
use super::strip::{self, StripPlan};
use crate::helpers::Helper;
use crate::provenance::slot_srcloc;
use crate::JitError;

/// Vector bodies per trip of the main loop of a vector kernel (a trip covers
/// `UNROLL * lanes` elements).
pub(crate) const UNROLL: usize = 2;

/// The kernel signature: `(inputs, outputs, begin, end)`, all pointer-sized, no results,
/// in the platform's C calling convention.
pub(crate) fn kernel_signature(ptr: Type, call_conv: CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    for _ in 0..4 {
        sig.params.push(AbiParam::new(ptr));
    }
    sig
}

/// Where a body reads and writes.
#[derive(Clone, Copy)]
enum At<'a> {
    /// A full vector at element `i`.
    Vector(Value),
    /// The tail: lane `l` is element `idx[l]` (one index per lane).
    Tail(&'a [Value]),
    /// One element `i`.
    Scalar(Value),
}

/// A slot's value: one vector (or scalar), or the parts of a 64-bit value in a mixed loop.
type Parts = Vec<Value>;

/// What the loops of one kernel share: its plan, the pointers and invariants of the
/// preheader.
pub(super) struct Frame<'p> {
    pub plan: &'p KernelPlan,
    pub helpers: &'p HelperRefs,
    pub ptr: Type,
    /// Input buffer pointers (None for unused inputs).
    args: Vec<Option<Value>>,
    /// Output buffer pointers.
    pub outs: Vec<Value>,
    /// The width each slot's value is computed at ([`forms`]).
    forms: Vec<Lanes>,
    /// Invariant slot values, computed in the preheader.
    invariants: Vec<Option<Parts>>,
}

/// Builds the kernel's function body into `b` (whose signature is [`kernel_signature`]),
/// strip-mined by `strips` when the plan has one ([`StripPlan::of`]).
///
/// # Errors
/// [`JitError::Codegen`] if an op cannot be lowered.
pub(crate) fn build(
    b: &mut FunctionBuilder,
    plan: &KernelPlan,
    strips: Option<&StripPlan>,
    helpers: &HelperRefs,
    ptr: Type,
) -> Result<(), JitError> {
    if let Some(s) = plan.slots.iter().find(|s| !plan.lanes.holds(s.ty)) {
        return Err(JitError::Codegen {
            kernel: plan.name.clone(),
            message: format!(
                "node `{}`: {} values in a {:?} kernel",
                s.node, s.ty, plan.lanes
            ),
        });
    }
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (inputs, outputs, begin, end) = (params[0], params[1], params[2], params[3]);
    let pre = b.create_block();
    let exit = b.create_block();
    let nonempty = b.ins().icmp(IntCC::UnsignedLessThan, begin, end);
    b.ins().brif(nonempty, pre, &[], exit, &[]);

    // Preheader: pointers and invariants.
    b.switch_to_block(pre);
    let mut used = vec![false; plan.args.len()];
    for s in &plan.slots {
        if let SlotOp::Load { arg, .. } = s.op {
            used[arg] = true;
        }
    }
    let pointer = |b: &mut FunctionBuilder, table: Value, k: usize| {
        let offset = (k as i64).wrapping_mul(i64::from(ptr.bytes()));
        let addr = b.ins().iadd_imm_s(table, offset);
        b.ins().load(ptr, data_flags(), addr, 0)
    };
    let args: Vec<Option<Value>> = used
        .iter()
        .enumerate()
        .map(|(k, &u)| u.then(|| pointer(b, inputs, k)))
        .collect();
    let outs: Vec<Value> = (0..plan.outputs.len())
        .map(|k| pointer(b, outputs, k))
        .collect();
    let mut fr = Frame {
        plan,
        helpers,
        ptr,
        args,
        outs,
        forms: forms(plan),
        invariants: vec![None; plan.slots.len()],
    };
    emit_invariants(b, &mut fr)?;

    let mut fence = false;
    match (plan.lanes, strips) {
        (Lanes::X4 | Lanes::X2 | Lanes::Mixed, Some(strips)) => {
            fence = strips.streams();
            strip::loops(b, &fr, strips, (begin, end), exit)?
        }
        (Lanes::X4 | Lanes::X2 | Lanes::Mixed, None) => {
            vector_loops(b, &fr, &Body::whole(&fr), (begin, end), exit)?
        }
        (Lanes::X1, _) => {
            let whole = Body::whole(&fr);
            let body = b.create_block();
            let i = b.append_block_param(body, ptr);
            b.ins().jump(body, &[BlockArg::Value(begin)]);
            b.switch_to_block(body);
            emit_body(b, &fr, &whole, At::Scalar(i))?;
            let next = b.ins().iadd_imm_s(i, 1);
            let more = b.ins().icmp(IntCC::UnsignedLessThan, next, end);
            b.ins()
                .brif(more, body, &[BlockArg::Value(next)], exit, &[]);
        }
    }
    b.switch_to_block(exit);
    if fence {
        let f = helpers.get(Helper::StoreFence, &plan.name)?;
        b.ins().call(f, &[]);
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    Ok(())
}

/// Emits the main and tail loops of `body` over elements `begin..end` (`begin < end`), from
/// the current block; they leave to `exit`.
pub(super) fn vector_loops(
    b: &mut FunctionBuilder,
    fr: &Frame,
    body: &Body,
    (begin, end): (Value, Value),
    exit: Block,
) -> Result<(), JitError> {
    let ptr = fr.ptr;
    let n = fr.plan.lanes.count() as i64;
    let step = n * UNROLL as i64;
    let main_body = b.create_block();
    let tail_head = b.create_block();
    let tail = b.create_block();
    let arg = |v: Value| [BlockArg::Value(v)];
    // The main loop tests at the bottom (one branch per trip): enter it only with a full
    // trip's elements left.
    let full_trip = |b: &mut FunctionBuilder, i: Value| {
        let rem = b.ins().isub(end, i);
        b.ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, rem, step)
    };
    let full = full_trip(b, begin);
    b.ins()
        .brif(full, main_body, &arg(begin), tail_head, &arg(begin));

    b.switch_to_block(main_body);
    let i = b.append_block_param(main_body, ptr);
    for u in 0..UNROLL {
        let iu = b.ins().iadd_imm_s(i, n * u as i64);
        emit_body(b, fr, body, At::Vector(iu))?;
    }
    let next = b.ins().iadd_imm_s(i, step);
    let full = full_trip(b, next);
    b.ins()
        .brif(full, main_body, &arg(next), tail_head, &arg(next));

    b.switch_to_block(tail_head);
    let i = b.append_block_param(tail_head, ptr);
    let some = b.ins().icmp(IntCC::UnsignedLessThan, i, end);
    b.ins().brif(some, tail, &arg(i), exit, &[]);

    b.switch_to_block(tail);
    let i = b.append_block_param(tail, ptr);
    let rem = b.ins().isub(end, i);
    let last = b.ins().iadd_imm_s(rem, -1);
    let mut idx = vec![i; n as usize];
    for (l, slot) in idx.iter_mut().enumerate().skip(1) {
        let l = b.ins().iconst(ptr, l as i64);
        let off = b.ins().umin(l, last);
        *slot = b.ins().iadd(i, off);
    }
    emit_body(b, fr, body, At::Tail(&idx))?;
    let next = b.ins().iadd_imm_s(i, n);
    b.ins().jump(tail_head, &arg(next));
    Ok(())
}

/// Emits every invariant slot in the current (preheader) block.
fn emit_invariants(b: &mut FunctionBuilder, fr: &mut Frame) -> Result<(), JitError> {
    let lanes = fr.plan.lanes;
    for (k, slot) in fr.plan.slots.iter().enumerate() {
        if !slot.invariant {
            continue;
        }
        b.set_srcloc(slot_srcloc(k));
        let form = fr.forms[k];
        let n = parts(lanes, form);
        let v = match &slot.op {
            SlotOp::Const(bits) => vec![Emit::new(b, form).constant(slot.ty, *bits); n],
            SlotOp::Load { arg, .. } => {
                let base = arg_ptr(fr, *arg)?;
                let zero = b.ins().iconst(fr.ptr, 0);
                let x = scalar_load(b, base, zero, slot.ty);
                let v = match form {
                    Lanes::X1 => x,
                    Lanes::X4 | Lanes::X2 | Lanes::Mixed => {
                        let mut e = Emit::new(b, form);
                        let ty = e.ty(slot.ty);
                        let lane = if slot.ty == ElementType::Bool {
                            bool_to_mask_lane(&mut e, x)
                        } else {
                            x
                        };
                        e.b.ins().splat(ty, lane)
                    }
                };
                vec![v; n]
            }
            _ => lower_slot(b, fr, k, &fr.invariants)?,
        };
        fr.invariants[k] = Some(v);
    }
    b.set_srcloc(SourceLoc::default());
    Ok(())
}

/// Lowers the computing slot `k` on the values `vals` of earlier slots: part by part at the
/// slot's form, with `bool` operands moved to that form, or by [`convert_across`].
fn lower_slot(
    b: &mut FunctionBuilder,
    fr: &Frame,
    k: usize,
    vals: &[Option<Parts>],
) -> Result<Parts, JitError> {
    let plan = fr.plan;
    let slot = &plan.slots[k];
    let form = fr.forms[k];
    let value = |s: usize| vals[s].as_ref().ok_or_else(|| missing(plan, s));
    if let SlotOp::Convert(a) = slot.op {
        if fr.forms[a] != form && plan.slots[a].ty != ElementType::Bool {
            return convert_across(b, plan.slots[a].ty, slot.ty, value(a)?).ok_or_else(|| {
                JitError::Codegen {
                    kernel: plan.name.clone(),
                    message: format!(
                        "node `{}`: no conversion from {} to {} across widths",
                        slot.node, plan.slots[a].ty, slot.ty
                    ),
                }
            });
        }
    }
    // Numbers are at their own width (their form); masks are moved to the slot's.
    let ins = operands(&slot.op)
        .into_iter()
        .map(|s| {
            let v = value(s)?;
            Ok(if plan.slots[s].ty == ElementType::Bool {
                reform(b, v, fr.forms[s], form)
            } else {
                v.clone()
            })
        })
        .collect::<Result<Vec<Parts>, JitError>>()?;
    (0..parts(plan.lanes, form))
        .map(|p| {
            let args = ins
                .iter()
                .map(|v| v.get(p).copied().ok_or_else(|| missing(plan, k)))
                .collect::<Result<Vec<Value>, JitError>>()?;
            lower(
                &mut Emit::new(b, form),
                fr.helpers,
                slot,
                &plan.slots,
                &args,
            )
            .map_err(|e| named(e, plan))
        })
        .collect()
}

/// Where part `p` of a value of form `form` is read or written, for a body at `at`.
fn part_at<'a>(b: &mut FunctionBuilder, at: At<'a>, p: usize, form: Lanes) -> At<'a> {
    let n = form.count();
    match at {
        At::Vector(i) if p > 0 => At::Vector(b.ins().iadd_imm_s(i, (p * n) as i64)),
        At::Tail(idx) => At::Tail(idx.get(p * n..(p + 1) * n).unwrap_or(idx)),
        other => other,
    }
}

/// What one loop body computes, reads from strip buffers and stores.
pub(super) struct Body {
    /// Slots the body computes (loads, constants, ops); the others are invariant, read
    /// from a strip buffer, or not needed here.
    pub compute: Vec<bool>,
    /// Slots read from a strip buffer: the buffer's base, biased so that element `i` of the
    /// iteration space is at `base + i·4` (4-byte values only: `f32`, `i32`).
    pub reads: Vec<Option<Value>>,
    /// What is stored, in order: slot, buffer base (element `i` at `base + i·size`), and
    /// element type.
    pub stores: Vec<(SlotId, Value, ElementType)>,
}

impl Body {
    /// The whole kernel: every slot computed, every output stored.
    pub(super) fn whole(fr: &Frame) -> Body {
        let n = fr.plan.slots.len();
        Body {
            compute: vec![true; n],
            reads: vec![None; n],
            stores: (fr.plan.outputs.iter().zip(&fr.outs))
                .map(|(&(s, ty), &base)| (s, base, ty))
                .collect(),
        }
    }
}

/// Emits one body instance (loads, ops, stores) at `at`.
fn emit_body(b: &mut FunctionBuilder, fr: &Frame, body: &Body, at: At) -> Result<(), JitError> {
    let plan = fr.plan;
    let mut vals = fr.invariants.clone();
    for (k, slot) in plan.slots.iter().enumerate() {
        if vals[k].is_some() {
            continue;
        }
        b.set_srcloc(slot_srcloc(k));
        let form = fr.forms[k];
        let v = match (&slot.op, body.reads[k]) {
            (_, Some(base)) => {
                vec![load(
                    b,
                    base,
                    &Addressing::Contiguous,
                    slot.ty,
                    at,
                    form,
                    plan.count,
                )]
            }
            _ if !body.compute[k] => continue,
            (SlotOp::Load { arg, addressing }, None) => {
                let base = arg_ptr(fr, *arg)?;
                (0..parts(plan.lanes, form))
                    .map(|p| {
                        let at = part_at(b, at, p, form);
                        load(b, base, addressing, slot.ty, at, form, fr.plan.count)
                    })
                    .collect()
            }
            (SlotOp::Const(bits), None) => {
                let v = Emit::new(b, form).constant(slot.ty, *bits);
                vec![v; parts(plan.lanes, form)]
            }
            _ => lower_slot(b, fr, k, &vals)?,
        };
        vals[k] = Some(v);
    }
    for &(s, base, ty) in &body.stores {
        let v = vals[s].as_ref().ok_or_else(|| missing(plan, s))?;
        b.set_srcloc(slot_srcloc(s));
        let form = fr.forms[s];
        for (p, &x) in v.iter().enumerate() {
            let at = part_at(b, at, p, form);
            store(b, base, x, ty, at, form);
        }
    }
    b.set_srcloc(SourceLoc::default());
    Ok(())
}

/// The slots `op` reads.
pub(super) fn operands(op: &SlotOp) -> SmallVec<[SlotId; 3]> {
    match op {
        SlotOp::Load { .. } | SlotOp::Const(_) => SmallVec::new(),
        SlotOp::Unary(_, a) | SlotOp::Convert(a) => smallvec![*a],
        SlotOp::Binary(_, a, b) | SlotOp::Compare(_, a, b) => smallvec![*a, *b],
        SlotOp::Select(c, a, b) => smallvec![*c, *a, *b],
    }
}

pub(super) fn arg_ptr(fr: &Frame, arg: usize) -> Result<Value, JitError> {
    fr.args
        .get(arg)
        .copied()
        .flatten()
        .ok_or_else(|| JitError::Codegen {
            kernel: fr.plan.name.clone(),
            message: format!("input {arg} has no pointer"),
        })
}

fn missing(plan: &KernelPlan, s: usize) -> JitError {
    JitError::Codegen {
        kernel: plan.name.clone(),
        message: format!("slot {s} used before it is computed"),
    }
}

fn named(e: JitError, plan: &KernelPlan) -> JitError {
    match e {
        JitError::Codegen { message, .. } => JitError::Codegen {
            kernel: plan.name.clone(),
            message,
        },
        other => other,
    }
}

/// log2 of the element size in bytes.
fn size_shift(t: ElementType) -> i64 {
    match t {
        ElementType::Bool => 0,
        ElementType::F32 | ElementType::I32 => 2,
        ElementType::F64 | ElementType::I64 => 3,
    }
}

fn element_addr(b: &mut FunctionBuilder, base: Value, index: Value, t: ElementType) -> Value {
    let off = b.ins().ishl_imm_u(index, size_shift(t));
    b.ins().iadd(base, off)
}

/// One element, as a scalar (`bool` as `I8`).
fn scalar_load(b: &mut FunctionBuilder, base: Value, index: Value, t: ElementType) -> Value {
    let addr = element_addr(b, base, index, t);
    let ty = Emit::new(b, Lanes::X1).ty(t);
    b.ins().load(ty, data_flags(), addr, 0)
}

/// The source index of element `i < count` under `addressing` (pointer-sized integers).
fn source_index(b: &mut FunctionBuilder, addressing: &Addressing, i: Value, count: usize) -> Value {
    match addressing {
        Addressing::Contiguous => i,
        Addressing::Splat => {
            let ty = b.func.dfg.value_type(i);
            b.ins().iconst(ty, 0)
        }
        Addressing::Row { len } => ConstDivisor::new(*len, count).remainder(b, i),
        Addressing::General { terms } => {
            let ty = b.func.dfg.value_type(i);
            let mut acc: Option<Value> = None;
            for t in terms {
                let mut q = i;
                if t.div != 1 {
                    q = ConstDivisor::new(t.div, count).quotient(b, q);
                }
                if t.modulo != 0 {
                    q = ConstDivisor::new(t.modulo, count).remainder(b, q);
                }
                if t.stride != 1 {
                    let s = b.ins().iconst(ty, t.stride as i64);
                    q = b.ins().imul(q, s);
                }
                acc = Some(match acc {
                    None => q,
                    Some(a) => b.ins().iadd(a, q),
                });
            }
            acc.unwrap_or_else(|| b.ins().iconst(ty, 0))
        }
    }
}

fn load(
    b: &mut FunctionBuilder,
    base: Value,
    addressing: &Addressing,
    t: ElementType,
    at: At,
    lanes: Lanes,
    count: usize,
) -> Value {
    match at {
        At::Scalar(i) => {
            let j = source_index(b, addressing, i, count);
            scalar_load(b, base, j, t)
        }
        At::Tail(idx) => {
            let js: Vec<Value> = idx
                .iter()
                .map(|&x| source_index(b, addressing, x, count))
                .collect();
            gather(b, base, &js, t, lanes)
        }
        At::Vector(i) => match addressing {
            Addressing::Contiguous => vector_load(b, base, i, t, lanes),
            Addressing::Row { len } if *len >= lanes.count() => {
                row_load(b, base, i, (*len, count), t, lanes)
            }
            Addressing::General { terms }
                if terms.last().is_some_and(|t| t.div >= lanes.count()) =>
            {
                let run = terms.last().map_or(1, |t| t.div);
                run_load(b, base, addressing, (run, count), i, t, lanes)
            }
            _ => {
                let js: Vec<Value> = (0..lanes.count() as i64)
                    .map(|l| {
                        let x = if l == 0 { i } else { b.ins().iadd_imm_s(i, l) };
                        source_index(b, addressing, x, count)
                    })
                    .collect();
                gather(b, base, &js, t, lanes)
            }
        },
    }
}

/// One vector of consecutive elements (`bool`: one byte per lane, widened to a mask).
fn vector_load(
    b: &mut FunctionBuilder,
    base: Value,
    i: Value,
    t: ElementType,
    lanes: Lanes,
) -> Value {
    let addr = element_addr(b, base, i, t);
    let ty = Emit::new(b, lanes).ty(t);
    match t {
        ElementType::Bool => {
            // The lanes' bytes as one integer (`I32` / `I16`), in lane 0 of a vector of
            // that integer, then sign-widened (0 and 1 stay 0 and 1) to the mask's lanes.
            let (word_ty, word_vec) = packed_bool_types(lanes);
            let word = b.ins().load(word_ty, data_flags(), addr, 0);
            let v = b.ins().scalar_to_vector(word_vec, word);
            let mut v = b.ins().bitcast(types::I8X16, cast_flags(), v);
            while b.func.dfg.value_type(v).lane_bits() < ty.lane_bits() {
                v = b.ins().swiden_low(v);
            }
            to_mask(b, v)
        }
        _ => b.ins().load(ty, data_flags(), addr, 0),
    }
}

/// Integer vector lanes holding 0/1 to a mask of the same type.
fn to_mask(b: &mut FunctionBuilder, words: Value) -> Value {
    let ty = b.func.dfg.value_type(words);
    let zero = b.ins().iconst(ty.lane_type(), 0);
    let zero = b.ins().splat(ty, zero);
    b.ins().icmp(IntCC::NotEqual, words, zero)
}

/// One vector of elements at arbitrary indices (`js`: one per lane).
fn gather(
    b: &mut FunctionBuilder,
    base: Value,
    js: &[Value],
    t: ElementType,
    lanes: Lanes,
) -> Value {
    let vec_ty = Emit::new(b, lanes).ty(t);
    let mut acc: Option<Value> = None;
    for (l, &j) in js.iter().enumerate() {
        let mut x = scalar_load(b, base, j, t);
        if t == ElementType::Bool {
            x = b.ins().uextend(vec_ty.lane_type(), x);
        }
        acc = Some(match acc {
            None => b.ins().scalar_to_vector(vec_ty, x),
            Some(v) => b.ins().insertlane(v, x, l as u8),
        });
    }
    let v = acc.unwrap_or_else(|| b.ins().iconst(types::I32, 0));
    if t == ElementType::Bool {
        to_mask(b, v)
    } else {
        v
    }
}

/// `fast` when `offset <= limit` (unsigned), else `slow`: a diamond of blocks that yields
/// the taken side's vector of type `vec_ty`.
fn split_load(
    b: &mut FunctionBuilder,
    offset: Value,
    limit: usize,
    vec_ty: Type,
    fast: impl FnOnce(&mut FunctionBuilder) -> Value,
    slow: impl FnOnce(&mut FunctionBuilder) -> Value,
) -> Value {
    let fits = b
        .ins()
        .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, offset, limit as i64);
    let fast_block = b.create_block();
    let slow_block = b.create_block();
    let merge = b.create_block();
    let v = b.append_block_param(merge, vec_ty);
    b.ins().brif(fits, fast_block, &[], slow_block, &[]);
    b.switch_to_block(fast_block);
    let x = fast(b);
    b.ins().jump(merge, &[BlockArg::Value(x)]);
    b.switch_to_block(slow_block);
    let x = slow(b);
    b.ins().jump(merge, &[BlockArg::Value(x)]);
    b.switch_to_block(merge);
    v
}

/// A row-vector load `b[(i + l) mod len]`, `len >= lanes`, for `i < count`: one vector
/// load when the lanes do not wrap, else a gather.
fn row_load(
    b: &mut FunctionBuilder,
    base: Value,
    i: Value,
    (len, count): (usize, usize),
    t: ElementType,
    lanes: Lanes,
) -> Value {
    let n = lanes.count();
    let vec_ty = Emit::new(b, lanes).ty(t);
    let ptr = b.func.dfg.value_type(i);
    let k = b.ins().iconst(ptr, len as i64);
    let j = ConstDivisor::new(len, count).remainder(b, i);
    split_load(
        b,
        j,
        len - n,
        vec_ty,
        |b| vector_load(b, base, j, t, lanes),
        |b| {
            let js: Vec<Value> = (0..n as i64)
                .map(|l| {
                    if l == 0 {
                        return j;
                    }
                    let jl = b.ins().iadd_imm_s(j, l);
                    let wrapped = b.ins().isub(jl, k);
                    let over = b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, jl, k);
                    b.ins().select(over, wrapped, jl)
                })
                .collect();
            gather(b, base, &js, t, lanes)
        },
    )
}

/// A load under a general addressing whose innermost axis group repeats (column vectors
/// `c[M, 1]`, channels `[C, 1, 1]`): the source index is constant over runs of `run` (the
/// innermost kept group's `div`, at least `lanes`) consecutive elements, so when the
/// vector's lanes lie in one run, one scalar load splat to every lane; else a gather. For
/// `i < count`.
fn run_load(
    b: &mut FunctionBuilder,
    base: Value,
    addressing: &Addressing,
    (run, count): (usize, usize),
    i: Value,
    t: ElementType,
    lanes: Lanes,
) -> Value {
    let n = lanes.count();
    let vec_ty = Emit::new(b, lanes).ty(t);
    let r = ConstDivisor::new(run, count).remainder(b, i);
    split_load(
        b,
        r,
        run - n,
        vec_ty,
        |b| {
            let j = source_index(b, addressing, i, count);
            if t == ElementType::Bool {
                // Through the gather's bool widening, with every lane at `j`.
                gather(b, base, &vec![j; n], t, lanes)
            } else {
                let x = scalar_load(b, base, j, t);
                b.ins().splat(vec_ty, x)
            }
        },
        |b| {
            let js: Vec<Value> = (0..n as i64)
                .map(|l| {
                    let x = if l == 0 { i } else { b.ins().iadd_imm_s(i, l) };
                    source_index(b, addressing, x, count)
                })
                .collect();
            gather(b, base, &js, t, lanes)
        },
    )
}

fn store(b: &mut FunctionBuilder, base: Value, v: Value, t: ElementType, at: At, lanes: Lanes) {
    match at {
        At::Scalar(i) => {
            let addr = element_addr(b, base, i, t);
            b.ins().store(data_flags(), v, addr, 0);
        }
        At::Vector(i) => {
            let addr = element_addr(b, base, i, t);
            let x = if t == ElementType::Bool {
                mask_bytes(b, v, lanes)
            } else {
                v
            };
            b.ins().store(data_flags(), x, addr, 0);
        }
        At::Tail(idx) => {
            for (l, &j) in idx.iter().enumerate() {
                let mut x = b.ins().extractlane(v, l as u8);
                if t == ElementType::Bool {
                    let bit = b.ins().band_imm_u(x, 1);
                    x = b.ins().ireduce(types::I8, bit);
                }
                let addr = element_addr(b, base, j, t);
                b.ins().store(data_flags(), x, addr, 0);
            }
        }
    }
}

/// A mask's lanes as one 0/1 byte each, packed into one integer (`I32` for four lanes,
/// `I16` for two): the low byte of each lane after a shift by `lane bits − 1`, gathered to
/// the front by one byte shuffle.
fn mask_bytes(b: &mut FunctionBuilder, mask: Value, lanes: Lanes) -> Value {
    let ty = b.func.dfg.value_type(mask);
    let lane_bytes = ty.lane_bits() / 8;
    let ones = b.ins().ushr_imm_u(mask, i64::from(ty.lane_bits() - 1));
    let bytes = b.ins().bitcast(types::I8X16, cast_flags(), ones);
    let picks: Vec<u8> = (0..16)
        .map(|k| {
            if k < lanes.count() as u32 {
                (k * lane_bytes) as u8
            } else {
                0
            }
        })
        .collect();
    let picks = b.func.dfg.immediates.push(ConstantData::from(picks));
    let packed = b.ins().shuffle(bytes, bytes, picks);
    let (_, words) = packed_bool_types(lanes);
    let words = b.ins().bitcast(words, cast_flags(), packed);
    b.ins().extractlane(words, 0)
}

/// The integer holding one `bool` byte per lane of a vector of `lanes` (`I32` for four
/// lanes, `I16` for two), and the vector type with that integer as its lane.
fn packed_bool_types(lanes: Lanes) -> (Type, Type) {
    match lanes {
        Lanes::X2 => (types::I16, types::I16X8),
        Lanes::X4 | Lanes::X1 | Lanes::Mixed => (types::I32, types::I32X4),
    }
}
