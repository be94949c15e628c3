//! Constants held in vector registers for the whole call: the pool constants that the
//! programs put in a register of their own (a non-commuting operation's first operand, a
//! fused multiply-add's constant factor beside a constant addend, a clamp's bound, a copy),
//! loaded once in the preheader into the registers that the loop body leaves free. In the
//! loop such a constant is then a register move, which the core renames away, instead of an
//! AVX-512 `vbroadcastss` from the pool, which costs about as much as an arithmetic
//! instruction on Zen 4 (`BENCHMARKS.md`, the twenty-sixth session). Embedded broadcast
//! operands (`{1to16}`) cost nothing and stay.

use super::program::{Arg, Op, Program};

/// Each constant `(bits, 64-bit)` that the programs copy into a register before an
/// operation reads it, with how many times a body does, most first (ties in order of
/// first use).
pub(super) fn materialized<'a>(programs: impl Iterator<Item = &'a Program>) -> Vec<(u64, bool)> {
    let mut counts: Vec<((u64, bool), usize)> = Vec::new();
    for p in programs {
        for inst in &p.insts {
            let constant = |a: Arg| a.pool_constant(inst.wide);
            let copied = match (inst.op, inst.args.as_slice()) {
                // A constant factor beside a constant addend (a polynomial's first step):
                // the factor goes into the destination. Beside an addend in a register it
                // is the instruction's broadcast operand.
                (Op::Fma | Op::Fnma, &[x, y, c]) if constant(c).is_some() => {
                    constant(x).or(constant(y))
                }
                (
                    Op::FSub
                    | Op::FDiv
                    | Op::XMax
                    | Op::XMin
                    | Op::ISub
                    | Op::FCmp(_)
                    | Op::ICmp { .. },
                    &[a, _],
                ) => constant(a),
                // A blend reads its second choice from a register.
                (Op::Select, &[_, _, f]) => constant(f),
                (Op::Copy, &[a]) => constant(a),
                _ => None,
            };
            if let Some(c) = copied {
                match counts.iter_mut().find(|(k, _)| *k == c) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((c, 1)),
                }
            }
        }
    }
    // Stable: equal counts keep their order of first use.
    counts.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    counts.into_iter().map(|(c, _)| c).collect()
}
