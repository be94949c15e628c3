//! AVX-512 kernels: fused kernels of simple `f32` operations assembled straight to
//! sixteen-lane machine code.
//!
//! Cranelift 0.135 lowers 128-bit vectors only (`../shared/notes/cranelift-0.135.md`), so its
//! loops do a quarter of the work per instruction that the host's AVX-512 units can. Where the
//! data sits in cache that decides the speed: `relu((a+b)*c)+d` ran at 1.6× and
//! `relu(X + b)` at 2.5× the time of C compiled for the host. A kernel plan made only of
//! operations that are one or two AVX-512F instructions with the reference interpreter's
//! semantics is therefore assembled here, with `iced-x86`'s encoder, into the range ABI of
//! [`super::kernel`]; every other plan is Cranelift's. Which plans qualify
//! ([`Layout::of`]):
//!
//! - every value and output is `f32`, the plan's lanes are [`Lanes::X4`], it does not stream
//!   ([`KernelPlan::stream`]: non-temporal stores stay with the Cranelift code), its
//!   iteration space is below 2^31 elements, and it asks for this code
//!   ([`KernelPlan::avx512`]);
//! - its loads are contiguous, splat, row vectors of one common row length
//!   ([`Addressing::Row`]), or *runs*: general addressings of one axis group whose index is
//!   constant over runs of at least a vector (column vectors `c[M, 1]` over `[M, K ≥ 16]`,
//!   channel vectors `[C, 1, 1]` over `[N, C, H, W]` with `H·W ≥ 16`), all with the same
//!   run length and period;
//! - its ops are `+ - * /`, `Negative`, `Abs`, `Relu`, `Sqrt`, `Floor`, `Ceil`, `Round`, and
//!   `Maximum` / `Minimum` against a constant (not NaN);
//! - its live values fit the 32 vector registers and its per-element buffers the seven
//!   pointer registers.
//!
//! The instructions give the interpreter's results bit for bit, as the Cranelift lowering
//! does ([`super::lower`]): `+ - * / sqrt` are single IEEE operations (never contracted);
//! `Negative` flips the sign bit and `Abs` clears it (integer logic: NaN payloads kept);
//! `Relu(x)` is `vmaxps(0, x)`, which is `x < 0 ? 0 : x` (NaN and `-0` pass through);
//! `Floor`, `Ceil`, `Round` are `vrndscaleps` with the rounding in the immediate (ties to
//! even); `Maximum(x, c)` is `vmaxps(c, x)` = `x < c ? c : x`, and where `c` is the zero that
//! must win ([`super::lower::constant_bound_test`]) a compare and a blend.
//!
//! The code for elements `begin..end`:
//!
//! 1. the preheader loads the buffer pointers into registers and every invariant slot into a
//!    pinned vector register (constants, splat loads and what is computed from them);
//! 2. the range runs in *segments*: the whole range, or with row vectors and runs the pieces
//!    that stay within one row and one run. A segment's start finds its row and run by
//!    division by constants ([`ConstDivisor`]: a multiplication and a shift), moves the row
//!    pointers so that a row vector is read contiguously, and broadcasts each run's value
//!    into a pinned register: no index arithmetic per vector;
//! 3. a segment runs a main loop of four unrolled sixteen-lane bodies, then single bodies,
//!    then one body under a lane mask for the last 1 to 15 elements: masked loads read
//!    nothing outside the range (masked-out lanes do not fault) and masked stores write
//!    nothing outside it.
//!
//! Values are given registers once for the body (the unrolled copies reuse them: the core's
//! register renaming keeps the copies independent); a register is free again after its last
//! reader.

use iced_x86::code_asm::*;
use iced_x86::{BlockEncoderOptions, Decoder, DecoderOptions, Formatter, IntelFormatter};

use cranelift_codegen::ir::condcodes::FloatCC;
use graphlift_ir::{BinaryOp, ElementType, UnaryOp};

