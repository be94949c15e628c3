//! Typed element storage shared by constants (IR) and tensors (runtime).

use crate::ElementType;

/// A flat, row-major vector of elements of one [`ElementType`].
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
}

impl TensorData {
    /// `len` zero elements (`false` for `Bool`).
    pub fn zeros(element_type: ElementType, len: usize) -> TensorData {
        match element_type {
            ElementType::F32 => TensorData::F32(vec![0.0; len]),
            ElementType::F64 => TensorData::F64(vec![0.0; len]),
            ElementType::I32 => TensorData::I32(vec![0; len]),
            ElementType::I64 => TensorData::I64(vec![0; len]),
            ElementType::Bool => TensorData::Bool(vec![false; len]),
        }
    }

    /// Copies `src` into `self` in place (no allocation). Returns `false`, copying nothing,
    /// when the element types or lengths differ.
    pub fn copy_from(&mut self, src: &TensorData) -> bool {
        match (self, src) {
            (TensorData::F32(d), TensorData::F32(s)) if d.len() == s.len() => d.copy_from_slice(s),
            (TensorData::F64(d), TensorData::F64(s)) if d.len() == s.len() => d.copy_from_slice(s),
            (TensorData::I32(d), TensorData::I32(s)) if d.len() == s.len() => d.copy_from_slice(s),
            (TensorData::I64(d), TensorData::I64(s)) if d.len() == s.len() => d.copy_from_slice(s),
            (TensorData::Bool(d), TensorData::Bool(s)) if d.len() == s.len() => {
                d.copy_from_slice(s)
            }
            _ => return false,
        }
        true
    }

    /// The element type of the stored values.
    pub fn element_type(&self) -> ElementType {
        match self {
            TensorData::F32(_) => ElementType::F32,
            TensorData::F64(_) => ElementType::F64,
            TensorData::I32(_) => ElementType::I32,
            TensorData::I64(_) => ElementType::I64,
            TensorData::Bool(_) => ElementType::Bool,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::F64(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::I64(v) => v.len(),
            TensorData::Bool(v) => v.len(),
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

    /// The elements as a vector of `T` (no copy), or `None` if `T` is not the stored element
    /// type.
    pub fn into_vec<T: Element>(self) -> Option<Vec<T>> {
        T::from_data(self)
    }

    /// Pointer to the first element's bytes (dangling but non-null when empty).
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            TensorData::F32(v) => v.as_ptr().cast(),
            TensorData::F64(v) => v.as_ptr().cast(),
            TensorData::I32(v) => v.as_ptr().cast(),
            TensorData::I64(v) => v.as_ptr().cast(),
            TensorData::Bool(v) => v.as_ptr().cast(),
        }
    }

    /// Mutable pointer to the first element's bytes (dangling but non-null when empty).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            TensorData::F32(v) => v.as_mut_ptr().cast(),
            TensorData::F64(v) => v.as_mut_ptr().cast(),
            TensorData::I32(v) => v.as_mut_ptr().cast(),
            TensorData::I64(v) => v.as_mut_ptr().cast(),
            TensorData::Bool(v) => v.as_mut_ptr().cast(),
        }
    }

    /// Element `i` widened to `f64` (`bool` as 0/1), for printing and comparisons.
    ///
    /// `i64` values beyond 2^53 lose precision. Returns `None` when `i` is out of range.
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        Some(match self {
            TensorData::F32(v) => f64::from(*v.get(i)?),
            TensorData::F64(v) => *v.get(i)?,
            TensorData::I32(v) => f64::from(*v.get(i)?),
            TensorData::I64(v) => *v.get(i)? as f64,
            TensorData::Bool(v) => f64::from(u8::from(*v.get(i)?)),
        })
    }
}

/// A Rust type that is the storage of one [`ElementType`]: `f32`, `f64`, `i32`, `i64`, `bool`.
///
/// Sealed: the set of element types is closed.
pub trait Element: Copy + Default + PartialEq + std::fmt::Debug + sealed::Sealed + 'static {
    /// The element type this Rust type stores.
    const ELEMENT_TYPE: ElementType;
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
    ($t:ty, $variant:ident) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const ELEMENT_TYPE: ElementType = ElementType::$variant;
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

element!(f32, F32);
element!(f64, F64);
element!(i32, I32);
element!(i64, I64);
element!(bool, Bool);
