//! The lane view ([`Lanes`], [`Emit`]) that op lowering and vector math emit through, so that
//! they are written once and a kernel's vector and scalar lanes run the same operations.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, ConstantData, Endianness, InstBuilder, MemFlagsData, Type, Value,
};
use cranelift_frontend::FunctionBuilder;
use graphlift_ir::ElementType;

/// Vector (4 lanes of 32 bits, 2 lanes of 64 bits, or both mixed) or scalar code.
///
/// A kernel runs as a vector loop of four 32-bit lanes ([`Lanes::X4`]: `f32` as `F32X4`,
/// `i32` as `I32X4`, `bool` as an `I32X4` mask of all-ones / all-zeros lanes), as a vector
/// loop of two 64-bit lanes ([`Lanes::X2`]: `f64` as `F64X2`, `i64` as `I64X2`, `bool` as an
/// `I64X2` mask), or, when it mixes 32-bit and 64-bit numbers, as a vector loop of four
/// elements per body ([`Lanes::Mixed`]): each 32-bit value one `X4` vector, each 64-bit
/// value a pair of `X2` vectors (elements 0–1 and 2–3), and each `bool` a mask in the form
/// of the values it was computed from, moved to the other form where it meets values of the
/// other width (see [`super::mixed`]). x64 Cranelift lowers 128-bit vectors only, so one
/// vector never holds lanes of two widths. [`Lanes::for_types`] picks `X4` when every value
/// is `f32`, `i32` or `bool`, `X2` when every value is `f64`, `i64` or `bool`, else `Mixed`.
/// [`Lanes::X1`] (one element per value: `f32`, `f64`, `i32`, `i64`, and `bool` as an `I8`
/// 0/1) is the scalar code of per-lane fallbacks, and the loop width of
/// [`crate::JitKernel::compile_scalar`]. The storage types count as the type they are
/// computed in ([`crate::storage::compute_type`]: `f16` as `f32`, `u8` as `i32`, `u32` as
/// `i64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lanes {
    /// Four 32-bit lanes per value (`F32X4` / `I32X4`).
    X4,
    /// Two 64-bit lanes per value (`F64X2` / `I64X2`).
    X2,
    /// One element per value.
    X1,
    /// Four elements per loop body: 32-bit values one `X4` vector, 64-bit values two `X2`
    /// vectors. A loop width only: code is emitted at `X4` or `X2` (an [`Emit`] is never
    /// at `Mixed`).
    Mixed,
}

impl Lanes {
    /// Elements per value (`Mixed`: per loop body): 4, 2 or 1.
    pub fn count(self) -> usize {
        match self {
            Lanes::X4 | Lanes::Mixed => 4,
            Lanes::X2 => 2,
            Lanes::X1 => 1,
        }
    }

    /// `true` for the vector widths.
    pub fn is_vector(self) -> bool {
        self != Lanes::X1
    }

    /// Whether values of element type `t` have a representation at this width (`bool`
    /// fits every width; numbers fit the vector width of the size of the type they are
    /// computed in, [`crate::storage::compute_type`], `Mixed` and `X1`).
    pub fn holds(self, t: ElementType) -> bool {
        let t = crate::storage::compute_type(t);
        match self {
            Lanes::X4 => matches!(t, ElementType::F32 | ElementType::I32 | ElementType::Bool),
            Lanes::X2 => matches!(t, ElementType::F64 | ElementType::I64 | ElementType::Bool),
            Lanes::X1 | Lanes::Mixed => true,
        }
    }

    /// The loop width of a kernel whose values have the element types `types`: `X4` for
    /// `f32`/`i32`/`bool` values (an all-`bool` kernel too), `X2` for `f64`/`i64`/`bool`,
    /// else `Mixed`.
    pub fn for_types(types: impl Iterator<Item = ElementType> + Clone) -> Lanes {
        [Lanes::X4, Lanes::X2]
            .into_iter()
            .find(|l| types.clone().all(|t| l.holds(t)))
            .unwrap_or(Lanes::Mixed)
    }

    /// The width at which a number of element type `t` is computed in a loop of this
    /// width: `X4` or `X2` by the number's size in a `Mixed` loop, the loop's own width
    /// otherwise. (`bool` in a `Mixed` loop has no fixed width: `X4`, the form of loads.)
    pub fn of_number(self, t: ElementType) -> Lanes {
        match (self, crate::storage::compute_type(t)) {
            (Lanes::Mixed, ElementType::F64 | ElementType::I64) => Lanes::X2,
            (Lanes::Mixed, _) => Lanes::X4,
            (l, _) => l,
        }
    }
}

