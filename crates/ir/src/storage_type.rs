//! The ONNX storage-only element types: the 8-bit floats (FLOAT8E4M3FN, FLOAT8E4M3FNUZ,
//! FLOAT8E5M2, FLOAT8E5M2FNUZ, FLOAT8E8M0), FLOAT4E2M1 and the 4-bit and 2-bit integers
//! (INT4, UINT4, INT2, UINT2). ONNX defines no arithmetic on them: they are converted
//! (`Cast`, `QuantizeLinear`, `DequantizeLinear`) and moved (`Reshape`, `Transpose`, ...).
//!
//! In memory each element is one byte (the sub-byte types unpacked; packing is the file
//! formats' business, see `graphlift-onnx`'s `tensor`), a `#[repr(transparent)]` newtype
//! so that [`TensorData`](crate::TensorData) has one variant per type like every other
//! element type. The conversions are ONNX `Cast`'s ([`StorageElement::from_f64`],
//! [`StorageElement::from_i64`]; the float formats in [`crate::minifloat`]).

use std::fmt;

use crate::minifloat::{e8m0_decode, e8m0_encode, MiniFloat};
use crate::{Element, ElementType, TensorData};

/// A storage-only element type's conversions, shared by the generic code that converts to
/// and from it.
pub trait StorageElement: Element + fmt::Display {
    /// `x` converted as ONNX `Cast` does: the floats round to nearest even (FLOAT8E8M0
    /// rounds up), beyond the range saturating to the largest finite value when `saturate`
    /// (see [`MiniFloat::encode`]); the integers truncate toward zero and keep the low bits
    /// (two's complement), NaN and ±infinity giving 0 (as `ml_dtypes` does; ONNX leaves
    /// out-of-range values undefined).
    fn from_f64(x: f64, saturate: bool) -> Self;
    /// `x` converted as ONNX `Cast` does from an integer (every 64-bit integer, signed or
    /// unsigned, fits an `i128`): the integers keep the low bits, the floats round `x`
    /// (saturating).
    fn from_int(x: i128) -> Self;
    /// The stored bits: the float formats' patterns, the integers' two's complement, in the
    /// low [`StorageElement::BITS`] bits.
    fn to_bits(self) -> u8;
    /// The element of the pattern in the low [`StorageElement::BITS`] bits of `bits`.
    fn from_bits(bits: u8) -> Self;
    /// The width of a pattern: 8, 4 or 2.
    const BITS: u32;
}

