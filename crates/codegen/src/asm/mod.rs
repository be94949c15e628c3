//! The kernel assembler: fused `f32` (and `i32`) kernels assembled straight to machine code
//! of the host's full vector width with `iced-x86`, sixteen lanes of AVX-512 or eight of
//! AVX2 ([`VectorIsa`]): Cranelift 0.135 lowers 128-bit vectors only, so its loops do a
//! quarter (a half) of the work per instruction that the host's units can. Simple ops are
//! one or two instructions each; every other op with an inline lowering (the vector math,
//! `Power`, comparisons and selects) is that lowering translated to the full width
//! (`program`), so that no op of such a kernel runs four lanes wide. One layout and one
//! writer serve both instruction sets; `inst` is where they differ.

mod conversion;
mod emit;
mod fold;
mod held;
mod inst;
mod listing;
mod peephole;
mod pool;
mod program;
mod program_emit;
mod program_order;
mod reciprocal;
mod refusal;
mod registers;
mod segment;
mod staged;

#[cfg(test)]
pub(crate) use emit::FAIL;

use iced_x86::code_asm::*;

use cranelift_codegen::ir::condcodes::FloatCC;
use graphlift_ir::{BinaryOp, ElementType, UnaryOp};

use super::broadcast::Addressing;
use super::calls::LibraryCalls;
use super::lanes::Lanes;
use super::lower::{constant_bound_test, float_constant};
use super::magnitude::{absorbed_below, least_magnitudes};
use super::plan::{operands, KernelPlan, SlotId, SlotOp};
use super::reciprocal::ExactReciprocal;
use graphlift_kernels::target::{CpuFeatures, VectorIsa};
use graphlift_kernels::veclib::VecFn;
use registers::{allocate, fold_loads};

pub use emit::assemble;
pub use refusal::Refusal;

/// Bodies per trip of the main loop.
const UNROLL: usize = 4;
/// Registers that hold buffer pointers, in the order they are handed out (the first two
/// are caller-saved; the others are saved and restored when used).
const POINTERS: [AsmRegister64; 7] = [rdi, rsi, rbx, rbp, r12, r13, r14];
/// `vcmpps` predicates (ordered, quiet).
const CMP_LE_OQ: i32 = 0x12;
const CMP_GE_OQ: i32 = 0x1D;
/// `vrndscaleps` (AVX-512) and `vroundps` (AVX) immediates: the rounding mode in bits 0–1,
/// bit 3 suppresses the precision exception.
const ROUND_NEAREST: i32 = 0x08;
const ROUND_DOWN: i32 = 0x09;
const ROUND_UP: i32 = 0x0A;
const ROUND_TRUNCATE: i32 = 0x0B;

/// The widest instruction set of this module's code the host runs: AVX-512 (AVX-512F and
/// BMI2, `shlx` for the tail mask), else AVX2 (AVX2, FMA and F16C), else `None`.
pub fn host_isa() -> Option<VectorIsa> {
    let host = CpuFeatures::host();
    [VectorIsa::Avx512, VectorIsa::Avx2]
        .into_iter()
        .find(|&isa| host.runs(isa))
}

