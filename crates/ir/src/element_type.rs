//! Element types of tensors (nGraph's `element::Type`; the numeric types of ONNX).

use std::fmt;

/// The element type of a tensor.
///
/// Storage is the natural little-endian layout of the Rust type: `f32`/`f64` are IEEE 754
/// binary32/binary64, `f16` is IEEE 754 binary16 and `bf16` is bfloat16 (the top 16 bits of
/// a binary32), both stored as [`half::f16`]/[`half::bf16`]; the integers are two's
/// complement (`i*`) or unsigned (`u*`) of the width in their name, and `Bool` is one byte
/// holding 0 or 1 (Rust's `bool`). The names ([`ElementType::name`]) are the short ones
/// (`f16`, `bf16`, `i8`, `u8`, ...) for ONNX's `FLOAT16`, `BFLOAT16`, `INT8`, `UINT8`, ...
///
/// ONNX's storage-only types (the 8-bit floats, FLOAT4E2M1, INT4, UINT4, INT2, UINT2) are
/// here too, one byte per element in memory (newtypes such as [`crate::F8E4M3FN`] that
/// implement [`crate::StorageElement`]); no op computes in them
/// ([`ElementType::is_storage_only`]).
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
    /// 8-bit two's complement integer (ONNX `INT8`).
    I8,
    /// 8-bit unsigned integer (ONNX `UINT8`).
    U8,
    /// 16-bit two's complement integer (ONNX `INT16`).
    I16,
    /// 16-bit unsigned integer (ONNX `UINT16`).
    U16,
    /// 32-bit unsigned integer (ONNX `UINT32`).
    U32,
    /// 64-bit unsigned integer (ONNX `UINT64`).
    U64,
    /// IEEE 754 binary16 (ONNX `FLOAT16`): 11 significant bits, largest finite 65504.
    F16,
    /// bfloat16 (ONNX `BFLOAT16`): binary32's 8-bit exponent with 8 significant bits.
    BF16,
    /// ONNX `FLOAT8E4M3FN` (storage only, see [`ElementType::is_storage_only`]).
    F8E4M3FN,
    /// ONNX `FLOAT8E4M3FNUZ` (storage only).
    F8E4M3FNUZ,
    /// ONNX `FLOAT8E5M2` (storage only).
    F8E5M2,
    /// ONNX `FLOAT8E5M2FNUZ` (storage only).
    F8E5M2FNUZ,
    /// ONNX `FLOAT8E8M0`, an exponent-only scale (storage only).
    F8E8M0,
    /// ONNX `FLOAT4E2M1` (storage only; one element per byte in memory).
    F4E2M1,
    /// ONNX `INT4` (storage only; one element per byte in memory).
    I4,
    /// ONNX `UINT4` (storage only; one element per byte in memory).
    U4,
    /// ONNX `INT2` (storage only; one element per byte in memory).
    I2,
    /// ONNX `UINT2` (storage only; one element per byte in memory).
    U2,
    /// ONNX `STRING`: UTF-8 text of any length per element, held as a Rust [`String`].
    /// Neither numeric nor storage-only: the layout ops move it, `Equal` compares it and
    /// `Convert` converts to and from it (as ONNX `Cast` does); no fused kernel lowers it.
    String,
}

impl ElementType {
    /// Every element type, in declaration order.
    pub const ALL: [ElementType; 24] = [
        ElementType::F32,
        ElementType::F64,
        ElementType::I32,
        ElementType::I64,
        ElementType::Bool,
        ElementType::I8,
        ElementType::U8,
        ElementType::I16,
        ElementType::U16,
        ElementType::U32,
        ElementType::U64,
        ElementType::F16,
        ElementType::BF16,
        ElementType::F8E4M3FN,
        ElementType::F8E4M3FNUZ,
        ElementType::F8E5M2,
        ElementType::F8E5M2FNUZ,
        ElementType::F8E8M0,
        ElementType::F4E2M1,
        ElementType::I4,
        ElementType::U4,
        ElementType::I2,
        ElementType::U2,
        ElementType::String,
    ];

