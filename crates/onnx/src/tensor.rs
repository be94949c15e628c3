//! `TensorProto` <-> [`TensorData`]: initializers, `Constant` values and the `.pb` tensor
//! files of the ONNX backend tests.

use graphlift_ir::{
    bf16, f16, match_data, with_element_type, Element, ElementType, Shape, StorageElement,
    TensorData,
};
use prost::Message;

use crate::error::{NodeRef, OnnxError};
use crate::proto::{data_location, data_type, TensorProto};

/// A tensor read from a serialized `TensorProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedTensor {
    /// The tensor's `name`, if it has a non-empty one.
    pub name: Option<String>,
    /// The elements, row-major; exactly `shape.element_count()` of them.
    pub data: TensorData,
    /// The shape (`dims`).
    pub shape: Shape,
}

/// Reads a serialized ONNX `TensorProto` (e.g. `test_data_set_0/input_0.pb` of the ONNX
/// backend tests).
///
/// Data may be in `raw_data` (little-endian) or in the typed field of its data type; every
/// type but COMPLEX is supported (FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT8/16/32/64,
/// UINT8/16/32/64, BOOL, the FLOAT8, FLOAT4E2M1, INT4, UINT4, INT2 and UINT2 types,
/// unpacked to one element per byte (the 4- and 2-bit ones packed as the spec lays them
/// out), and STRING, whose elements are UTF-8 byte strings in `string_data`).
///
/// # Errors
/// [`OnnxError::Protobuf`] for bytes that are not a `TensorProto`;
/// [`OnnxError::UnsupportedElementType`] naming the ONNX data type (e.g. `UINT8`) for other
/// types; [`OnnxError::InvalidModel`] for negative dims, data that does not fill the shape,
/// external or segmented data, and a STRING element that is not UTF-8.
pub fn read_tensor_proto(bytes: &[u8]) -> Result<NamedTensor, OnnxError> {
    let t = TensorProto::decode(bytes).map_err(|e| OnnxError::Protobuf {
        path: None,
        message_type: "TensorProto",
        message: e.to_string(),
    })?;
    let at = NodeRef::item("tensor", &t.name);
    let (data, shape) = tensor_from_proto(&t, &at)?;
    Ok(NamedTensor {
        name: (!t.name.is_empty()).then(|| t.name.clone()),
        data,
        shape,
    })
}

/// Serializes a tensor as an ONNX `TensorProto` with `dims`, `data_type`, `name` (omitted when
/// empty) and little-endian `raw_data` (BOOL as one byte per element, FLOAT16 and BFLOAT16
/// as their bit patterns, the 4- and 2-bit types packed; STRING in `string_data`, which
/// ONNX requires for it), as ONNX's own tools write it. [`read_tensor_proto`] reads it back.
///
/// `data` should hold `shape.element_count()` elements; the function does not check it.
pub fn encode_tensor_proto(name: &str, data: &TensorData, shape: &Shape) -> Vec<u8> {
    tensor_to_proto(name, data, shape).encode_to_vec()
}

/// The `TensorProto` message for a tensor (see [`encode_tensor_proto`]).
pub fn tensor_to_proto(name: &str, data: &TensorData, shape: &Shape) -> TensorProto {
    let (raw, strings) = match data {
        TensorData::String(v) => (
            Vec::new(),
            v.iter().map(|s| s.as_bytes().to_vec()).collect(),
        ),
        _ => (
            crate::packing::pack(data).unwrap_or_else(|| {
                let mut raw = Vec::with_capacity(data.len() * data.element_type().size_bytes());
                match_data!(data, v => v.iter().for_each(|&x| x.put(&mut raw)), String(_) => ());
                raw
            }),
            Vec::new(),
        ),
    };
    TensorProto {
        // Extents beyond i64::MAX cannot be allocated; saturate rather than wrap.
        dims: shape
            .dims()
            .iter()
            .map(|&d| i64::try_from(d).unwrap_or(i64::MAX))
            .collect(),
        data_type: onnx_data_type(data.element_type()),
        name: name.to_string(),
        raw_data: raw,
        string_data: strings,
        ..Default::default()
    }
}