/// How one computing slot is lowered.
///
/// The instructions give the interpreter's results bit for bit, as the Cranelift lowering
/// does ([`super::lower`]): `+ - * / sqrt` are single IEEE operations (never contracted);
/// a division by a constant is a product and an FMA (the same bits) where its
/// [`ExactReciprocal`] needs no division for any value the dividend can take
/// ([`crate::magnitude`]); `Negative` flips the sign bit and `Abs` clears it (integer
/// logic: NaN payloads kept); `Relu(x)` is `vmaxps(0, x)`, which is `x < 0 ? 0 : x` (NaN
/// and `-0` pass through); `Floor`, `Ceil`, `Round` are `vrndscaleps` (AVX2: `vroundps`)
/// with the rounding in the immediate (ties to even); `Maximum(x, c)` is `vmaxps(c, x)` =
/// `x < c ? c : x`, and where `c` is the zero that must win
/// ([`super::lower::constant_bound_test`]) a compare and a blend (AVX-512; AVX2 has no mask
/// register to blend by, and runs the op's program).
#[derive(Debug, Clone, Copy)]
enum Lowering {
    /// `vaddps` / `vsubps` / `vmulps` / `vdivps` of two registers.
    Arith(BinaryOp, SlotId, SlotId),
    /// `x / c` for a constant `c` as a product and an FMA, or a product (`reciprocal`).
    DivideExact { x: SlotId, r: ExactReciprocal },
    /// Integer logic with a constant mask: sign flip (`vpxord`) or sign clear (`vpandd`;
    /// AVX2 `vpxor`, `vpand`).
    SignBit { x: SlotId, flip: bool },
    /// `vmaxps(0, x)`.
    Relu(SlotId),
    /// `vsqrtps`.
    Sqrt(SlotId),
    /// `vrndscaleps` (`vroundps`) with an immediate.
    RoundTo(SlotId, i32),
    /// `Maximum(x, c)` / `Minimum(x, c)` with constant `c`: `vmaxps(c, x)` / `vminps(c, x)`
    /// (`blend: None`) or a compare of `x` against `c` with a `vcmpps` predicate and a blend.
    Bound {
        op: BinaryOp,
        x: SlotId,
        c: SlotId,
        blend: Option<i32>,
    },
    /// Any other op: the program of [`Layout::programs`] at this index, its four-lane
    /// Cranelift lowering translated ([`program::translate`]).
    Program(usize),
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
///
/// The code, in the range ABI of [`super::kernel`], computes elements `begin..end` (a
/// vector is [`VectorIsa::lanes`] elements):
///
/// 1. the preheader loads the buffer pointers into registers and every invariant slot into a
///    pinned vector register (constants, splat loads and what is computed from them), then
///    (AVX-512) the pool constants that programs copy into registers of their own into the
///    registers the body leaves free (module `held`);
/// 2. the range runs in *segments*: the whole range, or with row vectors and runs the pieces
///    that stay within one row and one run. The row's end is found once per call by division
///    by a constant ([`super::divide::ConstDivisor`]: a multiplication and a shift) and kept
///    on the stack; a segment that starts on it moves the row pointers one row on, so a row
///    vector is read contiguously. A segment's run is found the same way and its values
///    broadcast into pinned registers. No index arithmetic per vector;
/// 3. a segment runs a main loop of four unrolled bodies, then single bodies, then one body
///    for the last elements (fewer than a vector): on AVX-512 under a lane mask (masked
///    loads read nothing outside the range, masked-out lanes do not fault, and masked
///    stores write nothing outside it); on AVX2, which has no such masks for every
///    instruction, over copies of those elements in a stack area (`staged`).
///
/// Values are given registers once for the body; a register is free again after its last
/// reader. When the four unrolled copies (or pairs of them) fit the registers side by side,
/// each copy has its own and the copies are interleaved op by op (the loads first), as an
/// unrolling compiler schedules them; else they follow each other in the same registers
/// (the core's renaming keeps them independent). A load read once, by an op whose instruction takes
/// memory in that place, is that op's memory operand (in AVX-512's masked tail the op is
/// masked, which suppresses the load's faults on masked-out lanes). The code is not padded to a
/// particular alignment, so its speed varies with where the main loop falls relative to
/// 64-byte lines (figures in `BENCHMARKS.md`).
pub struct Layout {
    /// The instruction set.
    isa: VectorIsa,
    /// Per slot: the program that turns the bits of a `bf16` it loads into its value
    /// (`conversion`; `f16` converts by F16C).
    load_conv: Vec<Option<program::Program>>,
    /// Per slot: the program that turns its value into the bits of the `bf16` an output
    /// stores.
    store_conv: Vec<Option<program::Program>>,
    /// The lowering of each computing slot (`None` for loads and constants).
    lowering: Vec<Option<Lowering>>,
    /// The programs of the [`Lowering::Program`] slots.
    programs: Vec<program::Program>,
    /// The vector register of each slot.
    reg: Vec<usize>,
    /// The scratch registers of each slot's program (as [`Layout::reg`]: copy 0's, where
    /// the unrolled copies have their own).
    scratch: Vec<Vec<usize>>,
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
    /// Slots whose registers hold one value for the whole call (invariants) or segment
    /// (run loads).
    pinned: Vec<bool>,
    /// When copies of the body fit the registers side by side: how far copy `u`'s
    /// registers are from copy 0's (`(u mod group) · stride`).
    copy_stride: Option<usize>,
    /// How many copies of the body are interleaved side by side (4, 2 or 1).
    group: usize,
    /// Pool constants `(bits, 64-bit)` held for the call in the registers the body leaves
    /// free, and their registers (module `held`; AVX-512 only).
    held: Vec<(u64, bool, usize)>,
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
    /// The layout of `plan`'s code. A plan qualifies when:
    ///
    /// - every value is `f32`, `i32` or a comparison's mask and every output `f32` or `i32`
    ///   (no `bool` loads), the plan's lanes are [`Lanes::X4`], its iteration space is below
    ///   2^31 elements, and it asks for this code ([`KernelPlan::isa`]), which the host
    ///   runs; values and outputs may also be of the storage types `f16`, and on AVX2
    ///   `bf16`, `i8`, `u8`, `i16`, `u16` (held in `f32` / `i32` lanes, [`crate::storage`];
    ///   inputs of those read contiguous, as row vectors or once: `conversion`);
    /// - its loads are contiguous, splat, row vectors of one common row length
    ///   ([`Addressing::Row`]), or *runs*: general addressings of one axis group whose index
    ///   is constant over runs of at least a vector (column vectors `c[M, 1]` over
    ///   `[M, K ≥ 16]`, channel vectors `[C, 1, 1]` over `[N, C, H, W]` with `H·W ≥ 16`, for
    ///   AVX-512; 8 for AVX2), all with the same run length and period;
    /// - its `f32` ops `+ - * /`, `Negative`, `Abs`, `Relu`, `Sqrt`, `Floor`, `Ceil`, `Round`,
    ///   and `Maximum` / `Minimum` against a constant (not NaN) are each one or two
    ///   instructions with the reference interpreter's semantics; every other op is the
    ///   translation of its four-lane Cranelift lowering (`program::translate`: the vector
    ///   math, `Power`, comparisons, selects, `i32` ops, conversions), which refuses what it
    ///   cannot translate (per-lane helper calls: `Mod`, integer division and `Power`; on
    ///   AVX2 also the 64-bit lane operations it lacks);
    /// - not all the ops that need such a program are calls of the vector math library
    ///   ([`crate::calls`]), unless the kernel computes something per element besides the
    ///   calls (the library's strips keep those that do not, and on AVX2 those with an
    ///   activation form, [`Refusal::Library`]);
    ///   and it does not stream ([`KernelPlan::stream`]) unless it has such a program (then
    ///   it stores as usual);
    /// - its live values (with the programs' scratch registers) fit the vector registers (32,
    ///   AVX2 16) and its per-element buffers the seven pointer registers.
    ///
    /// Every other plan is Cranelift's.
    ///
    /// # Errors
    /// The [`Refusal`] when the plan does not qualify or the host cannot run it.
    pub fn of(plan: &KernelPlan) -> Result<Layout, Refusal> {
        let Some(isa) = plan.isa else {
            return Err(Refusal::Off);
        };
        if !CpuFeatures::host().runs(isa) {
            return Err(Refusal::Host(isa));
        }
        if plan.lanes != Lanes::X4 {
            return Err(Refusal::NotFourLane);
        }
        // (Below 2^31 elements every extent and index fits an instruction's immediate.)
        if i32::try_from(plan.count).is_err() {
            return Err(Refusal::TooLarge);
        }
        let lanes_32 = plan.slots.iter().all(|s| {
            matches!(
                s.ty,
                ElementType::F32 | ElementType::I32 | ElementType::Bool
            )
        }) && plan.outputs.iter().all(|&(_, t)| {
            matches!(t, ElementType::F32 | ElementType::I32 | ElementType::Bool)
                || conversion::takes(isa, t)
        });
        if !lanes_32 || plan.slots.is_empty() {
            return Err(Refusal::NotF32);
        }
        let narrow = |t: ElementType| !matches!(t, ElementType::F32 | ElementType::I32);
        if let Some(s) = plan
            .slots
            .iter()
            .find(|s| s.storage != s.ty && !conversion::takes(isa, s.storage))
        {
            return Err(Refusal::Storage(s.storage));
        }
        let mut load_conv = vec![None; plan.slots.len()];
        let mut store_conv = vec![None; plan.slots.len()];
        for &(k, t) in &plan.outputs {
            if narrow(t) {
                store_conv[k] = conversion::store_program(t, isa)?;
            }
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
        let mut programs = Vec::new();
        let (least, absorbed) = (least_magnitudes(plan), absorbed_below(plan));
        for (k, slot) in plan.slots.iter().enumerate() {
            let l = match &slot.op {
                SlotOp::Load { arg, addressing } => {
                    // A `bool` is stored as a byte and held as a 32-bit mask, widened as it is
                    // loaded ([`Writer::load_bool`]); a run broadcasts 32-bit values only.
                    if slot.ty == ElementType::Bool
                        && matches!(addressing, Addressing::General { .. })
                    {
                        return Err(Refusal::Storage(ElementType::Bool));
                    }
                    if slot.storage != slot.ty {
                        if matches!(addressing, Addressing::General { .. }) {
                            // (Runs broadcast 32-bit values only.)
                            return Err(Refusal::Storage(slot.storage));
                        }
                        load_conv[k] = conversion::load_program(slot.storage, isa)?;
                    }
                    match addressing {
                        Addressing::Splat => {}
                        Addressing::Contiguous | Addressing::Row { .. } => {
                            if read[*arg].is_some_and(|r| r != addressing) {
                                return Err(Refusal::Addressing);
                            }
                            read[*arg] = Some(addressing);
                            if let Addressing::Row { len } = addressing {
                                if row.is_some_and(|r| r != *len) {
                                    return Err(Refusal::Addressing);
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
                            [t] if t.div >= isa.lanes() => {
                                let r = run.get_or_insert_with(|| Run {
                                    div: t.div,
                                    modulo: t.modulo,
                                    loads: Vec::new(),
                                });
                                if (r.div, r.modulo) != (t.div, t.modulo) {
                                    return Err(Refusal::Addressing);
                                }
                                r.loads.push((lowering.len(), *arg, t.stride));
                            }
                            _ => return Err(Refusal::Addressing),
                        },
                    }
                    None
                }
                SlotOp::Const(_) => None,
                _ => Some(match direct(plan, k, isa, (&least, &absorbed), &mut aux) {
                    Some(l) => l,
                    None => {
                        programs.push(program::translate(plan, k, isa)?);
                        Lowering::Program(programs.len() - 1)
                    }
                }),
            };
            lowering.push(l);
        }
        // Where the vector math library computes every op that needs a program and
        // nothing is left to compute between the calls (an activation form alone, GELU or
        // SiLU as one call), its software-pipelined strips are as wide as this code and
        // faster; the kernel then keeps them. Otherwise the one-instruction ops between the
        // strips (a bias added before the activation, as a product's epilogue has it) would
        // run on Cranelift's four lanes, and the whole kernel here is faster on AVX-512,
        // forms included; on AVX2 a kernel with a form other than SiLU keeps the strips
        // all the same, and one with a SiLU form is this code, which computes SiLU faster
        // than the library's eight lanes (figures in `BENCHMARKS.md`).
        if !programs.is_empty() {
            let library = LibraryCalls::of(plan);
            let by_library = |k: SlotId| library.get(k).is_some() || library.inside(k);
            let all = lowering
                .iter()
                .enumerate()
                .all(|(k, l)| !matches!(l, Some(Lowering::Program(_))) || by_library(k));
            let between = lowering
                .iter()
                .enumerate()
                .any(|(k, l)| l.is_some() && !by_library(k) && !plan.slots[k].invariant);
            let form = isa == VectorIsa::Avx2
                && (0..lowering.len()).any(|k| {
                    library
                        .get(k)
                        .is_some_and(|c| VecFn::FORMS.contains(&c.function))
                });
            let silu = isa == VectorIsa::Avx2
                && (0..lowering.len()).any(|k| {
                    library.get(k).is_some_and(|c| {
                        matches!(c.function, VecFn::Silu | VecFn::SiluExp | VecFn::Swish)
                    })
                });
            if all && (form || !between) && !silu {
                return Err(Refusal::Library);
            }
        }
        // A streaming kernel is AVX-512 code whose main loop writes whole lines past the
        // caches (`vmovntps`), which measured faster than the strips of Cranelift code and
        // their copies (`BENCHMARKS.md`, the twenty-sixth session). In AVX2 code, which
        // stores through the caches, one of one-instruction ops keeps the strips and their
        // non-temporal stores, unless it divides by or into a broadcast value: the strips'
        // division is the library's, which would take a buffer of the broadcast's copies.
        if plan.stream
            && isa == VectorIsa::Avx2
            && programs.is_empty()
            && !divides_broadcast(plan, &lowering)
        {
            return Err(Refusal::Streams);
        }
        let out_reg: Vec<usize> = (pointers..pointers + plan.outputs.len()).collect();
        if pointers + plan.outputs.len() > POINTERS.len() {
            return Err(Refusal::Registers);
        }
        let mut pinned: Vec<bool> = plan.slots.iter().map(|s| s.invariant).collect();
        for &(k, _, _) in run.iter().flat_map(|r| &r.loads) {
            pinned[k] = true;
        }
        let folded = fold_loads(plan, &lowering, &pinned);
        // Scratch registers: a program's, and a conversion's (its own and the register of
        // the bits it reads or writes, the last); a narrow integer store packs in one.
        let scratch_need: Vec<Option<usize>> = (0..plan.slots.len())
            .map(|k| {
                let mut need = match lowering[k] {
                    Some(Lowering::Program(i)) => Some(programs[i].scratch),
                    // (A register of its own: `x` is read after the result is written.)
                    Some(Lowering::DivideExact { .. }) => Some(0),
                    _ => None,
                };
                let stores = plan.outputs.iter().filter(|&&(o, t)| o == k && narrow(t));
                let store_need = stores
                    .filter_map(|&(_, t)| conversion::store_scratch(t, store_conv[k].as_ref()));
                let load_need = load_conv[k]
                    .as_ref()
                    .map(|p: &program::Program| p.scratch + 1);
                for n in load_need.into_iter().chain(store_need) {
                    need = Some(need.map_or(n, |m| m.max(n)));
                }
                need
            })
            .collect();
        let registers = isa.registers();
        let (reg, scratch) = allocate(plan, &pinned, &folded, &scratch_need, &mut aux, registers)
            .ok_or(Refusal::Registers)?;
        let fixed = pinned.iter().filter(|&&p| p).count() + aux.len();
        let body_regs = (0..plan.slots.len())
            .filter(|&k| !pinned[k] && !folded[k])
            .flat_map(|k| std::iter::once(reg[k]).chain(scratch[k].iter().copied()))
            .map(|r| r + 1 - fixed)
            .max()
            .unwrap_or(0);
        // Copies side by side: all four where they fit, else pairs (a long chain, as a
        // vector math function's, is latency-bound one copy at a time).
        let group = [UNROLL, 2]
            .into_iter()
            .find(|&g| fixed + g * body_regs <= registers)
            .unwrap_or(1);
        let copy_stride = (group > 1).then_some(body_regs);
        let used = fixed + group * body_regs;
        let held = match isa {
            VectorIsa::Avx512 => {
                let conversions = load_conv.iter().chain(&store_conv).flatten();
                held::materialized(programs.iter().chain(conversions))
                    .into_iter()
                    .zip(used..registers)
                    .map(|((bits, wide), r)| (bits, wide, r))
                    .collect()
            }
            VectorIsa::Avx2 => Vec::new(),
        };
        Ok(Layout {
            isa,
            load_conv,
            store_conv,
            lowering,
            programs,
            reg,
            scratch,
            aux,
            arg_reg,
            out_reg,
            row,
            row_args,
            run,
            folded,
            copy_stride,
            group,
            held,
            pinned,
            count: plan.count,
        })
    }

    /// The constants the programs read, each once, as `(bits, 64-bit)`: the 64-bit ones
    /// first (so that every constant is aligned in the pool), each group in order of first
    /// use.
    pub(super) fn constants(&self) -> Vec<(u64, bool)> {
        let conversions = self.load_conv.iter().chain(&self.store_conv).flatten();
        let programs = self.programs.iter().chain(conversions).flat_map(|p| {
            let args = p
                .insts
                .iter()
                .flat_map(|i| i.args.iter().map(|&a| (a, i.wide)));
            args.chain([(p.result, false)])
                .filter_map(|(a, wide)| a.pool_constant(wide))
        });
        let divisions = self.lowering.iter().flatten().flat_map(|l| match l {
            Lowering::DivideExact { r, .. } => reciprocal::constants(r),
            _ => Vec::new(),
        });
        let mut out = Vec::new();
        for c in programs.chain(divisions.map(|bits| (u64::from(bits), false))) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        out.sort_by_key(|&(_, wide)| !wide);
        out
    }

    /// The callee-saved registers the code uses (pushed in this order).
    fn saved(&self) -> Vec<AsmRegister64> {
        let used = self.out_reg.last().map_or(0, |&r| r + 1);
        let mut saved: Vec<AsmRegister64> = POINTERS[2..used.max(2)].to_vec();
        saved.push(r15);
        saved
    }
}

/// The one- or two-instruction lowering of computing slot `k` for `isa`, if it has one: the
/// `f32` ops of [`Lowering`] (others get a [`program::Program`]). Records the auxiliary
/// constants it needs in `aux`.
fn direct(
    plan: &KernelPlan,
    k: SlotId,
    isa: VectorIsa,
    (least, absorbed): (&[f64], &[f64]),
    aux: &mut Vec<(Aux, usize)>,
) -> Option<Lowering> {
    let slot = &plan.slots[k];
    // (A value of a storage type is brought to that type's values: its op's program.)
    if slot.ty != ElementType::F32 || slot.storage != slot.ty {
        return None;
    }
    let mut need = |a: Aux| {
        if !aux.iter().any(|&(b, _)| b == a) {
            aux.push((a, 0));
        }
    };
    if let SlotOp::Binary(BinaryOp::Divide, x, c) = slot.op {
        let by = float_constant(&plan.slots[c], ElementType::F32);
        let exact = |v: f64| ExactReciprocal::for_dividends(v as f32, least[x], absorbed[k]);
        if let Some(r) = by.and_then(exact) {
            return Some(Lowering::DivideExact { x, r });
        }
    }
    Some(match &slot.op {
        SlotOp::Binary(
            op @ (BinaryOp::Add | BinaryOp::Subtract | BinaryOp::Multiply | BinaryOp::Divide),
            a,
            b,
        ) => Lowering::Arith(*op, *a, *b),
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
            if blend.is_some() && isa == VectorIsa::Avx2 {
                return None;
            }
            Lowering::Bound {
                op: *op,
                x,
                c,
                blend,
            }
        }
        SlotOp::Unary(u, x) => match u {
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
        },
        _ => return None,
    })
}

/// Whether a per-element division of `lowering` reads a broadcast value: a row, column or
/// channel vector (a load neither contiguous nor a splat), or a value computed from one.
fn divides_broadcast(plan: &KernelPlan, lowering: &[Option<Lowering>]) -> bool {
    let mut broadcast = vec![false; plan.slots.len()];
    for (k, s) in plan.slots.iter().enumerate() {
        broadcast[k] = !s.invariant
            && match &s.op {
                SlotOp::Load { addressing, .. } => {
                    !matches!(addressing, Addressing::Contiguous | Addressing::Splat)
                }
                op => operands(op).iter().any(|&o| broadcast[o]),
            };
    }
    lowering.iter().any(|l| {
        matches!(l, Some(Lowering::Arith(BinaryOp::Divide, a, b)) if broadcast[*a] || broadcast[*b])
    })
}
