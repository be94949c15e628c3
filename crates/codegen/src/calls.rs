//! Which slots of a kernel the vector math library computes ([`LibraryCalls::of`]): single
//! functions and whole activation forms, matched exactly so that a call gives the inline
//! code's bits.

use graphlift_ir::{BinaryOp, ElementType};
use smallvec::{smallvec, SmallVec};

use super::lanes::Lanes;
use super::plan::{KernelPlan, SlotId, SlotOp};
use crate::plan::operands;
use graphlift_kernels::veclib::{Pattern, VecFn, MAX_PARAMS};

/// One library call: the slot's value is `function` of `args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryCall {
    /// The library function called.
    pub function: VecFn,
    /// The values it takes, in order (one, two for a division).
    pub args: SmallVec<[SlotId; 2]>,
    /// A form's parameters, as `f32` bits (0 where the form has fewer).
    pub params: [u32; MAX_PARAMS],
}

/// The library calls of a kernel, by slot.
#[derive(Debug, Clone)]
pub struct LibraryCalls {
    calls: Vec<Option<LibraryCall>>,
    /// Slots inside a form: computed by its call, never by the kernel's code.
    inside: Vec<bool>,
}

impl LibraryCalls {
    /// The calls of `plan` (none unless it is an `X4` kernel that allows them).
    ///
    /// In a kernel of `f32` lanes whose plan allows library calls ([`KernelPlan::veclib`]),
    /// a per-element slot is a call when
    /// - it is the root of an activation form ([`VecFn::FORMS`], [`graphlift_kernels::veclib`]'s
    ///   `forms`): the slot and the ones below it compute the form's expression of one
    ///   per-element value `x`, with `f32` constants where the form has parameters, and every
    ///   slot inside the form but `x` and the constants is used by the form only (not by
    ///   another slot, not as an output). The call takes `x` and the constants, and the slots
    ///   inside are not computed. Forms are matched from the last slot back, so the outermost
    ///   match wins;
    /// - otherwise, it is an `f32` `exp`, `sigmoid`, `tanh` or `erf`, or a division of two
    ///   per-element values (a division by an invariant stays inline: it would need a buffer
    ///   of copies).
    ///
    /// Matching is exact: an `Add` or a `Multiply` may have its operands either way round
    /// (IEEE 754 addition and multiplication commute), nothing else is reordered, so a call
    /// gives the inline code's bits.
    pub fn of(plan: &KernelPlan) -> LibraryCalls {
        let n = plan.slots.len();
        let mut calls: Vec<Option<LibraryCall>> = vec![None; n];
        let mut inside = vec![false; n];
        if !plan.veclib || plan.lanes != Lanes::X4 {
            return LibraryCalls { calls, inside };
        }
        let uses = plan.use_counts();
        for k in (0..n).rev() {
            if inside[k] || plan.slots[k].invariant {
                continue;
            }
            for f in VecFn::FORMS {
                let Some(pattern) = f.pattern() else { continue };
                let mut m = Match::default();
                if !m.root(plan, &uses, pattern, k) {
                    continue;
                }
                let Some(x) = m.x else { continue };
                for &i in &m.inside {
                    inside[i] = true;
                }
                calls[k] = Some(LibraryCall {
                    function: f,
                    args: smallvec![x],
                    params: m.params.map(|p| p.unwrap_or(0)),
                });
                break;
            }
        }
        for k in 0..n {
            if calls[k].is_none() && !inside[k] {
                calls[k] = single(plan, k);
            }
        }
        LibraryCalls { calls, inside }
    }

    /// The call that computes slot `k`, if any.
    pub fn get(&self, k: SlotId) -> Option<&LibraryCall> {
        self.calls.get(k).and_then(Option::as_ref)
    }

    /// Whether slot `k` is inside a form (its call computes it).
    pub fn inside(&self, k: SlotId) -> bool {
        self.inside.get(k).copied().unwrap_or(false)
    }

    /// Whether the kernel makes no call.
    pub fn is_empty(&self) -> bool {
        self.calls.iter().all(Option::is_none)
    }