use super::broadcast::Addressing;
use super::divide::{ConstDivisor, Method};
use super::kernel::operands;
use super::lanes::Lanes;
use super::lower::{constant_bound_test, float_constant};
use super::plan::{KernelPlan, SlotId, SlotOp};
use crate::JitError;

/// Environment variable that turns AVX-512 kernels off when set to `0` (on by default on
/// hosts with AVX-512F and BMI2).
pub const AVX512_ENV: &str = "GRAPHLIFT_AVX512";

/// `f32` lanes per vector.
pub(crate) const LANES: usize = 16;
/// Bodies per trip of the main loop.
const UNROLL: usize = 4;
/// Registers that hold buffer pointers, in the order they are handed out (the first two
/// are caller-saved; the others are saved and restored when used).
const POINTERS: [AsmRegister64; 7] = [rdi, rsi, rbx, rbp, r12, r13, r14];
/// The vector registers.
const ZMM: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];
/// `vcmpps` predicates (ordered, quiet).
const CMP_LE_OQ: i32 = 0x12;
const CMP_GE_OQ: i32 = 0x1D;
/// `vrndscaleps` immediates: the rounding mode in bits 0–1, bit 3 suppresses the precision
/// exception.
const ROUND_NEAREST: i32 = 0x08;
const ROUND_DOWN: i32 = 0x09;
const ROUND_UP: i32 = 0x0A;

/// Whether the host runs this module's code: AVX-512F and BMI2 (`shlx` for the tail mask).
pub(crate) fn host_supported() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("bmi2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether kernels are assembled here by default: the host supports it
/// ([`host_supported`]) and [`AVX512_ENV`] is not `0`.
pub(crate) fn default_on() -> bool {
    host_supported() && std::env::var(AVX512_ENV).map_or(true, |v| v.trim() != "0")
}

/// How one computing slot is lowered.
#[derive(Debug, Clone, Copy)]
enum Lowering {
    /// `vaddps` / `vsubps` / `vmulps` / `vdivps` of two registers.
    Arith(BinaryOp, SlotId, SlotId),
    /// Integer logic with a constant mask: sign flip (`vpxord`) or sign clear (`vpandd`).
    SignBit { x: SlotId, flip: bool },
    /// `vmaxps(0, x)`.
    Relu(SlotId),
    /// `vsqrtps`.
    Sqrt(SlotId),
    /// `vrndscaleps` with an immediate.
    RoundTo(SlotId, i32),
    /// `Maximum(x, c)` / `Minimum(x, c)` with constant `c`: `vmaxps(c, x)` / `vminps(c, x)`
    /// (`blend: None`) or a compare of `x` against `c` with a `vcmpps` predicate and a blend.
    Bound {
        op: BinaryOp,
        x: SlotId,
        c: SlotId,
        blend: Option<i32>,
    },
}

/// Constant vectors the ops need besides the plan's own, pinned like invariant slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aux {
    Zero,
    SignMask,
    AbsMask,
}

impl Aux {
    fn bits(self) -> u32 {
        match self {
            Aux::Zero => 0,
            Aux::SignMask => 0x8000_0000,
            Aux::AbsMask => 0x7FFF_FFFF,
        }
    }
}

/// What an eligible plan's code is made of: the lowering of each slot and the registers.
pub(crate) struct Layout {
    /// The lowering of each computing slot (`None` for loads and constants).
    lowering: Vec<Option<Lowering>>,
    /// The vector register of each slot.
    reg: Vec<usize>,
    /// The auxiliary constants and their registers.
    aux: Vec<(Aux, usize)>,
    /// The pointer register (index into [`POINTERS`]) of each input that is read per
    /// element.
    arg_reg: Vec<Option<usize>>,
    /// The pointer register of each output.
    out_reg: Vec<usize>,
    /// The row length shared by every row-vector load, if any.
    row: Option<usize>,
    /// The inputs read as row vectors.
    row_args: Vec<usize>,
    /// The run broadcasts, if any.
    run: Option<Run>,
    /// Loads read as the memory operand of their one reader (no register, no instruction
    /// of their own).
    folded: Vec<bool>,
    /// Slots whose registers hold one value for the whole call or segment.
    pinned: Vec<bool>,
    /// When the unrolled copies of the body fit the registers side by side: how far copy
    /// `u`'s registers are from copy 0's (`u · stride`).
    copy_stride: Option<usize>,
    /// Elements in the iteration space (the bound of the index divisions).
    count: usize,
}

