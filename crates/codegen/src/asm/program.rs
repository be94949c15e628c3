//! Full-width programs for the slots the assembler has no single instruction for (`exp`,
//! `log`, `erf`, comparisons, selects, …): the slot's inline Cranelift lowering
//! ([`crate::lower::lower`] at four lanes, the code every other kernel runs) translated
//! instruction by instruction into operations on whole `zmm` (AVX-512) or `ymm` (AVX2)
//! registers. Each Cranelift operation on `F32X4` / `I32X4` lanes acts on every lane alike,
//! so the same operations on sixteen or eight lanes give every lane the same bits: one
//! definition of each function, and no second copy to keep in step. For AVX-512 the
//! lowering may mark a few values as AVX-512 operations of the same bits
//! ([`crate::lanes::Native`]: log's reduction); the program is then folded over its constant
//! operands ([`super::fold`]) and its comparisons placed beside their selects.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, Function, InstructionData, Opcode, Signature, Type, UserFuncName, Value,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use foldhash::HashMap;
use graphlift_ir::{ElementType, UnaryOp};
use graphlift_kernels::target::VectorIsa;
use smallvec::{smallvec, SmallVec};

use super::Refusal;
use crate::lanes::{Emit, Lanes, Native};
use crate::lower::{lower, HelperRefs};
use crate::plan::{operands, KernelPlan, SlotId, SlotOp};
use crate::storage::{finish, to_storage, Finish};
use crate::vmath;

use super::program_order::{live, registers, sink_compares};

/// An operand of a program's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// Operand `i` of the slot (its register).
    Input(usize),
    /// The value of operation `i` of the program.
    Value(usize),
    /// The constant in every lane (read from the kernel's constant pool): its low 32 bits,
    /// or all 64 for an operation on 64-bit lanes.
    Const(u64),
}

impl Arg {
    /// The pool constant this operand reads in an operation on 64-bit lanes (`wide`) or on
    /// 32-bit ones: `(bits, wide)` as the pool keys it (the low 32 bits for the latter), or
    /// `None` for a register.
    pub fn pool_constant(self, wide: bool) -> Option<(u64, bool)> {
        match self {
            Arg::Const(bits) if wide => Some((bits, true)),
            Arg::Const(bits) => Some((bits & u64::from(u32::MAX), false)),
            _ => None,
        }
    }
}

/// An operation on a vector's 32-bit lanes, or its 64-bit ones ([`Inst::wide`]: Cranelift's
/// `F64X2` / `I64X2` operations, four or two times as wide), each one instruction or a few
/// (`super::program_emit` says which; AVX-512F names below). Masks (the results of
/// comparisons, and `bool` values) are lanes of all ones or all zeros, as in Cranelift's
/// vector code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `vaddps a, b`.
    FAdd,
    /// `vsubps a, b`.
    FSub,
    /// `vmulps a, b`.
    FMul,
    /// `vdivps a, b`.
    FDiv,
    /// `a·b + c` rounded once (`vfmadd…ps`).
    Fma,
    /// `−(a·b) + c` rounded once (`vfnmadd…ps`; [`super::peephole`]).
    Fnma,
    /// `vmaxps a, b`: `b` where either is NaN or both are zero (x86's rule).
    XMax,
    /// `vminps a, b`: as [`Op::XMax`].
    XMin,
    /// `vsqrtps`.
    Sqrt,
    /// `vrndscaleps` with the immediate.
    Round(i32),
    /// `vcmpps` with the predicate, expanded to a mask.
    FCmp(i32),
    /// `vpaddd`.
    IAdd,
    /// `vpsubd`.
    ISub,
    /// `vpmulld`.
    IMul,
    /// `vpandd`.
    And,
    /// `vpord`.
    Or,
    /// `vpxord`.
    Xor,
    /// `vpslld` by the immediate.
    Shl(u32),
    /// `vpsrld` by the immediate.
    Ushr(u32),
    /// `vpsrad` by the immediate.
    Sshr(u32),
    /// `vpcmpd` (signed) or `vpcmpud` (unsigned) with the predicate, expanded to a mask.
    /// AVX2 compares for equality (`vpcmpeqd`, predicate 0) and signed greater-than
    /// (`vpcmpgtd`, predicate 6) only: [`translate`] writes the others with those.
    ICmp { pred: i32, unsigned: bool },
    /// `vpmaxsd`.
    SMax,
    /// `vpminsd`.
    SMin,
    /// `vpmaxud`.
    UMax,
    /// `vpminud`.
    UMin,
    /// `vcvtdq2ps`.
    FromInt,
    /// `vcvttps2dq`: `i32::MIN` for NaN and out-of-range lanes (x86's rule).
    ToIntTruncate,
    /// `a ? b : c` for a mask `a` (`vptestmd`, then a blend).
    Select,
    /// The bits of `b` where the constant `c` has ones, of `a` elsewhere (`vpternlogd`;
    /// AVX-512 only, [`super::peephole`]).
    BitSelect,
    /// `a` itself (a register copy or a broadcast).
    Copy,
    /// `f32` lanes rounded to the nearest `f16` value, ties to even (`vcvtps2ph`, then
    /// `vcvtph2ps`; F16C): [`crate::half::round_to_16`] in two instructions.
    HalfRound,
    /// `vgetexpps` ([`Native::GetExp`]; AVX-512 only).
    GetExp,
    /// `vgetmantps` into `[1, 2)` with the source's sign ([`Native::GetMant`]; AVX-512 only).
    GetMant,
    /// `vfixupimmps`: the first operand, with the lanes where the second is of a class that
    /// the third (a constant table) answers replaced by that answer ([`Native::Fixup`];
    /// AVX-512 only).
    Fixup,
    /// `vscalefps`: the first operand times two to the floor of the second, rounded once
    /// ([`Native::Scale`]; AVX-512 only).
    Scale,
}

