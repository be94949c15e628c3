//! Constant folding of a translated program ([`super::program`]): an operation on 32-bit
//! lanes whose operands are all constants (the lowering's own, and a slot's constant
//! operand, which `translate` passes in as one) is evaluated here, lane rule for lane rule
//! as the x86 instruction it stands for computes it, and a select on a constant mask, or a
//! bitwise operation with its identity or absorbing constant, becomes the operand it
//! yields. `Pow(10, x)` then computes no logarithm per element, and `Pow(x, 2.2)` none of
//! the tests of its exponent.
//!
//! Operations on 64-bit lanes, and those with a NaN operand or result (whose payload is the
//! instruction's business), are kept as they are. Operations no longer read are dropped
//! afterwards by [`super::program_order::live`].

use smallvec::smallvec;

use super::program::{Arg, Inst, Op};
use super::{ROUND_DOWN, ROUND_NEAREST, ROUND_TRUNCATE, ROUND_UP};

/// `insts` with every foldable operation's value replaced by its constant or operand, and
/// `roots` (values read after the program) renamed to match. A multiply-add left with two
/// constant factors gets the first copied into a register (the instruction takes one).
pub(super) fn fold(insts: Vec<Inst>, roots: &mut [Option<Arg>]) -> Vec<Inst> {
    // What each original operation's value is now.
    let mut now: Vec<Arg> = Vec::with_capacity(insts.len());
    let mut out: Vec<Inst> = Vec::with_capacity(insts.len());
    let rename = |a: Arg, now: &[Arg]| match a {
        Arg::Value(j) => now[j],
        a => a,
    };
    for inst in insts {
        let args: smallvec::SmallVec<[Arg; 3]> =
            inst.args.iter().map(|&a| rename(a, &now)).collect();
        let inst = Inst { args, ..inst };
        if let Some(v) = value(&inst) {
            now.push(v);
            continue;
        }
        if let (Op::Fma | Op::Fnma, [x @ Arg::Const(_), Arg::Const(_), _]) =
            (inst.op, inst.args.as_slice())
        {
            out.push(Inst {
                op: Op::Copy,
                args: smallvec![*x],
                wide: inst.wide,
            });
            let mut inst = inst;
            inst.args[0] = Arg::Value(out.len() - 1);
            out.push(inst);
        } else {
            out.push(inst);
        }
        now.push(Arg::Value(out.len() - 1));
    }
    for r in roots.iter_mut().flatten() {
        *r = rename(*r, &now);
    }
    out
}

/// The value of `inst` when it is known without running it: a constant, or one of its
/// operands.
fn value(inst: &Inst) -> Option<Arg> {
    let ones = if inst.wide {
        u64::MAX
    } else {
        u64::from(u32::MAX)
    };
    // Bitwise identities and selects hold at either width.
    match (inst.op, inst.args.as_slice()) {
        (Op::Select, &[Arg::Const(m), a, b]) if m == ones || m == 0 => {
            return Some(if m == 0 { b } else { a });
        }
        (Op::And, &[x, Arg::Const(c)] | &[Arg::Const(c), x]) if c == ones => return Some(x),
        (Op::And, &[_, Arg::Const(0)] | &[Arg::Const(0), _]) => return Some(Arg::Const(0)),
        (Op::Or | Op::Xor, &[x, Arg::Const(0)] | &[Arg::Const(0), x]) => return Some(x),
        (Op::Or, &[_, Arg::Const(c)] | &[Arg::Const(c), _]) if c == ones => {
            return Some(Arg::Const(ones));
        }
        (Op::Copy, &[c @ Arg::Const(_)]) => return Some(c),
        (Op::Fixup, &[r, Arg::Const(x), Arg::Const(table)]) if !inst.wide => {
            return fixed_up(r, x as u32, table as u32);
        }
        _ => {}
    }
    if inst.wide {
        return None;
    }
    let mut c = [0u32; 3];
    for (c, a) in c.iter_mut().zip(&inst.args) {
        let Arg::Const(bits) = *a else {
            return None;
        };
        *c = bits as u32;
    }
    evaluate(inst.op, c).map(|bits| Arg::Const(u64::from(bits)))
}