macro_rules! storage_float {
    ($(#[$doc:meta])* $name:ident, $bits:expr, $decode:expr, $encode:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(pub u8);

        impl StorageElement for $name {
            fn from_f64(x: f64, saturate: bool) -> Self {
                $name($encode(x, saturate))
            }
            fn from_int(x: i128) -> Self {
                $name($encode(x as f64, true))
            }
            fn to_bits(self) -> u8 {
                self.0
            }
            fn from_bits(bits: u8) -> Self {
                $name(bits & (u8::MAX >> (8 - $bits)))
            }
            const BITS: u32 = $bits;
        }

        impl $name {
            /// The value, exact in `f64`.
            pub fn to_f64(self) -> f64 {
                $decode(self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f64(), f)
            }
        }
    };
}

storage_float!(
    /// FLOAT8E4M3FN: bias 7, NaN `S.1111.111`, no infinity, largest finite 448.
    F8E4M3FN, 8, |b| MiniFloat::E4M3FN.decode(b), |x, s| MiniFloat::E4M3FN.encode(x, s)
);
storage_float!(
    /// FLOAT8E4M3FNUZ: bias 8, one NaN (`0x80`), no infinity and no `-0`, largest 240.
    F8E4M3FNUZ, 8, |b| MiniFloat::E4M3FNUZ.decode(b), |x, s| MiniFloat::E4M3FNUZ.encode(x, s)
);
storage_float!(
    /// FLOAT8E5M2: bias 15, IEEE-style infinities and NaNs, largest finite 57344.
    F8E5M2, 8, |b| MiniFloat::E5M2.decode(b), |x, s| MiniFloat::E5M2.encode(x, s)
);
storage_float!(
    /// FLOAT8E5M2FNUZ: bias 16, one NaN (`0x80`), no infinity and no `-0`, largest 57344.
    F8E5M2FNUZ, 8, |b| MiniFloat::E5M2FNUZ.decode(b), |x, s| MiniFloat::E5M2FNUZ.encode(x, s)
);
storage_float!(
    /// FLOAT8E8M0: an exponent-only scale (OCP microscaling), `2^(bits - 127)`, NaN `0xFF`.
    F8E8M0, 8, e8m0_decode, e8m0_encode
);
storage_float!(
    /// FLOAT4E2M1: bias 1, values `±{0, 0.5, 1, 1.5, 2, 3, 4, 6}`, no NaN or infinity.
    F4E2M1, 4, |b| MiniFloat::E2M1.decode(b), |x, s| MiniFloat::E2M1.encode(x, s)
);

macro_rules! storage_int {
    ($(#[$doc:meta])* $name:ident, $repr:ty, $bits:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(transparent)]
        pub struct $name(pub $repr);

        impl StorageElement for $name {
            fn from_f64(x: f64, _saturate: bool) -> Self {
                if !x.is_finite() {
                    return $name(0);
                }
                // Exact: the remainder of an integral f64 by a power of two.
                Self::from_bits(x.trunc().rem_euclid(f64::from(1u32 << $bits)) as u8)
            }
            fn from_int(x: i128) -> Self {
                Self::from_bits(x as u8)
            }
            fn to_bits(self) -> u8 {
                (self.0 as u8) & (u8::MAX >> (8 - $bits))
            }
            fn from_bits(bits: u8) -> Self {
                // Shift the pattern to the top of the byte and back: sign extension for
                // the signed types.
                let top = (bits << (8 - $bits)) as $repr;
                $name(top >> (8 - $bits))
            }
            const BITS: u32 = $bits;
        }

        impl $name {
            /// The value.
            pub fn to_f64(self) -> f64 {
                f64::from(self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

storage_int!(
    /// INT4: a 4-bit two's complement integer, -8 to 7 (held in an `i8`).
    I4, i8, 4
);
storage_int!(
    /// UINT4: a 4-bit unsigned integer, 0 to 15 (held in a `u8`).
    U4, u8, 4
);
storage_int!(
    /// INT2: a 2-bit two's complement integer, -2 to 1 (held in an `i8`).
    I2, i8, 2
);
storage_int!(
    /// UINT2: a 2-bit unsigned integer, 0 to 3 (held in a `u8`).
    U2, u8, 2
);

/// `match` on a storage-only [`ElementType`] with `$T` naming its newtype; `$other` for
/// the other types.
macro_rules! with_storage_type {
    ($t:expr, $T:ident => $body:expr, _ => $other:expr) => {
        with_storage_type!(@arms $t, $T, $body, $other;
            F8E4M3FN F8E4M3FNUZ F8E5M2 F8E5M2FNUZ F8E8M0 F4E2M1 I4 U4 I2 U2)
    };
    (@arms $t:expr, $T:ident, $body:expr, $other:expr; $($v:ident)*) => {
        match $t {
            $(ElementType::$v => {
                type $T = $v;
                $body
            })*
            _ => $other,
        }
    };
}

/// `values` converted to the storage-only type `t` by [`StorageElement::from_f64`], `None`
/// when `t` is not storage-only.
pub fn storage_from_f64(
    t: ElementType,
    values: impl Iterator<Item = f64>,
    saturate: bool,
) -> Option<TensorData> {
    with_storage_type!(t, T => Some(T::into_data(values.map(|x| T::from_f64(x, saturate)).collect())), _ => None)
}

/// `values` converted to the storage-only type `t` by [`StorageElement::from_int`], `None`
/// when `t` is not storage-only.
pub fn storage_from_int(t: ElementType, values: impl Iterator<Item = i128>) -> Option<TensorData> {
    with_storage_type!(t, T => Some(T::into_data(values.map(T::from_int).collect())), _ => None)
}

/// Every element's stored bits ([`StorageElement::to_bits`]), `None` when `data` is not of
/// a storage-only type.
pub fn storage_bits(data: &TensorData) -> Option<Vec<u8>> {
    with_storage_type!(data.element_type(), T => {
        data.as_slice::<T>().map(|v| v.iter().map(|x| x.to_bits()).collect())
    }, _ => None)
}

/// Elements of the storage-only type `t` from their bits ([`StorageElement::from_bits`]),
/// `None` when `t` is not storage-only.
pub fn storage_from_bits(t: ElementType, bits: impl Iterator<Item = u8>) -> Option<TensorData> {
    with_storage_type!(t, T => Some(T::into_data(bits.map(T::from_bits).collect())), _ => None)
}

/// The width of the storage-only type `t`'s patterns (8, 4 or 2), `None` for the others.
pub fn storage_bit_width(t: ElementType) -> Option<u32> {
    with_storage_type!(t, T => Some(T::BITS), _ => None)
}

/// Whether `t` is one of the storage-only integer types (INT4, UINT4, INT2, UINT2).
pub fn is_storage_integer(t: ElementType) -> bool {
    matches!(
        t,
        ElementType::I4 | ElementType::U4 | ElementType::I2 | ElementType::U2
    )
}

pub(crate) fn from_f64_data(t: ElementType, values: &[f64], saturate: bool) -> TensorData {
    storage_from_f64(t, values.iter().copied(), saturate)
        .unwrap_or_else(|| TensorData::zeros(t, values.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_truncate_and_keep_the_low_bits() {
        assert_eq!(I4::from_f64(-9.0, true), I4(7));
        assert_eq!(I4::from_f64(-2.5, true), I4(-2));
        assert_eq!(U4::from_f64(-2.5, true), U4(14));
        assert_eq!(I2::from_f64(2.5, true), I2(-2));
        assert_eq!(U2::from_f64(f64::NAN, true), U2(0));
        assert_eq!(I4::from_f64(1e300, true), I4(0));
        assert_eq!(I4::from_int(200), I4(-8));
        assert_eq!(U2::from_int(-1), U2(3));
        assert_eq!(I4::from_bits(0xf), I4(-1));
        assert_eq!(I4(-1).to_bits(), 0xf);
        assert_eq!(I2::from_bits(0x2).to_bits(), 0x2);
    }

    #[test]
    fn floats_convert_through_minifloat() {
        assert_eq!(F8E4M3FN::from_f64(1e6, true).to_f64(), 448.0);
        assert!(F8E4M3FN::from_f64(1e6, false).to_f64().is_nan());
        assert_eq!(F4E2M1::from_int(5), F4E2M1(0x6));
        assert_eq!(F8E8M0::from_f64(3.0, true).to_f64(), 4.0);
        assert_eq!(F4E2M1::from_bits(0xff), F4E2M1(0xf));
        assert_eq!(F8E5M2(0x3c).to_string(), "1");
    }
}
