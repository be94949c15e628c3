//! Scalar arithmetic of every element type, as the reference defines it (the table on
//! [`super::evaluate_node`]): one [`Arith`] implementation per type class, so the
//! elementwise kernels are written once over all types.
//!
//! - `f32`, `f64`: IEEE 754 in the type; transcendental `f32` ops computed in `f64` and
//!   rounded once.
//! - `f16`, `bf16`: ONNX computes them in `f32`: the operands are widened exactly, the `f32`
//!   op runs, and the result is rounded once to the 16-bit type (round to nearest even).
//!   For `+ - * /` and `sqrt` this equals the correctly rounded 16-bit result, since `f32`
//!   has more than twice the significand bits plus two (double rounding is innocuous).
//! - integers, signed and unsigned of every width: two's-complement wrapping (`Abs(MIN) =
//!   MIN`, `x / 0 = 0`, `MIN / -1 = MIN`); on unsigned types `Abs` and `Relu` are the
//!   identity, `Sign` is 0 or 1 and `Negative` wraps (`-1u8 = 255`).
//! - `bool`: `Not`, `And`, `Or`, `Xor` (the only ops that accept it); on integers the same
//!   four are bitwise.
//! - the storage-only types (float8, FLOAT4E2M1, INT4, UINT4, INT2, UINT2): no op accepts
//!   them (ONNX defines no arithmetic on them); the value is the first operand.

use graphlift_ir::{bf16, f16, BinaryOp, UnaryOp};
use num_traits::AsPrimitive;

use super::elementwise::{binary_f32, binary_f64, floor_mod, unary_f32, unary_f64};

/// The reference semantics of the unary and binary elementwise ops on one element type.
///
/// Callers check [`UnaryOp::accepts`] / [`BinaryOp::accepts`] first; an op the type does not
/// accept gives an unspecified value, never a panic.
pub trait Arith: Copy {
    /// `op(a)`.
    fn unary(op: UnaryOp, a: Self) -> Self;
    /// `op(a, b)`.
    fn binary(op: BinaryOp, a: Self, b: Self) -> Self;
}

impl Arith for f32 {
    fn unary(op: UnaryOp, a: f32) -> f32 {
        unary_f32(op, a)
    }
    fn binary(op: BinaryOp, a: f32, b: f32) -> f32 {
        binary_f32(op, a, b)
    }
}

impl Arith for f64 {
    fn unary(op: UnaryOp, a: f64) -> f64 {
        unary_f64(op, a)
    }
    fn binary(op: BinaryOp, a: f64, b: f64) -> f64 {
        binary_f64(op, a, b)
    }
}

/// `f16` and `bf16`: computed in `f32`, rounded once.
macro_rules! half_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn unary(op: UnaryOp, a: $t) -> $t {
                unary_f32(op, a.as_()).as_()
            }
            fn binary(op: BinaryOp, a: $t, b: $t) -> $t {
                binary_f32(op, a.as_(), b.as_()).as_()
            }
        }
    )*};
}
half_arith!(f16, bf16);

impl Arith for bool {
    fn unary(_: UnaryOp, a: bool) -> bool {
        !a
    }
    fn binary(op: BinaryOp, a: bool, b: bool) -> bool {
        match op {
            BinaryOp::And => a && b,
            BinaryOp::Or => a || b,
            _ => a ^ b,
        }
    }
}

