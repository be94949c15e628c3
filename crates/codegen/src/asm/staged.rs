//! AVX2's last elements of a segment (fewer than a vector): AVX2 has no lane masks that every
//! instruction takes (AVX-512 runs them under `k1`), so they are copied into a stack area
//! whose other lanes are zero, one ordinary body runs over the copies, and the outputs'
//! elements are copied back. No load reads and no store writes outside the range.

use iced_x86::code_asm::*;

use super::emit::{Fail, Writer};
use super::POINTERS;

impl Writer<'_> {
    /// One body over elements `r8..r8 + rax` (`0 < rax <` a vector) through copies.
    ///
    /// The area, 32-byte aligned below the stack: one vector per buffer (the inputs read
    /// per element, then the outputs), the buffers' pointers, the count and the caller's
    /// `rsp`. Each pointer register is pointed at its copy for the body (`p = copy −
    /// size·r8`, so that `[p + size·r8]` is the copy, `size` its bytes per element) and
    /// restored after it. Clobbers `rax`, `rdx`, `r10`.
    pub(super) fn staged_body(&mut self) -> Result<(), Fail> {
        let lay = self.lay;
        let inputs: Vec<(AsmRegister64, usize)> = (lay.arg_reg.iter().enumerate())
            .filter_map(|(arg, p)| p.map(|p| (POINTERS[p], self.arg_size(arg))))
            .collect();
        let outputs = lay.out_reg.iter().zip(&self.plan.outputs);
        let streams: Vec<(AsmRegister64, usize)> = inputs
            .iter()
            .copied()
            .chain(outputs.map(|(&p, &(_, t))| (POINTERS[p], t.size_bytes())))
            .collect();
        let n = streams.len() as i32;
        let saved = 32 * n;
        let count = saved + 8 * n;
        let caller = count + 8;
        let area = (caller + 8 + 31) / 32 * 32;
        self.a.mov(r10, rsp)?;
        self.a.and(rsp, -32)?;
        self.a.sub(rsp, area)?;
        self.a.mov(qword_ptr(rsp + caller), r10)?;
        self.a.mov(qword_ptr(rsp + count), rax)?;
        for (i, &(p, _)) in streams.iter().enumerate() {
            self.a.mov(qword_ptr(rsp + saved + 8 * i as i32), p)?;
        }
        for (i, &(p, size)) in inputs.iter().enumerate() {
            let copy = 32 * i as i32;
            for q in 0..4 {
                self.a.mov(qword_ptr(rsp + copy + 8 * q), 0)?;
            }
            self.a.lea(r10, ptr(p + r8 * size as u32))?;
            self.copy_elements((r10, 0), (rsp, copy), size, count)?;
        }
        for (i, &(p, size)) in streams.iter().enumerate() {
            self.a.lea(rdx, ptr(r8 * size as u32))?;
            self.a.lea(p, ptr(rsp + 32 * i as i32))?;
            self.a.sub(p, rdx)?;
        }
        self.mark(None);
        self.bodies(1)?;
        for (i, &(p, size)) in streams.iter().enumerate() {
            self.a.mov(p, qword_ptr(rsp + saved + 8 * i as i32))?;
            if i >= inputs.len() {
                self.a.lea(r10, ptr(p + r8 * size as u32))?;
                self.copy_elements((rsp, 32 * i as i32), (r10, 0), size, count)?;
            }
        }
        self.a.mov(rsp, qword_ptr(rsp + caller))?;
        self.mark(None);
        Ok(())
    }

    /// Copies the count at `[rsp + count]` (at least one) of `size`-byte elements from
    /// `from` to `to` (each a base register other than `rax` and `rdx`, and a
    /// displacement); clobbers `rax`, `rdx`.
    fn copy_elements(
        &mut self,
        from: (AsmRegister64, i32),
        to: (AsmRegister64, i32),
        size: usize,
        count: i32,
    ) -> Result<(), Fail> {
        let mut again = self.a.create_label();
        let scale = size as u32;
        self.a.xor(edx, edx)?;
        self.a.set_label(&mut again)?;
        let (src, dst) = (from.0 + rdx * scale + from.1, to.0 + rdx * scale + to.1);
        match size {
            1 => {
                self.a.movzx(eax, byte_ptr(src))?;
                self.a.mov(byte_ptr(dst), al)?;
            }
            2 => {
                self.a.movzx(eax, word_ptr(src))?;
                self.a.mov(word_ptr(dst), ax)?;
            }
            _ => {
                self.a.mov(eax, dword_ptr(src))?;
                self.a.mov(dword_ptr(dst), eax)?;
            }
        }
        self.a.add(rdx, 1)?;
        self.a.cmp(rdx, qword_ptr(rsp + count))?;
        self.a.jb(again)?;
        Ok(())
    }
}
