//! Elementwise reference kernels. The semantics table is in the parent module.

use graphlift_ir::{
    bf16, f16, is_storage_integer, map_data, match_data, storage_from_f64, storage_from_int,
    BinaryOp, CompareOp, Element, ElementType, TensorData, UnaryOp,
};
use num_traits::AsPrimitive;

use super::arith::Arith;

/// Applies a unary op elementwise.
///
/// # Errors
/// A message when the op does not accept the element type.
pub fn unary(op: UnaryOp, x: &TensorData) -> Result<TensorData, String> {
    if !op.accepts(x.element_type()) {
        return Err(format!(
            "{} does not accept {}",
            op.name(),
            x.element_type()
        ));
    }
    match_data!(x, v => Ok(v.iter().map(|&a| Arith::unary(op, a)).collect::<Vec<_>>().into()),
        String(_) => Err(format!("{} does not accept string", op.name())))
}

/// `f32` unary ops; transcendental ones are computed in `f64` and rounded once.
pub fn unary_f32(op: UnaryOp, a: f32) -> f32 {
    match op {
        UnaryOp::Negative => -a,
        UnaryOp::Abs => a.abs(),
        UnaryOp::Relu => relu(a, 0.0),
        UnaryOp::Floor => a.floor(),
        UnaryOp::Ceil => a.ceil(),
        UnaryOp::Round => a.round_ties_even(),
        UnaryOp::Sign => sign(a, 0.0, 1.0),
        UnaryOp::Sqrt => a.sqrt(),
        _ => unary_f64(op, f64::from(a)) as f32,
    }
}

/// `f64` unary ops.
pub fn unary_f64(op: UnaryOp, a: f64) -> f64 {
    match op {
        UnaryOp::Negative => -a,
        UnaryOp::Abs => a.abs(),
        UnaryOp::Relu => relu(a, 0.0),
        UnaryOp::Exp => a.exp(),
        UnaryOp::Log => a.ln(),
        UnaryOp::Sqrt => a.sqrt(),
        UnaryOp::Tanh => a.tanh(),
        UnaryOp::Sigmoid => sigmoid_f64(a),
        UnaryOp::Erf => libm::erf(a),
        UnaryOp::Expm1 => a.exp_m1(),
        UnaryOp::Log1p => a.ln_1p(),
        UnaryOp::Sin => a.sin(),
        UnaryOp::Cos => a.cos(),
        UnaryOp::Tan => a.tan(),
        UnaryOp::Asin => a.asin(),
        UnaryOp::Acos => a.acos(),
        UnaryOp::Atan => a.atan(),
        UnaryOp::Sinh => a.sinh(),
        UnaryOp::Cosh => a.cosh(),
        UnaryOp::Asinh => a.asinh(),
        UnaryOp::Acosh => a.acosh(),
        UnaryOp::Atanh => a.atanh(),
        UnaryOp::Floor => a.floor(),
        UnaryOp::Ceil => a.ceil(),
        UnaryOp::Round => a.round_ties_even(),
        UnaryOp::Sign => sign(a, 0.0, 1.0),
        UnaryOp::Not => f64::NAN,
    }
}

/// The logistic function without overflow: `1/(1+e^-x)` for `x >= 0`, `e^x/(1+e^x)` else.
pub fn sigmoid_f64(a: f64) -> f64 {
    if a >= 0.0 {
        1.0 / (1.0 + (-a).exp())
    } else {
        let e = a.exp();
        e / (1.0 + e)
    }
}

fn relu<T: PartialOrd + Copy>(a: T, zero: T) -> T {
    if a < zero {
        zero
    } else {
        a
    }
}

fn sign<T: PartialOrd + Copy + std::ops::Neg<Output = T>>(a: T, zero: T, one: T) -> T {
    if a > zero {
        one
    } else if a < zero {
        -one
    } else {
        a
    }
}