/// The ONNX data type code of a graphlift element type.
pub fn onnx_data_type(t: ElementType) -> i32 {
    match t {
        ElementType::F32 => data_type::FLOAT,
        ElementType::F64 => data_type::DOUBLE,
        ElementType::I32 => data_type::INT32,
        ElementType::I64 => data_type::INT64,
        ElementType::Bool => data_type::BOOL,
        ElementType::I8 => data_type::INT8,
        ElementType::U8 => data_type::UINT8,
        ElementType::I16 => data_type::INT16,
        ElementType::U16 => data_type::UINT16,
        ElementType::U32 => data_type::UINT32,
        ElementType::U64 => data_type::UINT64,
        ElementType::F16 => data_type::FLOAT16,
        ElementType::BF16 => data_type::BFLOAT16,
        ElementType::F8E4M3FN => data_type::FLOAT8E4M3FN,
        ElementType::F8E4M3FNUZ => data_type::FLOAT8E4M3FNUZ,
        ElementType::F8E5M2 => data_type::FLOAT8E5M2,
        ElementType::F8E5M2FNUZ => data_type::FLOAT8E5M2FNUZ,
        ElementType::F8E8M0 => data_type::FLOAT8E8M0,
        ElementType::F4E2M1 => data_type::FLOAT4E2M1,
        ElementType::I4 => data_type::INT4,
        ElementType::U4 => data_type::UINT4,
        ElementType::I2 => data_type::INT2,
        ElementType::U2 => data_type::UINT2,
        ElementType::String => data_type::STRING,
    }
}

/// The spec's name of a data type code, or `data type <code>` for an unknown code.
pub(crate) fn data_type_name(code: i32) -> String {
    data_type::name(code).map_or_else(|| format!("data type {code}"), str::to_string)
}

/// The graphlift element type of an ONNX data type code.
///
/// # Errors
/// [`OnnxError::UnsupportedElementType`] at `at` for a type graphlift has no element type
/// for (COMPLEX64, COMPLEX128, UNDEFINED).
pub(crate) fn element_type(code: i32, at: &NodeRef) -> Result<ElementType, OnnxError> {
    ElementType::ALL
        .into_iter()
        .find(|&t| onnx_data_type(t) == code)
        .ok_or_else(|| OnnxError::UnsupportedElementType {
            at: at.clone(),
            data_type: data_type_name(code),
        })
}

/// Converts ONNX dims to a [`Shape`], checking that no extent is negative and that the
/// element count fits in `usize`.
pub(crate) fn shape_from_dims(dims: &[i64], at: &NodeRef) -> Result<Shape, OnnxError> {
    let invalid = |message: String| OnnxError::InvalidModel {
        at: at.clone(),
        message,
    };
    let dims = dims
        .iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| invalid(format!("negative dimension {d} in dims {dims:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let shape = Shape::new(dims);
    shape
        .element_count()
        .map_err(|_| invalid(format!("shape {shape}: element count overflows")))?;
    Ok(shape)
}

/// Decodes a `TensorProto`'s data into a [`TensorData`] and its [`Shape`].
///
/// # Errors
/// As [`read_tensor_proto`], located at `at`.
pub(crate) fn tensor_from_proto(
    t: &TensorProto,
    at: &NodeRef,
) -> Result<(TensorData, Shape), OnnxError> {
    let invalid = |message: String| OnnxError::InvalidModel {
        at: at.clone(),
        message,
    };
    let et = element_type(t.data_type, at)?;
    if t.data_location == data_location::EXTERNAL || !t.external_data.is_empty() {
        return Err(invalid(
            "tensor data is stored externally, which graphlift does not read".into(),
        ));
    }
    if t.segment.is_some() {
        return Err(invalid("segmented tensors are not supported".into()));
    }
    let shape = shape_from_dims(&t.dims, at)?;
    let n = shape.element_count().map_err(|e| invalid(e.to_string()))?;
    let type_name = data_type_name(t.data_type);
    let length_error = |what: &str, len: usize| {
        invalid(format!(
            "{what} holds {len} elements; shape {shape} of {type_name} needs {n}"
        ))
    };
    if et == ElementType::String {
        return strings_from_proto(t, n, &invalid, &length_error).map(|data| (data, shape));
    }
    if let Some(bytes) = crate::packing::packed_len(et, n) {
        return crate::packing::from_proto(t, et, n, bytes, &invalid).map(|data| (data, shape));
    }
    let data = if !t.raw_data.is_empty() || n == 0 {
        let raw = &t.raw_data;
        let size = et.size_bytes();
        if !raw.len().is_multiple_of(size) || raw.len() / size != n {
            return Err(invalid(format!(
                "raw_data has {} bytes; shape {shape} of {type_name} needs {} bytes",
                raw.len(),
                n.saturating_mul(size)
            )));
        }
        decode_raw(et, raw)
    } else {
        typed_data(t, et, n, &length_error)?
    };
    Ok((data, shape))
}

/// A STRING tensor's `n` elements from `string_data`, each checked to be UTF-8 (ONNX
/// forbids `raw_data` for STRING).
fn strings_from_proto(
    t: &TensorProto,
    n: usize,
    invalid: &dyn Fn(String) -> OnnxError,
    length_error: &dyn Fn(&str, usize) -> OnnxError,
) -> Result<TensorData, OnnxError> {
    if !t.raw_data.is_empty() {
        return Err(invalid(
            "a STRING tensor keeps its elements in string_data, not raw_data".into(),
        ));
    }
    let bytes = check_len(&t.string_data, n, "string_data", length_error)?;
    let strings = bytes.iter().enumerate().map(|(k, b)| {
        String::from_utf8(b.clone())
            .map_err(|e| invalid(format!("string_data element {k} is not UTF-8: {e}")))
    });
    strings.collect::<Result<_, _>>().map(TensorData::String)
}

fn check_len<'a, T>(
    v: &'a [T],
    n: usize,
    what: &str,
    err: &dyn Fn(&str, usize) -> OnnxError,
) -> Result<&'a [T], OnnxError> {
    if v.len() == n {
        Ok(v)
    } else {
        Err(err(what, v.len()))
    }
}