/// One operation and its operands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inst {
    /// The operation.
    pub op: Op,
    /// Its operands, in the order of [`Op`]'s description.
    pub args: SmallVec<[Arg; 3]>,
    /// Whether it works on eight 64-bit lanes (`f64`, `i64`) rather than sixteen 32-bit.
    pub wide: bool,
}

/// The program of one slot: its operations in order, the value that is the slot's, and the
/// register plan: each operation's value in a scratch register or the slot's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The operations.
    pub insts: Vec<Inst>,
    /// The slot's value.
    pub result: Arg,
    /// Where each operation's value goes: `None` for the slot's own register, else a
    /// scratch register by index (`0..scratch`). An operation's register is never one of its
    /// operands' (so that a destructive instruction may write it before reading them).
    pub reg: Vec<Option<usize>>,
    /// Scratch registers the program needs besides its operands' and the slot's.
    pub scratch: usize,
    /// For `Sin`, `Cos`, `Tan`: the function (its index in [`UnaryOp::TRIG`]) and the mask
    /// of the lanes in the range of the inline code (kept to the end); the other lanes are
    /// the reference's scalar function's.
    pub fallback: Option<(usize, Arg)>,
}

/// `vcmpps` predicates (quiet) for Cranelift's float condition codes.
fn float_predicate(cc: FloatCC) -> i32 {
    match cc {
        FloatCC::Ordered => 0x07,
        FloatCC::Unordered => 0x03,
        FloatCC::Equal => 0x00,
        FloatCC::NotEqual => 0x04,
        FloatCC::OrderedNotEqual => 0x0C,
        FloatCC::UnorderedOrEqual => 0x08,
        FloatCC::LessThan => 0x11,
        FloatCC::LessThanOrEqual => 0x12,
        FloatCC::GreaterThan => 0x1E,
        FloatCC::GreaterThanOrEqual => 0x1D,
        FloatCC::UnorderedOrLessThan => 0x19,
        FloatCC::UnorderedOrLessThanOrEqual => 0x1A,
        FloatCC::UnorderedOrGreaterThan => 0x16,
        FloatCC::UnorderedOrGreaterThanOrEqual => 0x15,
    }
}

/// `vpcmp[u]d` predicates for Cranelift's integer condition codes: `(predicate, unsigned)`.
fn int_predicate(cc: IntCC) -> (i32, bool) {
    match cc {
        IntCC::Equal => (0, false),
        IntCC::NotEqual => (4, false),
        IntCC::SignedLessThan => (1, false),
        IntCC::SignedLessThanOrEqual => (2, false),
        IntCC::SignedGreaterThan => (6, false),
        IntCC::SignedGreaterThanOrEqual => (5, false),
        IntCC::UnsignedLessThan => (1, true),
        IntCC::UnsignedLessThanOrEqual => (2, true),
        IntCC::UnsignedGreaterThan => (6, true),
        IntCC::UnsignedGreaterThanOrEqual => (5, true),
    }
}