/// Memory flags for data loads and stores: may not trap (the kernel checked bounds), never
/// `aligned` (buffers may be unaligned).
pub fn data_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// Flags for bitcasts between types of different lane shapes (little-endian lane order).
pub fn cast_flags() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// A function builder seen through a lane width.
///
/// It hides the difference between widths: constants become splat vectors from the
/// constant pool or scalar immediates, comparisons give masks in the matching form, and
/// [`Emit::select`] is a `bitselect` or a `select`. Vector math is written once against it,
/// so a kernel's vector lanes and its scalar lanes run the same operation sequence.
pub struct Emit<'a, 'f> {
    /// The Cranelift function builder.
    pub b: &'a mut FunctionBuilder<'f>,
    /// Lane width of the code being emitted.
    pub lanes: Lanes,
    /// For code only translated into an AVX-512 program ([`Emit::allow_native`]): the
    /// values that stand for a [`Native`] operation, in order.
    natives: Option<Vec<(Value, Native)>>,
}

/// An AVX-512 operation with no Cranelift counterpart, which code translated into an
/// assembled program (never compiled by Cranelift) may use where it gives the same bits as
/// the Cranelift code it replaces ([`crate::vmath::log::reduce`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Native {
    /// `vgetexpps`: `floor(log2 |x|)` as an `f32`, subnormal `x` included ([`Emit::get_exp`]).
    GetExp,
    /// `vgetmantps` into `[1, 2)`, the sign of `x`: `|x| / 2^floor(log2 |x|)`, signed
    /// ([`Emit::get_mant`]).
    GetMant,
    /// `vfixupimmps` of a result by the class of `x`, with this table ([`Emit::fixup`]).
    Fixup(u32),
    /// `vscalefps`: `x·2^floor(n)` rounded once ([`Emit::scale`]).
    Scale,
}

impl<'a, 'f> Emit<'a, 'f> {
    /// A view of `b` at `lanes`.
    pub fn new(b: &'a mut FunctionBuilder<'f>, lanes: Lanes) -> Emit<'a, 'f> {
        Emit {
            b,
            lanes,
            natives: None,
        }
    }

    /// The same builder at another lane width (for per-lane fallbacks).
    pub fn with_lanes<T>(&mut self, lanes: Lanes, f: impl FnOnce(&mut Emit<'_, 'f>) -> T) -> T {
        let mut e = Emit {
            b: &mut *self.b,
            lanes,
            natives: None,
        };
        f(&mut e)
    }

    /// Lets the code use [`Native`] operations: it is only translated into an AVX-512
    /// program, never compiled.
    pub fn allow_native(&mut self) {
        self.natives.get_or_insert_with(Vec::new);
    }

    /// Whether [`Emit::allow_native`] was called.
    pub fn allows_native(&self) -> bool {
        self.natives.is_some()
    }

    /// A placeholder for `op` of the `F32X4` values `a` and `b` (the same value for a unary
    /// one), which the translation replaces by `op`, where [`Emit::allow_native`] was
    /// called; else `None`.
    fn placeholder(&mut self, op: Native, a: Value, b: Value) -> Option<Value> {
        self.natives.as_ref()?;
        let v = self.b.ins().fadd(a, b);
        self.natives.as_mut()?.push((v, op));
        Some(v)
    }

    /// [`Native::GetExp`] of the `F32X4` value `x`, where [`Emit::allow_native`] was called,
    /// else `None`.
    pub fn get_exp(&mut self, x: Value) -> Option<Value> {
        self.placeholder(Native::GetExp, x, x)
    }

    /// [`Native::GetMant`] of the `F32X4` value `x`, where [`Emit::allow_native`] was
    /// called, else `None`.
    pub fn get_mant(&mut self, x: Value) -> Option<Value> {
        self.placeholder(Native::GetMant, x, x)
    }

    /// `result` with the lanes where `x` is of a class that `table` (`vfixupimmps`'s: four
    /// bits a class, from QNaN, SNaN, zero, +1, −inf, +inf, negative to positive, in bits
    /// 0–3 to 28–31) gives a response (a special value) replaced by it, where
    /// [`Emit::allow_native`] was called, else `None`. Both are `F32X4`; `x` is classified
    /// as it is (subnormals are positive or negative values).
    pub fn fixup(&mut self, result: Value, x: Value, table: u32) -> Option<Value> {
        self.placeholder(Native::Fixup(table), result, x)
    }

    /// `x·2^floor(n)` for `F32X4` values `x`, `n`, rounded once (into the subnormals, or to
    /// infinity), where [`Emit::allow_native`] was called, else `None`.
    pub fn scale(&mut self, x: Value, n: Value) -> Option<Value> {
        self.placeholder(Native::Scale, x, n)
    }

