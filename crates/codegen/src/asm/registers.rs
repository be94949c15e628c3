//! The registers of an assembled kernel: which per-element loads are read as memory
//! operands ([`fold_loads`]), and the vector register of every slot and of its program's
//! scratch values ([`allocate`]).

use super::{Aux, Lowering};
use crate::plan::{operands, KernelPlan, SlotId, SlotOp};
use graphlift_ir::{BinaryOp, ElementType};

/// The per-element loads that can be the memory operand of their reader: read once, by an
/// op whose instruction takes memory in that place (the second source; either source of
/// `+`, `*` and the sign-bit logic, which commute; the only source of a unary op), at most
/// one per op, and not an output.
pub(super) fn fold_loads(
    plan: &KernelPlan,
    lowering: &[Option<Lowering>],
    pinned: &[bool],
) -> Vec<bool> {
    let n = plan.slots.len();
    let uses = plan.use_counts();
    let foldable = |o: SlotId| {
        let s = &plan.slots[o];
        uses[o] == 1
            && !pinned[o]
            && s.storage == s.ty
            && s.ty != ElementType::Bool
            && matches!(s.op, SlotOp::Load { .. })
    };
    let mut folded = vec![false; n];
    for l in lowering.iter().flatten() {
        let pick = match *l {
            Lowering::Arith(op, x, y) => {
                let commutes = matches!(op, BinaryOp::Add | BinaryOp::Multiply);
                if foldable(y) {
                    Some(y)
                } else if commutes && foldable(x) {
                    Some(x)
                } else {
                    None
                }
            }
            Lowering::SignBit { x, .. }
            | Lowering::Relu(x)
            | Lowering::Sqrt(x)
            | Lowering::RoundTo(x, _)
            | Lowering::Bound { x, blend: None, .. } => foldable(x).then_some(x),
            Lowering::Bound { .. } | Lowering::Program(_) | Lowering::DivideExact { .. } => None,
        };
        if let Some(o) = pick {
            folded[o] = true;
        }
    }
    folded
}

/// Vector registers: invariant slots and the auxiliary constants pinned first, then the
/// loop body's values, each register free again after the last reader of its value. A slot
/// with a program (`scratch[k]`: how many scratch registers it needs) gets its register
/// before its operands' are freed, so that it differs from theirs, and its scratch
/// registers for the time it is computed (a pinned one: the registers after the pinned
/// ones, free while the preheader computes it). `None` when they do not fit in `registers`.
pub(super) fn allocate(
    plan: &KernelPlan,
    pinned: &[bool],
    folded: &[bool],
    scratch: &[Option<usize>],
    aux: &mut [(Aux, usize)],
    registers: usize,
) -> Option<(Vec<usize>, Vec<Vec<usize>>)> {
    let n = plan.slots.len();
    let mut reg = vec![usize::MAX; n];
    let mut scratch_reg = vec![Vec::new(); n];
    let mut next = 0usize;
    for k in 0..n {
        if pinned[k] {
            reg[k] = next;
            next += 1;
        }
    }
    for a in aux.iter_mut() {
        a.1 = next;
        next += 1;
    }
    if next > registers {
        return None;
    }
    for k in (0..n).filter(|&k| pinned[k]) {
        let t = scratch[k].unwrap_or(0);
        if next + t > registers {
            return None;
        }
        scratch_reg[k] = (next..next + t).collect();
    }
    let mut last_use: Vec<Option<usize>> = vec![None; n];
    for (k, s) in plan.slots.iter().enumerate() {
        if pinned[k] {
            continue;
        }
        for o in operands(&s.op) {
            if !pinned[o] && !folded[o] {
                last_use[o] = Some(k);
            }
        }
    }
    let mut free: Vec<usize> = (next..registers).rev().collect();
    for (k, s) in plan.slots.iter().enumerate() {
        if pinned[k] || folded[k] {
            continue;
        }
        if let Some(t) = scratch[k] {
            reg[k] = free.pop()?;
            let regs: Vec<usize> = (0..t).map(|_| free.pop()).collect::<Option<_>>()?;
            free.extend(regs.iter().rev());
            scratch_reg[k] = regs;
        }
        let mut ops = operands(&s.op);
        ops.dedup();
        for o in ops {
            if last_use[o] == Some(k) && !free.contains(&reg[o]) {
                free.push(reg[o]);
            }
        }
        if scratch[k].is_none() {
            reg[k] = free.pop()?;
        }
        if last_use[k].is_none() {
            // Only stored (an output), right after it is computed.
            free.push(reg[k]);
        }
    }
    Some((reg, scratch_reg))
}
