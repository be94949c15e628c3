//! The instructions of both instruction sets behind one interface: vector registers by
//! number, source operands ([`Src`]), and each operation the writer emits as the AVX-512
//! instruction on `zmm` registers (EVEX: constants as broadcast operands, the tail's lanes
//! under `k1`) or as the AVX2 one on `ymm` registers (VEX: constants read whole from the
//! pool, which holds them at full width for AVX2).

use iced_x86::code_asm::*;

use graphlift_kernels::target::VectorIsa;

use super::emit::{Fail, Writer};

/// The AVX-512 vector registers.
pub(super) const ZMM: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];
/// The `ymm` registers by number: the AVX2 vector registers (AVX2 code names the first
/// 16, [`VectorIsa::registers`]), and the low halves of [`ZMM`], where AVX-512 code keeps a
/// vector of sixteen `f16` ([`super::conversion`]).
pub(super) const YMM: [AsmRegisterYmm; 32] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15, ymm16, ymm17, ymm18, ymm19, ymm20, ymm21, ymm22, ymm23, ymm24, ymm25, ymm26, ymm27,
    ymm28, ymm29, ymm30, ymm31,
];
/// The `xmm` registers by number: the low 128 bits of [`YMM`] and [`ZMM`].
pub(super) const XMM: [AsmRegisterXmm; 32] = [
    xmm0, xmm1, xmm2, xmm3, xmm4, xmm5, xmm6, xmm7, xmm8, xmm9, xmm10, xmm11, xmm12, xmm13, xmm14,
    xmm15, xmm16, xmm17, xmm18, xmm19, xmm20, xmm21, xmm22, xmm23, xmm24, xmm25, xmm26, xmm27,
    xmm28, xmm29, xmm30, xmm31,
];

/// A source operand.
#[derive(Clone, Copy)]
pub(super) enum Src {
    /// Vector register `i`.
    Reg(usize),
    /// A whole vector in memory (a folded load), its size given per instruction set.
    Mem(AsmMemoryOperand),
    /// A constant of the pool: its label, and whether its lanes are 64-bit.
    Const(CodeLabel, bool),
}

/// A pool constant as AVX-512's broadcast operand (`{1to16}` or `{1to8}`).
pub(super) fn broadcast(c: CodeLabel, wide: bool) -> AsmMemoryOperand {
    if wide {
        qword_bcst(c)
    } else {
        dword_bcst(c)
    }
}

/// The fused multiply-add `$m` of the registers `$d`, `$q` and the source `$c` on `zmm`
/// registers (AVX-512: a constant as the broadcast operand) or `ymm` ones (AVX2: the
/// constant read whole).
macro_rules! fused {
    ($w:ident, $m:ident, $d:expr, $q:expr, $c:expr) => {
        match ($w.lay.isa, $c) {
            (VectorIsa::Avx512, Src::Reg(c)) => $w.a.$m(ZMM[$d], ZMM[$q], ZMM[c])?,
            (VectorIsa::Avx512, Src::Mem(m)) => $w.a.$m(ZMM[$d], ZMM[$q], zmmword_ptr(m))?,
            (VectorIsa::Avx512, Src::Const(c, w)) => $w.a.$m(ZMM[$d], ZMM[$q], broadcast(c, w))?,
            (VectorIsa::Avx2, Src::Reg(c)) => $w.a.$m(YMM[$d], YMM[$q], YMM[c])?,
            (VectorIsa::Avx2, Src::Mem(m)) => $w.a.$m(YMM[$d], YMM[$q], ymmword_ptr(m))?,
            (VectorIsa::Avx2, Src::Const(c, _)) => $w.a.$m(YMM[$d], YMM[$q], ymmword_ptr(c))?,
        }
    };
}

