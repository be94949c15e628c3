//! Typed element storage shared by constants (IR) and tensors (runtime).

use crate::ElementType;

/// A flat, row-major vector of elements of one [`ElementType`].
///
/// `F16`/`BF16` hold [`half::f16`]/[`half::bf16`] (re-exported as [`crate::f16`] and
/// [`crate::bf16`]). Code that does the same for every variant matches through
/// [`match_data!`](crate::match_data) or [`map_data!`](crate::map_data) rather than
/// spelling twenty-four arms. The storage-only types ([`ElementType::is_storage_only`]) hold
/// one element per byte, as the newtypes [`crate::F8E4M3FN`], ..., [`crate::U2`]. `String`
/// holds Rust [`String`]s: it is the one variant whose elements are not [`Element`]s (not
/// `Copy`, no fixed width), so the macros take a separate arm for it where the generic body
/// needs `Copy`.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    /// `f32` elements.
    F32(Vec<f32>),
    /// `f64` elements.
    F64(Vec<f64>),
    /// `i32` elements.
    I32(Vec<i32>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `bool` elements (one byte each, 0 or 1).
    Bool(Vec<bool>),
    /// `i8` elements.
    I8(Vec<i8>),
    /// `u8` elements.
    U8(Vec<u8>),
    /// `i16` elements.
    I16(Vec<i16>),
    /// `u16` elements.
    U16(Vec<u16>),
    /// `u32` elements.
    U32(Vec<u32>),
    /// `u64` elements.
    U64(Vec<u64>),
    /// IEEE binary16 elements.
    F16(Vec<half::f16>),
    /// bfloat16 elements.
    BF16(Vec<half::bf16>),
    /// FLOAT8E4M3FN elements.
    F8E4M3FN(Vec<crate::F8E4M3FN>),
    /// FLOAT8E4M3FNUZ elements.
    F8E4M3FNUZ(Vec<crate::F8E4M3FNUZ>),
    /// FLOAT8E5M2 elements.
    F8E5M2(Vec<crate::F8E5M2>),
    /// FLOAT8E5M2FNUZ elements.
    F8E5M2FNUZ(Vec<crate::F8E5M2FNUZ>),
    /// FLOAT8E8M0 elements.
    F8E8M0(Vec<crate::F8E8M0>),
    /// FLOAT4E2M1 elements (one per byte).
    F4E2M1(Vec<crate::F4E2M1>),
    /// INT4 elements (one per byte).
    I4(Vec<crate::I4>),
    /// UINT4 elements (one per byte).
    U4(Vec<crate::U4>),
    /// INT2 elements (one per byte).
    I2(Vec<crate::I2>),
    /// UINT2 elements (one per byte).
    U2(Vec<crate::U2>),
    /// ONNX STRING elements: UTF-8 text, one [`String`] each. Not an [`Element`] (not
    /// `Copy`, no fixed width): it never reaches JIT code or a raw byte buffer.
    String(Vec<String>),
}

/// `match` on a [`TensorData`] with one arm per variant, binding the variant's vector to
/// `$v` (a `Vec<T>` or a reference to one, following the scrutinee) and evaluating the same
/// `$body` for each: generic code written once for every element type.
///
/// Two forms: `match_data!(d, v => body)` evaluates `body` for every variant, `String`
/// included (the body must then hold for `T = String`, e.g. generic over `T: Clone`);
/// `match_data!(d, v => body, String(s) => string_body)` evaluates `body` for the
/// fixed-width variants ([`Element`] types) and `string_body` for [`TensorData::String`].
///
/// ```
/// use graphlift_ir::{match_data, Element, TensorData};
/// let d = TensorData::U8(vec![1, 2, 3]);
/// assert_eq!(match_data!(&d, v => v.len()), 3);
/// let sum = |d: &TensorData| match_data!(d, v => v.iter().map(|&x| x.to_f64()).sum(),
///     String(_) => f64::NAN);
/// assert_eq!(sum(&d), 6.0);
/// assert!(sum(&TensorData::String(vec!["a".into()])).is_nan());
/// ```
#[macro_export]
macro_rules! match_data {
    ($data:expr, $v:ident => $body:expr, String($s:pat) => $sbody:expr) => {
        $crate::__data_arms!(@fixed $data, $v => $body, plain, $s => $sbody)
    };
    ($data:expr, $v:ident => $body:expr) => {
        $crate::__data_arms!(@fixed $data, $v => $body, plain, $v => $body)
    };
}

