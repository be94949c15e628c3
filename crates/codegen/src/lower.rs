//! Op lowering: one slot of a kernel plan to Cranelift IR at the current lane width, with the
//! reference interpreter's semantics for every edge case (how each is met: [`lower`]).

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{BlockArg, FuncRef, InstBuilder, Value};
use graphlift_ir::{BinaryOp, CompareOp, ElementType, UnaryOp};

use super::convert::{small_f64_to_i64, small_i64_to_f64, unless_all};
use super::lanes::{Emit, Lanes};
use super::plan::{Slot, SlotOp};
use crate::helpers::Helper;
use crate::{vmath, JitError};

/// Helpers imported into the function being built.
#[derive(Debug, Default)]
pub struct HelperRefs(pub HashMap<Helper, FuncRef>);

impl HelperRefs {
    /// The reference to helper `h` in the function of kernel `kernel`.
    ///
    /// # Errors
    /// [`JitError::Codegen`] naming the kernel if `h` was not imported.
    pub fn get(&self, h: Helper, kernel: &str) -> Result<FuncRef, JitError> {
        self.0.get(&h).copied().ok_or_else(|| JitError::Codegen {
            kernel: kernel.to_string(),
            message: format!("helper {} was not imported", h.symbol()),
        })
    }

    /// Calls helper `h` (imported) on scalar `args`; its one result.
    ///
    /// # Errors
    /// [`JitError::Codegen`] if `h` was not imported.
    pub fn call(&self, e: &mut Emit, h: Helper, args: &[Value]) -> Result<Value, JitError> {
        let f = self.get(h, "")?;
        let inst = e.b.ins().call(f, args);
        Ok(e.b.inst_results(inst)[0])
    }
}

/// The helper a slot calls, if any.
pub fn helper_of(slot: &Slot, slots: &[Slot]) -> Option<Helper> {
    match &slot.op {
        SlotOp::Binary(BinaryOp::Power, a, _) => match slots[*a].ty {
            ElementType::F32 | ElementType::F64 => None,
            ElementType::I32 => Some(Helper::PowI32),
            ElementType::I64 => Some(Helper::PowI64),
            _ => None,
        },
        SlotOp::Binary(op @ (BinaryOp::Mod | BinaryOp::FloorMod), a, _) => {
            let t = slots[*a].ty;
            t.is_numeric().then_some(Helper::Remainder(*op, t))
        }
        SlotOp::Unary(u, _) => scalar_unary(*u, slot.ty)
            .or_else(|| vmath::trig_fallback(*u, slot.ty).then_some(Helper::Unary(*u, slot.ty))),
        SlotOp::Convert(a) => demote_helper(slots[*a].ty, slot.storage),
        _ => None,
    }
}

/// The helper of a conversion from `from` to storage type `to` that calls the reference
/// once per lane: `f64` to `f16` or `bf16` ([`Helper::DemoteF64`]).
pub fn demote_helper(from: ElementType, to: ElementType) -> Option<Helper> {
    (from == ElementType::F64 && matches!(to, ElementType::F16 | ElementType::BF16))
        .then_some(Helper::DemoteF64(to))
}

/// The helper of unary op `u` on `t` when it is one of [`UnaryOp::TRIG`] without an inline
/// lowering on `t` ([`vmath::inline`]): the reference's scalar function, once per lane.
pub fn scalar_unary(u: UnaryOp, t: ElementType) -> Option<Helper> {
    let float = matches!(t, ElementType::F32 | ElementType::F64);
    (float && UnaryOp::TRIG.contains(&u) && !vmath::inline(u, t)).then_some(Helper::Unary(u, t))
}