/// The Cranelift vector type of a slot's element type at four lanes (`bool` as `I32X4`
/// masks), or `None` for one that sixteen 32-bit lanes do not hold.
pub(super) fn lane_type(t: ElementType) -> Option<Type> {
    match t {
        ElementType::F32 => Some(types::F32X4),
        ElementType::I32 | ElementType::Bool => Some(types::I32X4),
        _ => None,
    }
}

/// The program of computing slot `k` of `plan`: its four-lane lowering, translated for
/// `isa`.
///
/// # Errors
/// [`Refusal::Op`] naming the op when its lowering uses what has no full-width
/// translation here: control flow (the scalar fallbacks of `Sin`, `Cos`, `Tan`), calls to
/// host helpers, shuffles, conversions between lane widths; on AVX2, the 64-bit lane
/// operations it has no instruction for (`vpmaxsq`, `vpsraq`, unsigned 64-bit compares).
pub fn translate(plan: &KernelPlan, k: SlotId, isa: VectorIsa) -> Result<Program, Refusal> {
    let slot = &plan.slots[k];
    let name = || Refusal::Op(op_name(&slot.op));
    // A constant operand goes in as the constant it is, so that the program is folded over
    // it (`super::fold`): `Pow(10, x)` computes no logarithm per element.
    let params = operands(&slot.op)
        .into_iter()
        .map(|o| {
            let s = &plan.slots[o];
            let known = match s.op {
                SlotOp::Const(bits) if matches!(s.ty, ElementType::F32 | ElementType::I32) => {
                    Some(bits & u64::from(u32::MAX))
                }
                _ => None,
            };
            Some((lane_type(s.ty)?, known))
        })
        .collect::<Option<Vec<(Type, Option<u64>)>>>()
        .ok_or_else(name)?;
    // `Sin`, `Cos`, `Tan`: the inline code and its range test; the lanes outside the range
    // are the reference's, by a call (`program_emit`), as the Cranelift code's are.
    let trig = match slot.op {
        SlotOp::Unary(u, _) if vmath::trig_fallback(u, slot.ty) => {
            UnaryOp::TRIG.iter().position(|&t| t == u)
        }
        _ => None,
    };
    if trig.is_some() && slot.storage != slot.ty {
        // (The reference's lanes come after the program: they would not be rounded.)
        return Err(name());
    }
    // An `f16` result rounded by F16C (AVX2 hosts have it) rather than integer code.
    let f16c_round = slot.storage == ElementType::F16 && finish(plan, k) == Finish::Narrow;
    let mut p = build(&params, isa, name, |e, params| match (trig, &slot.op) {
        (Some(_), &SlotOp::Unary(u, _)) => {
            let fast = vmath::emit(e, u, slot.ty, params[0])?;
            Some((fast, Some(vmath::trig::in_range(e, params[0]))))
        }
        _ => {
            let v = lower(e, &HelperRefs::default(), slot, &plan.slots, params).ok()?;
            Some((
                if f16c_round {
                    v
                } else {
                    to_storage(e, plan, k, v)
                },
                None,
            ))
        }
    })?;
    if f16c_round {
        p = then(p, Op::HalfRound);
    }
    p.fallback = trig.zip(p.fallback.map(|(_, in_range)| in_range));
    Ok(p)
}

/// `p` with `op` applied to its result.
fn then(p: Program, op: Op) -> Program {
    let mut insts = p.insts;
    insts.push(Inst {
        op,
        args: smallvec![p.result],
        wide: false,
    });
    let result = Arg::Value(insts.len() - 1);
    let (reg, scratch) = registers(&insts, result, None);
    Program {
        insts,
        result,
        reg,
        scratch,
        fallback: None,
    }
}