/// `d = a op b` methods, named after the AVX-512 instruction, with the AVX2 one (`-`: none;
/// the translation refuses what would need it).
macro_rules! three {
    ($($name:ident / $y:tt;)*) => {
        impl Writer<'_> {
            $(
                #[doc = concat!("`d = a ", stringify!($name), " b`.")]
                pub(super) fn $name(&mut self, d: usize, a: usize, b: Src) -> Result<(), Fail> {
                    match self.lay.isa {
                        VectorIsa::Avx512 => match b {
                            Src::Reg(b) => self.a.$name(ZMM[d], ZMM[a], ZMM[b])?,
                            Src::Mem(m) if self.masked => {
                                self.a.$name(ZMM[d].k1().z(), ZMM[a], zmmword_ptr(m))?
                            }
                            Src::Mem(m) => self.a.$name(ZMM[d], ZMM[a], zmmword_ptr(m))?,
                            Src::Const(c, w) => self.a.$name(ZMM[d], ZMM[a], broadcast(c, w))?,
                        },
                        VectorIsa::Avx2 => three!(@avx2 self, $name, $y, d, a, b),
                    }
                    Ok(())
                }
            )*
        }
    };
    (@avx2 $w:ident, $name:ident, -, $d:ident, $a:ident, $b:ident) => {
        return Err(Fail(format!("no AVX2 instruction for {}", stringify!($name))))
    };
    (@avx2 $w:ident, $name:ident, $y:ident, $d:ident, $a:ident, $b:ident) => {
        match $b {
            Src::Reg(b) => $w.a.$y(YMM[$d], YMM[$a], YMM[b])?,
            Src::Mem(m) => $w.a.$y(YMM[$d], YMM[$a], ymmword_ptr(m))?,
            Src::Const(c, _) => $w.a.$y(YMM[$d], YMM[$a], ymmword_ptr(c))?,
        }
    };
}

three! {
    vaddps / vaddps;
    vaddpd / vaddpd;
    vsubps / vsubps;
    vsubpd / vsubpd;
    vmulps / vmulps;
    vmulpd / vmulpd;
    vdivps / vdivps;
    vdivpd / vdivpd;
    vmaxps / vmaxps;
    vmaxpd / vmaxpd;
    vminps / vminps;
    vminpd / vminpd;
    vpaddd / vpaddd;
    vpaddq / vpaddq;
    vpsubd / vpsubd;
    vpsubq / vpsubq;
    vpandd / vpand;
    vpandq / vpand;
    vpord / vpor;
    vporq / vpor;
    vpxord / vpxor;
    vpxorq / vpxor;
    vpmaxsd / vpmaxsd;
    vpminsd / vpminsd;
    vpmaxud / vpmaxud;
    vpminud / vpminud;
    vpmulld / vpmulld;
    vpmaxsq / -;
    vpminsq / -;
    vpmaxuq / -;
    vpminuq / -;
    vscalefps / -;
}

/// `d = op s` methods (`op s, imm` for those given an immediate), named after the AVX-512
/// instruction, with the AVX2 one. An AVX2 shift takes its source in a register only: a
/// constant is loaded into `d` first.
macro_rules! two {
    ($($name:ident / $y:tt $(, $imm:ident)?;)*) => {
        impl Writer<'_> {
            $(
                #[doc = concat!("`d = ", stringify!($name), " s`.")]
                pub(super) fn $name(&mut self, d: usize, s: Src $(, $imm: i32)?) -> Result<(), Fail> {
                    match self.lay.isa {
                        VectorIsa::Avx512 => match s {
                            Src::Reg(x) => self.a.$name(ZMM[d], ZMM[x] $(, $imm)?)?,
                            Src::Mem(m) if self.masked => {
                                self.a.$name(ZMM[d].k1().z(), zmmword_ptr(m) $(, $imm)?)?
                            }
                            Src::Mem(m) => self.a.$name(ZMM[d], zmmword_ptr(m) $(, $imm)?)?,
                            Src::Const(c, w) => self.a.$name(ZMM[d], broadcast(c, w) $(, $imm)?)?,
                        },
                        VectorIsa::Avx2 => two!(@avx2 self, $y, d, s $(, $imm)?),
                    }
                    Ok(())
                }
            )*
        }
    };
    (@avx2 $w:ident, -, $d:ident, $s:ident $(, $imm:ident)?) => {
        return Err(Fail("no AVX2 instruction for this operation".into()))
    };
    (@avx2 $w:ident, (reg $y:ident), $d:ident, $s:ident, $imm:ident) => {{
        let x = $w.register($d, $s)?;
        $w.a.$y(YMM[$d], YMM[x], $imm)?
    }};
    (@avx2 $w:ident, $y:ident, $d:ident, $s:ident $(, $imm:ident)?) => {
        match $s {
            Src::Reg(x) => $w.a.$y(YMM[$d], YMM[x] $(, $imm)?)?,
            Src::Mem(m) => $w.a.$y(YMM[$d], ymmword_ptr(m) $(, $imm)?)?,
            Src::Const(c, _) => $w.a.$y(YMM[$d], ymmword_ptr(c) $(, $imm)?)?,
        }
    };
}