    /// Size of one element in memory, in bytes (the sub-byte storage types take a byte;
    /// `String` the size of a Rust `String`, its text not counted).
    pub fn size_bytes(self) -> usize {
        match self {
            ElementType::String => std::mem::size_of::<String>(),
            ElementType::I16 | ElementType::U16 | ElementType::F16 | ElementType::BF16 => 2,
            ElementType::F32 | ElementType::I32 | ElementType::U32 => 4,
            ElementType::F64 | ElementType::I64 | ElementType::U64 => 8,
            // `Bool`, `I8`, `U8` and the storage-only types.
            _ => 1,
        }
    }

    /// `true` for the floating-point types: `F32`, `F64`, `F16`, `BF16`.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            ElementType::F32 | ElementType::F64 | ElementType::F16 | ElementType::BF16
        )
    }

    /// `true` for the integer types, signed and unsigned (not `Bool`).
    pub fn is_integer(self) -> bool {
        self.is_numeric() && !self.is_float()
    }

    /// `true` for the signed integer types `I8`, `I16`, `I32`, `I64`.
    pub fn is_signed_integer(self) -> bool {
        matches!(
            self,
            ElementType::I8 | ElementType::I16 | ElementType::I32 | ElementType::I64
        )
    }

    /// `true` for every type that arithmetic accepts (all but `Bool`, `String` and the
    /// storage-only types).
    pub fn is_numeric(self) -> bool {
        !matches!(self, ElementType::Bool | ElementType::String) && !self.is_storage_only()
    }

    /// `true` for the ONNX types that only store values: the 8-bit floats, FLOAT4E2M1 and
    /// the 4-bit and 2-bit integers. ONNX defines no arithmetic on them (no op computes in
    /// them: [`ElementType::is_numeric`] is `false`); `Convert` converts to and from them
    /// and the layout ops move them (`graphlift_ir::StorageElement`).
    pub fn is_storage_only(self) -> bool {
        matches!(
            self,
            ElementType::F8E4M3FN
                | ElementType::F8E4M3FNUZ
                | ElementType::F8E5M2
                | ElementType::F8E5M2FNUZ
                | ElementType::F8E8M0
                | ElementType::F4E2M1
                | ElementType::I4
                | ElementType::U4
                | ElementType::I2
                | ElementType::U2
        )
    }

    /// `true` for `F16` and `BF16`: the 16-bit floats, computed in `f32` and rounded once
    /// per op by the reference.
    pub fn is_half(self) -> bool {
        matches!(self, ElementType::F16 | ElementType::BF16)
    }

    /// The lower-case name used in text output, JSON and error messages (`f32`, `bf16`,
    /// `u8`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ElementType::F32 => "f32",
            ElementType::F64 => "f64",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::Bool => "bool",
            ElementType::I8 => "i8",
            ElementType::U8 => "u8",
            ElementType::I16 => "i16",
            ElementType::U16 => "u16",
            ElementType::U32 => "u32",
            ElementType::U64 => "u64",
            ElementType::F16 => "f16",
            ElementType::BF16 => "bf16",
            ElementType::F8E4M3FN => "f8e4m3fn",
            ElementType::F8E4M3FNUZ => "f8e4m3fnuz",
            ElementType::F8E5M2 => "f8e5m2",
            ElementType::F8E5M2FNUZ => "f8e5m2fnuz",
            ElementType::F8E8M0 => "f8e8m0",
            ElementType::F4E2M1 => "f4e2m1",
            ElementType::I4 => "i4",
            ElementType::U4 => "u4",
            ElementType::I2 => "i2",
            ElementType::U2 => "u2",
            ElementType::String => "string",
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

#[cfg(test)]
mod tests {
    use super::ElementType;

    #[test]
    fn names_round_trip_and_classes_partition() {
        for t in ElementType::ALL {
            assert_eq!(ElementType::from_name(t.name()), Some(t));
            let classes = [
                t.is_float(),
                t.is_integer(),
                t == ElementType::Bool,
                t.is_storage_only(),
                t == ElementType::String,
            ];
            assert_eq!(classes.iter().filter(|&&c| c).count(), 1, "{t}");
        }
        assert!(ElementType::U8.is_integer() && !ElementType::U8.is_signed_integer());
        assert!(ElementType::BF16.is_float() && ElementType::BF16.is_half());
        assert_eq!(ElementType::BF16.size_bytes(), 2);
        assert!(!ElementType::F8E4M3FN.is_numeric() && !ElementType::I4.is_integer());
        assert_eq!(ElementType::U2.size_bytes(), 1);
    }
}