/// Loads under a general addressing of one axis group whose index is constant over runs of
/// `div` consecutive elements (`j = ((i / div) mod modulo) · stride`: a column vector
/// `c[M, 1]` over `[M, K]`, a channel vector `[C, 1, 1]` over `[N, C, H, W]`): each is one
/// value per segment, broadcast into its pinned register when the segment starts.
#[derive(Debug, Clone)]
struct Run {
    /// Elements per run (at least a vector).
    div: usize,
    /// Runs per period of the source index (0: no reduction).
    modulo: usize,
    /// `(slot, input, stride)` of each load.
    loads: Vec<(SlotId, usize, usize)>,
}

impl Layout {
    /// The layout of `plan`'s code, or `None` when the plan does not qualify (see the module
    /// documentation) or the host cannot run it.
    pub(crate) fn of(plan: &KernelPlan) -> Option<Layout> {
        // (Below 2^31 elements every extent and index fits an instruction's immediate.)
        let small = i32::try_from(plan.count).is_ok();
        if !plan.avx512 || plan.stream || plan.lanes != Lanes::X4 || !small || !host_supported() {
            return None;
        }
        let all_f32 = plan.slots.iter().all(|s| s.ty == ElementType::F32)
            && plan.outputs.iter().all(|&(_, t)| t == ElementType::F32);
        if !all_f32 || plan.slots.is_empty() {
            return None;
        }
        let mut row = None;
        let mut row_args = Vec::new();
        let mut run: Option<Run> = None;
        // The one per-element addressing of each input read per element.
        let mut read: Vec<Option<&Addressing>> = vec![None; plan.args.len()];
        let mut arg_reg = vec![None; plan.args.len()];
        let mut pointers = 0usize;
        let mut lowering = Vec::with_capacity(plan.slots.len());
        let mut aux: Vec<(Aux, usize)> = Vec::new();
        let mut need = |a: Aux| {
            if !aux.iter().any(|&(b, _)| b == a) {
                aux.push((a, 0));
            }
        };
        for slot in &plan.slots {
            let l = match &slot.op {
                SlotOp::Load { arg, addressing } => {
                    match addressing {
                        Addressing::Splat => {}
                        Addressing::Contiguous | Addressing::Row { .. } => {
                            if read[*arg].is_some_and(|r| r != addressing) {
                                return None;
                            }
                            read[*arg] = Some(addressing);
                            if let Addressing::Row { len } = addressing {
                                if row.is_some_and(|r| r != *len) {
                                    return None;
                                }
                                row = Some(*len);
                                if !row_args.contains(arg) {
                                    row_args.push(*arg);
                                }
                            }
                            if arg_reg[*arg].is_none() {
                                arg_reg[*arg] = Some(pointers);
                                pointers += 1;
                            }
                        }
                        Addressing::General { terms } => match terms.as_slice() {
                            [t] if t.div >= LANES => {
                                let r = run.get_or_insert_with(|| Run {
                                    div: t.div,
                                    modulo: t.modulo,
                                    loads: Vec::new(),
                                });
                                if (r.div, r.modulo) != (t.div, t.modulo) {
                                    return None;
                                }
                                r.loads.push((lowering.len(), *arg, t.stride));
                            }
                            _ => return None,
                        },
                    }
                    None
                }
                SlotOp::Const(_) => None,
                SlotOp::Binary(
                    op @ (BinaryOp::Add
                    | BinaryOp::Subtract
                    | BinaryOp::Multiply
                    | BinaryOp::Divide),
                    a,
                    b,
                ) => Some(Lowering::Arith(*op, *a, *b)),
                SlotOp::Binary(op @ (BinaryOp::Maximum | BinaryOp::Minimum), a, b) => {
                    let constant = |s: SlotId| float_constant(&plan.slots[s], ElementType::F32);
                    let (x, c, value) = match (constant(*b), constant(*a)) {
                        (Some(v), _) => (*a, *b, v),
                        (None, Some(v)) => (*b, *a, v),
                        (None, None) => return None,
                    };
                    let blend = match constant_bound_test(*op, value) {
                        FloatCC::LessThanOrEqual => Some(CMP_LE_OQ),
                        FloatCC::GreaterThanOrEqual => Some(CMP_GE_OQ),
                        _ => None,
                    };
                    Some(Lowering::Bound {
                        op: *op,
                        x,
                        c,
                        blend,
                    })
                }
                SlotOp::Unary(u, x) => Some(match u {
                    UnaryOp::Negative => {
                        need(Aux::SignMask);
                        Lowering::SignBit { x: *x, flip: true }
                    }
                    UnaryOp::Abs => {
                        need(Aux::AbsMask);
                        Lowering::SignBit { x: *x, flip: false }
                    }
                    UnaryOp::Relu => {
                        need(Aux::Zero);
                        Lowering::Relu(*x)
                    }
                    UnaryOp::Sqrt => Lowering::Sqrt(*x),
                    UnaryOp::Floor => Lowering::RoundTo(*x, ROUND_DOWN),
                    UnaryOp::Ceil => Lowering::RoundTo(*x, ROUND_UP),
                    UnaryOp::Round => Lowering::RoundTo(*x, ROUND_NEAREST),
                    _ => return None,
                }),
                _ => return None,
            };
            lowering.push(l);
        }
        let out_reg: Vec<usize> = (pointers..pointers + plan.outputs.len()).collect();
        if pointers + plan.outputs.len() > POINTERS.len() {
            return None;
        }
        let mut pinned: Vec<bool> = plan.slots.iter().map(|s| s.invariant).collect();
        for &(k, _, _) in run.iter().flat_map(|r| &r.loads) {
            pinned[k] = true;
        }
        let folded = fold_loads(plan, &lowering, &pinned);
        let reg = allocate(plan, &pinned, &folded, &mut aux)?;
        let fixed = pinned.iter().filter(|&&p| p).count() + aux.len();
        let body_regs = (0..plan.slots.len())
            .filter(|&k| !pinned[k] && !folded[k])
            .map(|k| reg[k] + 1 - fixed)
            .max()
            .unwrap_or(0);
        let copy_stride = (fixed + UNROLL * body_regs <= ZMM.len()).then_some(body_regs);
        Some(Layout {
            lowering,
            reg,
            aux,
            arg_reg,
            out_reg,
            row,
            row_args,
            run,
            folded,
            copy_stride,
            pinned,
            count: plan.count,
        })
    }