/// Applies a binary op elementwise to two operands of one type and length.
///
/// # Errors
/// A message when the types or lengths differ or the op does not accept the type.
pub fn binary(op: BinaryOp, a: &TensorData, b: &TensorData) -> Result<TensorData, String> {
    check_pair(a, b)?;
    if !op.accepts(a.element_type()) {
        return Err(format!(
            "{} does not accept {}",
            op.name(),
            a.element_type()
        ));
    }
    match_data!(a, x => {
        let y = b.as_slice().unwrap_or_default();
        Ok(zip(x, y, |p, q| Arith::binary(op, p, q)).into())
    }, String(_) => Err(format!("{} does not accept string", op.name())))
}

fn check_pair(a: &TensorData, b: &TensorData) -> Result<(), String> {
    if a.element_type() != b.element_type() {
        return Err(format!(
            "operand types {} and {} differ",
            a.element_type(),
            b.element_type()
        ));
    }
    if a.len() != b.len() {
        return Err(format!(
            "operand lengths {} and {} differ",
            a.len(),
            b.len()
        ));
    }
    Ok(())
}

fn zip<T: Copy, U>(x: &[T], y: &[T], f: impl Fn(T, T) -> U) -> Vec<U> {
    x.iter().zip(y).map(|(&p, &q)| f(p, q)).collect()
}

/// NaN-propagating maximum with `max(-0, +0) = +0`.
pub fn fmax<T: num_like::Float>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::NAN
    } else if a > b || (a == b && !a.is_sign_negative()) {
        a
    } else {
        b
    }
}

/// NaN-propagating minimum with `min(-0, +0) = -0`.
pub fn fmin<T: num_like::Float>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::NAN
    } else if a < b || (a == b && a.is_sign_negative()) {
        a
    } else {
        b
    }
}

mod num_like {
    pub trait Float: Copy + PartialOrd {
        const NAN: Self;
        fn is_nan(self) -> bool;
        fn is_sign_negative(self) -> bool;
    }
    impl Float for f32 {
        const NAN: f32 = f32::NAN;
        fn is_nan(self) -> bool {
            f32::is_nan(self)
        }
        fn is_sign_negative(self) -> bool {
            f32::is_sign_negative(self)
        }
    }
    impl Float for f64 {
        const NAN: f64 = f64::NAN;
        fn is_nan(self) -> bool {
            f64::is_nan(self)
        }
        fn is_sign_negative(self) -> bool {
            f64::is_sign_negative(self)
        }
    }
}

/// `f32` binary ops (`Power` computed in `f64` and rounded once).
pub fn binary_f32(op: BinaryOp, a: f32, b: f32) -> f32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Subtract => a - b,
        BinaryOp::Multiply => a * b,
        BinaryOp::Divide => a / b,
        BinaryOp::Maximum => fmax(a, b),
        BinaryOp::Minimum => fmin(a, b),
        BinaryOp::Power => f64::from(a).powf(f64::from(b)) as f32,
        BinaryOp::Mod => a % b,
        BinaryOp::FloorMod => floor_mod(a % b, b, 0.0),
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => f32::NAN,
    }
}

/// `f64` binary ops.
pub fn binary_f64(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Subtract => a - b,
        BinaryOp::Multiply => a * b,
        BinaryOp::Divide => a / b,
        BinaryOp::Maximum => fmax(a, b),
        BinaryOp::Minimum => fmin(a, b),
        BinaryOp::Power => a.powf(b),
        BinaryOp::Mod => a % b,
        BinaryOp::FloorMod => floor_mod(a % b, b, 0.0),
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => f64::NAN,
    }
}

/// `FloorMod` from the truncated remainder `r = a mod b`: `r + b` where `r` and `b` differ
/// in sign; a zero remainder takes `b`'s sign (numpy's `npy_divmod`; for integers the sign
/// of zero is moot). Rust's `%` is C's `fmod` on floats, exact.
pub(super) fn floor_mod<T>(r: T, b: T, zero: T) -> T
where
    T: Copy + PartialOrd + std::ops::Add<Output = T> + FloorModZero,
{
    if r == zero {
        r.signed_zero_like(b)
    } else if (r < zero) != (b < zero) {
        r + b
    } else {
        r
    }
}

/// A zero with `b`'s sign (floats), or zero itself (integers).
pub(super) trait FloorModZero: Sized {
    fn signed_zero_like(self, b: Self) -> Self;
}

