//! Writing a slot's [`Program`]: each operation as one AVX-512F instruction (two or three
//! where x86 needs them: a register copy before a destructive one, a mask's expansion),
//! constants as broadcast operands from the kernel's constant pool.

use iced_x86::code_asm::*;

use super::emit::{Fail, Writer};
use super::program::{Arg, Inst, Op, Program};
use super::ZMM;
use crate::plan::{operands, SlotId};

/// An operand: a register, or a constant in the pool (its label; 64-bit or 32-bit).
#[derive(Clone, Copy)]
enum Src {
    Reg(AsmRegisterZmm),
    Const(CodeLabel, bool),
}

impl Src {
    /// A constant as a broadcast memory operand (`{1to16}` or `{1to8}`).
    fn broadcast(c: CodeLabel, wide: bool) -> AsmMemoryOperand {
        if wide {
            qword_bcst(c)
        } else {
            dword_bcst(c)
        }
    }
}

/// `vpternlog` immediate of a constant all-ones result.
const ALL_ONES: i32 = 0xFF;

impl Writer<'_> {
    /// The instructions of slot `k`'s program `p` for each copy of the body in `copies`
    /// (copies of one group, each in its own registers: [`super::Layout::group`]), each
    /// copy's value into its slot register.
    ///
    /// The copies are interleaved step by step (a step is one operation, or a comparison and
    /// the select it feeds), so that the core sees the independent chains of every copy
    /// within a few instructions: a vector math function is a long dependent chain, and one
    /// copy after the other leaves the out-of-order window to find the overlap.
    ///
    /// Every value goes to its own register ([`Program::reg`]), never one of its operands'
    /// (but a Horner step's accumulator), so an instruction that writes its destination
    /// first (a copy, a broadcast) reads its operands intact. A constant operand is a
    /// broadcast from the pool where the instruction takes memory (the last source); where
    /// it must be a register it is broadcast into the destination first. A comparison read
    /// once, by the select right after it, leaves its lanes in `k2` for that select's blend
    /// instead of expanding them into a mask.
    pub(super) fn program(&mut self, k: SlotId, p: &Program, copies: &[usize]) -> Result<(), Fail> {
        let mut uses = vec![0usize; p.insts.len()];
        for a in p.insts.iter().flat_map(|i| &i.args).chain([&p.result]) {
            if let Arg::Value(j) = *a {
                uses[j] += 1;
            }
        }
        // Steps: (first operation, whether it is a comparison fused with the next).
        let mut steps = Vec::with_capacity(p.insts.len());
        let mut i = 0;
        while i < p.insts.len() {
            let inst = &p.insts[i];
            let compare = matches!(inst.op, Op::FCmp(_) | Op::ICmp { .. });
            let fused = compare
                && uses[i] == 1
                && p.insts.get(i + 1).is_some_and(|next| {
                    next.op == Op::Select && next.args[0] == Arg::Value(i) && next.wide == inst.wide
                });
            steps.push((i, fused));
            i += if fused { 2 } else { 1 };
        }
        for &(i, fused) in &steps {
            for &u in copies {
                self.copy = u;
                self.step(k, p, i, fused)?;
            }
        }
        for &u in copies {
            self.copy = u;
            self.program_end(k, p)?;
        }
        Ok(())
    }

    /// The registers of slot `k`'s program in the current copy: its inputs', and where
    /// operation `i`'s value goes.
    fn program_registers(
        &self,
        k: SlotId,
        p: &Program,
    ) -> (Vec<AsmRegisterZmm>, Vec<AsmRegisterZmm>) {
        let inputs = operands(&self.plan.slots[k].op)
            .into_iter()
            .map(|o| self.z(o))
            .collect();
        let dest = p
            .reg
            .iter()
            .map(|r| match *r {
                Some(r) => self.scratch(k, r),
                None => self.z(k),
            })
            .collect();
        (inputs, dest)
    }

    /// Operand `a` of an operation in the current copy.
    fn program_source(
        &mut self,
        regs: &(Vec<AsmRegisterZmm>, Vec<AsmRegisterZmm>),
        a: Arg,
        wide: bool,
    ) -> Result<Src, Fail> {
        Ok(match a {
            Arg::Input(i) => Src::Reg(regs.0[i]),
            Arg::Value(j) => Src::Reg(regs.1[j]),
            Arg::Const(bits) => Src::Const(self.constant(bits, wide)?, wide),
        })
    }

    /// One step of slot `k`'s program `p` in the current copy: operation `i`, or (`fused`)
    /// the comparison `i` into `k2` and the select `i + 1` as a blend.
    fn step(&mut self, k: SlotId, p: &Program, i: usize, fused: bool) -> Result<(), Fail> {
        let regs = self.program_registers(k, p);
        let inst = &p.insts[i];
        let args: Vec<Src> = inst
            .args
            .iter()
            .map(|&a| self.program_source(&regs, a, inst.wide))
            .collect::<Result<_, _>>()?;
        if !fused {
            return self.operation(regs.1[i], inst, &args);
        }
        self.compare(regs.1[i], inst, &args)?;
        let select = &p.insts[i + 1];
        let a = self.program_source(&regs, select.args[1], select.wide)?;
        let b = self.program_source(&regs, select.args[2], select.wide)?;
        self.blend(regs.1[i + 1], select.wide, a, b)
    }

    /// The end of slot `k`'s program `p` in the current copy: a result that is an input or a
    /// constant moved into the slot's register, and the lanes out of range of `Sin`, `Cos`,
    /// `Tan` computed by the reference.
    fn program_end(&mut self, k: SlotId, p: &Program) -> Result<(), Fail> {
        let regs = self.program_registers(k, p);
        match p.result {
            Arg::Value(_) => {}
            a => {
                let s = self.program_source(&regs, a, false)?;
                let d = self.z(k);
                self.load(d, s)?;
            }
        }
        if let Some((f, in_range)) = p.fallback {
            let Arg::Value(j) = in_range else {
                return Err(Fail("the range mask is not a value".into()));
            };
            let (ok, y) = (regs.1[j], self.z(k));
            self.lanes_out_of_range(f, regs.0[0], y, ok)?;
        }
        Ok(())
    }

    /// Where a lane of mask `ok` is clear, `y`'s lane becomes the reference's function
    /// `UnaryOp::TRIG[f]` of `x`'s ([`crate::helpers::trig_lanes_f32`]), by a call when
    /// there is such a lane: every vector register, the caller-saved general registers the
    /// code uses and `k1` go to a 64-byte-aligned save area on the stack, the helper fixes
    /// `y`'s saved lanes in place, and everything comes back.
    fn lanes_out_of_range(
        &mut self,
        f: usize,
        x: AsmRegisterZmm,
        y: AsmRegisterZmm,
        ok: AsmRegisterZmm,
    ) -> Result<(), Fail> {
        const VECTORS: i32 = 64 * 32;
        const GPRS: [AsmRegister64; 8] = [rcx, rdx, rsi, rdi, r8, r9, r10, r11];
        let slot = |r: AsmRegisterZmm| 64 * ZMM.iter().position(|&z| z == r).unwrap_or(0) as i32;
        let mut done = self.a.create_label();
        self.a.vptestmd(k2, ok, ok)?;
        self.a.kortestw(k2, k2)?;
        // Carry: every lane in range.
        self.a.jb(done)?;
        self.a.mov(rax, rsp)?;
        self.a.and(rsp, -64)?;
        self.a.sub(rsp, VECTORS + 128)?;
        self.a.mov(qword_ptr(rsp + VECTORS), rax)?;
        for (i, &r) in GPRS.iter().enumerate() {
            self.a.mov(qword_ptr(rsp + VECTORS + 8 + 8 * i as i32), r)?;
        }
        self.a.kmovw(eax, k1)?;
        self.a.mov(qword_ptr(rsp + VECTORS + 72), rax)?;
        for (i, &z) in ZMM.iter().enumerate() {
            self.a.vmovups(zmmword_ptr(rsp + 64 * i as i32), z)?;
        }
        self.a.mov(edi, f as u32)?;
        self.a.lea(rsi, ptr(rsp + slot(x)))?;
        self.a.lea(rdx, ptr(rsp + slot(y)))?;
        self.a.lea(rcx, ptr(rsp + slot(ok)))?;
        self.a
            .mov(rax, crate::helpers::trig_lanes_f32 as *const () as u64)?;
        self.a.call(rax)?;
        for (i, &z) in ZMM.iter().enumerate() {
            self.a.vmovups(z, zmmword_ptr(rsp + 64 * i as i32))?;
        }
        self.a.mov(rax, qword_ptr(rsp + VECTORS + 72))?;
        self.a.kmovw(k1, eax)?;
        for (i, &r) in GPRS.iter().enumerate() {
            self.a.mov(r, qword_ptr(rsp + VECTORS + 8 + 8 * i as i32))?;
        }
        self.a.mov(rsp, qword_ptr(rsp + VECTORS))?;
        self.a.set_label(&mut done)?;
        // (No bytes: the label may share its place with the next one.)
        self.a.zero_bytes()?;
        Ok(())
    }

    /// `d = s`: a register copy or a broadcast.
    fn load(&mut self, d: AsmRegisterZmm, s: Src) -> Result<(), Fail> {
        match s {
            Src::Reg(r) if r == d => {}
            Src::Reg(r) => self.a.vmovaps(d, r)?,
            Src::Const(c, false) => self.a.vbroadcastss(d, dword_ptr(c))?,
            Src::Const(c, true) => self.a.vbroadcastsd(d, qword_ptr(c))?,
        }
        Ok(())
    }

    /// `s` as a register: its own, or `d` after a broadcast into it.
    fn register(&mut self, d: AsmRegisterZmm, s: Src) -> Result<AsmRegisterZmm, Fail> {
        match s {
            Src::Reg(r) => Ok(r),
            Src::Const(..) => {
                self.load(d, s)?;
                Ok(d)
            }
        }
    }

    /// `k2` = the comparison of `s[0]` and `s[1]` (`inst` an `FCmp` or `ICmp`); returns the
    /// register that held `s[0]` (`d` when it was a constant).
    fn compare(
        &mut self,
        d: AsmRegisterZmm,
        inst: &Inst,
        s: &[Src],
    ) -> Result<AsmRegisterZmm, Fail> {
        let a = self.register(d, s[0])?;
        macro_rules! cmp {
            ($m:ident, $pred:expr) => {
                match s[1] {
                    Src::Reg(b) => self.a.$m(k2, a, b, $pred)?,
                    Src::Const(c, w) => self.a.$m(k2, a, Src::broadcast(c, w), $pred)?,
                }
            };
        }
        match (inst.op, inst.wide) {
            (Op::FCmp(pred), false) => cmp!(vcmpps, pred),
            (Op::FCmp(pred), true) => cmp!(vcmppd, pred),
            (
                Op::ICmp {
                    pred,
                    unsigned: false,
                },
                false,
            ) => cmp!(vpcmpd, pred),
            (
                Op::ICmp {
                    pred,
                    unsigned: true,
                },
                false,
            ) => cmp!(vpcmpud, pred),
            (
                Op::ICmp {
                    pred,
                    unsigned: false,
                },
                true,
            ) => cmp!(vpcmpq, pred),
            (
                Op::ICmp {
                    pred,
                    unsigned: true,
                },
                true,
            ) => cmp!(vpcmpuq, pred),
            (op, _) => return Err(Fail(format!("{op:?} is not a comparison"))),
        }
        Ok(a)
    }

    /// One operation into `d` (distinct from every register in `s`, but a fused
    /// multiply-add's first factor, which it may write over).
    fn operation(&mut self, d: AsmRegisterZmm, inst: &Inst, s: &[Src]) -> Result<(), Fail> {
        let wide = inst.wide;
        // `bin!(narrow, wide)`: `d = s0 op s1`, `s0` in a register, `s1` a register or
        // memory.
        macro_rules! bin {
            ($n:ident, $w:ident) => {{
                let a = self.register(d, s[0])?;
                match (s[1], wide) {
                    (Src::Reg(b), false) => self.a.$n(d, a, b)?,
                    (Src::Reg(b), true) => self.a.$w(d, a, b)?,
                    (Src::Const(c, w), false) => self.a.$n(d, a, Src::broadcast(c, w))?,
                    (Src::Const(c, w), true) => self.a.$w(d, a, Src::broadcast(c, w))?,
                }
            }};
        }
        // `un!(narrow, wide $(, imm)?)`: `d = op s0`.
        macro_rules! un {
            ($n:ident, $w:ident $(, $imm:expr)?) => {
                match (s[0], wide) {
                    (Src::Reg(x), false) => self.a.$n(d, x $(, $imm)?)?,
                    (Src::Reg(x), true) => self.a.$w(d, x $(, $imm)?)?,
                    (Src::Const(c, w), false) => self.a.$n(d, Src::broadcast(c, w) $(, $imm)?)?,
                    (Src::Const(c, w), true) => self.a.$w(d, Src::broadcast(c, w) $(, $imm)?)?,
                }
            };
        }
        let unsupported = || Fail(format!("{:?} on 64-bit lanes", inst.op));
        match inst.op {
            Op::FAdd => bin!(vaddps, vaddpd),
            Op::FSub => bin!(vsubps, vsubpd),
            Op::FMul => bin!(vmulps, vmulpd),
            Op::FDiv => bin!(vdivps, vdivpd),
            Op::XMax => bin!(vmaxps, vmaxpd),
            Op::XMin => bin!(vminps, vminpd),
            Op::IAdd => bin!(vpaddd, vpaddq),
            Op::ISub => bin!(vpsubd, vpsubq),
            Op::And => bin!(vpandd, vpandq),
            Op::Or => bin!(vpord, vporq),
            Op::Xor => bin!(vpxord, vpxorq),
            Op::SMax => bin!(vpmaxsd, vpmaxsq),
            Op::SMin => bin!(vpminsd, vpminsq),
            Op::UMax => bin!(vpmaxud, vpmaxuq),
            Op::UMin => bin!(vpminud, vpminuq),
            Op::IMul if !wide => bin!(vpmulld, vpmulld),
            Op::Sqrt => un!(vsqrtps, vsqrtpd),
            Op::Round(imm) => un!(vrndscaleps, vrndscalepd, imm),
            Op::Shl(n) => un!(vpslld, vpsllq, n),
            Op::Ushr(n) => un!(vpsrld, vpsrlq, n),
            Op::Sshr(n) => un!(vpsrad, vpsraq, n),
            Op::FromInt if !wide => un!(vcvtdq2ps, vcvtdq2ps),
            Op::ToIntTruncate if !wide => un!(vcvttps2dq, vcvttps2dq),
            Op::IMul | Op::FromInt | Op::ToIntTruncate => return Err(unsupported()),
            Op::FCmp(_) | Op::ICmp { .. } => {
                let a = self.compare(d, inst, s)?;
                if wide {
                    self.a.vpternlogq(d.k2().z(), a, a, ALL_ONES)?;
                } else {
                    self.a.vpternlogd(d.k2().z(), a, a, ALL_ONES)?;
                }
            }
            Op::Fma => {
                // d = q·d + c with d holding one factor: the accumulator written over in
                // place, or a constant factor broadcast into d so that the other (a register:
                // `translate` splits two constant factors) is `q`.
                let (p, q) = match (s[0], s[1]) {
                    (Src::Reg(a), _) if a == d => (s[0], s[1]),
                    (Src::Reg(_), Src::Const(..)) => (s[1], s[0]),
                    _ => (s[0], s[1]),
                };
                let Src::Reg(q) = q else {
                    return Err(Fail("fused multiply-add of two constants".into()));
                };
                self.load(d, p)?;
                match (s[2], wide) {
                    (Src::Reg(c), false) => self.a.vfmadd213ps(d, q, c)?,
                    (Src::Reg(c), true) => self.a.vfmadd213pd(d, q, c)?,
                    (Src::Const(c, w), false) => self.a.vfmadd213ps(d, q, Src::broadcast(c, w))?,
                    (Src::Const(c, w), true) => self.a.vfmadd213pd(d, q, Src::broadcast(c, w))?,
                }
            }
            Op::Select => self.select(d, wide, s)?,
            Op::Copy => self.load(d, s[0])?,
        }
        Ok(())
    }

    /// `d = m ? a : b` for a mask `m` (lanes all ones or zeros): `k2` from `m`, then
    /// [`Writer::blend`].
    fn select(&mut self, d: AsmRegisterZmm, wide: bool, s: &[Src]) -> Result<(), Fail> {
        let Src::Reg(m) = s[0] else {
            return Err(Fail("select on a constant mask".into()));
        };
        if wide {
            self.a.vptestmq(k2, m, m)?;
        } else {
            self.a.vptestmd(k2, m, m)?;
        }
        self.blend(d, wide, s[1], s[2])
    }

    /// `d = k2 ? a : b`, lane by lane.
    fn blend(&mut self, d: AsmRegisterZmm, wide: bool, a: Src, b: Src) -> Result<(), Fail> {
        match (a, b, wide) {
            (Src::Reg(a), Src::Reg(b), false) => self.a.vpblendmd(d.k2(), b, a)?,
            (Src::Reg(a), Src::Reg(b), true) => self.a.vpblendmq(d.k2(), b, a)?,
            (Src::Const(a, w), Src::Reg(b), false) => {
                self.a.vpblendmd(d.k2(), b, Src::broadcast(a, w))?
            }
            (Src::Const(a, w), Src::Reg(b), true) => {
                self.a.vpblendmq(d.k2(), b, Src::broadcast(a, w))?
            }
            (Src::Reg(a), Src::Const(..), _) => {
                self.load(d, b)?;
                if wide {
                    self.a.vmovapd(d.k2(), a)?;
                } else {
                    self.a.vmovaps(d.k2(), a)?;
                }
            }
            (Src::Const(a, _), Src::Const(..), _) => {
                self.load(d, b)?;
                if wide {
                    self.a.vbroadcastsd(d.k2(), qword_ptr(a))?;
                } else {
                    self.a.vbroadcastss(d.k2(), dword_ptr(a))?;
                }
            }
        }
        Ok(())
    }
}