/// Lowers one computing slot (not a load or constant) on its operand values.
///
/// Semantics are the reference interpreter's (the table on
/// `graphlift_runtime::reference::evaluate_node`); how each edge case is met:
///
/// - `+ - * /` on floats are single IEEE operations and are **never contracted** into fused
///   multiply-adds, so results are bit-identical to the interpreter (XLA's contraction made
///   `a*x - a*x` nonzero).
/// - `Maximum`/`Minimum` on floats are Cranelift's `fmax`/`fmin`: NaN-propagating, with
///   `-0 < +0`, as the table says; against a constant (not NaN), as `Clip`'s bounds are,
///   they are one compare and select with the same results.
/// - `Relu` is `x < 0 ? 0 : x` (compare and select: `Relu(NaN) = NaN`, `Relu(-0) = -0`);
///   `Sign` is two compares and selects (`±0` and NaN pass through).
/// - `Round` is `nearest` (ties to even); `Floor`, `Ceil`, `Round` are the identity on
///   integers.
/// - Integer `Divide` never traps: the divisor is replaced by 1 where it is 0 or -1, then
///   selects give `x / 0 = 0` and `x / -1 = -x` (wrapping, so `MIN / -1 = MIN`). Integer
///   `+ - * neg abs` wrap.
/// - `Mod`, `FloorMod` (every numeric type) and integer `Power` call the interpreter's own
///   scalar function once per lane ([`Helper`]), so they agree bit for bit; so do the
///   trigonometric and hyperbolic functions without an inline lowering on their type
///   ([`scalar_unary`], [`vmath::inline`]).
/// - `Convert` float to integer uses the saturating conversions (NaN → 0, out of range →
///   MIN/MAX, as Rust's `as`); to `bool` is `x != 0` (NaN → true); from `bool` is 0/1.
/// - `Exp`, `Expm1`, `Log`, `Log1p`, `Tanh`, `Sigmoid`, `Erf` on `f32` and on `f64`, and the
///   trigonometric and hyperbolic functions on `f32`, are the inline [`crate::vmath`]
///   approximations (within their documented ulp bounds, not bit equal to the reference;
///   `Sin`, `Cos`, `Tan` call the reference's scalar function for the lanes beyond their
///   range reduction's, [`vmath::trig_fallback`], in vectors that hold such a lane); so is `Power` on `f32` and `f64` ([`crate::vmath::pow`],
///   within 1 and 2 ulp, special cases exact); `Power` on `i32`, `i64` calls the host
///   helpers of [`crate::helpers`], which run the reference's own scalar code.
///
/// In a vector loop, ops without a vector lowering run per lane with the scalar lowering
/// (extract each lane, compute, insert): integer `Divide` (Cranelift's `sdiv` is scalar
/// only: the verifier rejects `sdiv.i32x4` / `sdiv.i64x2`), the host helpers (`Power` on
/// `i32`, `i64`), and `Convert` `f64` to `i64` when a lane is outside ±2^51 or NaN (x64
/// Cranelift 0.135 has no lowering of `fcvt_to_sint_sat.i64x2`: "should be implemented in
/// ISLE", with or without AVX-512; within ±2^51 the exact vector code of
/// [`super::convert`] runs). `Convert` `i64` to `f64` is that vector code within ±2^51, else
/// Cranelift's `fcvt_from_sint.f64x2` (two scalar conversions on x64). Every other
/// `I64X2` / `F64X2` op used here lowers with SSE4.2 and up (`imul`, `smax`/`smin`, `iabs`
/// by an instruction sequence where AVX-512 is missing). Conversions between 32-bit and
/// 64-bit numbers in mixed-width kernels are [`super::mixed`]'s.
///
/// # Errors
/// [`JitError::Codegen`] for an op on an element type it does not accept (the IR's type
/// inference rules that out) or a missing helper.
pub fn lower(
    e: &mut Emit,
    helpers: &HelperRefs,
    slot: &Slot,
    slots: &[Slot],
    args: &[Value],
) -> Result<Value, JitError> {
    let bad = |what: &str| JitError::Codegen {
        kernel: String::new(),
        message: format!("node `{}`: {what}", slot.node),
    };
    let operand_ty = |k: usize| -> ElementType {
        match &slot.op {
            SlotOp::Unary(_, a) | SlotOp::Convert(a) => slots[*a].ty,
            SlotOp::Binary(_, a, b) | SlotOp::Compare(_, a, b) => {
                slots[if k == 0 { *a } else { *b }].ty
            }
            SlotOp::Select(c, a, b) => slots[[*c, *a, *b][k]].ty,
            _ => slot.ty,
        }
    };
    match &slot.op {
        SlotOp::Unary(u, _) => {
            let h = Helper::Unary(*u, slot.ty);
            if scalar_unary(*u, slot.ty).is_some() {
                return per_lane(e, slot.ty, args, |e, v| helpers.call(e, h, v));
            }
            let fast = unary(e, *u, slot.ty, args[0]).ok_or_else(|| bad("unsupported unary op"))?;
            if !vmath::trig_fallback(*u, slot.ty) {
                return Ok(fast);
            }
            // Lanes beyond the reduction's range: the reference's scalar function.
            let ok = vmath::trig::in_range(e, args[0]);
            unless_every_lane(e, ok, fast, |e| {
                let slow = per_lane(e, slot.ty, args, |e, v| helpers.call(e, h, v))?;
                Ok(e.select(ok, fast, slow))
            })
        }
        SlotOp::Binary(op @ (BinaryOp::Maximum | BinaryOp::Minimum), a, b)
            if slot.ty.is_float() =>
        {
            // Against a constant operand (max is commutative), one compare and select.
            match (
                float_constant(&slots[*b], slot.ty),
                float_constant(&slots[*a], slot.ty),
            ) {
                (Some(c), _) => Ok(min_max_constant(e, *op, args[0], args[1], c)),
                (None, Some(c)) => Ok(min_max_constant(e, *op, args[1], args[0], c)),
                (None, None) => binary(e, helpers, *op, slot.ty, args[0], args[1]),
            }
        }
        SlotOp::Binary(b, _, _) => binary(e, helpers, *b, slot.ty, args[0], args[1]),
        SlotOp::Compare(c, _, _) => Ok(compare(e, *c, operand_ty(0), args[0], args[1])),
        SlotOp::Select(..) => Ok(e.select(args[0], args[1], args[2])),
        SlotOp::Convert(_) => convert(e, operand_ty(0), slot.ty, args[0]),
        SlotOp::Load { .. } | SlotOp::Const(_) => Err(bad("a load or constant is not an op")),
    }
}

