//! The order of a program's operations and its registers: dead operations dropped, the two
//! promoted halves of `Power` interleaved, and each value's scratch register
//! ([`super::program::Program::reg`]).

use super::program::{Arg, Inst, Op};

/// The operations the roots depend on (a lowering may compute what it does not use, such
/// as the low part of `exp`'s result, which Cranelift would remove), renumbered.
pub(super) fn live(insts: Vec<Inst>, roots: &[Option<Arg>]) -> (Vec<Inst>, Vec<Option<Arg>>) {
    let mut needed = vec![false; insts.len()];
    for &r in roots.iter().flatten() {
        if let Arg::Value(j) = r {
            needed[j] = true;
        }
    }
    for i in (0..insts.len()).rev() {
        if needed[i] {
            for a in &insts[i].args {
                if let Arg::Value(j) = *a {
                    needed[j] = true;
                }
            }
        }
    }
    let mut index = vec![usize::MAX; insts.len()];
    let renumber = |a: Arg, index: &[usize]| match a {
        Arg::Value(j) => Arg::Value(index[j]),
        a => a,
    };
    let mut out = Vec::with_capacity(insts.len());
    for (i, mut inst) in insts.into_iter().enumerate() {
        if needed[i] {
            for a in inst.args.iter_mut() {
                *a = renumber(*a, &index);
            }
            index[i] = out.len();
            out.push(inst);
        }
    }
    let roots = roots
        .iter()
        .map(|r| r.map(|a| renumber(a, &index)))
        .collect();
    (out, roots)
}

/// The most scratch registers a program with its halves interleaved may take (else it keeps
/// them one after the other): room left for the kernel's other values and a second copy.
pub(super) const MAX_ZIPPED_SCRATCH: usize = 20;

/// Which promoted half an operation works on (see [`interleave_halves`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    /// Neither: reads only operands and constants.
    Neither,
    Low,
    High,
    /// Both (the combination, and what follows it).
    Both,
}

/// A program on promoted halves (`Power`) computes the low and the high eight lanes by two
/// chains of the same operations, one after the other (the four-lane code's order), and a
/// core that runs one long chain at a time is latency-bound. This order interleaves them:
/// the operations on neither half first, then the two chains unit by unit (a comparison
/// with the select right after it is one unit, so that they stay together), then the
/// rest. Returns the new order and each old index's new one; `None` for a program without
/// halves.
pub(super) fn interleave_halves(insts: &[Inst]) -> Option<(Vec<Inst>, Vec<usize>)> {
    if !insts.iter().any(|i| i.op == Op::Combine) {
        return None;
    }
    let mut half = vec![Half::Neither; insts.len()];
    for (i, inst) in insts.iter().enumerate() {
        half[i] = match inst.op {
            Op::PromoteLow => Half::Low,
            Op::PromoteHigh => Half::High,
            _ => inst.args.iter().fold(Half::Neither, |h, a| match (h, *a) {
                (h, Arg::Value(j)) => match (h, half[j]) {
                    (h, Half::Neither) => h,
                    (Half::Neither, o) => o,
                    (h, o) if h == o => h,
                    _ => Half::Both,
                },
                (h, _) => h,
            }),
        };
    }
    let units = |which: Half| -> Vec<Vec<usize>> {
        let list: Vec<usize> = (0..insts.len()).filter(|&i| half[i] == which).collect();
        let mut out: Vec<Vec<usize>> = Vec::new();
        let mut k = 0;
        while k < list.len() {
            let i = list[k];
            let pair = matches!(insts[i].op, Op::FCmp(_) | Op::ICmp { .. })
                && list.get(k + 1).is_some_and(|&n| {
                    n == i + 1 && insts[n].op == Op::Select && insts[n].args[0] == Arg::Value(i)
                });
            let len = if pair { 2 } else { 1 };
            out.push(list[k..k + len].to_vec());
            k += len;
        }
        out
    };
    let (low, high) = (units(Half::Low), units(Half::High));
    let mut order: Vec<usize> = (0..insts.len())
        .filter(|&i| half[i] == Half::Neither)
        .collect();
    for k in 0..low.len().max(high.len()) {
        for side in [&low, &high] {
            if let Some(u) = side.get(k) {
                order.extend(u);
            }
        }
    }
    order.extend((0..insts.len()).filter(|&i| half[i] == Half::Both));
    let mut index = vec![0; insts.len()];
    for (new, &old) in order.iter().enumerate() {
        index[old] = new;
    }
    let zipped = order
        .iter()
        .map(|&old| {
            let mut inst = insts[old].clone();
            for a in inst.args.iter_mut() {
                if let Arg::Value(j) = *a {
                    *a = Arg::Value(index[j]);
                }
            }
            inst
        })
        .collect();
    Some((zipped, index))
}

/// The first operand of `inst` (a value: checked by the caller).
fn j_of(inst: &Inst) -> usize {
    match inst.args[0] {
        Arg::Value(j) => j,
        _ => usize::MAX,
    }
}

/// The register plan of a program ([`Program::reg`]): the result's operation goes to the
/// slot's register; every other value gets the lowest free scratch register, taken before
/// its operands' are freed (so it differs from theirs: a destructive instruction may write
/// it first) and freed after its last reader, but a Horner step's accumulator is written
/// over in place.
pub(super) fn registers(
    insts: &[Inst],
    result: Arg,
    keep: Option<Arg>,
) -> (Vec<Option<usize>>, usize) {
    let n = insts.len();
    let mut last = vec![None; n];
    for (i, inst) in insts.iter().enumerate() {
        for a in &inst.args {
            if let Arg::Value(j) = *a {
                last[j] = Some(i);
            }
        }
    }
    // Read after the last operation.
    if let Some(Arg::Value(j)) = keep {
        last[j] = Some(n);
    }
    let mut reg = vec![None; n];
    let mut busy: Vec<bool> = Vec::new();
    for (i, inst) in insts.iter().enumerate() {
        // A fused multiply-add whose first factor is read last here and whose other
        // operands are registers of other values writes over that factor (`vfmadd213ps`:
        // no copy first), as a Horner chain's accumulator.
        let reuse = match (inst.op, inst.args.as_slice()) {
            (Op::Fma, &[Arg::Value(j), b, c])
                if last[j] == Some(i)
                    && reg[j].is_some()
                    && !matches!(b, Arg::Const(_))
                    && b != Arg::Value(j)
                    && c != Arg::Value(j) =>
            {
                reg[j]
            }
            _ => None,
        };
        if let (Some(r), true) = (reuse, result != Arg::Value(i)) {
            reg[i] = Some(r);
            last[j_of(inst)] = None;
            if last[i].is_none() {
                busy[r] = false;
            }
        } else if result != Arg::Value(i) {
            let r = busy.iter().position(|b| !b).unwrap_or_else(|| {
                busy.push(false);
                busy.len() - 1
            });
            busy[r] = true;
            reg[i] = Some(r);
            if last[i].is_none() {
                busy[r] = false;
            }
        }
        for a in &inst.args {
            if let Arg::Value(j) = *a {
                if last[j] == Some(i) {
                    if let Some(r) = reg[j] {
                        busy[r] = false;
                    }
                }
            }
        }
    }
    (reg, busy.len())
}
