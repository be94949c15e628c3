//! Host helper functions that JIT kernels call, registered as JIT symbols: integer `Power`,
//! the remainders `Mod` and `FloorMod` of every numeric type and the trigonometric and
//! hyperbolic functions without an inline lowering (the INTERPRETER's own scalar code, so
//! results agree bit for bit), the vector math
//! library's strip functions and the non-temporal store routines.

use cranelift_codegen::ir::{types, AbiParam, Signature, Type};
use cranelift_jit::JITModule;
use cranelift_module::Module;
use graphlift_ir::{BinaryOp, ElementType, UnaryOp};
use graphlift_runtime::reference::{self, Arith};

use graphlift_kernels::veclib::VecFn;

/// A host function a kernel may call, with its JIT symbol name and signature class.
///
/// `Power` on `i32` and `i64` and the remainders have no inline lowering: their helpers run
/// the reference interpreter's own scalar functions, so they agree with the INTERPRETER bit
/// for bit. In a vector loop a helper is called once per lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Helper {
    /// `(i32, i32) -> i32` power.
    PowI32,
    /// `(i64, i64) -> i64` power.
    PowI64,
    /// `(t, t) -> t` remainder, `Mod` or `FloorMod`, of `t` = `f32`, `f64`, `i32` or `i64`
    /// (no inline lowering: C's `fmod` is exact where `a - trunc(a / b) * b` is not).
    Remainder(BinaryOp, ElementType),
    /// `t -> t` unary function of [`UnaryOp::TRIG`] on `t` = `f32` or `f64`, for the ones
    /// without an inline lowering on `t` (`graphlift_codegen::vmath::emit` gives `None`):
    /// the reference's scalar function, called once per lane.
    Unary(UnaryOp, ElementType),
    /// `f64 -> f32`: the `f64` converted to `t` = `f16` or `bf16` by the reference's own
    /// conversion, as the `f32` of that value (the `half` crate rounds `f64` to these
    /// directly on some hosts and through `f32` on others; calling it keeps every host's
    /// kernels equal to its interpreter).
    DemoteF64(ElementType),
    /// A strip function of the vector math library, `(src, dst, n)` (see
    /// [`graphlift_kernels::veclib`]).
    Veclib(VecFn),
    /// The entry of a library function that writes with non-temporal stores, `(src, dst,
    /// n)` as [`Helper::Veclib`] ([`VecFn::streams`]; the kernel fences before it returns).
    VeclibStream(VecFn),
    /// The strip copy with non-temporal stores, `(src, dst, n)` ([`graphlift_kernels::stream`]).
    StreamStrip,
    /// The store fence after non-temporal stores, `()` ([`graphlift_kernels::stream`]).
    StoreFence,
}

impl Helper {
    /// Every helper.
    pub fn all() -> Vec<Helper> {
        let mut all = vec![
            Helper::PowI32,
            Helper::PowI64,
            Helper::StreamStrip,
            Helper::StoreFence,
        ];
        for op in [BinaryOp::Mod, BinaryOp::FloorMod] {
            all.extend(REMAINDER_TYPES.map(|t| Helper::Remainder(op, t)));
        }
        for t in [ElementType::F32, ElementType::F64] {
            all.extend(UnaryOp::TRIG.map(|u| Helper::Unary(u, t)));
        }
        all.extend([ElementType::F16, ElementType::BF16].map(Helper::DemoteF64));
        all.extend(VecFn::ALL.map(Helper::Veclib));
        all.extend(VecFn::ALL.map(Helper::VeclibStream));
        all
    }

    /// The JIT symbol name.
    pub fn symbol(self) -> String {
        match self {
            Helper::PowI32 => "graphlift_jit_pow_i32".into(),
            Helper::PowI64 => "graphlift_jit_pow_i64".into(),
            Helper::Remainder(op, t) => {
                format!("graphlift_jit_{}_{t}", op.name().to_ascii_lowercase())
            }
            Helper::Unary(op, t) => {
                format!("graphlift_jit_{}_{t}", op.name().to_ascii_lowercase())
            }
            Helper::DemoteF64(t) => format!("graphlift_jit_demote_f64_{t}"),
            Helper::Veclib(f) => f.symbol().into(),
            Helper::VeclibStream(f) => format!("{}_nt", f.symbol()),
            Helper::StreamStrip => "graphlift_stream_strip".into(),
            Helper::StoreFence => "graphlift_store_fence".into(),
        }
    }

