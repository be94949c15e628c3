//! Peephole rewrites of a translated program ([`super::program`]), each giving the same
//! bits with fewer instructions: the four-lane Cranelift lowerings spell a negated factor
//! and `copysign` in operations that the full-width instruction sets fuse.
//!
//! - `fma(−x, y, c)` or `fma(x, −y, c)`, the negation a sign-bit `xor`: `−(x·y) + c`
//!   rounded once ([`Op::Fnma`], `vfnmadd…`), which is the same value (negation is exact).
//! - `(m & abs) | (s & sign)` for the constant sign-bit mask `sign` and `abs = !sign`
//!   (`copysign`): the bitwise select [`Op::BitSelect`] (`vpternlogd`, AVX-512 only).
//! - `a < b ? b : a` and `a > b ? b : a` (ordered, quiet compares; a clamp as the inline
//!   math writes it): `vmaxps b, a` and `vminps b, a` ([`Op::XMax`], [`Op::XMin`]), which
//!   return their second operand `a` where either is NaN or both are zero, as the select
//!   does, and the larger (smaller) value elsewhere.
//!
//! The rewritten operations keep their places (operands come before their readers, and a
//! comparison stays right before the select it feeds); operations no longer read are
//! dropped afterwards by [`super::program_order::live`].

use graphlift_kernels::target::VectorIsa;
use smallvec::smallvec;

use super::program::{Arg, Inst, Op};

/// The sign bit of a lane, 64-bit with `wide`.
fn sign(wide: bool) -> u64 {
    if wide {
        1 << 63
    } else {
        1 << 31
    }
}

/// All but the sign bit of a lane, 64-bit with `wide`.
fn magnitude(wide: bool) -> u64 {
    if wide {
        u64::MAX >> 1
    } else {
        u64::from(u32::MAX >> 1)
    }
}

/// The operand `v` where `a` is the value of `op(v, Const(c))` (either order) at width
/// `wide`: `Xor` with the sign bit is a negation, `And` with a mask keeps those bits.
fn with_constant(insts: &[Inst], a: Arg, op: Op, c: u64, wide: bool) -> Option<Arg> {
    let Arg::Value(j) = a else {
        return None;
    };
    let x = &insts[j];
    if x.op != op || x.wide != wide {
        return None;
    }
    match *x.args.as_slice() {
        [v, Arg::Const(k)] | [Arg::Const(k), v] if k == c => Some(v),
        _ => None,
    }
}

/// `vcmpps` predicates: ordered, quiet less-than and greater-than.
const LESS: i32 = 0x11;
const GREATER: i32 = 0x1E;

/// The operation that selects as `select(mask, t, f)` does, where the mask is `a < b` or
/// `a > b` ([`LESS`], [`GREATER`]) with `(t, f) = (b, a)`: [`Op::XMax`] or [`Op::XMin`] of
/// `b, a`.
fn clamp(insts: &[Inst], (mask, t, f): (Arg, Arg, Arg), wide: bool) -> Option<(Op, Arg, Arg)> {
    let Arg::Value(j) = mask else {
        return None;
    };
    let cmp = &insts[j];
    let op = match (cmp.op, cmp.wide == wide) {
        (Op::FCmp(LESS), true) => Op::XMax,
        (Op::FCmp(GREATER), true) => Op::XMin,
        _ => return None,
    };
    (cmp.args.as_slice() == [f, t]).then_some((op, t, f))
}

/// `insts` with the rewrites of the module's list applied for `isa`.
pub(super) fn simplify(mut insts: Vec<Inst>, isa: VectorIsa) -> Vec<Inst> {
    for i in 0..insts.len() {
        let inst = &insts[i];
        let wide = inst.wide;
        let rewritten = match (inst.op, inst.args.as_slice()) {
            (Op::Fma, &[x, y, c]) => {
                let negated = |a| with_constant(&insts, a, Op::Xor, sign(wide), wide);
                match (negated(x), negated(y)) {
                    // (Both negated: the product's sign is unchanged; left alone.)
                    (Some(x), None) => Some((Op::Fnma, smallvec![x, y, c])),
                    (None, Some(y)) => Some((Op::Fnma, smallvec![x, y, c])),
                    _ => None,
                }
            }
            (Op::Or, &[p, q]) if isa == VectorIsa::Avx512 => {
                let pick = |m, s| {
                    let m = with_constant(&insts, m, Op::And, magnitude(wide), wide)?;
                    let s = with_constant(&insts, s, Op::And, sign(wide), wide)?;
                    // (`vpternlogd` reads its second operand from a register.)
                    (!matches!(s, Arg::Const(_))).then_some((m, s))
                };
                pick(p, q)
                    .or_else(|| pick(q, p))
                    .map(|(m, s)| (Op::BitSelect, smallvec![m, s, Arg::Const(sign(wide))]))
            }
            (Op::Select, &[mask, t, f]) => {
                clamp(&insts, (mask, t, f), wide).map(|(op, b, a)| (op, smallvec![b, a]))
            }
            _ => None,
        };
        if let Some((op, args)) = rewritten {
            insts[i] = Inst { op, args, wide };
        }
    }
    insts
}