impl FloorModZero for f32 {
    fn signed_zero_like(self, b: f32) -> f32 {
        0f32.copysign(b)
    }
}

impl FloorModZero for f64 {
    fn signed_zero_like(self, b: f64) -> f64 {
        0f64.copysign(b)
    }
}

/// Integers of every width: the sign of a zero is moot.
macro_rules! int_floor_mod_zero {
    ($($t:ty),*) => {$(
        impl FloorModZero for $t {
            fn signed_zero_like(self, _: $t) -> $t {
                self
            }
        }
    )*};
}
int_floor_mod_zero!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Compares elementwise; the result is `Bool`. Strings compare for equality byte for byte
/// (no Unicode normalization), as ONNX `Equal` does.
///
/// # Errors
/// A message when the operand types or lengths differ, or the comparison does not accept
/// the type ([`CompareOp::accepts`]: strings have no order).
pub fn compare(op: CompareOp, a: &TensorData, b: &TensorData) -> Result<TensorData, String> {
    check_pair(a, b)?;
    if !op.accepts(a.element_type()) {
        return Err(format!(
            "{} does not accept {}",
            op.name(),
            a.element_type()
        ));
    }
    fn cmp<T: PartialOrd>(op: CompareOp, x: &[T], y: &[T]) -> Vec<bool> {
        x.iter()
            .zip(y)
            .map(|(p, q)| match op {
                CompareOp::Equal => p == q,
                CompareOp::NotEqual => p != q,
                CompareOp::Less => p < q,
                CompareOp::LessEq => p <= q,
                CompareOp::Greater => p > q,
                CompareOp::GreaterEq => p >= q,
            })
            .collect()
    }
    Ok(TensorData::Bool(match_data!(a, x => {
        cmp(op, x, b.as_slice().unwrap_or_default())
    }, String(x) => match b {
        TensorData::String(y) => cmp(op, x, y),
        _ => Vec::new(),
    })))
}

/// `cond ? a : b` elementwise.
///
/// # Errors
/// A message when `cond` is not bool, or types or lengths differ.
pub fn select(cond: &TensorData, a: &TensorData, b: &TensorData) -> Result<TensorData, String> {
    let TensorData::Bool(c) = cond else {
        return Err(format!(
            "condition must be bool, is {}",
            cond.element_type()
        ));
    };
    check_pair(a, b)?;
    if c.len() != a.len() {
        return Err(format!(
            "condition length {} differs from {}",
            c.len(),
            a.len()
        ));
    }
    fn pick<T: Clone>(c: &[bool], x: &[T], y: &[T]) -> Vec<T> {
        c.iter()
            .zip(x.iter().zip(y))
            .map(|(&k, (p, q))| if k { p.clone() } else { q.clone() })
            .collect()
    }
    Ok(
        map_data!(a, x => pick(c, x, b.as_slice().unwrap_or_default()), String(x) => {
            let TensorData::String(y) = b else {
                return Err("operand types differ".to_string());
            };
            pick(c, x, y)
        }),
    )
}

/// Converts elementwise with Rust's `as` semantics (see the table; ONNX `Cast`): float to
/// integer truncates toward zero and saturates (NaN to 0), integer to narrower integer keeps
/// the low bits, to a float rounds to nearest even (overflow to infinity; `f16`/`bf16` from
/// `f64` round once, from the other types through `f32`); to `bool` is `x != 0` (NaN is
/// true); from `bool` is 0 or 1. To and from the storage-only types as ONNX `Cast` with its
/// defaults (`saturate = 1`, FLOAT8E8M0 rounded up; [`graphlift_ir::StorageElement`]): from
/// them through their exact value (an `i8`/`u8` or an `f32`), to the floats among them by
/// rounding the value widened to `f64`, to the integers among them by keeping the low bits
/// of an integer (a float truncated toward zero first). To and from `String` as ONNX `Cast`
/// defines it (`strings.rs`: decimal and scientific spellings, `INF` and `NaN`).
///
/// # Errors
/// Only from `String`: a message naming the first element that is not a number.
pub fn convert(x: &TensorData, to: ElementType) -> Result<TensorData, String> {
    if to == ElementType::String {
        return Ok(TensorData::String(super::strings::to_strings(x)));
    }
    match_data!(x, v => Ok(Convert::convert(v, to)),
        String(v) => super::strings::from_strings(v, to))
}

