//! Narrow storage types at the memory boundary ([`crate::storage`] says how a kernel holds
//! them). AVX2 code: a load widens 8- and 16-bit elements to 32-bit lanes (`vpmovzx…`,
//! `vpmovsx…`), a store packs the lanes back (`vpack…` in each 128-bit half, `vpermq` to
//! put the halves together). `f16` converts by F16C (`vcvtph2ps`, `vcvtps2ph`: exact, as
//! every value stored is an `f16` value); `bf16`'s bits become its `f32` value, and back,
//! by programs translated from [`crate::half`], the code Cranelift's loops run. AVX-512
//! code takes `f16` only, sixteen at a time by the same two instructions on `zmm`
//! registers, masked by `k1` in the tail body (masked-off elements are neither read nor
//! written, and do not fault: a tail that ends at an unmapped page runs). Both read and
//! write `bool` (bytes 0 or 1, held as masks of all ones or zeros): widened by `vpmovzxbd`
//! and the low bit spread over the lane; stored as each lane's top bit, by `vpmovdb` on
//! AVX-512 and the packs on AVX2.

use iced_x86::code_asm::*;

use cranelift_codegen::ir::types;
use graphlift_ir::ElementType;
use graphlift_kernels::target::VectorIsa;

use super::emit::{Fail, Writer};
use super::inst::{XMM, YMM, ZMM};
use super::program::{build, Program};
use super::program_emit::Frame;
use super::Refusal;
use crate::half::{bits16_of_value, bits16_to_f32};
use crate::plan::SlotId;

/// Whether the assembler's code for `isa` reads and writes storage type `t` (held in 32-bit
/// lanes): 16-bit floats and 8- and 16-bit integers on AVX2, `f16` on AVX-512.
pub(super) fn takes(isa: VectorIsa, t: ElementType) -> bool {
    use ElementType::{BF16, F16, I16, I8, U16, U8};
    match isa {
        VectorIsa::Avx2 => matches!(t, F16 | BF16 | I8 | U8 | I16 | U16),
        VectorIsa::Avx512 => t == F16,
    }
}

/// The program that turns a `bf16`'s bits (zero-extended `i32` lanes) into its `f32` value,
/// for a load of storage type `t`; `None` for the integer types, which widen only, and for
/// `f16` (F16C).
///
/// # Errors
/// [`Refusal::Storage`] if the conversion has no translation.
pub(super) fn load_program(t: ElementType, isa: VectorIsa) -> Result<Option<Program>, Refusal> {
    if t != ElementType::BF16 {
        return Ok(None);
    }
    build(
        &[(types::I32X4, None)],
        isa,
        || Refusal::Storage(t),
        |e, x| Some((bits16_to_f32(e, t, x[0]), None)),
    )
    .map(Some)
}

/// The program that turns an `f32` holding a `bf16` value into its bits (in the low half of
/// `i32` lanes), for a store of storage type `t`; `None` for the other types.
///
/// # Errors
/// [`Refusal::Storage`] if the conversion has no translation.
pub(super) fn store_program(t: ElementType, isa: VectorIsa) -> Result<Option<Program>, Refusal> {
    if t != ElementType::BF16 {
        return Ok(None);
    }
    build(
        &[(types::F32X4, None)],
        isa,
        || Refusal::Storage(t),
        |e, x| Some((bits16_of_value(e, t, x[0]), None)),
    )
    .map(Some)
}

/// The scratch registers a store of slot values as storage type `t` needs (with `t`'s store
/// program `p`): the program's and one for the bits, or one to pack in; `None` for `f16`.
pub(super) fn store_scratch(t: ElementType, p: Option<&Program>) -> Option<usize> {
    match (t, p) {
        (ElementType::F16, _) => None,
        (_, Some(p)) => Some(p.scratch + 1),
        (_, None) => Some(1),
    }
}