fn zero(e: &mut Emit, t: ElementType) -> Value {
    e.constant(t, 0)
}

fn one(e: &mut Emit, t: ElementType) -> Value {
    match t {
        ElementType::F32 => e.f32(1.0),
        ElementType::F64 => e.constant(t, 1f64.to_bits()),
        _ => e.constant(t, 1),
    }
}

fn minus_one(e: &mut Emit, t: ElementType) -> Value {
    match t {
        ElementType::F32 => e.f32(-1.0),
        ElementType::F64 => e.constant(t, (-1f64).to_bits()),
        _ => e.constant(t, u64::MAX),
    }
}

fn unary(e: &mut Emit, u: UnaryOp, t: ElementType, x: Value) -> Option<Value> {
    let v = match (t, u) {
        (ElementType::Bool, UnaryOp::Not) => e.not(x),
        (ElementType::Bool, _) | (ElementType::F32 | ElementType::F64, UnaryOp::Not) => {
            return None
        }
        // Bitwise on integers: the complement of a widened narrow integer is the widened
        // complement in its low bits, which the store keeps.
        (_, UnaryOp::Not) => e.b.ins().bnot(x),
        (ElementType::F32 | ElementType::F64, _) => match u {
            UnaryOp::Negative => e.b.ins().fneg(x),
            UnaryOp::Abs => e.b.ins().fabs(x),
            UnaryOp::Relu => {
                let z = zero(e, t);
                let neg = e.fcmp(FloatCC::LessThan, x, z);
                e.select(neg, z, x)
            }
            UnaryOp::Sqrt => e.b.ins().sqrt(x),
            UnaryOp::Floor => e.b.ins().floor(x),
            UnaryOp::Ceil => e.b.ins().ceil(x),
            UnaryOp::Round => e.b.ins().nearest(x),
            UnaryOp::Sign => {
                let z = zero(e, t);
                let p = one(e, t);
                let m = minus_one(e, t);
                let gt = e.fcmp(FloatCC::GreaterThan, x, z);
                let lt = e.fcmp(FloatCC::LessThan, x, z);
                let r = e.select(lt, m, x);
                e.select(gt, p, r)
            }
            _ => vmath::emit(e, u, t, x)?,
        },
        (_, UnaryOp::Negative) => e.b.ins().ineg(x),
        (_, UnaryOp::Abs) => e.b.ins().iabs(x),
        (_, UnaryOp::Relu) => {
            let z = zero(e, t);
            e.b.ins().smax(x, z)
        }
        (_, UnaryOp::Sign) => {
            let p = one(e, t);
            let m = minus_one(e, t);
            let r = e.b.ins().smax(x, m);
            e.b.ins().smin(r, p)
        }
        (_, UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round) => x,
        _ => return None,
    };
    Some(v)
}