/// The elements of `t`'s typed field for `et`: `float_data` (FLOAT), `double_data`
/// (DOUBLE), `int64_data` (INT64), `uint64_data` (UINT32, UINT64, truncated to the type),
/// `int32_data` (INT32, BOOL, the 8- and 16-bit integers truncated to the type, and
/// FLOAT16/BFLOAT16 as their bit patterns in the low 16 bits).
fn typed_data(
    t: &TensorProto,
    et: ElementType,
    n: usize,
    length_error: &dyn Fn(&str, usize) -> OnnxError,
) -> Result<TensorData, OnnxError> {
    use num_traits::AsPrimitive;
    fn cut<S: AsPrimitive<T>, T: Element>(v: &[S]) -> TensorData {
        T::into_data(v.iter().map(|&x| x.as_()).collect())
    }
    let ints = || check_len(&t.int32_data, n, "int32_data", length_error);
    let uints = || check_len(&t.uint64_data, n, "uint64_data", length_error);
    let halves = |v: &[i32]| v.iter().map(|&x| x as u16).collect::<Vec<_>>();
    Ok(match et {
        ElementType::F32 => {
            TensorData::F32(check_len(&t.float_data, n, "float_data", length_error)?.to_vec())
        }
        ElementType::F64 => {
            TensorData::F64(check_len(&t.double_data, n, "double_data", length_error)?.to_vec())
        }
        ElementType::I64 => {
            TensorData::I64(check_len(&t.int64_data, n, "int64_data", length_error)?.to_vec())
        }
        ElementType::Bool => TensorData::Bool(ints()?.iter().map(|&x| x != 0).collect()),
        ElementType::I32 => cut::<i32, i32>(ints()?),
        ElementType::I8 => cut::<i32, i8>(ints()?),
        ElementType::U8 => cut::<i32, u8>(ints()?),
        ElementType::I16 => cut::<i32, i16>(ints()?),
        ElementType::U16 => cut::<i32, u16>(ints()?),
        ElementType::U32 => cut::<u64, u32>(uints()?),
        ElementType::U64 => cut::<u64, u64>(uints()?),
        ElementType::F16 => {
            TensorData::F16(halves(ints()?).into_iter().map(f16::from_bits).collect())
        }
        ElementType::BF16 => {
            TensorData::BF16(halves(ints()?).into_iter().map(bf16::from_bits).collect())
        }
        // The storage-only types are read packed (`crate::packing::from_proto`), STRING from
        // `string_data` (`strings_from_proto`).
        other => TensorData::zeros(other, 0),
    })
}