/// The program of a function of four-lane values, written by `body` (its value, and for the
/// trigonometric functions the mask of the lanes in range, kept as [`Program::fallback`]
/// with function index 0), translated for `isa` and folded ([`super::fold`]). `params`
/// gives each operand's type (`F32X4` or `I32X4` where it is known) and, for an operand
/// known when the kernel is compiled, its lane bits: that operand is the constant, not
/// [`Arg::Input`].
///
/// # Errors
/// `refusal()` when the body gives no value or its code has no translation.
pub(super) fn build(
    params: &[(Type, Option<u64>)],
    isa: VectorIsa,
    refusal: impl Fn() -> Refusal,
    body: impl FnOnce(&mut Emit, &[Value]) -> Option<(Value, Option<Value>)>,
) -> Result<Program, Refusal> {
    let mut func =
        Function::with_name_signature(UserFuncName::default(), Signature::new(CallConv::SystemV));
    let mut fbc = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fbc);
    let block = b.create_block();
    let inputs: Vec<Option<Value>> = params
        .iter()
        .map(|&(ty, known)| known.is_none().then(|| b.append_block_param(block, ty)))
        .collect();
    b.switch_to_block(block);
    let mut e = Emit::new(&mut b, Lanes::X4);
    if isa == VectorIsa::Avx512 {
        e.allow_native();
    }
    let mut values = Vec::with_capacity(params.len());
    for (&(ty, known), input) in params.iter().zip(&inputs) {
        values.push(match (input, known) {
            (Some(v), _) => *v,
            (None, Some(bits)) if ty == types::F32X4 => e.constant(ElementType::F32, bits),
            (None, Some(bits)) if ty == types::I32X4 => e.constant(ElementType::I32, bits),
            _ => return Err(refusal()),
        });
    }
    let (result, in_range) = body(&mut e, &values).ok_or_else(&refusal)?;
    let natives: HashMap<Value, Native> = e.take_natives().into_iter().collect();
    let result_ty = b.func.dfg.value_type(result);
    b.func.signature.returns.push(AbiParam::new(result_ty));
    // (No block in the layout when the body emits no instruction: its value is an input.)
    if func.layout.blocks().count() > 1 {
        return Err(refusal());
    }
    let mut t = Translation {
        func: &func,
        natives,
        args: HashMap::default(),
        insts: Vec::new(),
        wide: false,
        isa,
    };
    for (i, p) in inputs.iter().enumerate() {
        if let Some(p) = *p {
            t.args.insert(p, Arg::Input(i));
        }
    }
    let insts = func
        .layout
        .blocks()
        .flat_map(|b| func.layout.block_insts(b));
    for inst in insts {
        t.inst(inst).ok_or_else(&refusal)?;
    }
    let result = t.arg(result).ok_or_else(&refusal)?;
    let in_range = match in_range {
        Some(v) => Some(t.arg(v).ok_or_else(&refusal)?),
        None => None,
    };
    let mut roots = [Some(result), in_range];
    let mut insts = super::fold::fold(t.insts, &mut roots);
    // The range mask is read from a register (`program_emit`): a folded one is copied into
    // one.
    if let Some(c @ Arg::Const(_)) = roots[1] {
        insts.push(Inst {
            op: Op::Copy,
            args: smallvec![c],
            wide: false,
        });
        roots[1] = Some(Arg::Value(insts.len() - 1));
    }
    let insts = super::peephole::simplify(insts, isa);
    let (insts, roots) = live(insts, &roots);
    let (insts, roots) = sink_compares(insts, &roots);
    let (result, in_range) = (roots[0].ok_or_else(&refusal)?, roots[1]);
    let (reg, scratch) = registers(&insts, result, in_range);
    Ok(Program {
        insts,
        result,
        reg,
        scratch,
        fallback: in_range.map(|m| (0, m)),
    })
}

/// The name of a slot's op in a refusal.
fn op_name(op: &SlotOp) -> String {
    match op {
        SlotOp::Unary(u, _) => format!("{u:?}"),
        SlotOp::Binary(b, ..) => format!("{b:?}"),
        SlotOp::Compare(c, ..) => format!("{c:?}"),
        SlotOp::Select(..) => "Select".into(),
        SlotOp::Convert(_) => "Convert".into(),
        SlotOp::Load { .. } | SlotOp::Const(_) => "a load".into(),
    }
}

/// The state of one translation: what each Cranelift value is.
struct Translation<'f> {
    func: &'f Function,
    /// The placeholders of [`Native`] operations.
    natives: HashMap<Value, Native>,
    args: HashMap<Value, Arg>,
    insts: Vec<Inst>,
    /// Whether the instruction being translated works on 64-bit lanes.
    wide: bool,
    /// The instruction set translated for.
    isa: VectorIsa,
}

