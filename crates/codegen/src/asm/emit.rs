//! Writing an assembled kernel: the instructions of a [`Layout`], encoded by `iced-x86`'s
//! `CodeAssembler` into position-independent code, with its listing and the code spans of
//! each slot: the function's frame, the invariants and the bodies. The loops over a range
//! are `super::segment`'s; the instructions themselves, which differ between AVX-512 and
//! AVX2, are `super::inst`'s.

use iced_x86::code_asm::*;
use iced_x86::BlockEncoderOptions;

use graphlift_ir::{BinaryOp, ElementType};

use super::inst::{Src, ZMM};
use super::{Aux, Layout, Lowering, POINTERS};
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
    if FAIL.get() {
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
                    if s.ty == ElementType::Bool {
                        self.splat_bool(k)?;
                    } else if s.storage == s.ty {
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
                            if s.ty == ElementType::Bool {
                                self.load_bool(k, m)?;
                            } else if s.storage == s.ty {
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
thread_local! {
    /// Makes [`assemble`] fail on this thread (a test's stand-in for a bug in it:
    /// `crate::compile`'s tests).
    pub(crate) static FAIL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