/// The value of a constant float slot that is not NaN.
pub fn float_constant(slot: &Slot, t: ElementType) -> Option<f64> {
    let SlotOp::Const(bits) = slot.op else {
        return None;
    };
    let c = match t {
        ElementType::F32 => f64::from(f32::from_bits(bits as u32)),
        ElementType::F64 => f64::from_bits(bits),
        _ => return None,
    };
    (!c.is_nan()).then_some(c)
}

/// `Maximum(x, c)` / `Minimum(x, c)` for a constant `c` (not NaN) as one compare and select
/// instead of `fmax`/`fmin`'s general sequence, with the same results: `c` is taken where
/// `x < c` (`Maximum`) or `x > c` (`Minimum`), and where `x` equals it when `c` is the zero
/// that must win (`+0` for `Maximum`, `-0` for `Minimum`); a NaN `x` fails the compare and
/// passes through.
fn min_max_constant(e: &mut Emit, op: BinaryOp, x: Value, c_value: Value, c: f64) -> Value {
    let take_c = e.fcmp(constant_bound_test(op, c), x, c_value);
    e.select(take_c, c_value, x)
}

/// The test of `x` against the constant `c` (not NaN) under which `Maximum(x, c)` (or
/// `Minimum`) is `c` (`min_max_constant`): `x < c` (`x > c`), or `x <= c` (`x >= c`) when
/// `c` is the zero that must win over the other (`+0` for `Maximum`, `-0` for `Minimum`).
pub fn constant_bound_test(op: BinaryOp, c: f64) -> FloatCC {
    let zero_wins = |negative: bool| c == 0.0 && c.is_sign_negative() == negative;
    match op {
        BinaryOp::Maximum if zero_wins(false) => FloatCC::LessThanOrEqual,
        BinaryOp::Maximum => FloatCC::LessThan,
        _ if zero_wins(true) => FloatCC::GreaterThanOrEqual,
        _ => FloatCC::GreaterThan,
    }
}

fn binary(
    e: &mut Emit,
    helpers: &HelperRefs,
    op: BinaryOp,
    t: ElementType,
    a: Value,
    b: Value,
) -> Result<Value, JitError> {
    let is_float = t.is_float();
    Ok(match op {
        BinaryOp::Add if is_float => e.b.ins().fadd(a, b),
        BinaryOp::Subtract if is_float => e.b.ins().fsub(a, b),
        BinaryOp::Multiply if is_float => e.b.ins().fmul(a, b),
        BinaryOp::Divide if is_float => e.b.ins().fdiv(a, b),
        BinaryOp::Maximum if is_float => e.b.ins().fmax(a, b),
        BinaryOp::Minimum if is_float => e.b.ins().fmin(a, b),
        BinaryOp::Add => e.b.ins().iadd(a, b),
        BinaryOp::Subtract => e.b.ins().isub(a, b),
        BinaryOp::Multiply => e.b.ins().imul(a, b),
        BinaryOp::Maximum => e.b.ins().smax(a, b),
        BinaryOp::Minimum => e.b.ins().smin(a, b),
        BinaryOp::And => e.b.ins().band(a, b),
        BinaryOp::Or => e.b.ins().bor(a, b),
        BinaryOp::Xor => e.b.ins().bxor(a, b),
        BinaryOp::Divide => per_lane(e, t, &[a, b], |e, v| Ok(int_divide(e, t, v[0], v[1])))?,
        BinaryOp::Power if t == ElementType::F32 => vmath::pow::emit(e, a, b),
        BinaryOp::Power if t == ElementType::F64 => vmath::pow::emit_f64(e, a, b),
        BinaryOp::Power => {
            let h = match t {
                ElementType::I32 => Helper::PowI32,
                _ => Helper::PowI64,
            };
            per_lane(e, t, &[a, b], |e, v| helpers.call(e, h, v))?
        }
        BinaryOp::Mod | BinaryOp::FloorMod => {
            let h = Helper::Remainder(op, t);
            per_lane(e, t, &[a, b], |e, v| helpers.call(e, h, v))?
        }
    })
}