    /// The values that stand for [`Native`] operations, in order (none unless allowed).
    pub fn take_natives(&mut self) -> Vec<(Value, Native)> {
        self.natives.take().unwrap_or_default()
    }

    /// Cranelift type of an element type at this width (`bool` is a mask / `I8`).
    ///
    /// A number that the width does not hold ([`Lanes::holds`]: a 64-bit number at `X4`, a
    /// 32-bit one at `X2`) has no type, nor has anything at `Mixed`; plans never produce
    /// one, and `INVALID` would make Cranelift reject the function rather than compute with
    /// the wrong lane size. Nor has an element type that fused kernels do not lower
    /// ([`crate::lowers`]; plans refuse those). A storage type has the type of the one it
    /// is computed in ([`crate::storage::compute_type`]: `f16` as `f32`, `i8` as `i32`).
    pub fn ty(&self, t: ElementType) -> Type {
        if !crate::lowers(t) {
            return types::INVALID;
        }
        match (self.lanes, crate::storage::compute_type(t)) {
            (Lanes::X4, ElementType::F32) => types::F32X4,
            (Lanes::X4, ElementType::I32 | ElementType::Bool) => types::I32X4,
            (Lanes::X2, ElementType::F64) => types::F64X2,
            (Lanes::X2, ElementType::I64 | ElementType::Bool) => types::I64X2,
            (Lanes::X4 | Lanes::X2 | Lanes::Mixed, _) => types::INVALID,
            (Lanes::X1, ElementType::F32) => types::F32,
            (Lanes::X1, ElementType::F64) => types::F64,
            (Lanes::X1, ElementType::I32) => types::I32,
            (Lanes::X1, ElementType::I64) => types::I64,
            (Lanes::X1, ElementType::Bool) => types::I8,
            (Lanes::X1, _) => types::INVALID,
        }
    }

    /// The `f32` value type (`F32X4` or `F32`).
    pub fn f32_ty(&self) -> Type {
        self.ty(ElementType::F32)
    }

    /// The `i32` value type (`I32X4` or `I32`).
    pub fn i32_ty(&self) -> Type {
        self.ty(ElementType::I32)
    }

    /// A constant of element type `t` from raw bits (`bool`: 0/1, integers sign-extended; a
    /// storage type's constant as bits of the type it is computed in,
    /// [`crate::storage::compute_type`]).
    pub fn constant(&mut self, t: ElementType, bits: u64) -> Value {
        let t = crate::storage::compute_type(t);
        match self.lanes {
            Lanes::X4 | Lanes::X2 | Lanes::Mixed => {
                let lane = match t {
                    ElementType::Bool if bits != 0 => u64::MAX,
                    ElementType::Bool => 0,
                    _ => bits,
                };
                // Each lane is the low `16 / count` bytes of `lane` (little-endian).
                let width = 16 / self.lanes.count();
                let mut bytes = Vec::with_capacity(16);
                for _ in 0..self.lanes.count() {
                    bytes.extend_from_slice(&lane.to_le_bytes()[..width]);
                }
                let handle = self.b.func.dfg.constants.insert(ConstantData::from(bytes));
                let ty = self.ty(t);
                self.b.ins().vconst(ty, handle)
            }
            Lanes::X1 => match t {
                ElementType::F32 => self.b.ins().f32const(f32::from_bits(bits as u32)),
                ElementType::F64 => self.b.ins().f64const(f64::from_bits(bits)),
                ElementType::I32 => self.b.ins().iconst(types::I32, i64::from(bits as u32)),
                ElementType::I64 => self.b.ins().iconst(types::I64, bits as i64),
                ElementType::Bool => self.b.ins().iconst(types::I8, i64::from(bits != 0)),
                // Not lowered ([`crate::lowers`]); plans refuse them before code is emitted.
                _ => self.b.ins().iconst(types::I64, bits as i64),
            },
        }
    }

    /// An `f32` constant.
    pub fn f32(&mut self, x: f32) -> Value {
        self.constant(ElementType::F32, u64::from(x.to_bits()))
    }

    /// An `i32` constant.
    pub fn i32(&mut self, x: i32) -> Value {
        self.constant(ElementType::I32, x as u32 as u64)
    }