impl Writer<'_> {
    /// Loads slot `k` (of narrow storage type `t`) from `m`: the vector's elements widened
    /// into its register (`f16`: converted), or for a `bf16` into its last scratch register
    /// and then converted by its load program.
    pub(super) fn load_narrow(
        &mut self,
        k: SlotId,
        t: ElementType,
        m: AsmMemoryOperand,
    ) -> Result<(), Fail> {
        let bits = self.loaded_bits(k);
        if self.lay.isa == VectorIsa::Avx512 {
            // (Only `f16`: `takes`.)
            let m = ymmword_ptr(m);
            if self.masked {
                self.a.vcvtph2ps(ZMM[bits].k1().z(), m)?;
            } else {
                self.a.vcvtph2ps(ZMM[bits], m)?;
            }
            return Ok(());
        }
        let d = YMM[bits];
        match t {
            ElementType::F16 => self.a.vcvtph2ps(d, xmmword_ptr(m))?,
            ElementType::I8 => self.a.vpmovsxbd(d, qword_ptr(m))?,
            ElementType::U8 => self.a.vpmovzxbd(d, qword_ptr(m))?,
            ElementType::I16 => self.a.vpmovsxwd(d, xmmword_ptr(m))?,
            _ => self.a.vpmovzxwd(d, xmmword_ptr(m))?,
        }
        self.convert_loaded(k, bits)
    }

    /// Loads `bool` slot `k` from `m`: its bytes (0 or 1) widened to 32-bit lanes, then each
    /// lane's low bit copied over the lane (`vpslld` and `vpsrad` by 31): the mask the
    /// kernel holds for a `bool`, all ones for true, as in Cranelift's code.
    pub(super) fn load_bool(&mut self, k: SlotId, m: AsmMemoryOperand) -> Result<(), Fail> {
        let d = self.v(k);
        match self.lay.isa {
            VectorIsa::Avx512 => {
                let (m, z) = (xmmword_ptr(m), ZMM[d]);
                if self.masked {
                    self.a.vpmovzxbd(z.k1().z(), m)?;
                } else {
                    self.a.vpmovzxbd(z, m)?;
                }
                self.a.vpslld(z, z, 31)?;
                self.a.vpsrad(z, z, 31)?;
            }
            VectorIsa::Avx2 => {
                let y = YMM[d];
                self.a.vpmovzxbd(y, qword_ptr(m))?;
                self.a.vpslld(y, y, 31)?;
                self.a.vpsrad(y, y, 31)?;
            }
        }
        Ok(())
    }

    /// Splats the `bool` at `[rax]` into slot `k` as its mask (an invariant load).
    pub(super) fn splat_bool(&mut self, k: SlotId) -> Result<(), Fail> {
        self.a.movzx(eax, byte_ptr(rax))?;
        self.a.neg(eax)?;
        self.splat_eax(self.v(k))
    }

    /// Splats the element of narrow storage type `t` at `[rax]` into slot `k` (an invariant
    /// load), converted as [`Writer::load_narrow`] does.
    pub(super) fn splat_narrow(&mut self, k: SlotId, t: ElementType) -> Result<(), Fail> {
        let bits = self.loaded_bits(k);
        match t {
            ElementType::I8 => self.a.movsx(eax, byte_ptr(rax))?,
            ElementType::U8 => self.a.movzx(eax, byte_ptr(rax))?,
            ElementType::I16 => self.a.movsx(eax, word_ptr(rax))?,
            _ => self.a.movzx(eax, word_ptr(rax))?,
        }
        if t == ElementType::F16 && self.lay.isa == VectorIsa::Avx512 {
            // The half widened in lane 0 (the other lanes' halves are zeros), then that
            // lane broadcast: no word broadcast (AVX-512BW) needed, any register.
            self.a.vmovd(XMM[bits], eax)?;
            self.a.vcvtph2ps(ZMM[bits], YMM[bits])?;
            self.a.vbroadcastss(ZMM[bits], XMM[bits])?;
            return Ok(());
        }
        if t == ElementType::F16 {
            let x = XMM[bits];
            self.a.vmovd(x, eax)?;
            self.a.vpbroadcastw(x, x)?;
            self.a.vcvtph2ps(YMM[bits], x)?;
            return Ok(());
        }
        self.splat_eax(bits)?;
        self.convert_loaded(k, bits)
    }

    /// The register a load of slot `k` widens into: its own, or with a load program the
    /// last of its scratch registers (the program's input).
    fn loaded_bits(&self, k: SlotId) -> usize {
        match self.lay.load_conv[k].as_ref() {
            Some(p) => self.scratch(k, p.scratch),
            None => self.v(k),
        }
    }

    /// Slot `k`'s load program on the bits in register `bits`, into its register.
    fn convert_loaded(&mut self, k: SlotId, bits: usize) -> Result<(), Fail> {
        let lay = self.lay;
        let Some(p) = lay.load_conv[k].as_ref() else {
            return Ok(());
        };
        let frame = Frame {
            inputs: vec![bits],
            result: self.v(k),
            scratch: (0..p.scratch).map(|r| self.scratch(k, r)).collect(),
        };
        self.run_program(p, &[frame])
    }

    /// Stores slot `k` as narrow storage type `t` to `m`: `f16` converted by `vcvtps2ph`;
    /// a `bool` (a mask) as bytes 0 or 1 (each lane's top bit shifted down into its scratch
    /// register, then `vpmovdb` on AVX-512, the integer packs on AVX2); else its lanes (for
    /// a `bf16`, the bits its store program gives, in its last scratch register) packed
    /// into that scratch register, then its low 16 or 8 bytes stored. The slot's register
    /// is kept.
    pub(super) fn store_narrow(
        &mut self,
        k: SlotId,
        t: ElementType,
        m: AsmMemoryOperand,
    ) -> Result<(), Fail> {
        let lay = self.lay;
        if t == ElementType::F16 {
            // Rounding control 0 (to nearest even): exact on the `f16` values stored.
            match (self.lay.isa, self.masked) {
                (VectorIsa::Avx512, true) => {
                    self.a.vcvtps2ph(ymmword_ptr(m).k1(), ZMM[self.v(k)], 0)?
                }
                (VectorIsa::Avx512, false) => {
                    self.a.vcvtps2ph(ymmword_ptr(m), ZMM[self.v(k)], 0)?
                }
                (VectorIsa::Avx2, _) => self.a.vcvtps2ph(xmmword_ptr(m), YMM[self.v(k)], 0)?,
            }
            return Ok(());
        }
        if t == ElementType::Bool {
            let tmp = self.scratch(k, 0);
            if lay.isa == VectorIsa::Avx512 {
                self.a.vpsrld(ZMM[tmp], ZMM[self.v(k)], 31)?;
                if self.masked {
                    self.a.vpmovdb(xmmword_ptr(m).k1(), ZMM[tmp])?;
                } else {
                    self.a.vpmovdb(xmmword_ptr(m), ZMM[tmp])?;
                }
                return Ok(());
            }
            self.a.vpsrld(YMM[tmp], YMM[self.v(k)], 31)?;
            return self.pack_store(tmp, tmp, ElementType::U8, m);
        }
        let (src, tmp) = match lay.store_conv[k].as_ref() {
            Some(p) => {
                let out = self.scratch(k, p.scratch);
                let frame = Frame {
                    inputs: vec![self.v(k)],
                    result: out,
                    scratch: (0..p.scratch).map(|r| self.scratch(k, r)).collect(),
                };
                self.run_program(p, &[frame])?;
                (out, out)
            }
            None => (self.v(k), self.scratch(k, 0)),
        };
        self.pack_store(src, tmp, t, m)
    }

    /// AVX2: the lanes of `src`, each one of `t`'s values (8- or 16-bit integers, or bits),
    /// packed into `tmp` and its low 16 or 8 bytes stored to `m`.
    fn pack_store(
        &mut self,
        src: usize,
        tmp: usize,
        t: ElementType,
        m: AsmMemoryOperand,
    ) -> Result<(), Fail> {
        // Every lane holds one of `t`'s values (`crate::storage`), so the saturating packs
        // only drop the high bytes.
        let signed = matches!(t, ElementType::I8 | ElementType::I16);
        if signed {
            self.a.vpackssdw(YMM[tmp], YMM[src], YMM[src])?;
        } else {
            self.a.vpackusdw(YMM[tmp], YMM[src], YMM[src])?;
        }
        // Words 0–3 and 8–11 (the lanes' low and high halves) to the low 128 bits.
        self.a.vpermq(YMM[tmp], YMM[tmp], 0b00_00_10_00)?;
        match (t.size_bytes(), signed) {
            (2, _) => self.a.vmovdqu(xmmword_ptr(m), XMM[tmp])?,
            (_, true) => {
                self.a.vpacksswb(XMM[tmp], XMM[tmp], XMM[tmp])?;
                self.a.vmovq(qword_ptr(m), XMM[tmp])?;
            }
            (_, false) => {
                self.a.vpackuswb(XMM[tmp], XMM[tmp], XMM[tmp])?;
                self.a.vmovq(qword_ptr(m), XMM[tmp])?;
            }
        }
        Ok(())
    }
}