/// Integer ops shared by signed and unsigned types; `$abs`, `$sign` and `$neg_pow` are the
/// parts that differ (see the module docs).
macro_rules! int_arith {
    ($t:ty, $abs:expr, $sign:expr, $neg_pow:expr) => {
        impl Arith for $t {
            fn unary(op: UnaryOp, a: $t) -> $t {
                match op {
                    UnaryOp::Negative => a.wrapping_neg(),
                    UnaryOp::Abs => $abs(a),
                    UnaryOp::Relu => a.max(0),
                    UnaryOp::Sign => $sign(a),
                    UnaryOp::Not => !a,
                    _ => a,
                }
            }
            fn binary(op: BinaryOp, a: $t, b: $t) -> $t {
                match op {
                    BinaryOp::Add => a.wrapping_add(b),
                    BinaryOp::Subtract => a.wrapping_sub(b),
                    BinaryOp::Multiply => a.wrapping_mul(b),
                    BinaryOp::Divide => {
                        if b == 0 {
                            0
                        } else {
                            a.wrapping_div(b)
                        }
                    }
                    BinaryOp::Maximum => a.max(b),
                    BinaryOp::Minimum => a.min(b),
                    BinaryOp::Power => match $neg_pow(a, b) {
                        Some(r) => r,
                        None => {
                            let (mut base, mut e, mut acc) = (a, b, 1 as $t);
                            while e > 0 {
                                if e & 1 == 1 {
                                    acc = acc.wrapping_mul(base);
                                }
                                base = base.wrapping_mul(base);
                                e >>= 1;
                            }
                            acc
                        }
                    },
                    // `x mod 0 = 0` (numpy); `MIN mod -1 = 0` (wrapping).
                    BinaryOp::Mod | BinaryOp::FloorMod if b == 0 => 0,
                    BinaryOp::Mod => a.wrapping_rem(b),
                    BinaryOp::FloorMod => floor_mod(a.wrapping_rem(b), b, 0),
                    BinaryOp::And => a & b,
                    BinaryOp::Or => a | b,
                    BinaryOp::Xor => a ^ b,
                }
            }
        }
    };
}

/// `a ^ b` for a negative exponent: `1` if `a == 1`, `±1` by parity if `a == -1`, else `0`
/// (`None` for `b >= 0`).
fn signed_neg_pow<T: num_traits::PrimInt + num_traits::Signed>(a: T, b: T) -> Option<T> {
    if !b.is_negative() {
        return None;
    }
    Some(if a == T::one() {
        T::one()
    } else if a == -T::one() {
        if b % (T::one() + T::one()) == T::zero() {
            T::one()
        } else {
            -T::one()
        }
    } else {
        T::zero()
    })
}

macro_rules! signed_arith {
    ($($t:ty),*) => {$(
        int_arith!($t, <$t>::wrapping_abs, <$t>::signum, signed_neg_pow::<$t>);
    )*};
}
macro_rules! unsigned_arith {
    ($($t:ty),*) => {$(
        int_arith!($t, |a| a, |a: $t| a.min(1), |_, _| None);
    )*};
}
/// The storage-only types: inference refuses every arithmetic op on them, so this only
/// keeps the generic kernels total (an unspecified value, never a panic).
macro_rules! storage_arith {
    ($($t:ident),*) => {$(
        impl Arith for graphlift_ir::$t {
            fn unary(_: UnaryOp, a: Self) -> Self {
                a
            }
            fn binary(_: BinaryOp, a: Self, _: Self) -> Self {
                a
            }
        }
    )*};
}
storage_arith!(F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0, F4E2M1, I4, U4, I2, U2);

signed_arith!(i8, i16, i32, i64);
unsigned_arith!(u8, u16, u32, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_integers_wrap_and_unsigned_ops_are_defined() {
        assert_eq!(i8::binary(BinaryOp::Add, 127, 1), -128);
        assert_eq!(i8::binary(BinaryOp::Divide, -128, -1), -128);
        assert_eq!(i8::unary(UnaryOp::Abs, -128), -128);
        assert_eq!(u8::binary(BinaryOp::Subtract, 0, 1), 255);
        assert_eq!(u8::binary(BinaryOp::Divide, 7, 0), 0);
        assert_eq!(u8::unary(UnaryOp::Negative, 1), 255);
        assert_eq!(u8::unary(UnaryOp::Sign, 9), 1);
        assert_eq!(u16::binary(BinaryOp::Power, 2, 17), 0);
        assert_eq!(i16::binary(BinaryOp::Power, -1, -3), -1);
        assert_eq!(i32::binary(BinaryOp::Divide, -7, 2), -3);
    }

    #[test]
    fn half_floats_round_once_from_f32() {
        let a = f16::from_f32(1.0);
        let eps = f16::from_f32(0.000_488_281_25); // half an ulp of 1.0: ties to even
        assert_eq!(f16::binary(BinaryOp::Add, a, eps), a);
        assert_eq!(
            f16::binary(BinaryOp::Multiply, f16::MAX, f16::from_f32(2.0)),
            f16::INFINITY
        );
        assert_eq!(
            bf16::binary(BinaryOp::Add, bf16::from_f32(256.0), bf16::from_f32(1.0)),
            bf16::from_f32(256.0)
        );
        assert!(f16::binary(BinaryOp::Maximum, f16::NAN, a).is_nan());
    }
}