    /// The values slot `k` is computed from: a call's arguments, or the operands of its op.
    pub fn inputs(&self, plan: &KernelPlan, k: SlotId) -> SmallVec<[SlotId; 3]> {
        match self.get(k) {
            Some(c) => c.args.iter().copied().collect(),
            None => operands(&plan.slots[k].op),
        }
    }

    /// The functions called, each once, in order.
    pub fn functions(&self) -> Vec<VecFn> {
        let mut fs: Vec<VecFn> = self.calls.iter().flatten().map(|c| c.function).collect();
        fs.sort_unstable();
        fs.dedup();
        fs
    }
}

/// The single function slot `k` calls, as a call.
fn single(plan: &KernelPlan, k: SlotId) -> Option<LibraryCall> {
    let slot = &plan.slots[k];
    // An `f16`/`bf16` value computed in `f32` is rounded after its op: no library call.
    if slot.invariant || slot.storage != slot.ty {
        return None;
    }
    let (function, args): (VecFn, SmallVec<[SlotId; 2]>) = match slot.op {
        SlotOp::Unary(op, a) => (VecFn::of_unary(op, slot.ty)?, smallvec![a]),
        SlotOp::Binary(op, a, b) if !plan.slots[a].invariant && !plan.slots[b].invariant => {
            (VecFn::of_binary(op, slot.ty)?, smallvec![a, b])
        }
        _ => return None,
    };
    Some(LibraryCall {
        function,
        args,
        params: [0; MAX_PARAMS],
    })
}

/// A (partial) match of a form's pattern.
#[derive(Debug, Clone, Default)]
struct Match {
    /// The slot of `X`.
    x: Option<SlotId>,
    params: [Option<u32>; MAX_PARAMS],
    /// The slots inside the form (all but the root, `x` and the constants).
    inside: SmallVec<[SlotId; 12]>,
}

impl Match {
    /// Whether slot `k` computes `pattern` as the root of a form.
    fn root(&mut self, plan: &KernelPlan, uses: &[usize], pattern: &Pattern, k: SlotId) -> bool {
        self.node(plan, uses, pattern, k, true)
    }

    fn node(
        &mut self,
        plan: &KernelPlan,
        uses: &[usize],
        pattern: &Pattern,
        k: SlotId,
        root: bool,
    ) -> bool {
        let slot = &plan.slots[k];
        // Not an `f16`/`bf16` value computed in `f32`: its result must be rounded.
        if slot.ty != ElementType::F32 || slot.storage != ElementType::F32 {
            return false;
        }
        // An operation inside the form: used by the form only.
        let operation = |m: &mut Match| {
            if root {
                return true;
            }
            if uses[k] != 1 || slot.invariant {
                return false;
            }
            m.inside.push(k);
            true
        };
        match (pattern, &slot.op) {
            (Pattern::X, _) => match self.x {
                Some(x) => x == k,
                None if slot.invariant => false,
                None => {
                    self.x = Some(k);
                    true
                }
            },
            (Pattern::Param(i), &SlotOp::Const(bits)) => match self.params.get_mut(*i) {
                Some(p) => {
                    // The low 32 bits are the `f32`'s.
                    *p = Some(bits as u32);
                    true
                }
                None => false,
            },
            (Pattern::Unary(op, a), &SlotOp::Unary(o, s)) if o == *op => {
                operation(self) && self.node(plan, uses, a, s, false)
            }
            (Pattern::Binary(op, a, b), &SlotOp::Binary(o, s, t)) if o == *op => {
                if !operation(self) {
                    return false;
                }
                let before = self.clone();
                if self.node(plan, uses, a, s, false) && self.node(plan, uses, b, t, false) {
                    return true;
                }
                if !matches!(op, BinaryOp::Add | BinaryOp::Multiply) {
                    return false;
                }
                *self = before;
                self.node(plan, uses, a, t, false) && self.node(plan, uses, b, s, false)
            }
            _ => false,
        }
    }
}
