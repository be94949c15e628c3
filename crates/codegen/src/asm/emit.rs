//! Writing an assembled kernel: the instructions of a [`Layout`], encoded by `iced-x86`'s
//! `CodeAssembler` into position-independent code, with its listing and the code spans of
//! each slot. The instructions themselves, which differ between AVX-512 and AVX2, are
//! `super::inst`'s.

use iced_x86::code_asm::*;
use iced_x86::BlockEncoderOptions;

use graphlift_ir::{BinaryOp, ElementType};
use graphlift_kernels::target::VectorIsa;

use super::inst::{Src, ZMM};
use super::{Aux, Layout, Lowering, POINTERS, UNROLL};
use crate::divide::{ConstDivisor, Method};
use crate::plan::{KernelPlan, SlotId, SlotOp};
use crate::JitError;

/// An assembled kernel: machine code (position independent), its listing, and the code
/// spans of each slot (`(start, end, slot)`, as [`crate::provenance::slot_spans`]).
pub struct Assembled {
    /// The machine code: the constant pool (64-byte lines of its own), then the function.
    pub code: Vec<u8>,
    /// The offset of the function's first instruction in `code` (where it is called).
    pub entry: usize,
    /// Intel-syntax listing of the code with offsets.
    pub listing: String,
    /// Code spans per slot.
    pub spans: Vec<(u32, u32, usize)>,
}

/// Assembles `plan` with `layout` ([`Layout::of`]).
///
/// # Errors
/// [`JitError::Codegen`] naming the kernel if the encoder rejects an instruction (a bug
/// here).
pub fn assemble(plan: &KernelPlan, layout: &Layout) -> Result<Assembled, JitError> {
    let err = |e: Fail| JitError::Codegen {
        kernel: plan.name.clone(),
        message: format!("{} code: {}", layout.isa.name(), e.0),
    };
    #[cfg(test)]
    if tests::FAIL.get() {
        return Err(err(Fail("a failure injected by a test".into())));
    }
    let mut w = Writer {
        a: CodeAssembler::new(64).map_err(|e| err(e.into()))?,
        slot_of: Vec::new(),
        copy: 0,
        masked: false,
        plan,
        lay: layout,
        pool: Vec::new(),
        holding: false,
        nt: false,
        entry: 0,
    };
    w.function().map_err(err)?;
    let result =
        w.a.assemble_options(0, BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS)
            .map_err(|e| err(e.into()))?;
    let code = result.inner.code_buffer;
    let offsets = result.inner.new_instruction_offsets;
    let mut spans: Vec<(u32, u32, usize)> = Vec::new();
    for (i, slot) in w.slot_of.iter().enumerate() {
        let (Some(k), Some(&start)) = (slot, offsets.get(i)) else {
            continue;
        };
        let end = offsets.get(i + 1).copied().unwrap_or(code.len() as u32);
        match spans.last_mut() {
            Some(last) if last.2 == *k && last.1 == start => last.1 = end,
            _ => spans.push((start, end, *k)),
        }
    }
    let entry = w.entry;
    Ok(Assembled {
        listing: super::listing::listing(plan, layout, &code, entry),
        code,
        entry,
        spans,
    })
}

/// The assembler state of one kernel.
pub(super) struct Writer<'p> {
    pub(super) a: CodeAssembler,
    /// The slot each instruction (by index) was emitted for.
    slot_of: Vec<Option<SlotId>>,
    /// The copy of the body being written (see [`Layout::copy_stride`]).
    pub(super) copy: usize,
    /// Whether the body being written is AVX-512's masked one (the lanes of `k1`).
    pub(super) masked: bool,
    pub(super) plan: &'p KernelPlan,
    pub(super) lay: &'p Layout,
    /// The constant pool: each constant the programs read (bits, 64-bit) and its label.
    pub(super) pool: Vec<(u64, bool, CodeLabel)>,
    /// The offset of the function's first instruction (after the constant pool).
    pub(super) entry: usize,
    /// Whether the [`Layout`]'s held constants are in their registers (from the end of the
    /// preheader on).
    pub(super) holding: bool,
    /// Whether whole-vector stores go past the caches (`vmovntps`): in a streaming kernel's
    /// main loop, where every output is 64-byte aligned.
    pub(super) nt: bool,
}