    /// The function's address.
    pub fn address(self) -> *const u8 {
        match self {
            Helper::PowI32 => pow_i32 as *const u8,
            Helper::PowI64 => pow_i64 as *const u8,
            Helper::Remainder(op, t) => remainder_address(op, t),
            Helper::Unary(op, t) => unary_address(op, t),
            Helper::DemoteF64(ElementType::BF16) => demote_f64::<graphlift_ir::bf16> as *const u8,
            Helper::DemoteF64(_) => demote_f64::<graphlift_ir::f16> as *const u8,
            Helper::Veclib(f) => f.address(false),
            Helper::VeclibStream(f) => f.address(true),
            Helper::StreamStrip => graphlift_kernels::stream::stream_strip as *const u8,
            Helper::StoreFence => graphlift_kernels::stream::store_fence as *const u8,
        }
    }
}

/// `x` converted to `T` (`f16` or `bf16`) as the reference converts, as an `f32` (exact).
extern "C" fn demote_f64<T>(x: f64) -> f32
where
    f64: num_traits::AsPrimitive<T>,
    T: num_traits::AsPrimitive<f32>,
{
    use num_traits::AsPrimitive;
    let h: T = x.as_();
    h.as_()
}

extern "C" fn pow_i32(a: i32, b: i32) -> i32 {
    reference::Arith::binary(BinaryOp::Power, a, b)
}

extern "C" fn pow_i64(a: i64, b: i64) -> i64 {
    reference::Arith::binary(BinaryOp::Power, a, b)
}

/// The element types of the remainder helpers.
const REMAINDER_TYPES: [ElementType; 4] = [
    ElementType::F32,
    ElementType::F64,
    ElementType::I32,
    ElementType::I64,
];

/// `a mod b` (`FLOOR`: `FloorMod`) by the reference's scalar function.
extern "C" fn remainder<T: Arith, const FLOOR: bool>(a: T, b: T) -> T {
    let op = if FLOOR {
        BinaryOp::FloorMod
    } else {
        BinaryOp::Mod
    };
    T::binary(op, a, b)
}

/// The remainder helper of `op` (`Mod` or `FloorMod`) on `t`; null for a type of no helper
/// ([`Helper::all`] lists only [`REMAINDER_TYPES`], and only those are lowered to calls).
fn remainder_address(op: BinaryOp, t: ElementType) -> *const u8 {
    fn of<T: Arith>(floor: bool) -> *const u8 {
        if floor {
            remainder::<T, true> as *const u8
        } else {
            remainder::<T, false> as *const u8
        }
    }
    let floor = op == BinaryOp::FloorMod;
    match t {
        ElementType::F32 => of::<f32>(floor),
        ElementType::F64 => of::<f64>(floor),
        ElementType::I32 => of::<i32>(floor),
        ElementType::I64 => of::<i64>(floor),
        _ => std::ptr::null(),
    }
}

/// The lanes of an assembled `Sin`, `Cos` or `Tan` (`UnaryOp::TRIG[k]` on `f32`; eight
/// lanes of AVX2 code or sixteen of AVX-512) outside the range of the inline code:
/// `y[i] = f(x[i])` by the reference's scalar function wherever `in_range[i]` is 0, the
/// lanes the Cranelift code computes with the same function one by one
/// ([`crate::lower::lower`]). Assembled kernels call it from a save area of their stack
/// ([`crate::asm`]); it does nothing for a `k` out of the table.
///
/// # Safety
/// `x` and `in_range` must point at `lanes` readable lanes and `y` at `lanes` writable ones
/// that overlap neither.
pub unsafe extern "C" fn trig_lanes_f32(
    k: usize,
    lanes: usize,
    x: *const f32,
    y: *mut f32,
    in_range: *const u32,
) {
    let Some(&op) = UnaryOp::TRIG.get(k) else {
        return;
    };
    // SAFETY: the caller's contract: three distinct arrays of `lanes` lanes.
    let (x, y, in_range) = unsafe {
        (
            std::slice::from_raw_parts(x, lanes),
            std::slice::from_raw_parts_mut(y, lanes),
            std::slice::from_raw_parts(in_range, lanes),
        )
    };
    for i in 0..lanes {
        if in_range[i] == 0 {
            y[i] = <f32 as Arith>::unary(op, x[i]);
        }
    }
}