    /// The callee-saved registers the code uses (pushed in this order).
    fn saved(&self) -> Vec<AsmRegister64> {
        let used = self.out_reg.last().map_or(0, |&r| r + 1);
        let mut saved: Vec<AsmRegister64> = POINTERS[2..used.max(2)].to_vec();
        saved.push(r15);
        saved
    }

    /// Whether slot `k` is a run load (one value per segment, in a pinned register).
    fn is_run_load(&self, k: SlotId) -> bool {
        self.run
            .as_ref()
            .is_some_and(|r| r.loads.iter().any(|&(s, _, _)| s == k))
    }
}

/// Vector registers: invariant slots and the auxiliary constants pinned first, then the
/// loop body's values, each register free again after the last reader of its value. `None`
/// when they do not fit in 32.
/// The per-element loads that can be the memory operand of their reader: read once, by an
/// op whose instruction takes memory in that place (the second source; either source of
/// `+`, `*` and the sign-bit logic, which commute; the only source of a unary op), at most
/// one per op, and not an output.
fn fold_loads(plan: &KernelPlan, lowering: &[Option<Lowering>], pinned: &[bool]) -> Vec<bool> {
    let n = plan.slots.len();
    let mut uses = vec![0usize; n];
    for s in &plan.slots {
        for o in operands(&s.op) {
            uses[o] += 1;
        }
    }
    for &(o, _) in &plan.outputs {
        uses[o] += 1;
    }
    let foldable =
        |o: SlotId| uses[o] == 1 && !pinned[o] && matches!(plan.slots[o].op, SlotOp::Load { .. });
    let mut folded = vec![false; n];
    for l in lowering.iter().flatten() {
        let pick = match *l {
            Lowering::Arith(op, x, y) => {
                let commutes = matches!(op, BinaryOp::Add | BinaryOp::Multiply);
                if foldable(y) {
                    Some(y)
                } else if commutes && foldable(x) {
                    Some(x)
                } else {
                    None
                }
            }
            Lowering::SignBit { x, .. }
            | Lowering::Relu(x)
            | Lowering::Sqrt(x)
            | Lowering::RoundTo(x, _)
            | Lowering::Bound { x, blend: None, .. } => foldable(x).then_some(x),
            Lowering::Bound { .. } => None,
        };
        if let Some(o) = pick {
            folded[o] = true;
        }
    }
    folded
}

