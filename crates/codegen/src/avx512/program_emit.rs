//! Writing a slot's [`Program`]: each operation as one AVX-512F instruction (two or three
//! where x86 needs them: a register copy before a destructive one, a mask's expansion),
//! constants as broadcast operands from the kernel's constant pool.

use iced_x86::code_asm::*;

use super::emit::{Fail, Writer};
use super::program::{Arg, Inst, Op, Program};
use crate::plan::{operands, SlotId};

/// An operand: a register, or a constant in the pool (its label).
#[derive(Clone, Copy)]
enum Src {
    Reg(AsmRegisterZmm),
    Const(CodeLabel),
}

/// `vpternlogd` immediate of a constant all-ones result.
const ALL_ONES: i32 = 0xFF;

impl Writer<'_> {
    /// The instructions of slot `k`'s program `p`, its value into the slot's register.
    ///
    /// Every value goes to its own register ([`Program::reg`]), never one of its operands',
    /// so an instruction that writes its destination first (a copy, a broadcast) reads its
    /// operands intact. A constant operand is a `{1to16}` broadcast from the pool where the
    /// instruction takes memory (the last source); where it must be a register it is
    /// broadcast into the destination first.
    pub(super) fn program(&mut self, k: SlotId, p: &Program) -> Result<(), Fail> {
        let inputs: Vec<AsmRegisterZmm> = operands(&self.plan.slots[k].op)
            .into_iter()
            .map(|o| self.z(o))
            .collect();
        let dest = |w: &Writer, i: usize| match p.reg[i] {
            Some(r) => w.scratch(k, r),
            None => w.z(k),
        };
        let src = |w: &Writer, a: Arg| -> Result<Src, Fail> {
            Ok(match a {
                Arg::Input(i) => Src::Reg(inputs[i]),
                Arg::Value(j) => Src::Reg(dest(w, j)),
                Arg::Const(bits) => Src::Const(w.constant(bits)?),
            })
        };
        let mut uses = vec![0usize; p.insts.len()];
        for a in p.insts.iter().flat_map(|i| &i.args).chain([&p.result]) {
            if let Arg::Value(j) = *a {
                uses[j] += 1;
            }
        }
        // A comparison read once, by the select right after it, leaves its mask in `k2`.
        let mut in_k2 = None;
        for (i, inst) in p.insts.iter().enumerate() {
            let d = dest(self, i);
            let args: Vec<Src> = inst
                .args
                .iter()
                .map(|&a| src(self, a))
                .collect::<Result<_, _>>()?;
            let compare = matches!(inst.op, Op::FCmp(_) | Op::ICmp { .. });
            let fused = compare
                && uses[i] == 1
                && p.insts
                    .get(i + 1)
                    .is_some_and(|next| next.op == Op::Select && next.args[0] == Arg::Value(i));
            if fused {
                self.compare(d, inst.op, &args)?;
                in_k2 = Some(i);
            } else if inst.op == Op::Select && in_k2.is_some_and(|j| inst.args[0] == Arg::Value(j))
            {
                self.blend(d, args[1], args[2])?;
            } else {
                self.operation(d, inst, &args)?;
            }
        }
        match p.result {
            Arg::Value(_) => {}
            a => {
                let s = src(self, a)?;
                let d = self.z(k);
                self.load(d, s)?;
            }
        }
        Ok(())
    }

    /// `d = s`: a register copy or a broadcast.
    fn load(&mut self, d: AsmRegisterZmm, s: Src) -> Result<(), Fail> {
        match s {
            Src::Reg(r) if r == d => {}
            Src::Reg(r) => self.a.vmovaps(d, r)?,
            Src::Const(c) => self.a.vbroadcastss(d, dword_ptr(c))?,
        }
        Ok(())
    }

    /// `s` as a register: its own, or `d` after a broadcast into it.
    fn register(&mut self, d: AsmRegisterZmm, s: Src) -> Result<AsmRegisterZmm, Fail> {
        match s {
            Src::Reg(r) => Ok(r),
            Src::Const(_) => {
                self.load(d, s)?;
                Ok(d)
            }
        }
    }

    /// `k2` = the comparison `op` of `s[0]` and `s[1]`; returns the register that held
    /// `s[0]` (`d` when it was a constant).
    fn compare(&mut self, d: AsmRegisterZmm, op: Op, s: &[Src]) -> Result<AsmRegisterZmm, Fail> {
        let a = self.register(d, s[0])?;
        match (op, s[1]) {
            (Op::FCmp(pred), Src::Reg(b)) => self.a.vcmpps(k2, a, b, pred)?,
            (Op::FCmp(pred), Src::Const(b)) => self.a.vcmpps(k2, a, dword_bcst(b), pred)?,
            (
                Op::ICmp {
                    pred,
                    unsigned: false,
                },
                Src::Reg(b),
            ) => self.a.vpcmpd(k2, a, b, pred)?,
            (
                Op::ICmp {
                    pred,
                    unsigned: false,
                },
                Src::Const(b),
            ) => self.a.vpcmpd(k2, a, dword_bcst(b), pred)?,
            (Op::ICmp { pred, .. }, Src::Reg(b)) => self.a.vpcmpud(k2, a, b, pred)?,
            (Op::ICmp { pred, .. }, Src::Const(b)) => self.a.vpcmpud(k2, a, dword_bcst(b), pred)?,
            _ => return Err(Fail(format!("{op:?} is not a comparison"))),
        }
        Ok(a)
    }

    /// One operation into `d` (distinct from every register in `s`, but a fused
    /// multiply-add's first factor, which it may write over).
    fn operation(&mut self, d: AsmRegisterZmm, inst: &Inst, s: &[Src]) -> Result<(), Fail> {
        // `bin!(method)`: `d = s0 op s1`, `s0` in a register, `s1` a register or memory.
        macro_rules! bin {
            ($m:ident) => {{
                let a = self.register(d, s[0])?;
                match s[1] {
                    Src::Reg(b) => self.a.$m(d, a, b)?,
                    Src::Const(b) => self.a.$m(d, a, dword_bcst(b))?,
                }
            }};
        }
        // `un!(method $(, imm)?)`: `d = op s0`.
        macro_rules! un {
            ($m:ident $(, $imm:expr)?) => {
                match s[0] {
                    Src::Reg(x) => self.a.$m(d, x $(, $imm)?)?,
                    Src::Const(x) => self.a.$m(d, dword_bcst(x) $(, $imm)?)?,
                }
            };
        }
        match inst.op {
            Op::FAdd => bin!(vaddps),
            Op::FSub => bin!(vsubps),
            Op::FMul => bin!(vmulps),
            Op::FDiv => bin!(vdivps),
            Op::XMax => bin!(vmaxps),
            Op::XMin => bin!(vminps),
            Op::IAdd => bin!(vpaddd),
            Op::ISub => bin!(vpsubd),
            Op::IMul => bin!(vpmulld),
            Op::And => bin!(vpandd),
            Op::Or => bin!(vpord),
            Op::Xor => bin!(vpxord),
            Op::SMax => bin!(vpmaxsd),
            Op::SMin => bin!(vpminsd),
            Op::UMax => bin!(vpmaxud),
            Op::UMin => bin!(vpminud),
            Op::Sqrt => un!(vsqrtps),
            Op::FromInt => un!(vcvtdq2ps),
            Op::ToIntTruncate => un!(vcvttps2dq),
            Op::Round(imm) => un!(vrndscaleps, imm),
            Op::Shl(n) => un!(vpslld, n),
            Op::Ushr(n) => un!(vpsrld, n),
            Op::Sshr(n) => un!(vpsrad, n),
            Op::FCmp(_) | Op::ICmp { .. } => {
                let a = self.compare(d, inst.op, s)?;
                self.a.vpternlogd(d.k2().z(), a, a, ALL_ONES)?;
            }
            Op::Fma => {
                // d = q·d + c with d holding one factor: a constant factor is broadcast
                // into d, so the other (a register: `translate` splits two constant
                // factors) is `q`.
                let (p, q) = match (s[0], s[1]) {
                    // The accumulator written over in place (`program::registers`).
                    (Src::Reg(a), _) if a == d => (s[0], s[1]),
                    (Src::Reg(_), Src::Const(_)) => (s[1], s[0]),
                    _ => (s[0], s[1]),
                };
                let Src::Reg(q) = q else {
                    return Err(Fail("fused multiply-add of two constants".into()));
                };
                self.load(d, p)?;
                match s[2] {
                    Src::Reg(c) => self.a.vfmadd213ps(d, q, c)?,
                    Src::Const(c) => self.a.vfmadd213ps(d, q, dword_bcst(c))?,
                }
            }
            Op::Select => self.select(d, s)?,
            Op::Copy => self.load(d, s[0])?,
        }
        Ok(())
    }

    /// `d = m ? a : b` for a mask `m` (lanes all ones or zeros): `k2` from `m`, then
    /// [`Writer::blend`].
    fn select(&mut self, d: AsmRegisterZmm, s: &[Src]) -> Result<(), Fail> {
        let Src::Reg(m) = s[0] else {
            return Err(Fail("select on a constant mask".into()));
        };
        self.a.vptestmd(k2, m, m)?;
        self.blend(d, s[1], s[2])
    }

    /// `d = k2 ? a : b`, lane by lane.
    fn blend(&mut self, d: AsmRegisterZmm, a: Src, b: Src) -> Result<(), Fail> {
        match (a, b) {
            (Src::Reg(a), Src::Reg(b)) => self.a.vpblendmd(d.k2(), b, a)?,
            (Src::Const(a), Src::Reg(b)) => self.a.vpblendmd(d.k2(), b, dword_bcst(a))?,
            (Src::Reg(a), Src::Const(b)) => {
                self.a.vbroadcastss(d, dword_ptr(b))?;
                self.a.vmovaps(d.k2(), a)?;
            }
            (Src::Const(a), Src::Const(b)) => {
                self.a.vbroadcastss(d, dword_ptr(b))?;
                self.a.vbroadcastss(d.k2(), dword_ptr(a))?;
            }
        }
        Ok(())
    }
}