two! {
    vsqrtps / vsqrtps;
    vsqrtpd / vsqrtpd;
    vcvtdq2ps / vcvtdq2ps;
    vcvttps2dq / vcvttps2dq;
    vrndscaleps / vroundps, imm;
    vrndscalepd / vroundpd, imm;
    vpslld / (reg vpslld), imm;
    vpsllq / (reg vpsllq), imm;
    vpsrld / (reg vpsrld), imm;
    vpsrlq / (reg vpsrlq), imm;
    vpsrad / (reg vpsrad), imm;
    vpsraq / -, imm;
    vgetexpps / -;
    vgetmantps / -, imm;
}

impl Writer<'_> {
    /// `d = s`: a register copy, or a constant's lanes (AVX-512: a broadcast of the pool's
    /// value; AVX2: the pool's whole vector).
    pub(super) fn copy(&mut self, d: usize, s: Src) -> Result<(), Fail> {
        let s = match s {
            Src::Const(c, _) if self.holding => self.held(c).map_or(s, Src::Reg),
            _ => s,
        };
        match (self.lay.isa, s) {
            (_, Src::Reg(r)) if r == d => {}
            (VectorIsa::Avx512, Src::Reg(r)) => self.a.vmovaps(ZMM[d], ZMM[r])?,
            (VectorIsa::Avx512, Src::Mem(m)) => self.a.vmovups(ZMM[d], zmmword_ptr(m))?,
            (VectorIsa::Avx512, Src::Const(c, false)) => {
                self.a.vbroadcastss(ZMM[d], dword_ptr(c))?
            }
            (VectorIsa::Avx512, Src::Const(c, true)) => {
                self.a.vbroadcastsd(ZMM[d], qword_ptr(c))?
            }
            (VectorIsa::Avx2, Src::Reg(r)) => self.a.vmovaps(YMM[d], YMM[r])?,
            (VectorIsa::Avx2, Src::Mem(m)) => self.a.vmovups(YMM[d], ymmword_ptr(m))?,
            (VectorIsa::Avx2, Src::Const(c, _)) => self.a.vmovaps(YMM[d], ymmword_ptr(c))?,
        }
        Ok(())
    }

    /// The register that holds the pool constant `c` for the call, if one does.
    fn held(&self, c: CodeLabel) -> Option<usize> {
        let &(bits, wide, _) = self.pool.iter().find(|&&(_, _, l)| l == c)?;
        let held = self
            .lay
            .held
            .iter()
            .find(|&&(b, w, _)| (b, w) == (bits, wide));
        held.map(|&(_, _, r)| r)
    }

    /// `s` as a register: its own, or `d` after [`Writer::copy`] into it.
    pub(super) fn register(&mut self, d: usize, s: Src) -> Result<usize, Fail> {
        match s {
            Src::Reg(r) => Ok(r),
            _ => {
                self.copy(d, s)?;
                Ok(d)
            }
        }
    }

    /// `d` = the vector at `m` (a per-element load; AVX-512's masked tail: `k1`'s lanes,
    /// the others zero and not read).
    pub(super) fn load(&mut self, d: usize, m: AsmMemoryOperand) -> Result<(), Fail> {
        match self.lay.isa {
            VectorIsa::Avx512 if self.masked => self.a.vmovups(ZMM[d].k1().z(), zmmword_ptr(m))?,
            VectorIsa::Avx512 => self.a.vmovups(ZMM[d], zmmword_ptr(m))?,
            VectorIsa::Avx2 => self.a.vmovups(YMM[d], ymmword_ptr(m))?,
        }
        Ok(())
    }

    /// The vector at `m` = register `v` (AVX-512's masked tail: `k1`'s lanes only; in a
    /// streaming main loop, [`Writer::nt`], past the caches: `m` is 64-byte aligned there).
    pub(super) fn store_vector(&mut self, m: AsmMemoryOperand, v: usize) -> Result<(), Fail> {
        match self.lay.isa {
            VectorIsa::Avx512 if self.masked => self.a.vmovups(zmmword_ptr(m).k1(), ZMM[v])?,
            VectorIsa::Avx512 if self.nt => self.a.vmovntps(zmmword_ptr(m), ZMM[v])?,
            VectorIsa::Avx512 => self.a.vmovups(zmmword_ptr(m), ZMM[v])?,
            VectorIsa::Avx2 => self.a.vmovups(ymmword_ptr(m), YMM[v])?,
        }
        Ok(())
    }

    /// `d` = the 32-bit value at `m` in every lane.
    pub(super) fn broadcast_from(&mut self, d: usize, m: AsmMemoryOperand) -> Result<(), Fail> {
        match self.lay.isa {
            VectorIsa::Avx512 => self.a.vbroadcastss(ZMM[d], dword_ptr(m))?,
            VectorIsa::Avx2 => self.a.vbroadcastss(YMM[d], dword_ptr(m))?,
        }
        Ok(())
    }

    /// `d` = `bits` in every 32-bit lane (zero by a `vpxor`, others through `eax`).
    pub(super) fn splat(&mut self, d: usize, bits: u32) -> Result<(), Fail> {
        match (self.lay.isa, bits) {
            (VectorIsa::Avx512, 0) => self.a.vpxord(ZMM[d], ZMM[d], ZMM[d])?,
            (VectorIsa::Avx2, 0) => self.a.vpxor(YMM[d], YMM[d], YMM[d])?,
            _ => {
                self.a.mov(eax, bits)?;
                self.splat_eax(d)?;
            }
        }
        Ok(())
    }

    /// `d` = `eax` in every 32-bit lane.
    pub(super) fn splat_eax(&mut self, d: usize) -> Result<(), Fail> {
        match self.lay.isa {
            VectorIsa::Avx512 => self.a.vpbroadcastd(ZMM[d], eax)?,
            VectorIsa::Avx2 => {
                self.a.vmovd(XMM[d], eax)?;
                self.a.vpbroadcastd(YMM[d], XMM[d])?;
            }
        }
        Ok(())
    }

    /// A fused multiply-add, rounded once, in `form` (`…ps`, or `…pd` for `wide`; with
    /// `negate` the product negated, `vfnmadd…`): [`Fma::Into`] `d = ±q·d + c`
    /// (`vfmadd213`), [`Fma::Onto`] `d = ±q·c + d` (`vfmadd231`, where a constant factor `c`
    /// is the instruction's broadcast operand rather than a register it is copied into).
    pub(super) fn fma(
        &mut self,
        form: Fma,
        (d, q, c): (usize, usize, Src),
        wide: bool,
        negate: bool,
    ) -> Result<(), Fail> {
        match (form, wide, negate) {
            (Fma::Into, true, false) => fused!(self, vfmadd213pd, d, q, c),
            (Fma::Into, false, false) => fused!(self, vfmadd213ps, d, q, c),
            (Fma::Into, true, true) => fused!(self, vfnmadd213pd, d, q, c),
            (Fma::Into, false, true) => fused!(self, vfnmadd213ps, d, q, c),
            (Fma::Onto, true, false) => fused!(self, vfmadd231pd, d, q, c),
            (Fma::Onto, false, false) => fused!(self, vfmadd231ps, d, q, c),
            (Fma::Onto, true, true) => fused!(self, vfnmadd231pd, d, q, c),
            (Fma::Onto, false, true) => fused!(self, vfnmadd231ps, d, q, c),
        }
        Ok(())
    }
}

/// Which of its operands a fused multiply-add writes over ([`Writer::fma`]).
#[derive(Clone, Copy)]
pub(super) enum Fma {
    /// A factor: `d = ±q·d + c` (the `213` forms).
    Into,
    /// The addend: `d = ±q·c + d` (the `231` forms).
    Onto,
}