/// Conversion of a slice of one element type to every element type.
trait Convert: Sized {
    fn convert(v: &[Self], to: ElementType) -> TensorData;
}

/// `v` cast elementwise to `to` through [`AsPrimitive`] (Rust's `as`, and `half`'s
/// round-to-nearest-even conversions).
fn cast_all<S>(v: &[S], to: ElementType) -> TensorData
where
    S: Element
        + AsPrimitive<f32>
        + AsPrimitive<f64>
        + AsPrimitive<i32>
        + AsPrimitive<i64>
        + AsPrimitive<i8>
        + AsPrimitive<u8>
        + AsPrimitive<i16>
        + AsPrimitive<u16>
        + AsPrimitive<u32>
        + AsPrimitive<u64>
        + AsPrimitive<f16>
        + AsPrimitive<bf16>,
{
    fn cast<S: AsPrimitive<T>, T: Element>(v: &[S]) -> TensorData {
        T::into_data(v.iter().map(|&a| a.as_()).collect())
    }
    match to {
        ElementType::F32 => cast::<S, f32>(v),
        ElementType::F64 => cast::<S, f64>(v),
        ElementType::I32 => cast::<S, i32>(v),
        ElementType::I64 => cast::<S, i64>(v),
        ElementType::I8 => cast::<S, i8>(v),
        ElementType::U8 => cast::<S, u8>(v),
        ElementType::I16 => cast::<S, i16>(v),
        ElementType::U16 => cast::<S, u16>(v),
        ElementType::U32 => cast::<S, u32>(v),
        ElementType::U64 => cast::<S, u64>(v),
        ElementType::F16 => cast::<S, f16>(v),
        ElementType::BF16 => cast::<S, bf16>(v),
        ElementType::Bool => TensorData::Bool(
            v.iter()
                .map(|&a| AsPrimitive::<f64>::as_(a) != 0.0)
                .collect(),
        ),
        t => {
            let stored = if S::ELEMENT_TYPE.is_float() || !is_storage_integer(t) {
                storage_from_f64(t, v.iter().map(|&a| a.as_()), true)
            } else {
                // The low bits of an integer (a u64 wraps to i64 keeping them).
                storage_from_int(t, v.iter().map(|&a| i128::from(AsPrimitive::<i64>::as_(a))))
            };
            stored.unwrap_or_else(|| TensorData::zeros(t, v.len()))
        }
    }
}

macro_rules! convert_numeric {
    ($($t:ty),*) => {$(
        impl Convert for $t {
            fn convert(v: &[$t], to: ElementType) -> TensorData {
                cast_all(v, to)
            }
        }
    )*};
}
convert_numeric!(f32, f64, i32, i64, i8, u8, i16, u16, u32, u64, f16, bf16);

/// The storage-only integers through their `i8`/`u8` value.
macro_rules! convert_storage_int {
    ($($t:ident),*) => {$(
        impl Convert for graphlift_ir::$t {
            fn convert(v: &[Self], to: ElementType) -> TensorData {
                let values: Vec<_> = v.iter().map(|x| x.0).collect();
                cast_all(&values, to)
            }
        }
    )*};
}
convert_storage_int!(I4, U4, I2, U2);

/// The storage-only floats through their `f32` value (exact: every one is an `f32`).
macro_rules! convert_storage_float {
    ($($t:ident),*) => {$(
        impl Convert for graphlift_ir::$t {
            fn convert(v: &[Self], to: ElementType) -> TensorData {
                let values: Vec<f32> = v.iter().map(|x| x.to_f64() as f32).collect();
                cast_all(&values, to)
            }
        }
    )*};
}
convert_storage_float!(F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0, F4E2M1);