/// An element's little-endian bytes (`bool`: one byte, 0 or 1), as `raw_data` holds them.
trait Raw: Sized {
    /// Appends the bytes.
    fn put(self, out: &mut Vec<u8>);
    /// Reads one element from exactly its size in bytes.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! raw {
    ($($t:ty),*) => {$(
        impl Raw for $t {
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> $t {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_le_bytes(b)
            }
        }
    )*};
}
raw!(f32, f64, i32, i64, i8, u8, i16, u16, u32, u64, f16, bf16);

/// The storage-only types: a byte each (their bit pattern); the sub-byte ones are packed
/// before ([`crate::packing`]).
macro_rules! raw_storage {
    ($($t:ident),*) => {$(
        impl Raw for graphlift_ir::$t {
            fn put(self, out: &mut Vec<u8>) {
                out.push(self.to_bits());
            }
            fn get(bytes: &[u8]) -> Self {
                Self::from_bits(bytes.first().copied().unwrap_or(0))
            }
        }
    )*};
}
raw_storage!(F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0, F4E2M1, I4, U4, I2, U2);

impl Raw for bool {
    fn put(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }
    fn get(bytes: &[u8]) -> bool {
        bytes.iter().any(|&b| b != 0)
    }
}

/// Little-endian raw bytes (length already checked to be a multiple of the element size;
/// STRING never comes here: `strings_from_proto`).
fn decode_raw(et: ElementType, raw: &[u8]) -> TensorData {
    with_element_type!(et, T => {
        T::into_data(raw.chunks_exact(et.size_bytes()).map(T::get).collect())
    }, String => TensorData::String(Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: TensorData, shape: &[usize]) {
        let shape = Shape::from(shape);
        let bytes = encode_tensor_proto("t", &data, &shape);
        let back = read_tensor_proto(&bytes).unwrap();
        assert_eq!(back.name.as_deref(), Some("t"));
        assert_eq!(back.shape, shape);
        // Floats compare bitwise, so NaN and -0 round-trip exactly.
        assert!(back.data.same_bits(&data), "{:?} vs {data:?}", back.data);
    }

    #[test]
    fn round_trip_every_element_type() {
        round_trip(
            TensorData::F32(vec![
                1.5,
                -0.0,
                f32::NAN,
                f32::INFINITY,
                f32::MIN_POSITIVE / 2.0,
                7.0,
            ]),
            &[2, 3],
        );
        round_trip(
            TensorData::F64(vec![1e300, -0.0, f64::NAN, -f64::INFINITY]),
            &[4],
        );
        round_trip(TensorData::I32(vec![i32::MIN, -1, 0, i32::MAX]), &[2, 2]);
        round_trip(
            TensorData::I64(vec![i64::MIN, -1, 0, i64::MAX, 42, 7]),
            &[3, 1, 2],
        );
        round_trip(TensorData::Bool(vec![true, false, true]), &[3]);
        // 0-d and zero-size shapes.
        round_trip(TensorData::F32(vec![3.25]), &[]);
        round_trip(TensorData::I64(vec![]), &[2, 0]);
        round_trip(TensorData::Bool(vec![]), &[0]);
        round_trip(TensorData::I8(vec![i8::MIN, -1, i8::MAX]), &[3]);
        round_trip(TensorData::U8(vec![0, 255]), &[2]);
        round_trip(TensorData::I16(vec![i16::MIN, 9]), &[2]);
        round_trip(TensorData::U16(vec![u16::MAX]), &[1]);
        round_trip(TensorData::U32(vec![u32::MAX, 3]), &[2]);
        round_trip(TensorData::U64(vec![u64::MAX]), &[1]);
        round_trip(
            TensorData::F16(vec![f16::from_f32(-1.5), f16::INFINITY, f16::from_bits(1)]),
            &[3],
        );
        round_trip(
            TensorData::BF16(vec![bf16::from_f32(3.0e38), bf16::NEG_ZERO]),
            &[2],
        );
    }

    #[test]
    fn no_name_reads_as_none() {
        let bytes = encode_tensor_proto("", &TensorData::I32(vec![1]), &Shape::new([1]));
        assert_eq!(read_tensor_proto(&bytes).unwrap().name, None);
    }

    #[test]
    fn typed_fields_are_read() {
        let t = TensorProto {
            dims: vec![2],
            data_type: data_type::BOOL,
            int32_data: vec![0, 5],
            ..Default::default()
        };
        let got = read_tensor_proto(&t.encode_to_vec()).unwrap();
        assert_eq!(got.data, TensorData::Bool(vec![false, true]));
        let t = TensorProto {
            dims: vec![1, 2],
            data_type: data_type::DOUBLE,
            double_data: vec![0.5, -2.0],
            ..Default::default()
        };
        assert_eq!(
            read_tensor_proto(&t.encode_to_vec()).unwrap().data,
            TensorData::F64(vec![0.5, -2.0])
        );
    }

    #[test]
    fn narrow_types_read_from_their_typed_fields() {
        let t = TensorProto {
            dims: vec![3],
            data_type: data_type::FLOAT16,
            // Bit patterns in int32_data: 1.0, -2.0, +inf.
            int32_data: vec![0x3c00, 0xc000, 0x7c00],
            ..Default::default()
        };
        let want = [1.0, -2.0, f32::INFINITY].map(f16::from_f32).to_vec();
        assert_eq!(
            read_tensor_proto(&t.encode_to_vec()).unwrap().data,
            TensorData::F16(want)
        );
        let t = TensorProto {
            dims: vec![2],
            data_type: data_type::UINT8,
            int32_data: vec![255, 7],
            ..Default::default()
        };
        assert_eq!(
            read_tensor_proto(&t.encode_to_vec()).unwrap().data,
            TensorData::U8(vec![255, 7])
        );
        let t = TensorProto {
            dims: vec![1],
            data_type: data_type::UINT64,
            uint64_data: vec![u64::MAX],
            ..Default::default()
        };
        assert_eq!(
            read_tensor_proto(&t.encode_to_vec()).unwrap().data,
            TensorData::U64(vec![u64::MAX])
        );
    }

    #[test]
    fn unsupported_type_is_named() {
        let t = TensorProto {
            dims: vec![2],
            data_type: data_type::COMPLEX64,
            raw_data: vec![1, 2],
            ..Default::default()
        };
        let e = read_tensor_proto(&t.encode_to_vec()).unwrap_err();
        assert!(
            matches!(&e, OnnxError::UnsupportedElementType { data_type, .. } if data_type == "COMPLEX64"),
            "{e}"
        );
        assert!(e.to_string().contains("COMPLEX64"), "{e}");
    }

    #[test]
    fn data_that_does_not_fill_the_shape_is_an_error() {
        let t = TensorProto {
            dims: vec![3],
            data_type: data_type::FLOAT,
            raw_data: vec![0; 8],
            ..Default::default()
        };
        let e = read_tensor_proto(&t.encode_to_vec()).unwrap_err();
        assert!(e.to_string().contains("raw_data has 8 bytes"), "{e}");
        let t = TensorProto {
            dims: vec![2, -1],
            data_type: data_type::FLOAT,
            ..Default::default()
        };
        let e = read_tensor_proto(&t.encode_to_vec()).unwrap_err();
        assert!(e.to_string().contains("negative dimension"), "{e}");
        let t = TensorProto {
            dims: vec![i64::MAX, i64::MAX],
            data_type: data_type::FLOAT,
            ..Default::default()
        };
        let e = read_tensor_proto(&t.encode_to_vec()).unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }

    #[test]
    fn truncated_bytes_are_a_protobuf_error() {
        let bytes = encode_tensor_proto("t", &TensorData::F32(vec![1.0, 2.0]), &Shape::new([2]));
        for cut in 1..bytes.len() {
            // Every prefix either decodes to a shorter (then rejected) tensor or fails to
            // decode; none panics.
            let _ = read_tensor_proto(&bytes[..cut]);
        }
        let e = read_tensor_proto(&bytes[..bytes.len() - 1]).unwrap_err();
        assert!(
            matches!(
                e,
                OnnxError::Protobuf {
                    message_type: "TensorProto",
                    ..
                }
            ),
            "{e}"
        );
    }
}