/// `op` on one lane of 32-bit constants `c` (as many as it reads), as the instruction that
/// [`Op`] names computes it; `None` for an operation not evaluated here, or a float one
/// with a NaN operand or result.
fn evaluate(op: Op, c: [u32; 3]) -> Option<u32> {
    let [a, b, d] = c.map(f32::from_bits);
    let (i, j) = (c[0] as i32, c[1] as i32);
    let mask = |t: bool| if t { u32::MAX } else { 0 };
    let float = |x: f32| (!x.is_nan()).then_some(x.to_bits());
    let floats = |n: usize| [a, b, d][..n].iter().all(|x| !x.is_nan());
    Some(match op {
        Op::FAdd if floats(2) => float(a + b)?,
        Op::FSub if floats(2) => float(a - b)?,
        Op::FMul if floats(2) => float(a * b)?,
        Op::FDiv if floats(2) => float(a / b)?,
        Op::Fma if floats(3) => float(a.mul_add(b, d))?,
        Op::Fnma if floats(3) => float((-a).mul_add(b, d))?,
        // `b` unless `a` is the greater (smaller): x86's rule for NaNs and zeros.
        Op::XMax if floats(2) => (if a > b { a } else { b }).to_bits(),
        Op::XMin if floats(2) => (if a < b { a } else { b }).to_bits(),
        Op::Sqrt if floats(1) => float(a.sqrt())?,
        Op::Round(imm) if floats(1) => float(round(a, imm)?)?,
        Op::FCmp(pred) => mask(float_compare(pred, a, b)),
        Op::ICmp { pred, unsigned } => mask(int_compare(pred, unsigned, c[0], c[1])?),
        Op::IAdd => c[0].wrapping_add(c[1]),
        Op::ISub => c[0].wrapping_sub(c[1]),
        Op::IMul => c[0].wrapping_mul(c[1]),
        Op::And => c[0] & c[1],
        Op::Or => c[0] | c[1],
        Op::Xor => c[0] ^ c[1],
        Op::Shl(n) => c[0].checked_shl(n).unwrap_or(0),
        Op::Ushr(n) => c[0].checked_shr(n).unwrap_or(0),
        Op::Sshr(n) => (i >> n.min(31)) as u32,
        Op::SMax => i.max(j) as u32,
        Op::SMin => i.min(j) as u32,
        Op::UMax => c[0].max(c[1]),
        Op::UMin => c[0].min(c[1]),
        Op::FromInt => (i as f32).to_bits(),
        // `vcvttps2dq`: `i32::MIN` for NaN and out-of-range lanes.
        Op::ToIntTruncate => {
            let inside = (-2_147_483_648.0..2_147_483_648.0).contains(&a);
            (if inside { a as i32 } else { i32::MIN }) as u32
        }
        Op::Copy => c[0],
        Op::GetExp => {
            let (bits, shift) = normalized(a)?;
            (((bits >> 23) & 0xFF) as i32 - 127 - shift) as f32
        }
        .to_bits(),
        // The exponent field of `[1, 2)`, the sign and fraction of `x`.
        Op::GetMant => (normalized(a)?.0 & 0x807F_FFFF) | 0x3F80_0000,
        _ => return None,
    })
}

/// `vfixupimmps` of `r` by the class of the constant `x` with `table`: `r` itself, or the
/// special value the table answers for that class (`None` for a response not evaluated).
fn fixed_up(r: Arg, x: u32, table: u32) -> Option<Arg> {
    let v = f32::from_bits(x);
    let class = match v {
        _ if v.is_nan() && x & 0x0040_0000 != 0 => 0,
        _ if v.is_nan() => 1,
        0.0 => 2,
        1.0 => 3,
        f32::NEG_INFINITY => 4,
        f32::INFINITY => 5,
        _ if v < 0.0 => 6,
        _ => 7,
    };
    let special = |v: f32| Some(Arg::Const(u64::from(v.to_bits())));
    match (table >> (4 * class)) & 0xF {
        0 => Some(r),
        1 => Some(Arg::Const(u64::from(x))),
        2 => Some(Arg::Const(u64::from(x | 0x0040_0000))),
        // x86's default NaN.
        3 => Some(Arg::Const(0xFFC0_0000)),
        4 => special(f32::NEG_INFINITY),
        5 => special(f32::INFINITY),
        7 => special(-0.0),
        8 => special(0.0),
        9 => special(-1.0),
        10 => special(1.0),
        11 => special(0.5),
        _ => None,
    }
}

/// The bits of a finite non-zero `x` scaled into the normal range (subnormals by `2^23`,
/// exactly), and the power of two it was scaled by; `None` for zeros, infinities and NaN,
/// which `vgetexpps` and `vgetmantps` are left to.
fn normalized(x: f32) -> Option<(u32, i32)> {
    if !x.is_finite() || x == 0.0 {
        return None;
    }
    Some(if x.is_normal() {
        (x.to_bits(), 0)
    } else {
        ((x * 8_388_608.0).to_bits(), 23)
    })
}

/// `vrndscaleps` (`vroundps`) of `x` with one of the four immediates the assembler uses.
fn round(x: f32, imm: i32) -> Option<f32> {
    Some(match imm {
        ROUND_NEAREST => x.round_ties_even(),
        ROUND_DOWN => x.floor(),
        ROUND_UP => x.ceil(),
        ROUND_TRUNCATE => x.trunc(),
        _ => return None,
    })
}

/// `vcmpps` predicate `pred` (its low four bits: the relation; the fifth only chooses
/// whether a quiet NaN signals) of `a` and `b`.
fn float_compare(pred: i32, a: f32, b: f32) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    // `None`: unordered (a NaN operand).
    let order = a.partial_cmp(&b);
    match pred & 0xF {
        0x0 => order == Some(Equal),
        0x1 => order == Some(Less),
        0x2 => matches!(order, Some(Less | Equal)),
        0x3 => order.is_none(),
        0x4 => order != Some(Equal),
        0x5 => order != Some(Less),
        0x6 => !matches!(order, Some(Less | Equal)),
        0x7 => order.is_some(),
        0x8 => matches!(order, None | Some(Equal)),
        0x9 => !matches!(order, Some(Greater | Equal)),
        0xA => order != Some(Greater),
        0xB => false,
        0xC => matches!(order, Some(Less | Greater)),
        0xD => matches!(order, Some(Greater | Equal)),
        0xE => order == Some(Greater),
        _ => true,
    }
}

/// `vpcmpd` (`vpcmpud` when `unsigned`) predicate `pred` of `a` and `b`.
fn int_compare(pred: i32, unsigned: bool, a: u32, b: u32) -> Option<bool> {
    let order = if unsigned {
        a.cmp(&b)
    } else {
        (a as i32).cmp(&(b as i32))
    };
    Some(match pred {
        0 => order.is_eq(),
        1 => order.is_lt(),
        2 => order.is_le(),
        3 => false,
        4 => order.is_ne(),
        5 => order.is_ge(),
        6 => order.is_gt(),
        7 => true,
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
