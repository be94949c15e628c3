//! Writing a slot's [`Program`]: each operation as one instruction (two or three where x86
//! needs them: a register copy before a destructive one, AVX-512's expansion of a mask
//! register into lanes), constants from the kernel's constant pool (`super::inst` says how
//! each instruction set reads them).

use iced_x86::code_asm::*;

use graphlift_kernels::target::VectorIsa;

use super::emit::{Fail, Writer};
use super::inst::{broadcast, Fma, Src, XMM, YMM, ZMM};
use super::program::{Arg, Inst, Op, Program};
use crate::plan::{operands, SlotId};

/// `vpternlog` immediate of a constant all-ones result.
const ALL_ONES: i32 = 0xFF;

/// Where a program runs in one copy of the body: its inputs' registers, its result's, and
/// its scratch registers ([`Program::reg`]'s `Some(r)` is `scratch[r]`).
pub(super) struct Frame {
    pub(super) inputs: Vec<usize>,
    pub(super) result: usize,
    pub(super) scratch: Vec<usize>,
}

impl Frame {
    /// The register of operation `i`'s value.
    fn value(&self, p: &Program, i: usize) -> usize {
        match p.reg[i] {
            Some(r) => self.scratch[r],
            None => self.result,
        }
    }
}

impl Writer<'_> {
    /// The instructions of slot `k`'s program `p` for each copy of the body in `copies`
    /// (copies of one group, each in its own registers: [`super::Layout::group`]), each
    /// copy's value into its slot register ([`Writer::run_program`]).
    pub(super) fn program(&mut self, k: SlotId, p: &Program, copies: &[usize]) -> Result<(), Fail> {
        let frames: Vec<Frame> = copies
            .iter()
            .map(|&u| {
                self.copy = u;
                Frame {
                    inputs: operands(&self.plan.slots[k].op)
                        .into_iter()
                        .map(|o| self.v(o))
                        .collect(),
                    result: self.v(k),
                    scratch: (0..p.scratch).map(|r| self.scratch(k, r)).collect(),
                }
            })
            .collect();
        self.run_program(p, &frames)
    }

    /// The instructions of program `p` in each of `frames`.
    ///
    /// The frames are interleaved step by step (a step is one operation, or on AVX-512 a
    /// comparison and the select it feeds), so that the core sees the independent chains of
    /// every copy within a few instructions: a vector math function is a long dependent
    /// chain, and one copy after the other leaves the out-of-order window to find the overlap.
    ///
    /// Every value goes to its own register ([`Program::reg`]), never one of its operands'
    /// (but a Horner step's accumulator), so an instruction that writes its destination
    /// first (a copy, a broadcast) reads its operands intact. A constant operand is read from
    /// the pool where the instruction takes memory (the last source); where it must be a
    /// register it is copied into the destination first. On AVX-512 a comparison read once,
    /// by the select right after it, leaves its lanes in `k2` for that select's blend instead
    /// of expanding them into a mask.
    pub(super) fn run_program(&mut self, p: &Program, frames: &[Frame]) -> Result<(), Fail> {
        let mut uses = vec![0usize; p.insts.len()];
        for a in p.insts.iter().flat_map(|i| &i.args).chain([&p.result]) {
            if let Arg::Value(j) = *a {
                uses[j] += 1;
            }
        }
        let masks = self.lay.isa == VectorIsa::Avx512;
        // Steps: (first operation, whether it is a comparison fused with the next).
        let mut steps = Vec::with_capacity(p.insts.len());
        let mut i = 0;
        while i < p.insts.len() {
            let inst = &p.insts[i];
            let compare = matches!(inst.op, Op::FCmp(_) | Op::ICmp { .. });
            let fused = masks
                && compare
                && uses[i] == 1
                && p.insts.get(i + 1).is_some_and(|next| {
                    next.op == Op::Select && next.args[0] == Arg::Value(i) && next.wide == inst.wide
                });
            steps.push((i, fused));
            i += if fused { 2 } else { 1 };
        }
        for &(i, fused) in &steps {
            for f in frames {
                self.step(f, p, i, fused)?;
            }
        }
        for f in frames {
            self.program_end(f, p)?;
        }
        Ok(())
    }

    /// Operand `a` of an operation of `p` in frame `f`.
    fn program_source(&mut self, f: &Frame, p: &Program, a: Arg, wide: bool) -> Result<Src, Fail> {
        Ok(match a {
            Arg::Input(i) => Src::Reg(f.inputs[i]),
            Arg::Value(j) => Src::Reg(f.value(p, j)),
            Arg::Const(bits) => Src::Const(self.constant(bits, wide)?, wide),
        })
    }

    /// One step of program `p` in frame `f`: operation `i`, or (`fused`, AVX-512) the
    /// comparison `i` into `k2` and the select `i + 1` as a blend.
    fn step(&mut self, f: &Frame, p: &Program, i: usize, fused: bool) -> Result<(), Fail> {
        let inst = &p.insts[i];
        let args: Vec<Src> = inst
            .args
            .iter()
            .map(|&a| self.program_source(f, p, a, inst.wide))
            .collect::<Result<_, _>>()?;
        if !fused {
            return self.operation(f.value(p, i), inst, &args);
        }
        self.compare_k2(f.value(p, i), inst, &args)?;
        let select = &p.insts[i + 1];
        let a = self.program_source(f, p, select.args[1], select.wide)?;
        let b = self.program_source(f, p, select.args[2], select.wide)?;
        self.blend_k2(f.value(p, i + 1), select.wide, a, b)
    }

    /// The end of program `p` in frame `f`: a result that is an input or a constant moved
    /// into the result's register, and the lanes out of range of `Sin`, `Cos`, `Tan`
    /// computed by the reference.
    fn program_end(&mut self, f: &Frame, p: &Program) -> Result<(), Fail> {
        match p.result {
            Arg::Value(_) => {}
            a => {
                let s = self.program_source(f, p, a, false)?;
                self.copy(f.result, s)?;
            }
        }
        if let Some((function, in_range)) = p.fallback {
            let Arg::Value(j) = in_range else {
                return Err(Fail("the range mask is not a value".into()));
            };
            self.lanes_out_of_range(function, f.inputs[0], f.result, f.value(p, j))?;
        }
        Ok(())
    }

    /// Where a lane of mask `ok` is clear, `y`'s lane becomes the reference's function
    /// `UnaryOp::TRIG[f]` of `x`'s ([`crate::helpers::trig_lanes_f32`]), by a call when
    /// there is such a lane: every vector register, the caller-saved general registers the
    /// code uses (and AVX-512's `k1`) go to a 64-byte-aligned save area on the stack, the
    /// helper fixes `y`'s saved lanes in place, and everything comes back.
    fn lanes_out_of_range(&mut self, f: usize, x: usize, y: usize, ok: usize) -> Result<(), Fail> {
        const GPRS: [AsmRegister64; 8] = [rcx, rdx, rsi, rdi, r8, r9, r10, r11];
        let isa = self.lay.isa;
        let bytes = 4 * isa.lanes() as i32;
        let vectors = bytes * isa.registers() as i32;
        let slot = |r: usize| bytes * r as i32;
        let mut done = self.a.create_label();
        match isa {
            VectorIsa::Avx512 => {
                self.a.vptestmd(k2, ZMM[ok], ZMM[ok])?;
                self.a.kortestw(k2, k2)?;
                // Carry: every lane in range.
                self.a.jb(done)?;
            }
            VectorIsa::Avx2 => {
                self.a.vmovmskps(eax, YMM[ok])?;
                self.a.cmp(eax, 0xFF)?;
                self.a.je(done)?;
            }
        }
        self.a.mov(rax, rsp)?;
        self.a.and(rsp, -64)?;
        self.a.sub(rsp, vectors + 128)?;
        self.a.mov(qword_ptr(rsp + vectors), rax)?;
        for (i, &r) in GPRS.iter().enumerate() {
            self.a.mov(qword_ptr(rsp + vectors + 8 + 8 * i as i32), r)?;
        }
        if isa == VectorIsa::Avx512 {
            self.a.kmovw(eax, k1)?;
            self.a.mov(qword_ptr(rsp + vectors + 72), rax)?;
        }
        self.save_vectors(true)?;
        self.a.mov(edi, f as u32)?;
        self.a.mov(esi, isa.lanes() as u32)?;
        self.a.lea(rdx, ptr(rsp + slot(x)))?;
        self.a.lea(rcx, ptr(rsp + slot(y)))?;
        self.a.lea(r8, ptr(rsp + slot(ok)))?;
        self.a
            .mov(rax, crate::helpers::trig_lanes_f32 as *const () as u64)?;
        self.a.call(rax)?;
        self.save_vectors(false)?;
        if isa == VectorIsa::Avx512 {
            self.a.mov(rax, qword_ptr(rsp + vectors + 72))?;
            self.a.kmovw(k1, eax)?;
        }
        for (i, &r) in GPRS.iter().enumerate() {
            self.a.mov(r, qword_ptr(rsp + vectors + 8 + 8 * i as i32))?;
        }
        self.a.mov(rsp, qword_ptr(rsp + vectors))?;
        self.a.set_label(&mut done)?;
        // (No bytes: the label may share its place with the next one.)
        self.a.zero_bytes()?;
        Ok(())
    }

    /// Every vector register to (`save`) or from its slot of the save area at `rsp`.
    fn save_vectors(&mut self, save: bool) -> Result<(), Fail> {
        match self.lay.isa {
            VectorIsa::Avx512 => {
                for (i, &z) in ZMM.iter().enumerate() {
                    let m = zmmword_ptr(rsp + 64 * i as i32);
                    if save {
                        self.a.vmovups(m, z)?;
                    } else {
                        self.a.vmovups(z, m)?;
                    }
                }
            }
            VectorIsa::Avx2 => {
                for (i, &y) in YMM[..VectorIsa::Avx2.registers()].iter().enumerate() {
                    let m = ymmword_ptr(rsp + 32 * i as i32);
                    if save {
                        self.a.vmovups(m, y)?;
                    } else {
                        self.a.vmovups(y, m)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// `k2` = the comparison of `s[0]` and `s[1]` (`inst` an `FCmp` or `ICmp`; AVX-512);
    /// returns the register that held `s[0]` (`d` when it was a constant).
    fn compare_k2(&mut self, d: usize, inst: &Inst, s: &[Src]) -> Result<usize, Fail> {
        let a = self.register(d, s[0])?;
        let za = ZMM[a];
        macro_rules! cmp {
            ($m:ident, $pred:expr) => {
                match s[1] {
                    Src::Reg(b) => self.a.$m(k2, za, ZMM[b], $pred)?,
                    Src::Mem(m) => self.a.$m(k2, za, zmmword_ptr(m), $pred)?,
                    Src::Const(c, w) => self.a.$m(k2, za, broadcast(c, w), $pred)?,
                }
            };
        }
        match (inst.op, inst.wide) {
            (Op::FCmp(pred), false) => cmp!(vcmpps, pred),
            (Op::FCmp(pred), true) => cmp!(vcmppd, pred),
            (Op::ICmp { pred, unsigned }, false) if unsigned => cmp!(vpcmpud, pred),
            (Op::ICmp { pred, .. }, false) => cmp!(vpcmpd, pred),
            (Op::ICmp { pred, unsigned }, true) if unsigned => cmp!(vpcmpuq, pred),
            (Op::ICmp { pred, .. }, true) => cmp!(vpcmpq, pred),
            (op, _) => return Err(Fail(format!("{op:?} is not a comparison"))),
        }
        Ok(a)
    }

    /// `d` = the comparison of `s[0]` and `s[1]` as a mask (AVX2: `vcmpps` with the
    /// predicate; `vpcmpeqd` or `vpcmpgtd`, the integer comparisons `translate` leaves).
    fn compare_avx2(&mut self, d: usize, inst: &Inst, s: &[Src]) -> Result<(), Fail> {
        let a = YMM[self.register(d, s[0])?];
        macro_rules! cmp {
            ($m:ident $(, $pred:expr)?) => {
                match s[1] {
                    Src::Reg(b) => self.a.$m(YMM[d], a, YMM[b] $(, $pred)?)?,
                    Src::Mem(m) => self.a.$m(YMM[d], a, ymmword_ptr(m) $(, $pred)?)?,
                    Src::Const(c, _) => self.a.$m(YMM[d], a, ymmword_ptr(c) $(, $pred)?)?,
                }
            };
        }
        match (inst.op, inst.wide) {
            (Op::FCmp(pred), false) => cmp!(vcmpps, pred),
            (Op::FCmp(pred), true) => cmp!(vcmppd, pred),
            (Op::ICmp { pred: 0, .. }, false) => cmp!(vpcmpeqd),
            (Op::ICmp { pred: 0, .. }, true) => cmp!(vpcmpeqq),
            (
                Op::ICmp {
                    pred: 6,
                    unsigned: false,
                },
                false,
            ) => cmp!(vpcmpgtd),
            (
                Op::ICmp {
                    pred: 6,
                    unsigned: false,
                },
                true,
            ) => cmp!(vpcmpgtq),
            (op, _) => return Err(Fail(format!("{op:?} is not an AVX2 comparison"))),
        }
        Ok(())
    }

    /// One operation into `d` (distinct from every register in `s`, but a fused
    /// multiply-add's first factor, which it may write over).
    fn operation(&mut self, d: usize, inst: &Inst, s: &[Src]) -> Result<(), Fail> {
        let wide = inst.wide;
        // A constant first operand of an operation that commutes (bit for bit: IEEE 754
        // addition and multiplication, integer and bitwise operations; not x86's `max` and
        // `min`) goes second, where the instruction reads it from the pool, rather than
        // into `d` first.
        let commutes = matches!(
            inst.op,
            Op::FAdd
                | Op::FMul
                | Op::IAdd
                | Op::IMul
                | Op::And
                | Op::Or
                | Op::Xor
                | Op::SMax
                | Op::SMin
                | Op::UMax
                | Op::UMin
        );
        let swapped;
        let s = match s {
            &[c @ Src::Const(..), r @ Src::Reg(_)] if commutes => {
                swapped = [r, c];
                &swapped[..]
            }
            _ => s,
        };
        // `d = s0 op s1`, `s0` in a register (`d` after a copy when it is a constant).
        macro_rules! bin {
            ($n:ident, $w:ident) => {{
                let a = self.register(d, s[0])?;
                if wide {
                    self.$w(d, a, s[1])?
                } else {
                    self.$n(d, a, s[1])?
                }
            }};
        }
        macro_rules! un {
            ($n:ident, $w:ident $(, $imm:expr)?) => {
                if wide {
                    self.$w(d, s[0] $(, $imm)?)?
                } else {
                    self.$n(d, s[0] $(, $imm)?)?
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
            Op::Shl(n) => un!(vpslld, vpsllq, n as i32),
            Op::Ushr(n) => un!(vpsrld, vpsrlq, n as i32),
            Op::Sshr(n) => un!(vpsrad, vpsraq, n as i32),
            Op::FromInt if !wide => un!(vcvtdq2ps, vcvtdq2ps),
            Op::ToIntTruncate if !wide => un!(vcvttps2dq, vcvttps2dq),
            Op::GetExp if !wide => self.vgetexpps(d, s[0])?,
            // Interval `[1, 2)`, the source's sign (immediate 0).
            Op::GetMant if !wide => self.vgetmantps(d, s[0], 0)?,
            Op::Fixup if !wide => self.fixup(d, s)?,
            Op::Scale if !wide => bin!(vscalefps, vscalefps),
            Op::IMul
            | Op::FromInt
            | Op::ToIntTruncate
            | Op::GetExp
            | Op::GetMant
            | Op::Fixup
            | Op::Scale => return Err(unsupported()),
            Op::FCmp(_) | Op::ICmp { .. } => match self.lay.isa {
                VectorIsa::Avx512 => {
                    let a = ZMM[self.compare_k2(d, inst, s)?];
                    if wide {
                        self.a.vpternlogq(ZMM[d].k2().z(), a, a, ALL_ONES)?;
                    } else {
                        self.a.vpternlogd(ZMM[d].k2().z(), a, a, ALL_ONES)?;
                    }
                }
                VectorIsa::Avx2 => self.compare_avx2(d, inst, s)?,
            },
            Op::Fma | Op::Fnma => {
                let negate = inst.op == Op::Fnma;
                // A constant factor and an addend in a register other than `d`: `d = ±q·c +
                // d` after the addend's copy into `d` (a register move, which the core
                // renames away), the constant the instruction's broadcast operand rather
                // than broadcast into `d` by an instruction of its own.
                if let &[Src::Reg(q), c @ Src::Const(..), Src::Reg(a)]
                | &[c @ Src::Const(..), Src::Reg(q), Src::Reg(a)] = s
                {
                    if q != d {
                        self.copy(d, Src::Reg(a))?;
                        self.fma(Fma::Onto, (d, q, c), wide, negate)?;
                        return Ok(());
                    }
                }
                // d = ±q·d + c with d holding one factor: the accumulator written over in
                // place, or a constant factor copied into d so that the other (a register:
                // `translate` splits two constant factors) is `q`.
                let (p, q) = match (s[0], s[1]) {
                    (Src::Reg(a), _) if a == d => (s[0], s[1]),
                    (Src::Reg(_), Src::Const(..)) => (s[1], s[0]),
                    _ => (s[0], s[1]),
                };
                let Src::Reg(q) = q else {
                    return Err(Fail("fused multiply-add of two constants".into()));
                };
                self.copy(d, p)?;
                self.fma(Fma::Into, (d, q, s[2]), wide, negate)?;
            }
            Op::BitSelect => self.bit_select(d, wide, s)?,
            Op::Select => self.select(d, wide, s)?,
            Op::Copy => self.copy(d, s[0])?,
            Op::HalfRound => self.half_round(d, s[0])?,
        }
        Ok(())
    }

    /// `d` = `s[0]` fixed up by the class of each lane of `s[1]` (a register) with the
    /// constant table `s[2]` (AVX-512: a copy, then `vfixupimmps`, no exceptions reported).
    fn fixup(&mut self, d: usize, s: &[Src]) -> Result<(), Fail> {
        let (VectorIsa::Avx512, Src::Reg(x), Src::Const(table, _)) = (self.lay.isa, s[1], s[2])
        else {
            return Err(Fail("a fixup outside AVX-512 or of other operands".into()));
        };
        self.copy(d, s[0])?;
        self.a
            .vfixupimmps(ZMM[d], ZMM[x], broadcast(table, false), 0)?;
        Ok(())
    }

    /// `d` = the `f32` lanes of `s` rounded to `f16` values (F16C's two conversions, on
    /// `ymm` / `xmm` in AVX2 code, `zmm` / its low `ymm` in AVX-512 code).
    fn half_round(&mut self, d: usize, s: Src) -> Result<(), Fail> {
        let x = self.register(d, s)?;
        // Rounding control 0: to nearest, ties to even.
        match self.lay.isa {
            VectorIsa::Avx512 => {
                self.a.vcvtps2ph(YMM[d], ZMM[x], 0)?;
                self.a.vcvtph2ps(ZMM[d], YMM[d])?;
            }
            VectorIsa::Avx2 => {
                self.a.vcvtps2ph(XMM[d], YMM[x], 0)?;
                self.a.vcvtph2ps(YMM[d], XMM[d])?;
            }
        }
        Ok(())
    }

    /// `d` = the bits of `s[1]` where the constant `s[2]` has ones, of `s[0]` elsewhere
    /// (AVX-512: a copy of `s[0]`, then `vpternlogd` with table `0xD8`, `c ? b : a` for
    /// the destination `a`, the register `b` and the constant `c`).
    fn bit_select(&mut self, d: usize, wide: bool, s: &[Src]) -> Result<(), Fail> {
        const C_B_ELSE_A: i32 = 0xD8;
        let (VectorIsa::Avx512, Src::Reg(b), Src::Const(c, w)) = (self.lay.isa, s[1], s[2]) else {
            return Err(Fail(
                "a bitwise select outside AVX-512 or of other operands".into(),
            ));
        };
        self.copy(d, s[0])?;
        if wide {
            self.a
                .vpternlogq(ZMM[d], ZMM[b], broadcast(c, w), C_B_ELSE_A)?;
        } else {
            self.a
                .vpternlogd(ZMM[d], ZMM[b], broadcast(c, w), C_B_ELSE_A)?;
        }
        Ok(())
    }

    /// `d = m ? a : b` for a mask `m` (lanes all ones or zeros): AVX-512 `k2` from `m`, then
    /// [`Writer::blend_k2`]; AVX2 a `vblendvps` by `m`'s sign bits.
    fn select(&mut self, d: usize, wide: bool, s: &[Src]) -> Result<(), Fail> {
        let Src::Reg(m) = s[0] else {
            return Err(Fail("select on a constant mask".into()));
        };
        if self.lay.isa == VectorIsa::Avx2 {
            // `b` in a register (`d` after a copy), `a` a register or the pool's vector.
            let b = YMM[self.register(d, s[2])?];
            let (d, m) = (YMM[d], YMM[m]);
            match (s[1], wide) {
                (Src::Reg(a), false) => self.a.vblendvps(d, b, YMM[a], m)?,
                (Src::Reg(a), true) => self.a.vblendvpd(d, b, YMM[a], m)?,
                (Src::Mem(x), false) => self.a.vblendvps(d, b, ymmword_ptr(x), m)?,
                (Src::Mem(x), true) => self.a.vblendvpd(d, b, ymmword_ptr(x), m)?,
                (Src::Const(c, _), false) => self.a.vblendvps(d, b, ymmword_ptr(c), m)?,
                (Src::Const(c, _), true) => self.a.vblendvpd(d, b, ymmword_ptr(c), m)?,
            }
            return Ok(());
        }
        if wide {
            self.a.vptestmq(k2, ZMM[m], ZMM[m])?;
        } else {
            self.a.vptestmd(k2, ZMM[m], ZMM[m])?;
        }
        self.blend_k2(d, wide, s[1], s[2])
    }

    /// `d = k2 ? a : b`, lane by lane (AVX-512).
    fn blend_k2(&mut self, d: usize, wide: bool, a: Src, b: Src) -> Result<(), Fail> {
        let zd = ZMM[d];
        match (a, b) {
            (Src::Reg(a), Src::Reg(b)) if wide => self.a.vpblendmq(zd.k2(), ZMM[b], ZMM[a])?,
            (Src::Reg(a), Src::Reg(b)) => self.a.vpblendmd(zd.k2(), ZMM[b], ZMM[a])?,
            (Src::Const(a, w), Src::Reg(b)) if wide => {
                self.a.vpblendmq(zd.k2(), ZMM[b], broadcast(a, w))?
            }
            (Src::Const(a, w), Src::Reg(b)) => {
                self.a.vpblendmd(zd.k2(), ZMM[b], broadcast(a, w))?
            }
            (Src::Reg(a), _) => {
                self.copy(d, b)?;
                if wide {
                    self.a.vmovapd(zd.k2(), ZMM[a])?;
                } else {
                    self.a.vmovaps(zd.k2(), ZMM[a])?;
                }
            }
            (Src::Const(a, _), _) => {
                self.copy(d, b)?;
                if wide {
                    self.a.vbroadcastsd(zd.k2(), qword_ptr(a))?;
                } else {
                    self.a.vbroadcastss(zd.k2(), dword_ptr(a))?;
                }
            }
            (Src::Mem(_), _) => return Err(Fail("a blend of a folded load".into())),
        }
        Ok(())
    }
}
