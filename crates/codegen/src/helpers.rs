//! Host helper functions that JIT kernels call, registered as JIT symbols: integer `Power`
//! (the INTERPRETER's own scalar code, so results agree bit for bit), the vector math
//! library's strip functions and the non-temporal store routines.

use cranelift_codegen::ir::{types, AbiParam, Signature, Type};
use cranelift_jit::JITModule;
use cranelift_module::Module;
use graphlift_ir::BinaryOp;
use graphlift_runtime::reference;

use graphlift_kernels::veclib::VecFn;

/// A host function a kernel may call, with its JIT symbol name and signature class.
///
/// `Power` on `i32` and `i64` has no inline lowering: its helper runs the reference
/// interpreter's own scalar function, so it agrees with the INTERPRETER bit for bit. In a
/// vector loop a helper is called once per lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Helper {
    /// `(i32, i32) -> i32` power.
    PowI32,
    /// `(i64, i64) -> i64` power.
    PowI64,
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
        all.extend(VecFn::ALL.map(Helper::Veclib));
        all.extend(VecFn::ALL.map(Helper::VeclibStream));
        all
    }

    /// The JIT symbol name.
    pub fn symbol(self) -> String {
        match self {
            Helper::PowI32 => "graphlift_jit_pow_i32".into(),
            Helper::PowI64 => "graphlift_jit_pow_i64".into(),
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
            Helper::Veclib(f) => f.address(false),
            Helper::VeclibStream(f) => f.address(true),
            Helper::StreamStrip => graphlift_kernels::stream::stream_strip as *const u8,
            Helper::StoreFence => graphlift_kernels::stream::store_fence as *const u8,
        }
    }
}

extern "C" fn pow_i32(a: i32, b: i32) -> i32 {
    reference::Arith::binary(BinaryOp::Power, a, b)
}

extern "C" fn pow_i64(a: i64, b: i64) -> i64 {
    reference::Arith::binary(BinaryOp::Power, a, b)
}

/// The Cranelift signature of a helper.
pub fn helper_signature(module: &JITModule, h: Helper) -> Signature {
    let mut sig = module.make_signature();
    // Integer powers: (base, exponent) -> power, all of one type.
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
