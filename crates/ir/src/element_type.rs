//! Element types of tensors (nGraph's `element::Type`).

use std::fmt;

/// The element type of a tensor.
///
/// Storage is the natural little-endian layout of the Rust type: `f32`/`f64` are IEEE 754
/// binary32/binary64, `i32`/`i64` are two's complement, and `Bool` is one byte holding 0 or 1
/// (Rust's `bool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ElementType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// 32-bit two's complement integer.
    I32,
    /// 64-bit two's complement integer.
    I64,
    /// Boolean, one byte per element (0 = false, 1 = true).
    Bool,
}

impl ElementType {
    /// Every element type, in declaration order.
    pub const ALL: [ElementType; 5] = [
        ElementType::F32,
        ElementType::F64,
        ElementType::I32,
        ElementType::I64,
        ElementType::Bool,
    ];

    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            ElementType::F32 | ElementType::I32 => 4,
            ElementType::F64 | ElementType::I64 => 8,
            ElementType::Bool => 1,
        }
    }

    /// `true` for `F32` and `F64`.
    pub fn is_float(self) -> bool {
        matches!(self, ElementType::F32 | ElementType::F64)
    }

    /// `true` for `I32` and `I64`.
    pub fn is_integer(self) -> bool {
        matches!(self, ElementType::I32 | ElementType::I64)
    }

    /// `true` for every type that arithmetic accepts (all but `Bool`).
    pub fn is_numeric(self) -> bool {
        self != ElementType::Bool
    }

    /// The lower-case name used in text output, JSON and error messages (`f32`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::Bool => "bool",
        }
    }

    /// Parses a name produced by [`ElementType::name`].
    pub fn from_name(name: &str) -> Option<ElementType> {
        ElementType::ALL.into_iter().find(|t| t.name() == name)
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
