//! The loops a kernel's body runs in: the preheader with its invariants, the unrolled
//! main loop and the tail loop that runs the same vector body ([`crate::kernel`] has the
//! structure), and the lowering of each slot of a [`Body`] at a place ([`At`]).

use super::broadcast::Addressing;
use super::lanes::{Emit, Lanes};
use super::lower::{bool_to_mask_lane, demote_helper, lower, HelperRefs};
use super::mixed::{convert_across, parts, reform};
use super::plan::{KernelPlan, SlotId, SlotOp};
use super::storage::to_storage;
use crate::access::*;
use crate::helpers::Helper;
use crate::plan::operands;
use crate::provenance::slot_srcloc;
use crate::JitError;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, BlockArg, InstBuilder, SourceLoc, Type, Value};
use cranelift_frontend::FunctionBuilder;
use graphlift_ir::ElementType;

/// Vector bodies per trip of the main loop of a vector kernel (a trip covers
/// `UNROLL * lanes` elements).
pub const UNROLL: usize = 2;

/// What the loops of one kernel share: its plan, the pointers and invariants of the
/// preheader.
pub struct Frame<'p> {
    /// The kernel's plan.
    pub plan: &'p KernelPlan,
    /// The host helpers declared in the function.
    pub helpers: &'p HelperRefs,
    /// The pointer type of the target.
    pub ptr: Type,
    /// Input buffer pointers (None for unused inputs).
    pub args: Vec<Option<Value>>,
    /// Output buffer pointers.
    pub outs: Vec<Value>,
    /// The width each slot's value is computed at (`forms`).
    pub forms: Vec<Lanes>,
    /// Invariant slot values, computed in the preheader.
    pub invariants: Vec<Option<Parts>>,
}

/// Emits the main and tail loops of `body` over elements `begin..end` (`begin < end`), from
/// the current block; they leave to `exit`.
pub fn vector_loops(
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
pub fn emit_invariants(b: &mut FunctionBuilder, fr: &mut Frame) -> Result<(), JitError> {
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
                let x = scalar_load(b, base, zero, slot.storage);
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
/// slot's form, with `bool` operands moved to that form, or by [`convert_across`]; a result
/// of a storage type is brought to that type's values ([`to_storage`]).
pub fn lower_slot(
    b: &mut FunctionBuilder,
    fr: &Frame,
    k: usize,
    vals: &[Option<Parts>],
) -> Result<Parts, JitError> {
    let plan = fr.plan;
    let slot = &plan.slots[k];
    let form = fr.forms[k];
    let value = |s: usize| vals[s].as_ref().ok_or_else(|| missing(plan, s));
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
    let across = match slot.op {
        SlotOp::Convert(a) => {
            let from = plan.slots[a].ty;
            (fr.forms[a] != form && from != ElementType::Bool).then_some(from)
        }
        _ => None,
    };
    let demote = match slot.op {
        SlotOp::Convert(a) => demote_helper(plan.slots[a].ty, slot.storage),
        _ => None,
    };
    let out: Parts = if let Some(h) = demote {
        // `f64` to a 16-bit float: the reference's conversion, once per lane.
        vec![call_per_lane(b, fr, h, &ins[0], form)?]
    } else if let Some(from) = across {
        convert_across(b, from, slot.ty, &ins[0]).ok_or_else(|| JitError::Codegen {
            kernel: plan.name.clone(),
            message: format!(
                "node `{}`: no conversion from {} to {} across widths",
                slot.node, from, slot.ty
            ),
        })?
    } else {
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
            .collect::<Result<Parts, JitError>>()?
    };
    let mut e = Emit::new(b, form);
    Ok(out
        .into_iter()
        .map(|v| to_storage(&mut e, plan, k, v))
        .collect())
}

/// The `f32` results of helper `h` (one argument, one result) on each lane of the parts
/// `x`, as one value of form `form` (`X4`: a vector, `X1`: a scalar).
fn call_per_lane(
    b: &mut FunctionBuilder,
    fr: &Frame,
    h: Helper,
    x: &[Value],
    form: Lanes,
) -> Result<Value, JitError> {
    let mut lanes = Vec::with_capacity(form.count());
    for &part in x {
        let ty = b.func.dfg.value_type(part);
        if ty.is_vector() {
            for l in 0..ty.lane_count() {
                lanes.push(b.ins().extractlane(part, l as u8));
            }
        } else {
            lanes.push(part);
        }
    }
    let mut e = Emit::new(b, Lanes::X1);
    let results = lanes
        .iter()
        .map(|&v| fr.helpers.call(&mut e, h, &[v]))
        .collect::<Result<Vec<Value>, JitError>>()?;
    if form == Lanes::X1 {
        return Ok(results[0]);
    }
    let ty = Emit::new(b, form).f32_ty();
    let mut v = b.ins().scalar_to_vector(ty, results[0]);
    for (l, &r) in results.iter().enumerate().skip(1) {
        v = b.ins().insertlane(v, r, l as u8);
    }
    Ok(v)
}

/// Where part `p` of a value of form `form` is read or written, for a body at `at`.
pub fn part_at<'a>(b: &mut FunctionBuilder, at: At<'a>, p: usize, form: Lanes) -> At<'a> {
    let n = form.count();
    match at {
        At::Vector(i) if p > 0 => At::Vector(b.ins().iadd_imm_s(i, (p * n) as i64)),
        At::Tail(idx) => At::Tail(idx.get(p * n..(p + 1) * n).unwrap_or(idx)),
        other => other,
    }
}

/// What one loop body computes, reads from strip buffers and stores.
pub struct Body {
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
    pub fn whole(fr: &Frame) -> Body {
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
pub fn emit_body(b: &mut FunctionBuilder, fr: &Frame, body: &Body, at: At) -> Result<(), JitError> {
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
                        load(b, base, addressing, slot.storage, at, form, fr.plan.count)
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

/// The buffer pointer of kernel input `arg`, loaded in the preheader.
///
/// # Errors
/// [`JitError::Codegen`] if the input is not used by the kernel.
pub fn arg_ptr(fr: &Frame, arg: usize) -> Result<Value, JitError> {
    fr.args
        .get(arg)
        .copied()
        .flatten()
        .ok_or_else(|| JitError::Codegen {
            kernel: fr.plan.name.clone(),
            message: format!("input {arg} has no pointer"),
        })
}

/// The error of a slot read before the loops computed it (a planning bug).
pub fn missing(plan: &KernelPlan, s: usize) -> JitError {
    JitError::Codegen {
        kernel: plan.name.clone(),
        message: format!("slot {s} used before it is computed"),
    }
}

/// `e` with the kernel's name filled in.
pub fn named(e: JitError, plan: &KernelPlan) -> JitError {
    match e {
        JitError::Codegen { message, .. } => JitError::Codegen {
            kernel: plan.name.clone(),
            message,
        },
        other => other,
    }
}