impl Writer<'_> {
    /// Attributes the instructions emitted since the last mark to `slot`.
    pub(super) fn mark(&mut self, slot: Option<SlotId>) {
        let n = self.a.instructions().len();
        self.slot_of.resize(n, slot);
    }

    /// The vector register of `slot` in the current copy of the body.
    pub(super) fn v(&self, slot: SlotId) -> usize {
        self.in_copy(slot, self.lay.reg[slot])
    }

    /// Scratch register `r` of `slot`'s program in the current copy of the body.
    pub(super) fn scratch(&self, slot: SlotId, r: usize) -> usize {
        self.in_copy(slot, self.lay.scratch[slot][r])
    }

    /// Register `base` (of copy 0) of a value of `slot` in the current copy.
    fn in_copy(&self, slot: SlotId, base: usize) -> usize {
        match self.lay.copy_stride {
            Some(stride) if !self.lay.pinned[slot] => base + (self.copy % self.lay.group) * stride,
            _ => base,
        }
    }

    fn aux(&self, a: Aux) -> usize {
        self.lay
            .aux
            .iter()
            .find(|&&(b, _)| b == a)
            .map_or(0, |&(_, r)| r)
    }

    /// Elements per vector.
    pub(super) fn lanes(&self) -> usize {
        self.lay.isa.lanes()
    }

    /// Bytes per element of input `arg` (its storage type's).
    pub(super) fn arg_size(&self, arg: usize) -> usize {
        self.plan.args[arg].ty.size_bytes()
    }

    /// The whole function. Registers: `r8` the element index, `rcx` the end of the range,
    /// `r9` the end of the segment, `rax`, `rdx`, `r10` scratch, `r11` the input pointer
    /// table, `r15` the lane masks; buffer pointers in [`POINTERS`]; with row vectors, the
    /// end of the current row on the stack.
    fn function(&mut self) -> Result<(), Fail> {
        self.constant_pool()?;
        let lay = self.lay;
        let mut done = self.a.create_label();
        let mut outer = self.a.create_label();
        self.a.cmp(rdx, rcx)?;
        self.a.jae(done)?;
        let saved = lay.saved();
        for &r in &saved {
            self.a.push(r)?;
        }
        self.a.mov(r11, rdi)?;
        self.a.mov(rax, rsi)?;
        self.a.mov(r8, rdx)?;
        for (o, &p) in lay.out_reg.iter().enumerate() {
            self.a.mov(POINTERS[p], qword_ptr(rax + (8 * o) as i32))?;
        }
        for (arg, p) in lay.arg_reg.iter().enumerate() {
            // (Row vectors' pointers are set per segment.)
            if let (Some(p), false) = (p, lay.row_args.contains(&arg)) {
                self.a
                    .mov(POINTERS[*p], qword_ptr(r11 + (8 * arg) as i32))?;
            }
        }
        if let Some(k) = lay.row {
            // The end of r8's row, (r8 / k + 1) * k, in a stack slot; the row pointers.
            self.a.mov(rax, r8)?;
            self.quotient(k, lay.count.saturating_add(1))?;
            self.a.add(rax, 1)?;
            self.multiply(rax, k)?;
            self.a.push(rax)?;
            self.row_pointers(k)?;
        }
        self.mark(None);
        self.invariants()?;
        self.a.set_label(&mut outer)?;
        self.segment_start()?;
        self.mark(None);
        self.segment()?;
        if lay.row.is_some() || lay.run.is_some() {
            self.a.cmp(r8, rcx)?;
            self.a.jb(outer)?;
        }
        if lay.row.is_some() {
            self.a.pop(rax)?;
        }
        if self.streams() {
            // The non-temporal stores ordered before whatever the caller does next.
            self.a.sfence()?;
        }
        for &r in saved.iter().rev() {
            self.a.pop(r)?;
        }
        self.a.vzeroupper()?;
        self.a.set_label(&mut done)?;
        self.a.ret()?;
        self.mark(None);
        Ok(())
    }

    /// The pinned registers: auxiliary constants and invariant slots.
    fn invariants(&mut self) -> Result<(), Fail> {
        for &(a, r) in &self.lay.aux {
            self.splat(r, a.bits())?;
        }
        self.mark(None);
        for (k, s) in self.plan.slots.iter().enumerate() {
            if !s.invariant {
                continue;
            }
            let d = self.v(k);
            match &s.op {
                SlotOp::Load { arg, .. } => {
                    self.a.mov(rax, qword_ptr(r11 + (8 * arg) as i32))?;
                    if s.storage == s.ty {
                        self.broadcast_from(d, ptr(rax))?;
                    } else {
                        self.splat_narrow(k, s.storage)?;
                    }
                }
                SlotOp::Const(bits) => {
                    // A `bool` is a mask: all ones for true.
                    let bits = match s.ty {
                        ElementType::Bool if *bits != 0 => u32::MAX,
                        _ => *bits as u32,
                    };
                    self.a.mov(eax, bits)?;
                    self.splat_eax(d)?;
                }
                _ => self.compute(k, 0)?,
            }
            self.mark(Some(k));
        }
        // After the invariants, whose programs may use the registers as scratch.
        for &(bits, wide, r) in &self.lay.held {
            let c = self.constant(bits, wide)?;
            self.copy(r, Src::Const(c, wide))?;
        }
        self.holding = true;
        self.mark(None);
        Ok(())
    }

    /// `rax = rax / d` for `rax` below `bound` ([`ConstDivisor`]); clobbers `rdx`, `r10`.
    fn quotient(&mut self, d: usize, bound: usize) -> Result<(), Fail> {
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
    fn multiply(&mut self, reg: AsmRegister64, c: usize) -> Result<(), Fail> {
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
    fn row_pointers(&mut self, k: usize) -> Result<(), Fail> {
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
    fn segment_start(&mut self) -> Result<(), Fail> {
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
    fn streams(&self) -> bool {
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

    /// The loops over one segment, elements `r8..r9`; leaves `r8 = r9`.
    fn segment(&mut self) -> Result<(), Fail> {
        self.align_to_output()?;
        let mut main = self.a.create_label();
        let mut single_check = self.a.create_label();
        let mut single = self.a.create_label();
        let mut tail = self.a.create_label();
        let mut end = self.a.create_label();
        let lanes = self.lanes() as i32;
        let trip = lanes * UNROLL as i32;
        let left = |a: &mut CodeAssembler| -> Result<(), IcedError> {
            a.mov(rax, r9)?;
            a.sub(rax, r8)
        };
        left(&mut self.a)?;
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
            self.a.set_label(&mut streaming)?;
            self.mark(None);
            self.nt = true;
            self.bodies(UNROLL)?;
            self.nt = false;
            self.a.add(r8, trip)?;
            left(&mut self.a)?;
            self.a.cmp(rax, trip)?;
            self.a.jae(streaming)?;
            self.a.jmp(single_check)?;
        }
        self.a.set_label(&mut main)?;
        self.mark(None);
        self.bodies(UNROLL)?;
        self.a.add(r8, trip)?;
        left(&mut self.a)?;
        self.a.cmp(rax, trip)?;
        self.a.jae(main)?;
        self.a.set_label(&mut single_check)?;
        self.a.cmp(rax, lanes)?;
        self.a.jb(tail)?;
        self.a.set_label(&mut single)?;
        self.mark(None);
        self.bodies(1)?;
        self.a.add(r8, lanes)?;
        left(&mut self.a)?;
        self.a.cmp(rax, lanes)?;
        self.a.jae(single)?;
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

    /// `copies` bodies at elements `r8`, `r8 + lanes`, … ([`Writer::masked`]: one body, the
    /// lanes of `k1` only). The copies go in groups of [`Layout::group`], interleaved op by
    /// op within a group, each copy of a group in its own registers (the group's loads
    /// first, then each op on every copy: what an unrolling compiler emits; a program's
    /// operations are interleaved too, [`Writer::program`]); one group after the other in
    /// the same registers.
    pub(super) fn bodies(&mut self, copies: usize) -> Result<(), Fail> {
        let plan = self.plan;
        let lay = self.lay;
        let group = lay.group;
        let bytes = self.lanes() * 4;
        for start in (0..copies).step_by(group) {
            let end = (start + group).min(copies);
            for k in 0..plan.slots.len() {
                if plan.slots[k].invariant {
                    continue;
                }
                if let Some(Some(Lowering::Program(i))) = lay.lowering.get(k) {
                    let group_copies: Vec<usize> = (start..end).collect();
                    self.program(k, &lay.programs[*i], &group_copies)?;
                    for u in start..end {
                        self.copy = u;
                        self.store(k, u)?;
                    }
                    self.mark(Some(k));
                    continue;
                }
                for u in start..end {
                    self.copy = u;
                    let disp = (u * bytes) as i32;
                    match &plan.slots[k].op {
                        // A run load (pinned, not invariant): broadcast when the segment
                        // starts.
                        SlotOp::Load { .. } if lay.pinned[k] => {}
                        // Read by the op it is folded into.
                        SlotOp::Load { .. } if lay.folded[k] => {}
                        SlotOp::Load { arg, .. } => {
                            let p = POINTERS[lay.arg_reg[*arg].unwrap_or(0)];
                            let m = self.element(p, self.arg_size(*arg), u);
                            let s = &plan.slots[k];
                            if s.storage == s.ty {
                                let d = self.v(k);
                                self.load(d, m)?;
                            } else {
                                self.load_narrow(k, s.storage, m)?;
                            }
                        }
                        _ => self.compute(k, disp)?,
                    }
                    self.store(k, u)?;
                    self.mark(Some(k));
                }
            }
        }
        for u in 0..copies {
            self.copy = u;
            for (k, s) in plan.slots.iter().enumerate() {
                if s.invariant {
                    self.store(k, u)?;
                    self.mark(Some(k));
                }
            }
        }
        self.copy = 0;
        Ok(())
    }

    /// The vector of body copy `u` at `r8` in the buffer at `p` of `size`-byte elements.
    pub(super) fn element(&self, p: AsmRegister64, size: usize, u: usize) -> AsmMemoryOperand {
        ptr(p + r8 * size as u32 + (u * self.lanes() * size) as i32)
    }

    /// Stores slot `k` of body copy `u` to every output it is.
    fn store(&mut self, k: SlotId, u: usize) -> Result<(), Fail> {
        for (o, &(slot, t)) in self.plan.outputs.iter().enumerate() {
            if slot != k {
                continue;
            }
            let size = t.size_bytes();
            let m = self.element(POINTERS[self.lay.out_reg[o]], size, u);
            if size == 4 {
                let v = self.v(k);
                self.store_vector(m, v)?;
            } else {
                self.store_narrow(k, t, m)?;
            }
        }
        Ok(())
    }

    /// Operand `o` of a computing slot: its register, or the memory of its load when the
    /// load is folded into the op (at the body's displacement).
    fn source(&self, o: SlotId, disp: i32) -> Src {
        match &self.plan.slots[o].op {
            SlotOp::Load { arg, .. } if self.lay.folded[o] => {
                let p = POINTERS[self.lay.arg_reg[*arg].unwrap_or(0)];
                Src::Mem(ptr(p + r8 * 4 + disp))
            }
            _ => Src::Reg(self.v(o)),
        }
    }

    /// The instructions of computing slot `k` in a body at displacement `disp` (in AVX-512's
    /// masked body an op that reads a folded load is masked by `k1`, so masked-out lanes
    /// read nothing).
    fn compute(&mut self, k: SlotId, disp: i32) -> Result<(), Fail> {
        let d = self.v(k);
        let Some(l) = self.lay.lowering.get(k).copied().flatten() else {
            return Err(Fail(format!("slot {k} is a load or constant, not an op")));
        };
        match l {
            Lowering::Arith(op, x, y) => {
                // A folded load is the second source; `+` and `*` commute.
                let (x, y) = if self.lay.folded[x] { (y, x) } else { (x, y) };
                let (x, y) = (self.v(x), self.source(y, disp));
                match op {
                    BinaryOp::Add => self.vaddps(d, x, y),
                    BinaryOp::Subtract => self.vsubps(d, x, y),
                    BinaryOp::Multiply => self.vmulps(d, x, y),
                    _ => self.vdivps(d, x, y),
                }
            }
            Lowering::DivideExact { x, r } => {
                let x = self.v(x);
                self.divide_exact(d, x, &r)
            }
            Lowering::SignBit { x, flip: true } => {
                let (x, m) = (self.source(x, disp), self.aux(Aux::SignMask));
                self.vpxord(d, m, x)
            }
            Lowering::SignBit { x, flip: false } => {
                let (x, m) = (self.source(x, disp), self.aux(Aux::AbsMask));
                self.vpandd(d, m, x)
            }
            Lowering::Relu(x) => {
                let (x, zero) = (self.source(x, disp), self.aux(Aux::Zero));
                self.vmaxps(d, zero, x)
            }
            Lowering::Sqrt(x) => {
                let x = self.source(x, disp);
                self.vsqrtps(d, x)
            }
            Lowering::RoundTo(x, imm) => {
                let x = self.source(x, disp);
                self.vrndscaleps(d, x, imm)
            }
            Lowering::Program(i) => {
                let (lay, copy) = (self.lay, self.copy);
                self.program(k, &lay.programs[i], &[copy])
            }
            Lowering::Bound { op, x, c, blend } => {
                let c = self.v(c);
                match (blend, op) {
                    (Some(pred), _) => {
                        // (AVX-512 only: `direct` gives AVX2 a program instead.)
                        let (x, c, d) = (ZMM[self.v(x)], ZMM[c], ZMM[d]);
                        self.a.vcmpps(k2, x, c, pred)?;
                        self.a.vblendmps(d.k2(), x, c)?;
                        Ok(())
                    }
                    (None, BinaryOp::Maximum) => {
                        let x = self.source(x, disp);
                        self.vmaxps(d, c, x)
                    }
                    (None, _) => {
                        let x = self.source(x, disp);
                        self.vminps(d, c, x)
                    }
                }
            }
        }
    }
}

/// A failure while writing a kernel: the encoder's, or a plan the layout should have refused.
#[derive(Debug)]
pub(super) struct Fail(pub(super) String);

impl From<IcedError> for Fail {
    fn from(e: IcedError) -> Fail {
        Fail(e.to_string())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::cell::Cell;

    use graphlift_ir::{ElementType, FunctionBuilder};
    use graphlift_runtime::Tensor;

    use crate::asm::{host_isa, Refusal};
    use crate::JitKernel;

    thread_local! {
        /// Makes [`super::assemble`] fail on this thread (a stand-in for a bug in it).
        pub(crate) static FAIL: Cell<bool> = const { Cell::new(false) };
    }

    /// A plan the assembler takes but fails to write runs as Cranelift code, with the same
    /// results, and the failure is the kernel's refusal (what `explain` shows).
    #[test]
    fn a_failed_assembly_falls_back_to_cranelift() {
        if host_isa().is_none() {
            return;
        }
        let n = 100;
        let b = FunctionBuilder::new("fallback");
        let x = b.parameter("x", ElementType::F32, [n]);
        let body = b.finish(&[(x * 2.0).exp() + x]).unwrap();
        let good = JitKernel::compile(&body).unwrap();
        assert!(good.assembled().is_some());
        FAIL.set(true);
        let fell_back = JitKernel::compile(&body);
        FAIL.set(false);
        let fell_back = fell_back.unwrap();
        assert!(fell_back.assembled().is_none());
        let Some(Refusal::Failed(why)) = fell_back.compiled().assembler_refusal() else {
            panic!("{:?}", fell_back.compiled().assembler_refusal());
        };
        assert!(why.contains("injected"), "{why}");
        let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.05 - 2.0).collect();
        let input = Tensor::from_vec(xs, [n]).unwrap();
        let mut outs = [Tensor::zeros(ElementType::F32, [n]).unwrap()];
        let mut want = [Tensor::zeros(ElementType::F32, [n]).unwrap()];
        fell_back.call(&[&input], &mut outs).unwrap();
        good.call(&[&input], &mut want).unwrap();
        // Both within the inline `exp`'s bound of each other (the same inline math).
        let (got, want) = (
            outs[0].data().as_slice::<f32>().unwrap(),
            want[0].data().as_slice::<f32>().unwrap(),
        );
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 4.0 * f32::EPSILON * w.abs().max(1.0),
                "{g} vs {w}"
            );
        }
    }
}