impl Convert for bool {
    fn convert(v: &[bool], to: ElementType) -> TensorData {
        let bytes: Vec<u8> = v.iter().map(|&b| u8::from(b)).collect();
        cast_all(&bytes, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_edge_cases() {
        assert_eq!(i32::binary(BinaryOp::Divide, 7, 0), 0);
        assert_eq!(i32::binary(BinaryOp::Divide, i32::MIN, -1), i32::MIN);
        assert_eq!(i32::binary(BinaryOp::Divide, -7, 2), -3);
        assert_eq!(i64::binary(BinaryOp::Power, 3, 4), 81);
        assert_eq!(i64::binary(BinaryOp::Power, -1, -3), -1);
        assert_eq!(i64::binary(BinaryOp::Power, 2, -1), 0);
        assert!(binary_f32(BinaryOp::Maximum, f32::NAN, 1.0).is_nan());
        assert!(binary_f32(BinaryOp::Maximum, -0.0, 0.0).is_sign_positive());
        assert!(binary_f32(BinaryOp::Minimum, 0.0, -0.0).is_sign_negative());
        assert!(unary_f32(UnaryOp::Relu, f32::NAN).is_nan());
        assert!(unary_f32(UnaryOp::Relu, -0.0).is_sign_negative());
        assert_eq!(unary_f32(UnaryOp::Round, 2.5), 2.0);
        assert_eq!(unary_f32(UnaryOp::Sigmoid, -1000.0), 0.0);
        assert_eq!(unary_f32(UnaryOp::Sigmoid, 1000.0), 1.0);
        assert_eq!(i32::unary(UnaryOp::Abs, i32::MIN), i32::MIN);
        let c = convert(
            &TensorData::F32(vec![f32::NAN, 3e10, -2.7]),
            ElementType::I32,
        )
        .unwrap();
        assert_eq!(c, TensorData::I32(vec![0, i32::MAX, -2]));
        let b = convert(
            &TensorData::F32(vec![f32::NAN, 0.0, -0.0]),
            ElementType::Bool,
        )
        .unwrap();
        assert_eq!(b, TensorData::Bool(vec![true, false, false]));
    }

    #[test]
    fn remainders_truncated_and_floored() {
        // Mod: the dividend's sign (C fmod); FloorMod: the divisor's (Python).
        for (a, b, m, f) in [
            (7, 3, 1, 1),
            (-7, 3, -1, 2),
            (7, -3, 1, -2),
            (-7, -3, -1, -1),
        ] {
            assert_eq!(
                <i32 as super::super::arith::Arith>::binary(BinaryOp::Mod, a, b),
                m
            );
            assert_eq!(
                <i64 as super::super::arith::Arith>::binary(BinaryOp::FloorMod, a.into(), b.into()),
                i64::from(f)
            );
            assert_eq!(binary_f64(BinaryOp::Mod, a.into(), b.into()), f64::from(m));
            assert_eq!(binary_f32(BinaryOp::FloorMod, a as f32, b as f32), f as f32);
        }
        assert_eq!(
            <i32 as super::super::arith::Arith>::binary(BinaryOp::Mod, 5, 0),
            0
        );
        assert_eq!(
            <i64 as super::super::arith::Arith>::binary(BinaryOp::FloorMod, -5, 0),
            0
        );
        assert_eq!(
            <i32 as super::super::arith::Arith>::binary(BinaryOp::Mod, i32::MIN, -1),
            0
        );
        assert_eq!(binary_f32(BinaryOp::Mod, -5.5, 2.0), -1.5);
        assert_eq!(binary_f64(BinaryOp::Mod, 1e300, 3.0), 1e300 % 3.0);
        assert!(binary_f32(BinaryOp::Mod, 1.0, 0.0).is_nan());
        assert_eq!(binary_f32(BinaryOp::Mod, 2.0, f32::INFINITY), 2.0);
        // Narrow and unsigned integers: the same wrapping rules.
        assert_eq!(
            <i8 as super::super::arith::Arith>::binary(BinaryOp::FloorMod, -7, 3),
            2
        );
        assert_eq!(
            <u8 as super::super::arith::Arith>::binary(BinaryOp::Mod, 7, 0),
            0
        );
        // A zero remainder takes the divisor's sign in FloorMod.
        assert!(binary_f64(BinaryOp::FloorMod, 6.0, -3.0).is_sign_negative());
        assert!(binary_f64(BinaryOp::Mod, -6.0, 3.0).is_sign_negative());
    }
}