/// `UnaryOp::TRIG[K]` of `a` by the reference's scalar function.
extern "C" fn trig<T: Arith, const K: usize>(a: T) -> T {
    T::unary(UnaryOp::TRIG[K], a)
}

/// The scalar helper of `op` (one of [`UnaryOp::TRIG`]) on `t` (`f32` or `f64`); null for
/// any other op or type ([`Helper::all`] lists only those).
fn unary_address(op: UnaryOp, t: ElementType) -> *const u8 {
    macro_rules! table {
        ($t:ty) => {
            [
                trig::<$t, 0> as *const u8,
                trig::<$t, 1> as *const u8,
                trig::<$t, 2> as *const u8,
                trig::<$t, 3> as *const u8,
                trig::<$t, 4> as *const u8,
                trig::<$t, 5> as *const u8,
                trig::<$t, 6> as *const u8,
                trig::<$t, 7> as *const u8,
                trig::<$t, 8> as *const u8,
                trig::<$t, 9> as *const u8,
                trig::<$t, 10> as *const u8,
            ]
        };
    }
    let Some(k) = UnaryOp::TRIG.iter().position(|&u| u == op) else {
        return std::ptr::null();
    };
    match t {
        ElementType::F32 => table!(f32)[k],
        ElementType::F64 => table!(f64)[k],
        _ => std::ptr::null(),
    }
}

/// The Cranelift type of a scalar element.
fn scalar_type(t: ElementType) -> Type {
    match t {
        ElementType::F32 => types::F32,
        ElementType::F64 => types::F64,
        ElementType::I32 => types::I32,
        ElementType::I64 | ElementType::U64 => types::I64,
        ElementType::Bool | ElementType::I8 | ElementType::U8 => types::I8,
        // No helper takes these (storage types are computed in `f32`, `i32`, `i64`; `u64`
        // is not lowered: `crate::ELEMENT_TYPES`); by width.
        ElementType::I16 | ElementType::U16 | ElementType::F16 | ElementType::BF16 => types::I16,
        ElementType::U32 => types::I32,
        // Nor the storage-only types (`crate::ELEMENT_TYPES`): a byte.
        _ => types::I8,
    }
}

/// The Cranelift signature of a helper.
pub fn helper_signature(module: &JITModule, h: Helper) -> Signature {
    let mut sig = module.make_signature();
    // Integer powers and remainders: (a, b) -> result, all of one type.
    let pow = |mut sig: Signature, ty: Type| {
        sig.params.extend([AbiParam::new(ty); 2]);
        sig.returns.push(AbiParam::new(ty));
        sig
    };
    // Strip functions take pointers (sources..., dst), an element count and a form's `f32`
    // parameters, and return nothing.
    let (pointers, floats) = match h {
        Helper::PowI32 => return pow(sig, types::I32),
        Helper::PowI64 => return pow(sig, types::I64),
        Helper::Remainder(_, t) => return pow(sig, scalar_type(t)),
        Helper::Unary(_, t) => {
            sig.params.push(AbiParam::new(scalar_type(t)));
            sig.returns.push(AbiParam::new(scalar_type(t)));
            return sig;
        }
        Helper::DemoteF64(_) => {
            sig.params.push(AbiParam::new(types::F64));
            sig.returns.push(AbiParam::new(types::F32));
            return sig;
        }
        Helper::Veclib(f) | Helper::VeclibStream(f) => (f.arity() + 2, f.params()),
        Helper::StreamStrip => (3, 0),
        Helper::StoreFence => (0, 0),
    };
    let ptr = module.target_config().pointer_type();
    sig.params
        .extend(std::iter::repeat_n(AbiParam::new(ptr), pointers));
    sig.params
        .extend(std::iter::repeat_n(AbiParam::new(types::F32), floats));
    sig
}