    /// A float comparison as a mask (`I32X4` / `I64X2` lanes of all-ones / zeros, or an `I8`
    /// 0/1).
    pub fn fcmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        self.b.ins().fcmp(cc, a, b)
    }

    /// An integer comparison as a mask.
    pub fn icmp(&mut self, cc: IntCC, a: Value, b: Value) -> Value {
        self.b.ins().icmp(cc, a, b)
    }

    /// `mask ? a : b`, lane by lane, for values of any type at this width.
    pub fn select(&mut self, mask: Value, a: Value, b: Value) -> Value {
        match self.lanes {
            Lanes::X4 | Lanes::X2 | Lanes::Mixed => {
                let ty = self.b.func.dfg.value_type(a);
                let m = if self.b.func.dfg.value_type(mask) == ty {
                    mask
                } else {
                    self.b.ins().bitcast(ty, cast_flags(), mask)
                };
                self.b.ins().bitselect(m, a, b)
            }
            Lanes::X1 => self.b.ins().select(mask, a, b),
        }
    }

    /// Logical not of a mask.
    pub fn not(&mut self, mask: Value) -> Value {
        match self.lanes {
            Lanes::X4 | Lanes::X2 | Lanes::Mixed => self.b.ins().bnot(mask),
            Lanes::X1 => {
                let one = self.b.ins().iconst(types::I8, 1);
                self.b.ins().bxor(mask, one)
            }
        }
    }

    /// Reinterprets `f32` lanes as `i32` lanes.
    pub fn f32_bits(&mut self, x: Value) -> Value {
        let ty = self.i32_ty();
        self.b.ins().bitcast(ty, cast_flags(), x)
    }

    /// Reinterprets `i32` lanes as `f32` lanes.
    pub fn f32_from_bits(&mut self, x: Value) -> Value {
        let ty = self.f32_ty();
        self.b.ins().bitcast(ty, cast_flags(), x)
    }

    /// `|mag|` with the sign bit of `sign` (`f32` lanes; NaN stays NaN).
    pub fn copysign(&mut self, mag: Value, sign: Value) -> Value {
        let m = self.f32_bits(mag);
        let s = self.f32_bits(sign);
        let abs_mask = self.i32(0x7fff_ffff);
        let sign_mask = self.i32(i32::MIN);
        let m = self.b.ins().band(m, abs_mask);
        let s = self.b.ins().band(s, sign_mask);
        let r = self.b.ins().bor(m, s);
        self.f32_from_bits(r)
    }

    /// `Σ c[k] x^k` by Horner's rule with fused multiply-adds (`f32` lanes; `c` ascending).
    pub fn horner(&mut self, x: Value, c: &[f32]) -> Value {
        let Some((&last, rest)) = c.split_last() else {
            return self.f32(0.0);
        };
        let mut acc = self.f32(last);
        for &k in rest.iter().rev() {
            let k = self.f32(k);
            acc = self.b.ins().fma(acc, x, k);
        }
        acc
    }

    // `f64` lane helpers (vector math on `F64X2` / scalar `f64`).

    /// The `f64` value type (`F64X2` or `F64`).
    pub fn f64_ty(&self) -> Type {
        self.ty(ElementType::F64)
    }

    /// The `i64` value type (`I64X2` or `I64`).
    pub fn i64_ty(&self) -> Type {
        self.ty(ElementType::I64)
    }

    /// An `f64` constant.
    pub fn f64(&mut self, x: f64) -> Value {
        self.constant(ElementType::F64, x.to_bits())
    }

    /// An `i64` constant.
    pub fn i64(&mut self, x: i64) -> Value {
        self.constant(ElementType::I64, x as u64)
    }

    /// Reinterprets `f64` lanes as `i64` lanes.
    pub fn f64_bits(&mut self, x: Value) -> Value {
        let ty = self.i64_ty();
        self.b.ins().bitcast(ty, cast_flags(), x)
    }

    /// Reinterprets `i64` lanes as `f64` lanes.
    pub fn f64_from_bits(&mut self, x: Value) -> Value {
        let ty = self.f64_ty();
        self.b.ins().bitcast(ty, cast_flags(), x)
    }

    /// `|mag|` with the sign bit of `sign` (`f64` lanes; NaN stays NaN).
    pub fn copysign_f64(&mut self, mag: Value, sign: Value) -> Value {
        let m = self.f64_bits(mag);
        let s = self.f64_bits(sign);
        let abs_mask = self.i64(i64::MAX);
        let sign_mask = self.i64(i64::MIN);
        let m = self.b.ins().band(m, abs_mask);
        let s = self.b.ins().band(s, sign_mask);
        let r = self.b.ins().bor(m, s);
        self.f64_from_bits(r)
    }

    /// `Σ c[k] x^k` by Horner's rule with fused multiply-adds (`f64` lanes; `c` ascending).
    pub fn horner_f64(&mut self, x: Value, c: &[f64]) -> Value {
        let Some((&last, rest)) = c.split_last() else {
            return self.f64(0.0);
        };
        let mut acc = self.f64(last);
        for &k in rest.iter().rev() {
            let k = self.f64(k);
            acc = self.b.ins().fma(acc, x, k);
        }
        acc
    }
}
