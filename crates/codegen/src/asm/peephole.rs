//! Peephole rewrites of a translated program ([`super::program`]), each giving the same
//! bits with fewer instructions: the four-lane Cranelift lowerings spell a negated factor
//! and `copysign` in operations that the full-width instruction sets fuse.
//!
//! - `fma(−x, y, c)` or `fma(x, −y, c)`, the negation a sign-bit `xor`: `−(x·y) + c`
//!   rounded once ([`Op::Fnma`], `vfnmadd…`), which is the same value (negation is exact).
//! - `(m & abs) | (s & sign)` for the constant sign-bit mask `sign` and `abs = !sign`
//!   (`copysign`): the bitwise select [`Op::BitSelect`] (`vpternlogd`, AVX-512 only).
//!
//! The rewritten operations keep their places (operands come before their readers, and a
//! comparison stays right before the select it feeds); operations no longer read are
//! dropped afterwards by [`super::program_order::live`].

use graphlift_kernels::target::VectorIsa;
use smallvec::smallvec;

use super::program::{Arg, Inst, Op};

/// The sign bit of a lane of `inst`'s width.
fn sign(inst: &Inst) -> u64 {
    if inst.wide {
        1 << 63
    } else {
        1 << 31
    }
}

/// All but the sign bit of a lane of `inst`'s width.
fn magnitude(inst: &Inst) -> u64 {
    if inst.wide {
        u64::MAX >> 1
    } else {
        u64::from(u32::MAX >> 1)
    }
}

/// The operand `x` where `a` is the value of `xor(x, sign)` (either order) at `inst`'s
/// width.
fn negated(insts: &[Inst], a: Arg, wide: bool) -> Option<Arg> {
    let Arg::Value(j) = a else {
        return None;
    };
    let x = &insts[j];
    if x.op != Op::Xor || x.wide != wide {
        return None;
    }
    match *x.args.as_slice() {
        [v, Arg::Const(c)] | [Arg::Const(c), v] if c == sign(x) => Some(v),
        _ => None,
    }
}

/// `v` where `a` is the value of `and(v, Const(mask))` (either order) at width `wide`.
fn masked(insts: &[Inst], a: Arg, mask: impl Fn(&Inst) -> u64, wide: bool) -> Option<Arg> {
    let Arg::Value(j) = a else {
        return None;
    };
    let x = &insts[j];
    if x.op != Op::And || x.wide != wide {
        return None;
    }
    match *x.args.as_slice() {
        [v, Arg::Const(c)] | [Arg::Const(c), v] if c == mask(x) => Some(v),
        _ => None,
    }
}

/// `insts` with the rewrites of the module's list applied for `isa`.
pub(super) fn simplify(mut insts: Vec<Inst>, isa: VectorIsa) -> Vec<Inst> {
    for i in 0..insts.len() {
        let inst = &insts[i];
        let wide = inst.wide;
        let rewritten = match (inst.op, inst.args.as_slice()) {
            (Op::Fma, &[x, y, c]) => {
                match (negated(&insts, x, wide), negated(&insts, y, wide)) {
                    // (Both negated: the product's sign is unchanged; left alone.)
                    (Some(x), None) => Some((Op::Fnma, smallvec![x, y, c])),
                    (None, Some(y)) => Some((Op::Fnma, smallvec![x, y, c])),
                    _ => None,
                }
            }
            (Op::Or, &[p, q]) if isa == VectorIsa::Avx512 => {
                let pick = |m, s| {
                    let m = masked(&insts, m, magnitude, wide)?;
                    let s = masked(&insts, s, sign, wide)?;
                    // (`vpternlogd` reads its second operand from a register.)
                    (!matches!(s, Arg::Const(_))).then_some((m, s))
                };
                pick(p, q)
                    .or_else(|| pick(q, p))
                    .map(|(m, s)| (Op::BitSelect, smallvec![m, s, Arg::Const(sign(inst))]))
            }
            _ => None,
        };
        if let Some((op, args)) = rewritten {
            insts[i] = Inst { op, args, wide };
        }
    }
    insts
}