/// Like [`match_data!`], wrapping each arm's result (a `Vec` of the same element type) back
/// into the variant it came from. The same two forms; a separate `String` arm's result is a
/// `Vec<String>`.
///
/// ```
/// use graphlift_ir::{map_data, TensorData};
/// let d = TensorData::I8(vec![1, 2, 3]);
/// let r = map_data!(&d, v => v.iter().rev().cloned().collect());
/// assert_eq!(r, TensorData::I8(vec![3, 2, 1]));
/// ```
#[macro_export]
macro_rules! map_data {
    ($data:expr, $v:ident => $body:expr, String($s:pat) => $sbody:expr) => {
        $crate::__data_arms!(@fixed $data, $v => $body, wrap, $s => $sbody)
    };
    ($data:expr, $v:ident => $body:expr) => {
        $crate::__data_arms!(@fixed $data, $v => $body, wrap, $v => $body)
    };
}

/// `match` on an [`ElementType`](crate::ElementType) with one arm per type, in which `$T`
/// names the type's storage (an [`Element`](crate::Element): `f32`, `u8`, `f16`, `bool`,
/// ...) and the same `$body` is evaluated: generic code instantiated for every type.
///
/// As [`match_data!`], two forms: `with_element_type!(t, T => body)` also evaluates `body`
/// with `T = String` for [`ElementType::String`](crate::ElementType::String);
/// `with_element_type!(t, T => body, String => string_body)` evaluates `string_body` there.
///
/// ```
/// use graphlift_ir::{with_element_type, Element, ElementType, TensorData};
/// let zeros = |t| with_element_type!(t, T => T::into_data(vec![T::default(); 2]),
///     String => TensorData::String(vec![String::new(); 2]));
/// assert_eq!(zeros(ElementType::U16), TensorData::U16(vec![0, 0]));
/// ```
#[macro_export]
macro_rules! with_element_type {
    ($t:expr, $T:ident => $body:expr, String => $sbody:expr) => {
        $crate::__type_arms!($t, $T => $body, $sbody;
            F32 f32, F64 f64, I32 i32, I64 i64, Bool bool, I8 i8, U8 u8, I16 i16, U16 u16,
            U32 u32, U64 u64, F16 $crate::f16, BF16 $crate::bf16,
            F8E4M3FN $crate::F8E4M3FN, F8E4M3FNUZ $crate::F8E4M3FNUZ, F8E5M2 $crate::F8E5M2,
            F8E5M2FNUZ $crate::F8E5M2FNUZ, F8E8M0 $crate::F8E8M0, F4E2M1 $crate::F4E2M1,
            I4 $crate::I4, U4 $crate::U4, I2 $crate::I2, U2 $crate::U2)
    };
    ($t:expr, $T:ident => $body:expr) => {
        $crate::with_element_type!($t, $T => $body, String => {
            #[allow(dead_code)]
            type $T = ::std::string::String;
            $body
        })
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __type_arms {
    ($t:expr, $T:ident => $body:expr, $sbody:expr; $($variant:ident $ty:ty),*) => {
        match $t {
            $($crate::ElementType::$variant => {
                #[allow(dead_code)]
                type $T = $ty;
                $body
            })*
            $crate::ElementType::String => $sbody,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __data_arms {
    (@fixed $data:expr, $v:ident => $body:expr, $how:ident, $s:pat => $sbody:expr) => {
        $crate::__data_arms!(@arms $data, $v, $body, $how, $s, $sbody;
            F32 F64 I32 I64 Bool I8 U8 I16 U16 U32 U64 F16 BF16
            F8E4M3FN F8E4M3FNUZ F8E5M2 F8E5M2FNUZ F8E8M0 F4E2M1 I4 U4 I2 U2)
    };
    (@arms $data:expr, $v:ident, $body:expr, wrap, $s:pat, $sbody:expr; $($variant:ident)*) => {
        match $data {
            $($crate::TensorData::$variant($v) => $crate::TensorData::$variant($body),)*
            $crate::TensorData::String($s) => $crate::TensorData::String($sbody),
        }
    };
    (@arms $data:expr, $v:ident, $body:expr, plain, $s:pat, $sbody:expr; $($variant:ident)*) => {
        match $data {
            $($crate::TensorData::$variant($v) => $body,)*
            $crate::TensorData::String($s) => $sbody,
        }
    };
}

impl TensorData {
    /// `len` zero elements (`false` for `Bool`, empty strings for `String`).
    pub fn zeros(element_type: ElementType, len: usize) -> TensorData {
        with_element_type!(element_type, T => T::into_data(vec![T::default(); len]),
            String => TensorData::String(vec![String::new(); len]))
    }

    /// Makes the data `len` elements long in its own allocation where that holds them:
    /// shortened from the end, or lengthened by zeros (`false`, empty strings).
    pub fn resize(&mut self, len: usize) {
        match_data!(self, v => v.resize(len, Default::default()))
    }

    /// Copies `src` into `self` in place (no allocation). Returns `false`, copying nothing,
    /// when the element types or lengths differ.
    pub fn copy_from(&mut self, src: &TensorData) -> bool {
        self.len() == src.len() && self.write_range(0, src)
    }

    /// Elements `start..start + len` as data of their own (a sample of a batch), or `None`
    /// when they run past the end.
    pub fn range(&self, start: usize, len: usize) -> Option<TensorData> {
        let end = start.checked_add(len).filter(|&end| end <= self.len())?;
        Some(map_data!(self, v => v[start..end].to_vec()))
    }

    /// Copies `src` over elements `start..start + src.len()` in place. Returns `false`,
    /// copying nothing, when the element types differ or `src` runs past the end.
    pub fn write_range(&mut self, start: usize, src: &TensorData) -> bool {
        let Some(end) = start
            .checked_add(src.len())
            .filter(|&end| end <= self.len())
        else {
            return false;
        };
        fn write<T: Element>(d: &mut [T], src: &TensorData) -> bool {
            src.as_slice::<T>().is_some_and(|s| {
                d.copy_from_slice(s);
                true
            })
        }
        match_data!(self, d => write(&mut d[start..end], src), String(d) => match src {
            TensorData::String(s) => {
                d[start..end].clone_from_slice(s);
                true
            }
            _ => false,
        })
    }

    /// The element type of the stored values.
    pub fn element_type(&self) -> ElementType {
        fn t<T: Element>(_: &[T]) -> ElementType {
            T::ELEMENT_TYPE
        }
        match_data!(self, v => t(v), String(_) => ElementType::String)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match_data!(self, v => v.len())
    }

    /// `values` converted to `element_type` as Rust's `as` does (to integers: truncation
    /// toward zero, saturation, NaN to 0; to `f16`/`bf16`: round to nearest even, overflow
    /// to infinity; to `bool`: `x != 0`); to a storage-only type as ONNX `Cast` does,
    /// saturating ([`crate::StorageElement::from_f64`]); to `String` as [`float_text`].
    pub fn from_f64(element_type: ElementType, values: &[f64]) -> TensorData {
        use num_traits::AsPrimitive;
        fn cast<T: Element>(values: &[f64]) -> TensorData
        where
            f64: AsPrimitive<T>,
        {
            T::into_data(values.iter().map(|&x| x.as_()).collect())
        }
        match element_type {
            ElementType::F32 => cast::<f32>(values),
            ElementType::F64 => cast::<f64>(values),
            ElementType::I32 => cast::<i32>(values),
            ElementType::I64 => cast::<i64>(values),
            ElementType::Bool => TensorData::Bool(values.iter().map(|&x| x != 0.0).collect()),
            ElementType::I8 => cast::<i8>(values),
            ElementType::U8 => cast::<u8>(values),
            ElementType::I16 => cast::<i16>(values),
            ElementType::U16 => cast::<u16>(values),
            ElementType::U32 => cast::<u32>(values),
            ElementType::U64 => cast::<u64>(values),
            ElementType::F16 => cast::<half::f16>(values),
            ElementType::BF16 => cast::<half::bf16>(values),
            ElementType::String => {
                TensorData::String(values.iter().map(|&x| float_text(x, x)).collect())
            }
            t => crate::storage_type::from_f64_data(t, values, true),
        }
    }

    /// Whether `self` and `other` have the same element type, length and elements bit for
    /// bit: floats compare by their bit patterns (signed zeros differ, a NaN equals a NaN of
    /// the same payload), everything else by value.
    pub fn same_bits(&self, other: &TensorData) -> bool {
        fn eq<T, B: PartialEq>(x: &[T], y: &[T], bits: impl Fn(&T) -> B) -> bool {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| bits(p) == bits(q))
        }
        match (self, other) {
            (TensorData::F32(x), TensorData::F32(y)) => eq(x, y, |v| v.to_bits()),
            (TensorData::F64(x), TensorData::F64(y)) => eq(x, y, |v| v.to_bits()),
            (TensorData::F16(x), TensorData::F16(y)) => eq(x, y, |v| v.to_bits()),
            (TensorData::BF16(x), TensorData::BF16(y)) => eq(x, y, |v| v.to_bits()),
            _ => self == other,
        }
    }

    /// `true` when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The typed slice, or `None` if `T` is not the stored element type.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        T::slice(self)
    }

    /// The typed mutable slice, or `None` if `T` is not the stored element type.
    pub fn as_mut_slice<T: Element>(&mut self) -> Option<&mut [T]> {
        T::slice_mut(self)
    }

    /// The strings of a `String` tensor, or `None` for every other element type.
    pub fn as_strings(&self) -> Option<&[String]> {
        match self {
            TensorData::String(v) => Some(v),
            _ => None,
        }
    }

    /// The elements as a vector of `T` (no copy), or `None` if `T` is not the stored element
    /// type.
    pub fn into_vec<T: Element>(self) -> Option<Vec<T>> {
        T::from_data(self)
    }

    /// Pointer to the first element's bytes (dangling but non-null when empty). For
    /// `String` it points at the `String` handles, which no JIT code or byte copy may read:
    /// code that hands it on checks the element type first (a fused kernel's buffers
    /// against its plan's types, which are never `String`).
    pub fn as_ptr(&self) -> *const u8 {
        match_data!(self, v => v.as_ptr().cast())
    }

    /// Mutable pointer to the first element's bytes (dangling but non-null when empty); see
    /// [`TensorData::as_ptr`] for `String`.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        match_data!(self, v => v.as_mut_ptr().cast())
    }

    /// Element `i` widened to `f64` (`bool` as 0/1), for printing and comparisons.
    ///
    /// `i64`/`u64` values beyond 2^53 lose precision. Returns `None` when `i` is out of range
    /// and for `String` elements.
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        match_data!(self, v => v.get(i).map(|x| x.to_f64()), String(_) => None)
    }
}

/// A float written as ONNX `Cast` writes it to STRING: `"NaN"`, `"INF"` and `"-INF"` for
/// the special values, otherwise `digits` (the caller's shortest plain decimal that reads
/// back to the same value of its type, e.g. an `f32`'s `Display`: `"0.1"`, `"-2.5"`).
pub fn float_text(value: f64, digits: impl std::fmt::Display) -> String {
    if value.is_nan() {
        "NaN".to_string()
    } else if value.is_infinite() {
        if value > 0.0 { "INF" } else { "-INF" }.to_string()
    } else {
        digits.to_string()
    }
}

/// A Rust type that is the storage of one [`ElementType`]: `f32`, `f64`, `i32`, `i64`,
/// `bool`, `i8`, `u8`, `i16`, `u16`, `u32`, `u64`, [`half::f16`], [`half::bf16`], and the
/// storage-only types' newtypes ([`crate::F8E4M3FN`], ..., [`crate::U2`]).
///
/// Sealed: the set of element types is closed.
pub trait Element:
    Copy + Default + PartialEq + PartialOrd + std::fmt::Debug + sealed::Sealed + 'static
{
    /// The element type this Rust type stores.
    const ELEMENT_TYPE: ElementType;
    /// The value widened to `f64` (exact but for 64-bit integers beyond 2^53; `bool` as
    /// 0/1).
    fn to_f64(self) -> f64;
    /// Wraps a vector.
    fn into_data(v: Vec<Self>) -> TensorData;
    /// Borrows the matching variant.
    fn slice(d: &TensorData) -> Option<&[Self]>;
    /// Mutably borrows the matching variant.
    fn slice_mut(d: &mut TensorData) -> Option<&mut [Self]>;
    /// Unwraps the matching variant.
    fn from_data(d: TensorData) -> Option<Vec<Self>>;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! element {
    ($t:ty, $variant:ident, $x:ident => $to_f64:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const ELEMENT_TYPE: ElementType = ElementType::$variant;
            fn to_f64(self) -> f64 {
                let $x = self;
                $to_f64
            }
            fn into_data(v: Vec<Self>) -> TensorData {
                TensorData::$variant(v)
            }
            fn slice(d: &TensorData) -> Option<&[Self]> {
                match d {
                    TensorData::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(d: &mut TensorData) -> Option<&mut [Self]> {
                match d {
                    TensorData::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn from_data(d: TensorData) -> Option<Vec<Self>> {
                match d {
                    TensorData::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
        impl From<Vec<$t>> for TensorData {
            fn from(v: Vec<$t>) -> TensorData {
                TensorData::$variant(v)
            }
        }
    };
}

element!(f32, F32, x => f64::from(x));
element!(f64, F64, x => x);
element!(i32, I32, x => f64::from(x));
element!(i64, I64, x => x as f64);
element!(bool, Bool, x => f64::from(u8::from(x)));
element!(i8, I8, x => f64::from(x));
element!(u8, U8, x => f64::from(x));
element!(i16, I16, x => f64::from(x));
element!(u16, U16, x => f64::from(x));
element!(u32, U32, x => f64::from(x));
element!(u64, U64, x => x as f64);
element!(half::f16, F16, x => x.to_f64());
element!(half::bf16, BF16, x => x.to_f64());
element!(crate::F8E4M3FN, F8E4M3FN, x => x.to_f64());
element!(crate::F8E4M3FNUZ, F8E4M3FNUZ, x => x.to_f64());
element!(crate::F8E5M2, F8E5M2, x => x.to_f64());
element!(crate::F8E5M2FNUZ, F8E5M2FNUZ, x => x.to_f64());
element!(crate::F8E8M0, F8E8M0, x => x.to_f64());
element!(crate::F4E2M1, F4E2M1, x => x.to_f64());
element!(crate::I4, I4, x => x.to_f64());
element!(crate::U4, U4, x => x.to_f64());
element!(crate::I2, I2, x => x.to_f64());
element!(crate::U2, U2, x => x.to_f64());
