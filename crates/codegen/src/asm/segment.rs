//! The loops of an assembled kernel over its range ([`super::Layout`]'s steps 2 and 3): a
//! segment's start (the row pointers, the runs' broadcasts), the peel to an output's
//! 64-byte line, the main loop of unrolled bodies (a streaming kernel's writing whole lines
//! past the caches where its outputs are aligned), single bodies and the masked tail. The
//! bodies themselves are `super::emit`'s.

use iced_x86::code_asm::*;

use graphlift_kernels::target::VectorIsa;

use super::emit::{Fail, Writer};
use super::{POINTERS, UNROLL};
use crate::divide::{ConstDivisor, Method};

impl Writer<'_> {
    /// `rax = rax / d` for `rax` below `bound` ([`ConstDivisor`]); clobbers `rdx`, `r10`.
    pub(super) fn quotient(&mut self, d: usize, bound: usize) -> Result<(), Fail> {
        let c = ConstDivisor::new(d, bound);
        match c.method() {
            Method::Shift(0) => {}
            Method::Shift(k) => self.a.shr(rax, k)?,
            Method::Multiply { m, s } => {
                self.a.mov(r10, m)?;
                self.a.imul_2(rax, r10)?;
                self.a.shr(rax, s)?;
            }
            Method::Divide => {
                self.a.xor(edx, edx)?;
                self.a.mov(r10, c.divisor())?;
                self.a.div(r10)?;
            }
        }
        Ok(())
    }

    /// `reg *= c`, through `r10` when `c` does not fit an immediate.
    pub(super) fn multiply(&mut self, reg: AsmRegister64, c: usize) -> Result<(), Fail> {
        if c == 1 {
            return Ok(());
        }
        match i32::try_from(c) {
            Ok(c) => self.a.imul_3(reg, reg, c)?,
            Err(_) => {
                self.a.mov(r10, c as u64)?;
                self.a.imul_2(reg, r10)?;
            }
        }
        Ok(())
    }

    /// Points the row vectors at the row that ends at `rax` (row length `k`): `p = base −
    /// size·(rax − k)` (`size` the input's bytes per element), so that `[p + size·r8]` is
    /// the row's element `r8 − (rax − k)`. Clobbers `rdx`, `r10`.
    pub(super) fn row_pointers(&mut self, k: usize) -> Result<(), Fail> {
        let lay = self.lay;
        self.a.lea(rdx, ptr(rax - k as i32))?;
        let all_words = lay.row_args.iter().all(|&arg| self.arg_size(arg) == 4);
        if all_words {
            self.a.shl(rdx, 2)?;
        }
        for &arg in &lay.row_args {
            let Some(p) = lay.arg_reg[arg] else {
                continue;
            };
            let p = POINTERS[p];
            self.a.mov(p, qword_ptr(r11 + (8 * arg) as i32))?;
            if all_words {
                self.a.sub(p, rdx)?;
            } else {
                self.a.lea(r10, ptr(rdx * self.arg_size(arg) as u32))?;
                self.a.sub(p, r10)?;
            }
        }
        Ok(())
    }

    /// The start of a segment at element `r8`: `r9` = its end (the range's end, the end of
    /// `r8`'s row, the end of its run, whichever comes first), the row pointers moved to
    /// `r8`'s row, and the run values broadcast.
    pub(super) fn segment_start(&mut self) -> Result<(), Fail> {
        let lay = self.lay;
        let bound = lay.count.saturating_add(1);
        self.a.mov(r9, rcx)?;
        if let Some(k) = lay.row {
            // [rsp] holds the end of the current row: segments never step over a row end,
            // so r8 reaches it exactly when a new row starts.
            let mut same_row = self.a.create_label();
            self.a.mov(rax, qword_ptr(rsp))?;
            self.a.cmp(r8, rax)?;
            self.a.jb(same_row)?;
            self.a.add(rax, k as i32)?;
            self.a.mov(qword_ptr(rsp), rax)?;
            self.row_pointers(k)?;
            self.a.set_label(&mut same_row)?;
            self.a.cmp(r9, rax)?;
            self.a.cmova(r9, rax)?;
        }
        if let Some(run) = &lay.run {
            // rax = r8 / div: the run; its end (rax + 1) * div bounds the segment.
            self.a.mov(rax, r8)?;
            self.quotient(run.div, bound)?;
            self.a.mov(r15, rax)?;
            self.a.add(rax, 1)?;
            self.multiply(rax, run.div)?;
            self.a.cmp(r9, rax)?;
            self.a.cmova(r9, rax)?;
            if run.modulo != 0 {
                // r15 = r15 mod modulo.
                self.a.mov(rax, r15)?;
                self.quotient(run.modulo, bound / run.div + 1)?;
                self.multiply(rax, run.modulo)?;
                self.a.sub(r15, rax)?;
            }
            self.mark(None);
            for &(k, arg, stride) in &run.loads {
                self.a.mov(rdx, qword_ptr(r11 + (8 * arg) as i32))?;
                self.a.mov(rax, r15)?;
                self.multiply(rax, stride)?;
                let d = self.v(k);
                self.broadcast_from(d, ptr(rdx + rax * 4))?;
                self.mark(Some(k));
            }
        }
        Ok(())
    }

    /// `rax` = the elements from `r8` to output `o`'s next 64-byte boundary (at most 15),
    /// but no more than the segment's `r9 - r8`; clobbers `rdx`.
    fn elements_to_boundary(&mut self, o: usize) -> Result<(), Fail> {
        let out = POINTERS[self.lay.out_reg[o]];
        self.a.lea(rax, qword_ptr(out + r8 * 4))?;
        self.a.neg(rax)?;
        self.a.and(rax, 63)?;
        self.a.shr(rax, 2)?;
        self.a.mov(rdx, r9)?;
        self.a.sub(rdx, r8)?;
        self.a.cmp(rax, rdx)?;
        self.a.cmova(rax, rdx)?;
        Ok(())
    }

    /// A masked body over the elements before the first output's next 64-byte boundary,
    /// so that the loops after it load and store whole cache lines (a 64-byte access that
    /// splits two lines costs two; glibc's allocator aligns large buffers to 16 bytes only),
    /// when every buffer the loops stream through (outputs and contiguous inputs) lies at the
    /// same offset from a 64-byte boundary at `r8`, as buffers from one allocator do: then
    /// all of them become aligned. A streaming kernel aligns its first output of 32-bit
    /// elements whatever the others' offsets (row vectors and runs included), so that its
    /// main loop can write whole lines past the caches. Otherwise, with row vectors or runs,
    /// or on AVX2 (whose tail is staged: its 32-byte vectors split a line at every other
    /// access of a buffer 16 bytes off, not at every one), nothing changes.
    fn align_to_output(&mut self) -> Result<(), Fail> {
        let lay = self.lay;
        let streams = self.streams();
        if lay.isa != VectorIsa::Avx512 || (!streams && (lay.row.is_some() || lay.run.is_some())) {
            return Ok(());
        }
        let first = if streams {
            let whole = self
                .plan
                .outputs
                .iter()
                .position(|(_, t)| t.size_bytes() == 4);
            let Some(o) = whole else {
                return Ok(());
            };
            o
        } else {
            0
        };
        let mut aligned = self.a.create_label();
        if !streams {
            // r15 = the first output's offset; any other stream at another offset: no peel.
            let out = POINTERS[lay.out_reg[0]];
            self.a.lea(r15, qword_ptr(out + r8 * 4))?;
            self.a.and(r15, 63)?;
            let others = lay.out_reg[1..].iter().chain(lay.arg_reg.iter().flatten());
            for &p in others {
                self.a.lea(rdx, qword_ptr(POINTERS[p] + r8 * 4))?;
                self.a.and(rdx, 63)?;
                self.a.cmp(rdx, r15)?;
                self.a.jne(aligned)?;
            }
        }
        self.elements_to_boundary(first)?;
        self.a.test(rax, rax)?;
        self.a.je(aligned)?;
        self.lowest_lanes()?;
        self.mark(None);
        self.masked_body()?;
        // The bodies keep r8 and may use the scratch registers: count again.
        self.elements_to_boundary(first)?;
        self.a.add(r8, rax)?;
        self.a.set_label(&mut aligned)?;
        self.mark(None);
        Ok(())
    }

    /// Whether the kernel streams its outputs (far larger than the caches) in AVX-512 code,
    /// whose main loop then writes them with non-temporal stores where they are aligned.
    pub(super) fn streams(&self) -> bool {
        self.plan.stream && self.lay.isa == VectorIsa::Avx512
    }

    /// `k1` = the lowest `rax` lanes (`rax < 16`); clobbers `r15`. AVX-512 only.
    fn lowest_lanes(&mut self) -> Result<(), Fail> {
        self.a.mov(r15d, 1u32)?;
        self.a.shlx(r15d, r15d, eax)?;
        self.a.sub(r15d, 1)?;
        self.a.kmovw(k1, r15d)?;
        Ok(())
    }

    /// A loop at `top` of `copies` bodies a trip while at least that many vectors are left
    /// (`rax` = the elements left after it).
    fn loop_of(&mut self, top: &mut CodeLabel, copies: usize) -> Result<(), Fail> {
        let step = (self.lanes() * copies) as i32;
        self.a.set_label(top)?;
        self.mark(None);
        self.bodies(copies)?;
        self.a.add(r8, step)?;
        self.a.mov(rax, r9)?;
        self.a.sub(rax, r8)?;
        self.a.cmp(rax, step)?;
        self.a.jae(*top)?;
        Ok(())
    }

    /// The loops over one segment, elements `r8..r9`; leaves `r8 = r9`.
    pub(super) fn segment(&mut self) -> Result<(), Fail> {
        self.align_to_output()?;
        let mut main = self.a.create_label();
        let mut single_check = self.a.create_label();
        let mut single = self.a.create_label();
        let mut tail = self.a.create_label();
        let mut end = self.a.create_label();
        let lanes = self.lanes() as i32;
        let trip = lanes * UNROLL as i32;
        self.a.mov(rax, r9)?;
        self.a.sub(rax, r8)?;
        self.a.cmp(rax, trip)?;
        self.a.jb(single_check)?;
        if self.streams() {
            // Whole lines written past the caches where every output of 32-bit elements
            // (those stored whole) is 64-byte aligned here, and stays so (a trip is four
            // lines); else the ordinary loop.
            let mut streaming = self.a.create_label();
            let whole = self.plan.outputs.iter().zip(&self.lay.out_reg);
            for (_, &p) in whole.filter(|((_, t), _)| t.size_bytes() == 4) {
                self.a.lea(rdx, qword_ptr(POINTERS[p] + r8 * 4))?;
                self.a.test(edx, 63)?;
                self.a.jne(main)?;
            }
            self.nt = true;
            self.loop_of(&mut streaming, UNROLL)?;
            self.nt = false;
            self.a.jmp(single_check)?;
        }
        self.loop_of(&mut main, UNROLL)?;
        self.a.set_label(&mut single_check)?;
        self.a.cmp(rax, lanes)?;
        self.a.jb(tail)?;
        self.loop_of(&mut single, 1)?;
        self.a.set_label(&mut tail)?;
        self.a.test(rax, rax)?;
        self.a.je(end)?;
        match self.lay.isa {
            VectorIsa::Avx512 => {
                self.lowest_lanes()?;
                self.mark(None);
                self.masked_body()?;
            }
            VectorIsa::Avx2 => self.staged_body()?,
        }
        self.a.mov(r8, r9)?;
        // On the caller's next instruction (there always is one).
        self.a.set_label(&mut end)?;
        self.mark(None);
        Ok(())
    }

    /// One AVX-512 body at `r8` under the lane mask `k1`.
    fn masked_body(&mut self) -> Result<(), Fail> {
        self.masked = true;
        let done = self.bodies(1);
        self.masked = false;
        done
    }
}