fn allocate(
    plan: &KernelPlan,
    pinned: &[bool],
    folded: &[bool],
    aux: &mut [(Aux, usize)],
) -> Option<Vec<usize>> {
    let n = plan.slots.len();
    let mut reg = vec![usize::MAX; n];
    let mut next = 0usize;
    for k in 0..n {
        if pinned[k] {
            reg[k] = next;
            next += 1;
        }
    }
    for a in aux.iter_mut() {
        a.1 = next;
        next += 1;
    }
    if next > ZMM.len() {
        return None;
    }
    let mut last_use: Vec<Option<usize>> = vec![None; n];
    for (k, s) in plan.slots.iter().enumerate() {
        if pinned[k] {
            continue;
        }
        for o in operands(&s.op) {
            if !pinned[o] && !folded[o] {
                last_use[o] = Some(k);
            }
        }
    }
    let mut free: Vec<usize> = (next..ZMM.len()).rev().collect();
    for (k, s) in plan.slots.iter().enumerate() {
        if pinned[k] || folded[k] {
            continue;
        }
        let mut ops = operands(&s.op);
        ops.dedup();
        for o in ops {
            if last_use[o] == Some(k) && !free.contains(&reg[o]) {
                free.push(reg[o]);
            }
        }
        reg[k] = free.pop()?;
        if last_use[k].is_none() {
            // Only stored (an output), right after it is computed.
            free.push(reg[k]);
        }
    }
    Some(reg)
}

/// An assembled kernel: machine code (position independent), its listing, and the code
/// spans of each slot (`(start, end, slot)`, as [`crate::provenance::slot_spans`]).
pub(crate) struct Assembled {
    /// The machine code.
    pub code: Vec<u8>,
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
pub(crate) fn assemble(plan: &KernelPlan, layout: &Layout) -> Result<Assembled, JitError> {
    let err = |e: Fail| JitError::Codegen {
        kernel: plan.name.clone(),
        message: format!("AVX-512 code: {}", e.0),
    };
    let mut w = Writer {
        a: CodeAssembler::new(64).map_err(|e| err(e.into()))?,
        slot_of: Vec::new(),
        copy: 0,
        plan,
        lay: layout,
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
    Ok(Assembled {
        listing: listing(plan, &code),
        code,
        spans,
    })
}

/// The Intel-syntax listing of `code`.
fn listing(plan: &KernelPlan, code: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "; function `{}`: AVX-512, {LANES} f32 lanes, {UNROLL} bodies per main-loop trip \
         (graphlift codegen::avx512)\n",
        plan.name
    );
    let mut f = IntelFormatter::new();
    let mut text = String::new();
    for ins in Decoder::with_ip(64, code, 0, DecoderOptions::NONE).iter() {
        text.clear();
        f.format(&ins, &mut text);
        let _ = writeln!(out, "{:5x}:  {text}", ins.ip());
    }
    out
}

/// The assembler state of one kernel.
struct Writer<'p> {
    a: CodeAssembler,
    /// The slot each instruction (by index) was emitted for.
    slot_of: Vec<Option<SlotId>>,
    /// The copy of the body being written (see [`Layout::copy_stride`]).
    copy: usize,
    plan: &'p KernelPlan,
    lay: &'p Layout,
}

