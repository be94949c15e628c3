//! Host helper functions that JIT kernels call (registered as JIT symbols).
//!
//! Ops without an inline lowering (`f64` `exp`/`log`/`tanh`/`sigmoid`/`erf`/`expm1`/`log1p`, `Power` on
//! every type) call a helper that runs the reference interpreter's own scalar function, so
//! they agree with the INTERPRETER bit for bit; the table is in the crate documentation.
//! In a vector loop a helper is called once per lane.

use graphlift_ir::{BinaryOp, UnaryOp};
use graphlift_runtime::reference;

/// A host function a kernel may call, with its JIT symbol name and signature class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Helper {
    /// `f64 -> f64` unary op.
    UnaryF64(UnaryOp),
    /// `(f32, f32) -> f32` power.
    PowF32,
    /// `(f64, f64) -> f64` power.
    PowF64,
    /// `(i32, i32) -> i32` power.
    PowI32,
    /// `(i64, i64) -> i64` power.
    PowI64,
}

/// The ops that have an `f64` helper.
pub(crate) const F64_UNARY: [UnaryOp; 7] = [
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Erf,
    UnaryOp::Expm1,
    UnaryOp::Log1p,
];

impl Helper {
    /// Every helper.
    pub(crate) fn all() -> Vec<Helper> {
        let mut v: Vec<Helper> = F64_UNARY.iter().map(|&u| Helper::UnaryF64(u)).collect();
        v.extend([
            Helper::PowF32,
            Helper::PowF64,
            Helper::PowI32,
            Helper::PowI64,
        ]);
        v
    }

    /// The JIT symbol name.
    pub(crate) fn symbol(self) -> String {
        match self {
            Helper::UnaryF64(u) => format!("graphlift_jit_{}_f64", u.name().to_lowercase()),
            Helper::PowF32 => "graphlift_jit_pow_f32".into(),
            Helper::PowF64 => "graphlift_jit_pow_f64".into(),
            Helper::PowI32 => "graphlift_jit_pow_i32".into(),
            Helper::PowI64 => "graphlift_jit_pow_i64".into(),
        }
    }

    /// The function's address.
    pub(crate) fn address(self) -> *const u8 {
        match self {
            Helper::UnaryF64(UnaryOp::Exp) => exp_f64 as *const u8,
            Helper::UnaryF64(UnaryOp::Log) => log_f64 as *const u8,
            Helper::UnaryF64(UnaryOp::Tanh) => tanh_f64 as *const u8,
            Helper::UnaryF64(UnaryOp::Sigmoid) => sigmoid_f64 as *const u8,
            Helper::UnaryF64(UnaryOp::Erf) => erf_f64 as *const u8,
            Helper::UnaryF64(UnaryOp::Expm1) => expm1_f64 as *const u8,
            Helper::UnaryF64(UnaryOp::Log1p) => log1p_f64 as *const u8,
            // `lower::helper_of` asks only for the ops of `F64_UNARY`; any other op would be
            // a lowering bug, answered with a helper that gives NaN rather than a wrong
            // function's value.
            Helper::UnaryF64(_) => nan_f64 as *const u8,
            Helper::PowF32 => pow_f32 as *const u8,
            Helper::PowF64 => pow_f64 as *const u8,
            Helper::PowI32 => pow_i32 as *const u8,
            Helper::PowI64 => pow_i64 as *const u8,
        }
    }
}

extern "C" fn exp_f64(x: f64) -> f64 {
    reference::unary_f64(UnaryOp::Exp, x)
}

extern "C" fn log_f64(x: f64) -> f64 {
    reference::unary_f64(UnaryOp::Log, x)
}

extern "C" fn tanh_f64(x: f64) -> f64 {
    reference::unary_f64(UnaryOp::Tanh, x)
}

extern "C" fn sigmoid_f64(x: f64) -> f64 {
    reference::unary_f64(UnaryOp::Sigmoid, x)
}

extern "C" fn erf_f64(x: f64) -> f64 {
    reference::unary_f64(UnaryOp::Erf, x)
}

extern "C" fn expm1_f64(x: f64) -> f64 {
    reference::unary_f64(UnaryOp::Expm1, x)
}

extern "C" fn log1p_f64(x: f64) -> f64 {
    reference::unary_f64(UnaryOp::Log1p, x)
}

extern "C" fn nan_f64(_: f64) -> f64 {
    f64::NAN
}

extern "C" fn pow_f32(a: f32, b: f32) -> f32 {
    reference::binary_f32(BinaryOp::Power, a, b)
}

extern "C" fn pow_f64(a: f64, b: f64) -> f64 {
    reference::binary_f64(BinaryOp::Power, a, b)
}

extern "C" fn pow_i32(a: i32, b: i32) -> i32 {
    reference::binary_i32(BinaryOp::Power, a, b)
}

extern "C" fn pow_i64(a: i64, b: i64) -> i64 {
    reference::binary_i64(BinaryOp::Power, a, b)
}