/// Runs `f` on each lane of `args` with scalar code (in a scalar loop: once); the lanes of
/// the result, of element type `t`, are put together in order.
fn per_lane(
    e: &mut Emit,
    t: ElementType,
    args: &[Value],
    f: impl Fn(&mut Emit, &[Value]) -> Result<Value, JitError>,
) -> Result<Value, JitError> {
    if e.lanes == Lanes::X1 {
        return f(e, args);
    }
    let vec_ty = e.ty(t);
    let mut acc: Option<Value> = None;
    for lane in 0..e.lanes.count() as u8 {
        let lane_args: Vec<Value> = args
            .iter()
            .map(|&v| e.b.ins().extractlane(v, lane))
            .collect();
        let r = e.with_lanes(Lanes::X1, |s| f(s, &lane_args))?;
        acc = Some(match acc {
            None => e.b.ins().scalar_to_vector(vec_ty, r),
            Some(v) => e.b.ins().insertlane(v, r, lane),
        });
    }
    acc.ok_or_else(|| JitError::Codegen {
        kernel: String::new(),
        message: "empty lane loop".into(),
    })
}

/// `fast` when every lane of the mask `ok` is set (in a scalar loop: when `ok` is), else what
/// `slow` computes, in a block of its own branched to once per vector ([`unless_all`] for
/// any lane width); the builder continues after both.
fn unless_every_lane(
    e: &mut Emit,
    ok: Value,
    fast: Value,
    slow: impl FnOnce(&mut Emit) -> Result<Value, JitError>,
) -> Result<Value, JitError> {
    let all = if e.lanes.is_vector() {
        e.b.ins().vall_true(ok)
    } else {
        ok
    };
    let slow_block = e.b.create_block();
    let merge = e.b.create_block();
    let ty = e.b.func.dfg.value_type(fast);
    let out = e.b.append_block_param(merge, ty);
    e.b.ins()
        .brif(all, merge, &[BlockArg::Value(fast)], slow_block, &[]);
    e.b.switch_to_block(slow_block);
    let v = slow(e)?;
    e.b.ins().jump(merge, &[BlockArg::Value(v)]);
    e.b.switch_to_block(merge);
    Ok(out)
}

/// Scalar integer division that never traps: `x / 0 = 0`, `x / -1 = -x` (wrapping).
fn int_divide(e: &mut Emit, t: ElementType, a: Value, b: Value) -> Value {
    let z = zero(e, t);
    let p = one(e, t);
    let m = minus_one(e, t);
    let by_zero = e.icmp(IntCC::Equal, b, z);
    let by_minus_one = e.icmp(IntCC::Equal, b, m);
    let unsafe_divisor = e.b.ins().bor(by_zero, by_minus_one);
    let safe = e.select(unsafe_divisor, p, b);
    let q = e.b.ins().sdiv(a, safe);
    let neg = e.b.ins().ineg(a);
    let r = e.select(by_minus_one, neg, q);
    e.select(by_zero, z, r)
}

/// `a c b` on lanes of `t`. Types fused kernels do not lower ([`crate::lowers`]) never
/// reach here (plans refuse them); they take the signed integer arm.
fn compare(e: &mut Emit, c: CompareOp, t: ElementType, a: Value, b: Value) -> Value {
    match t {
        ElementType::F32 | ElementType::F64 => {
            let cc = match c {
                CompareOp::Equal => FloatCC::Equal,
                CompareOp::NotEqual => FloatCC::NotEqual,
                CompareOp::Less => FloatCC::LessThan,
                CompareOp::LessEq => FloatCC::LessThanOrEqual,
                CompareOp::Greater => FloatCC::GreaterThan,
                CompareOp::GreaterEq => FloatCC::GreaterThanOrEqual,
            };
            e.fcmp(cc, a, b)
        }
        ElementType::Bool => compare_masks(e, c, a, b),
        _ => {
            let cc = match c {
                CompareOp::Equal => IntCC::Equal,
                CompareOp::NotEqual => IntCC::NotEqual,
                CompareOp::Less => IntCC::SignedLessThan,
                CompareOp::LessEq => IntCC::SignedLessThanOrEqual,
                CompareOp::Greater => IntCC::SignedGreaterThan,
                CompareOp::GreaterEq => IntCC::SignedGreaterThanOrEqual,
            };
            e.icmp(cc, a, b)
        }
    }
}