impl Writer<'_> {
    /// Attributes the instructions emitted since the last mark to `slot`.
    fn mark(&mut self, slot: Option<SlotId>) {
        let n = self.a.instructions().len();
        self.slot_of.resize(n, slot);
    }

    /// The register of `slot` in the current copy of the body.
    fn z(&self, slot: SlotId) -> AsmRegisterZmm {
        let base = self.lay.reg[slot];
        match self.lay.copy_stride {
            Some(stride) if !self.lay.pinned[slot] => ZMM[base + self.copy * stride],
            _ => ZMM[base],
        }
    }

    fn aux(&self, a: Aux) -> AsmRegisterZmm {
        let r = self
            .lay
            .aux
            .iter()
            .find(|&&(b, _)| b == a)
            .map_or(0, |&(_, r)| r);
        ZMM[r]
    }

    /// The whole function. Registers: `r8` the element index, `rcx` the end of the range,
    /// `r9` the end of the segment, `rax`, `rdx`, `r10` scratch, `r11` the input pointer
    /// table, `r15` the lane masks; buffer pointers in [`POINTERS`]; with row vectors, the
    /// end of the current row on the stack.
    fn function(&mut self) -> Result<(), Fail> {
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
            if a.bits() == 0 {
                self.a.vpxord(ZMM[r], ZMM[r], ZMM[r])?;
            } else {
                self.a.mov(eax, a.bits())?;
                self.a.vpbroadcastd(ZMM[r], eax)?;
            }
        }
        self.mark(None);
        for (k, s) in self.plan.slots.iter().enumerate() {
            if !s.invariant {
                continue;
            }
            let d = self.z(k);
            match &s.op {
                SlotOp::Load { arg, .. } => {
                    self.a.mov(rax, qword_ptr(r11 + (8 * arg) as i32))?;
                    self.a.vbroadcastss(d, dword_ptr(rax))?;
                }
                SlotOp::Const(bits) => {
                    self.a.mov(eax, *bits as u32)?;
                    self.a.vpbroadcastd(d, eax)?;
                }
                _ => self.compute(k, 0, false)?,
            }
            self.mark(Some(k));
        }
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
    /// 4·(rax − k)`, so that `[p + 4·r8]` is the row's element `r8 − (rax − k)`. Clobbers
    /// `rdx`.
    fn row_pointers(&mut self, k: usize) -> Result<(), Fail> {
        self.a.lea(rdx, ptr(rax - k as i32))?;
        self.a.shl(rdx, 2)?;
        for &arg in &self.lay.row_args {
            let Some(p) = self.lay.arg_reg[arg] else {
                continue;
            };
            let p = POINTERS[p];
            self.a.mov(p, qword_ptr(r11 + (8 * arg) as i32))?;
            self.a.sub(p, rdx)?;
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
                let d = self.z(k);
                self.a.vbroadcastss(d, dword_ptr(rdx + rax * 4))?;
                self.mark(Some(k));
            }
        }
        Ok(())
    }

    /// The loops over one segment, elements `r8..r9`; leaves `r8 = r9`.
    fn segment(&mut self) -> Result<(), Fail> {
        let mut main = self.a.create_label();
        let mut single_check = self.a.create_label();
        let mut single = self.a.create_label();
        let mut tail = self.a.create_label();
        let mut end = self.a.create_label();
        let trip = (LANES * UNROLL) as i32;
        let left = |a: &mut CodeAssembler| -> Result<(), IcedError> {
            a.mov(rax, r9)?;
            a.sub(rax, r8)
        };
        left(&mut self.a)?;
        self.a.cmp(rax, trip)?;
        self.a.jb(single_check)?;
        self.a.set_label(&mut main)?;
        self.mark(None);
        self.bodies(UNROLL, false)?;
        self.a.add(r8, trip)?;
        left(&mut self.a)?;
        self.a.cmp(rax, trip)?;
        self.a.jae(main)?;
        self.a.set_label(&mut single_check)?;
        self.a.cmp(rax, LANES as i32)?;
        self.a.jb(tail)?;
        self.a.set_label(&mut single)?;
        self.mark(None);
        self.bodies(1, false)?;
        self.a.add(r8, LANES as i32)?;
        left(&mut self.a)?;
        self.a.cmp(rax, LANES as i32)?;
        self.a.jae(single)?;
        self.a.set_label(&mut tail)?;
        self.a.test(rax, rax)?;
        self.a.je(end)?;
        // k1 = the lowest rax lanes (rax < 16).
        self.a.mov(r15d, 1u32)?;
        self.a.shlx(r15d, r15d, eax)?;
        self.a.sub(r15d, 1)?;
        self.a.kmovw(k1, r15d)?;
        self.mark(None);
        self.bodies(1, true)?;
        self.a.mov(r8, r9)?;
        // On the caller's next instruction (there always is one).
        self.a.set_label(&mut end)?;
        self.mark(None);
        Ok(())
    }

    /// `copies` bodies at elements `r8`, `r8 + 16`, … (`masked`: one body, the lanes of
    /// `k1` only). With room in the registers the copies are interleaved op by op, each in
    /// its own registers (all loads of the trip first, then each op on every copy: what an
    /// unrolling compiler emits); else one copy after the other in the same registers.
    fn bodies(&mut self, copies: usize, masked: bool) -> Result<(), Fail> {
        let plan = self.plan;
        let n = plan.slots.len();
        let order: Vec<(usize, SlotId)> = if self.lay.copy_stride.is_some() {
            (0..n)
                .flat_map(|k| (0..copies).map(move |u| (u, k)))
                .collect()
        } else {
            (0..copies)
                .flat_map(|u| (0..n).map(move |k| (u, k)))
                .collect()
        };
        for (u, k) in order {
            self.copy = u;
            let disp = (u * LANES * 4) as i32;
            if plan.slots[k].invariant {
                continue;
            }
            match &plan.slots[k].op {
                // Broadcast when the segment starts.
                SlotOp::Load { .. } if self.lay.is_run_load(k) => {}
                // Read by the op it is folded into.
                SlotOp::Load { .. } if self.lay.folded[k] => {}
                SlotOp::Load { arg, .. } => {
                    let p = POINTERS[self.lay.arg_reg[*arg].unwrap_or(0)];
                    let m = zmmword_ptr(p + r8 * 4 + disp);
                    let d = self.z(k);
                    if masked {
                        self.a.vmovups(d.k1().z(), m)?;
                    } else {
                        self.a.vmovups(d, m)?;
                    }
                }
                _ => self.compute(k, disp, masked)?,
            }
            self.store(k, disp, masked)?;
            self.mark(Some(k));
        }
        for u in 0..copies {
            self.copy = u;
            for (k, s) in plan.slots.iter().enumerate() {
                if s.invariant {
                    self.store(k, (u * LANES * 4) as i32, masked)?;
                    self.mark(Some(k));
                }
            }
        }
        self.copy = 0;
        Ok(())
    }

    /// Stores slot `k` to every output it is.
    fn store(&mut self, k: SlotId, disp: i32, masked: bool) -> Result<(), Fail> {
        for (o, &(slot, _)) in self.plan.outputs.iter().enumerate() {
            if slot != k {
                continue;
            }
            let m = zmmword_ptr(POINTERS[self.lay.out_reg[o]] + r8 * 4 + disp);
            let v = self.z(k);
            if masked {
                self.a.vmovups(m.k1(), v)?;
            } else {
                self.a.vmovups(m, v)?;
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
                Src::Mem(zmmword_ptr(p + r8 * 4 + disp))
            }
            _ => Src::Reg(self.z(o)),
        }
    }

    /// The instructions of computing slot `k` in a body at displacement `disp` (`masked`:
    /// an op that reads a folded load is masked by `k1`, so masked-out lanes read nothing).
    fn compute(&mut self, k: SlotId, disp: i32, masked: bool) -> Result<(), Fail> {
        let d = self.z(k);
        let Some(l) = self.lay.lowering.get(k).copied().flatten() else {
            return Err(Fail(format!("slot {k} is a load or constant, not an op")));
        };
        // `op!(method, first, source)`: `d = first op source` (or `d = op source`), the
        // source a register or the folded load's memory.
        macro_rules! op {
            ($m:ident, $first:expr, $src:expr) => {
                match $src {
                    Src::Reg(r) => self.a.$m(d, $first, r),
                    Src::Mem(m) if masked => self.a.$m(d.k1().z(), $first, m),
                    Src::Mem(m) => self.a.$m(d, $first, m),
                }
            };
            ($m:ident, $src:expr) => {
                match $src {
                    Src::Reg(r) => self.a.$m(d, r),
                    Src::Mem(m) if masked => self.a.$m(d.k1().z(), m),
                    Src::Mem(m) => self.a.$m(d, m),
                }
            };
        }
        let done = match l {
            Lowering::Arith(op, x, y) => {
                // A folded load is the second source; `+` and `*` commute.
                let (x, y) = if self.lay.folded[x] { (y, x) } else { (x, y) };
                let (x, y) = (self.z(x), self.source(y, disp));
                match op {
                    BinaryOp::Add => op!(vaddps, x, y),
                    BinaryOp::Subtract => op!(vsubps, x, y),
                    BinaryOp::Multiply => op!(vmulps, x, y),
                    _ => op!(vdivps, x, y),
                }
            }
            Lowering::SignBit { x, flip: true } => {
                let (x, m) = (self.source(x, disp), self.aux(Aux::SignMask));
                op!(vpxord, m, x)
            }
            Lowering::SignBit { x, flip: false } => {
                let (x, m) = (self.source(x, disp), self.aux(Aux::AbsMask));
                op!(vpandd, m, x)
            }
            Lowering::Relu(x) => {
                let (x, zero) = (self.source(x, disp), self.aux(Aux::Zero));
                op!(vmaxps, zero, x)
            }
            Lowering::Sqrt(x) => {
                let x = self.source(x, disp);
                op!(vsqrtps, x)
            }
            Lowering::RoundTo(x, imm) => match self.source(x, disp) {
                Src::Reg(r) => self.a.vrndscaleps(d, r, imm),
                Src::Mem(m) if masked => self.a.vrndscaleps(d.k1().z(), m, imm),
                Src::Mem(m) => self.a.vrndscaleps(d, m, imm),
            },
            Lowering::Bound { op, x, c, blend } => {
                let c = self.z(c);
                match (blend, op) {
                    (Some(pred), _) => {
                        let x = self.z(x);
                        self.a.vcmpps(k2, x, c, pred)?;
                        self.a.vblendmps(d.k2(), x, c)
                    }
                    (None, BinaryOp::Maximum) => op!(vmaxps, c, self.source(x, disp)),
                    (None, _) => op!(vminps, c, self.source(x, disp)),
                }
            }
        };
        Ok(done?)
    }
}

/// A source operand: a register, or memory (a folded load).
#[derive(Clone, Copy)]
enum Src {
    Reg(AsmRegisterZmm),
    Mem(AsmMemoryOperand),
}

/// A failure while writing a kernel: the encoder's, or a plan the layout should have refused.
#[derive(Debug)]
struct Fail(String);

impl From<IcedError> for Fail {
    fn from(e: IcedError) -> Fail {
        Fail(e.to_string())
    }
}
