//! The order of a program's operations and its registers: dead operations dropped, and
//! each value's scratch register ([`super::program::Program::reg`]).

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

/// `insts` with each comparison that is read once, by a select's mask, moved to right before
/// that select, so that AVX-512 code fuses the two (a compare into `k2` and a blend,
/// `super::program_emit`) instead of expanding the mask into a register and testing it
/// again. Its operands all come before it, so nothing else moves; `roots` are renumbered.
pub(super) fn sink_compares(
    insts: Vec<Inst>,
    roots: &[Option<Arg>],
) -> (Vec<Inst>, Vec<Option<Arg>>) {
    let n = insts.len();
    let mut uses = vec![0usize; n];
    for a in insts
        .iter()
        .flat_map(|i| &i.args)
        .chain(roots.iter().flatten())
    {
        if let Arg::Value(j) = *a {
            uses[j] += 1;
        }
    }
    // The comparison each select takes from further back.
    let mut sunk: Vec<Option<usize>> = vec![None; n];
    let mut moved = vec![false; n];
    for (k, inst) in insts.iter().enumerate() {
        if let (Op::Select, Some(&Arg::Value(i))) = (inst.op, inst.args.first()) {
            let compare = matches!(insts[i].op, Op::FCmp(_) | Op::ICmp { .. });
            if compare && uses[i] == 1 && i + 1 < k && insts[i].wide == inst.wide {
                sunk[k] = Some(i);
                moved[i] = true;
            }
        }
    }
    let order: Vec<usize> = (0..n)
        .filter(|&k| !moved[k])
        .flat_map(|k| sunk[k].into_iter().chain([k]))
        .collect();
    let mut index = vec![0; n];
    for (new, &old) in order.iter().enumerate() {
        index[old] = new;
    }
    let renumber = |a: Arg| match a {
        Arg::Value(j) => Arg::Value(index[j]),
        a => a,
    };
    let out = order
        .iter()
        .map(|&old| {
            let mut inst = insts[old].clone();
            for a in inst.args.iter_mut() {
                *a = renumber(*a);
            }
            inst
        })
        .collect();
    (out, roots.iter().map(|r| r.map(renumber)).collect())
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
/// it first) and freed after its last reader, but a Horner step's accumulator, and a
/// fixup's result, are written over in place.
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
            (Op::Fma | Op::Fnma, &[Arg::Value(j), b, c])
                if last[j] == Some(i)
                    && reg[j].is_some()
                    && !matches!(b, Arg::Const(_))
                    && b != Arg::Value(j)
                    && c != Arg::Value(j) =>
            {
                reg[j]
            }
            // Likewise a fixup's result, read last here, is fixed up in place.
            (Op::Fixup, &[Arg::Value(j), x, _])
                if last[j] == Some(i) && reg[j].is_some() && x != Arg::Value(j) =>
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

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(op: Op, args: &[Arg]) -> Inst {
        Inst {
            op,
            args: args.iter().copied().collect(),
            wide: false,
        }
    }

    #[test]
    fn a_comparison_read_by_one_select_moves_to_it() {
        let insts = vec![
            inst(Op::FCmp(0x11), &[Arg::Input(0), Arg::Const(0)]),
            inst(Op::FMul, &[Arg::Input(0), Arg::Input(0)]),
            // Read twice: stays.
            inst(Op::FCmp(0x1E), &[Arg::Input(0), Arg::Const(0)]),
            inst(Op::Select, &[Arg::Value(0), Arg::Value(1), Arg::Input(0)]),
            inst(Op::Select, &[Arg::Value(2), Arg::Value(3), Arg::Input(0)]),
            inst(Op::Select, &[Arg::Value(2), Arg::Value(4), Arg::Value(1)]),
        ];
        let (out, roots) = sink_compares(insts, &[Some(Arg::Value(5))]);
        let ops: Vec<Op> = out.iter().map(|i| i.op).collect();
        assert_eq!(
            ops,
            [
                Op::FMul,
                Op::FCmp(0x1E),
                Op::FCmp(0x11),
                Op::Select,
                Op::Select,
                Op::Select
            ]
        );
        assert_eq!(
            out[3].args.as_slice(),
            &[Arg::Value(2), Arg::Value(0), Arg::Input(0)]
        );
        assert_eq!(
            out[5].args.as_slice(),
            &[Arg::Value(1), Arg::Value(4), Arg::Value(0)]
        );
        assert_eq!(roots, [Some(Arg::Value(5))]);
    }
}