impl Translation<'_> {
    fn arg(&self, v: Value) -> Option<Arg> {
        self.args.get(&v).copied()
    }

    /// Appends `op` on `args` as the value of `v`.
    fn push(&mut self, v: Value, op: Op, args: SmallVec<[Arg; 3]>) -> Option<()> {
        let a = self.value(op, args);
        self.args.insert(v, a);
        Some(())
    }

    /// Appends `op` on `args` (at the current width) and returns its value.
    fn value(&mut self, op: Op, args: SmallVec<[Arg; 3]>) -> Arg {
        self.insts.push(Inst {
            op,
            args,
            wide: self.wide,
        });
        Arg::Value(self.insts.len() - 1)
    }

    /// The sign bit of a lane at the current width.
    fn sign_bit(&self) -> Arg {
        Arg::Const(if self.wide { 1 << 63 } else { 1 << 31 })
    }

    /// All ones in a lane at the current width.
    fn all_ones(&self) -> Arg {
        Arg::Const(if self.wide {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        })
    }

    /// Translates one instruction; `None` when it has no translation.
    fn inst(&mut self, inst: cranelift_codegen::ir::Inst) -> Option<()> {
        let dfg = &self.func.dfg;
        let data = &dfg.insts[inst];
        let opcode = data.opcode();
        if opcode == Opcode::Return {
            return Some(());
        }
        let &[v] = dfg.inst_results(inst) else {
            return None;
        };
        let ty = dfg.value_type(v);
        let args: SmallVec<[Value; 3]> = dfg.inst_args(inst).iter().copied().collect();
        if let Some(&native) = self.natives.get(&v) {
            // The placeholder's operands are the native operation's.
            self.wide = false;
            let x = self.arg(args[0])?;
            return match native {
                Native::GetExp => self.push(v, Op::GetExp, smallvec![x]),
                Native::GetMant => self.push(v, Op::GetMant, smallvec![x]),
                Native::Scale => {
                    let n = self.arg(args[1])?;
                    self.push(v, Op::Scale, smallvec![x, n])
                }
                Native::Fixup(table) => {
                    let of = self.arg(args[1])?;
                    let table = Arg::Const(u64::from(table));
                    self.push(v, Op::Fixup, smallvec![x, of, table])
                }
            };
        }
        // A scalar `iconst` is a shift amount (`ishl_imm` and the like build one).
        if let InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            ..
        } = data
        {
            return Some(());
        }
        if opcode == Opcode::Bitcast {
            // The same bits: the same value.
            let x = self.arg(args[0])?;
            self.args.insert(v, x);
            return Some(());
        }
        self.wide = ty == types::F64X2 || ty == types::I64X2;
        let vector = self.wide || ty == types::F32X4 || ty == types::I32X4;
        let float = ty == types::F32X4 || ty == types::F64X2;
        if !vector {
            return None;
        }
        let lane_bits: i64 = if self.wide { 63 } else { 31 };
        let a = |i: usize| self.arg(args[i]);
        let shift = |t: &Self| -> Option<u32> {
            // The amount is taken modulo the lane width, as Cranelift does.
            let def = t.func.dfg.value_def(args[1]).inst()?;
            match t.func.dfg.insts[def] {
                InstructionData::UnaryImm { imm, .. } => Some((imm.bits() & lane_bits) as u32),
                _ => None,
            }
        };
        let (op, ops): (Op, SmallVec<[Arg; 3]>) = match (opcode, data) {
            (
                Opcode::Vconst,
                InstructionData::UnaryConst {
                    constant_handle, ..
                },
            ) => {
                let bytes = dfg.constants.get(*constant_handle).as_slice();
                let width = if self.wide { 8 } else { 4 };
                let lane = |i: usize| -> Option<u64> {
                    let mut b = [0u8; 8];
                    b[..width].copy_from_slice(bytes.get(width * i..width * (i + 1))?);
                    Some(u64::from_le_bytes(b))
                };
                let bits = lane(0)?;
                if (1..16 / width).any(|i| lane(i) != Some(bits)) {
                    return None;
                }
                self.args.insert(v, Arg::Const(bits));
                return Some(());
            }
            (Opcode::Fadd, _) if float => (Op::FAdd, smallvec![a(0)?, a(1)?]),
            (Opcode::Fsub, _) if float => (Op::FSub, smallvec![a(0)?, a(1)?]),
            (Opcode::Fmul, _) if float => (Op::FMul, smallvec![a(0)?, a(1)?]),
            (Opcode::Fdiv, _) if float => (Op::FDiv, smallvec![a(0)?, a(1)?]),
            (Opcode::Fma, _) if float => {
                let (x, y, c) = (a(0)?, a(1)?, a(2)?);
                // The instruction takes one constant factor at most (see `program_emit`).
                let x = match (x, y) {
                    (Arg::Const(_), Arg::Const(_)) => self.value(Op::Copy, smallvec![x]),
                    _ => x,
                };
                (Op::Fma, smallvec![x, y, c])
            }
            (Opcode::Sqrt, _) if float => (Op::Sqrt, smallvec![a(0)?]),
            (Opcode::Floor, _) if float => (Op::Round(super::ROUND_DOWN), smallvec![a(0)?]),
            (Opcode::Ceil, _) if float => (Op::Round(super::ROUND_UP), smallvec![a(0)?]),
            (Opcode::Nearest, _) if float => (Op::Round(super::ROUND_NEAREST), smallvec![a(0)?]),
            (Opcode::Trunc, _) if float => (Op::Round(super::ROUND_TRUNCATE), smallvec![a(0)?]),
            (Opcode::Fneg, _) if float => (Op::Xor, smallvec![a(0)?, self.sign_bit()]),
            (Opcode::Fabs, _) if float => {
                let mask = Arg::Const(if self.wide {
                    u64::MAX >> 1
                } else {
                    u64::from(u32::MAX >> 1)
                });
                (Op::And, smallvec![a(0)?, mask])
            }
            (Opcode::Fmax | Opcode::Fmin, _) if float && !self.wide => {
                return self.min_max(v, opcode == Opcode::Fmax, a(0)?, a(1)?);
            }
            (Opcode::Fcmp, InstructionData::FloatCompare { cond, .. }) => {
                (Op::FCmp(float_predicate(*cond)), smallvec![a(0)?, a(1)?])
            }
            (Opcode::Icmp, InstructionData::IntCompare { cond, .. })
                if self.isa == VectorIsa::Avx2 =>
            {
                return self.avx2_compare(v, *cond, a(0)?, a(1)?);
            }
            (Opcode::Icmp, InstructionData::IntCompare { cond, .. }) => {
                let (pred, unsigned) = int_predicate(*cond);
                (Op::ICmp { pred, unsigned }, smallvec![a(0)?, a(1)?])
            }
            (Opcode::Iadd, _) => (Op::IAdd, smallvec![a(0)?, a(1)?]),
            (Opcode::Isub, _) => (Op::ISub, smallvec![a(0)?, a(1)?]),
            // (`vpmullq` is AVX-512DQ.)
            (Opcode::Imul, _) if !self.wide => (Op::IMul, smallvec![a(0)?, a(1)?]),
            (Opcode::Ineg, _) => (Op::ISub, smallvec![Arg::Const(0), a(0)?]),
            (Opcode::Band, _) => (Op::And, smallvec![a(0)?, a(1)?]),
            (Opcode::Bor, _) => (Op::Or, smallvec![a(0)?, a(1)?]),
            (Opcode::Bxor, _) => (Op::Xor, smallvec![a(0)?, a(1)?]),
            (Opcode::Bnot, _) => (Op::Xor, smallvec![a(0)?, self.all_ones()]),
            // (AVX2 has no 64-bit `vpsraq`, `vpmaxsq` and the like.)
            (Opcode::Sshr | Opcode::Smax | Opcode::Smin | Opcode::Umax | Opcode::Umin, _)
            | (Opcode::Iabs, _)
                if self.wide && self.isa == VectorIsa::Avx2 =>
            {
                return None
            }
            (Opcode::Ishl, _) => (Op::Shl(shift(self)?), smallvec![a(0)?]),
            (Opcode::Ushr, _) => (Op::Ushr(shift(self)?), smallvec![a(0)?]),
            (Opcode::Sshr, _) => (Op::Sshr(shift(self)?), smallvec![a(0)?]),
            (Opcode::Smax, _) => (Op::SMax, smallvec![a(0)?, a(1)?]),
            (Opcode::Smin, _) => (Op::SMin, smallvec![a(0)?, a(1)?]),
            (Opcode::Umax, _) => (Op::UMax, smallvec![a(0)?, a(1)?]),
            (Opcode::Umin, _) => (Op::UMin, smallvec![a(0)?, a(1)?]),
            (Opcode::Iabs, _) => {
                let x = a(0)?;
                let neg = self.value(Op::ISub, smallvec![Arg::Const(0), x]);
                (Op::SMax, smallvec![x, neg])
            }
            (Opcode::FcvtFromSint, _) if float && !self.wide => (Op::FromInt, smallvec![a(0)?]),
            (Opcode::FcvtToSintSat, _) if !self.wide => return self.saturating_int(v, a(0)?),
            (Opcode::Bitselect, _) => (Op::Select, smallvec![a(0)?, a(1)?, a(2)?]),
            _ => return None,
        };
        self.push(v, op, ops)
    }

    /// An integer comparison from AVX2's two, equality and signed greater-than: the others
    /// by swapping the operands, negating the mask, or (unsigned, 32-bit lanes only)
    /// comparing `a` with `umax(a, b)` or `umin(a, b)` for equality.
    fn avx2_compare(&mut self, v: Value, cc: IntCC, a: Arg, b: Arg) -> Option<()> {
        const EQ: Op = Op::ICmp {
            pred: 0,
            unsigned: false,
        };
        const GT: Op = Op::ICmp {
            pred: 6,
            unsigned: false,
        };
        let unsigned_bound = |t: &mut Self, op: Op| -> Option<Arg> {
            if t.wide {
                return None;
            }
            let m = t.value(op, smallvec![a, b]);
            Some(t.value(EQ, smallvec![m, a]))
        };
        // The mask, and whether it is the negation of the wanted one.
        let (mask, negate) = match cc {
            IntCC::Equal => (self.value(EQ, smallvec![a, b]), false),
            IntCC::NotEqual => (self.value(EQ, smallvec![a, b]), true),
            IntCC::SignedGreaterThan => (self.value(GT, smallvec![a, b]), false),
            IntCC::SignedLessThan => (self.value(GT, smallvec![b, a]), false),
            IntCC::SignedLessThanOrEqual => (self.value(GT, smallvec![a, b]), true),
            IntCC::SignedGreaterThanOrEqual => (self.value(GT, smallvec![b, a]), true),
            IntCC::UnsignedGreaterThanOrEqual => (unsigned_bound(self, Op::UMax)?, false),
            IntCC::UnsignedLessThanOrEqual => (unsigned_bound(self, Op::UMin)?, false),
            IntCC::UnsignedLessThan => (unsigned_bound(self, Op::UMax)?, true),
            IntCC::UnsignedGreaterThan => (unsigned_bound(self, Op::UMin)?, true),
        };
        if !negate {
            self.args.insert(v, mask);
            return Some(());
        }
        let ones = self.all_ones();
        self.push(v, Op::Xor, smallvec![mask, ones])
    }

    /// Cranelift's `fmax` / `fmin` (NaN if either is NaN, `-0 < +0`) from x86's: the
    /// instruction both ways round, combined with `and` (max) or `or` (min) so that the
    /// zero that must win wins; for `fmin` a NaN survives the `or`, for `fmax` a NaN lane is
    /// replaced by `a + b` (a NaN).
    fn min_max(&mut self, v: Value, max: bool, a: Arg, b: Arg) -> Option<()> {
        let op = if max { Op::XMax } else { Op::XMin };
        let ab = self.value(op, smallvec![a, b]);
        let ba = self.value(op, smallvec![b, a]);
        if !max {
            return self.push(v, Op::Or, smallvec![ab, ba]);
        }
        let both = self.value(Op::And, smallvec![ab, ba]);
        let nan = self.value(
            Op::FCmp(float_predicate(FloatCC::Unordered)),
            smallvec![a, b],
        );
        let sum = self.value(Op::FAdd, smallvec![a, b]);
        self.push(v, Op::Select, smallvec![nan, sum, both])
    }

    /// Cranelift's `fcvt_to_sint_sat` (NaN → 0, saturating) from `vcvttps2dq`: lanes at or
    /// above `2^31` become `i32::MAX`, NaN lanes 0 (below `-2^31` x86 already gives
    /// `i32::MIN`).
    fn saturating_int(&mut self, v: Value, x: Arg) -> Option<()> {
        let t = self.value(Op::ToIntTruncate, smallvec![x]);
        let big = self.value(
            Op::FCmp(float_predicate(FloatCC::GreaterThanOrEqual)),
            smallvec![x, Arg::Const(u64::from(2_147_483_648f32.to_bits()))],
        );
        let t = self.value(
            Op::Select,
            smallvec![big, Arg::Const(u64::from(i32::MAX as u32)), t],
        );
        let ordered = self.value(Op::FCmp(float_predicate(FloatCC::Ordered)), smallvec![x, x]);
        self.push(v, Op::And, smallvec![t, ordered])
    }
}