/// `a c b` on bool masks: `false < true`, so `a < b` is `!a & b`, and so on.
fn compare_masks(e: &mut Emit, c: CompareOp, a: Value, b: Value) -> Value {
    match c {
        CompareOp::Equal => {
            let x = e.b.ins().bxor(a, b);
            e.not(x)
        }
        CompareOp::NotEqual => e.b.ins().bxor(a, b),
        CompareOp::Less => {
            let na = e.not(a);
            e.b.ins().band(na, b)
        }
        CompareOp::LessEq => {
            let na = e.not(a);
            e.b.ins().bor(na, b)
        }
        CompareOp::Greater => {
            let nb = e.not(b);
            e.b.ins().band(a, nb)
        }
        CompareOp::GreaterEq => {
            let nb = e.not(b);
            e.b.ins().bor(a, nb)
        }
    }
}

fn convert(e: &mut Emit, from: ElementType, to: ElementType, x: Value) -> Result<Value, JitError> {
    use ElementType::{Bool, F32, F64, I32, I64};
    if from == to {
        return Ok(x);
    }
    let to_ty = e.ty(to);
    Ok(match (from, to) {
        (F32, F64) => e.b.ins().fpromote(to_ty, x),
        (F64, F32) => e.b.ins().fdemote(to_ty, x),
        // No `fcvt_to_sint_sat.i64x2` on x64: exact vector code when every lane is within
        // ±2^51, else per lane.
        (F64, I64) if e.lanes == Lanes::X2 => {
            let (fast, ok) = small_f64_to_i64(e.b, x);
            unless_all(e.b, ok, fast, |b| {
                per_lane(&mut Emit::new(b, Lanes::X2), to, &[x], |e, v| {
                    let ty = e.ty(to);
                    Ok(e.b.ins().fcvt_to_sint_sat(ty, v[0]))
                })
            })?
        }
        // `fcvt_from_sint.f64x2` of `I64X2` is two scalar conversions on x64: exact vector
        // code when every lane is within ±2^51.
        (I64, F64) if e.lanes == Lanes::X2 => {
            let (fast, ok) = small_i64_to_f64(e.b, x);
            unless_all(e.b, ok, fast, |b| Ok(b.ins().fcvt_from_sint(to_ty, x)))?
        }
        (F32 | F64, I32 | I64) => e.b.ins().fcvt_to_sint_sat(to_ty, x),
        (I32 | I64, F32 | F64) => e.b.ins().fcvt_from_sint(to_ty, x),
        (I32, I64) => e.b.ins().sextend(to_ty, x),
        (I64, I32) => e.b.ins().ireduce(to_ty, x),
        (F32 | F64, Bool) => {
            let z = zero(e, from);
            e.fcmp(FloatCC::NotEqual, x, z)
        }
        (I32 | I64, Bool) => {
            let z = zero(e, from);
            e.icmp(IntCC::NotEqual, x, z)
        }
        (Bool, _) => {
            let p = one(e, to);
            let z = zero(e, to);
            e.select(x, p, z)
        }
        _ => x,
    })
}

/// `I8` 0/1 to a lane of a vector mask (all-ones / zero `I32` or `I64`, by the width of
/// `e`), used when a scalar bool is splat.
pub fn bool_to_mask_lane(e: &mut Emit, x: Value) -> Value {
    let lane = e.ty(ElementType::Bool).lane_type();
    let wide = e.b.ins().uextend(lane, x);
    e.b.ins().ineg(wide)
}
