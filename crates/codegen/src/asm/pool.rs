//! The constant pool of an assembled kernel: the constants its programs read, before the
//! code, each at a label: one value that AVX-512 instructions read as a broadcast operand,
//! or for AVX2 (which has no broadcast operands) a whole 32-byte vector of it.

use iced_x86::code_asm::*;

use graphlift_kernels::target::VectorIsa;

use super::emit::{Fail, Writer};

impl Writer<'_> {
    /// The label of `bits` (64-bit with `wide`, else the low 32) in the constant pool
    /// ([`Layout::constants`]).
    pub(super) fn constant(&self, bits: u64, wide: bool) -> Result<CodeLabel, Fail> {
        let bits = if wide {
            bits
        } else {
            bits & u64::from(u32::MAX)
        };
        self.pool
            .iter()
            .find(|&&(b, w, _)| (b, w) == (bits, wide))
            .map(|&(_, _, l)| l)
            .ok_or_else(|| Fail(format!("constant {bits:#x} is not in the pool")))
    }

    /// The constant pool, at offset 0 (the code is mapped at a page boundary; the 64-bit
    /// constants first, so each is aligned; AVX2's vectors each on 32 bytes), padded with `int3` to a whole number of 64-byte
    /// lines so that no line holds both code and the data it reads (a read of such a line
    /// costs a pipeline clear) and no constant straddles two lines; sets
    /// [`Writer::entry`] to the end of the padding.
    pub(super) fn constant_pool(&mut self) -> Result<(), Fail> {
        let constants = self.lay.constants();
        let mut pool = Vec::with_capacity(constants.len());
        let mut bytes = 0usize;
        // Copies of each value: one, or a whole AVX2 vector.
        let (words, quads) = match self.lay.isa {
            VectorIsa::Avx512 => (1, 1),
            VectorIsa::Avx2 => (8, 4),
        };
        for (bits, wide) in constants {
            let mut label = self.a.create_label();
            self.a.set_label(&mut label)?;
            if wide {
                self.a.dq(&vec![bits; quads])?;
                bytes += 8 * quads;
            } else {
                self.a.dd(&vec![bits as u32; words])?;
                bytes += 4 * words;
            }
            pool.push((bits, wide, label));
        }
        self.pool = pool;
        self.entry = bytes.div_ceil(64) * 64;
        if self.entry > bytes {
            self.a.db(&vec![0xCC; self.entry - bytes])?;
        }
        self.mark(None);
        Ok(())
    }
}
