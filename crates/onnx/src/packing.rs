//! The storage-only element types in a `TensorProto` (onnx.proto, `TensorProto.raw_data`
//! and `int32_data`): FLOAT8 elements take a byte each; INT4, UINT4 and FLOAT4E2M1 pack two
//! to a byte, INT2 and UINT2 four, the first element in the lowest bits, the last byte
//! padded with zeros. `int32_data` holds the same packed bytes, one per entry. In memory
//! graphlift keeps one element per byte ([`graphlift_ir::StorageElement`]).

use graphlift_ir::{storage_bit_width, storage_bits, storage_from_bits, ElementType, TensorData};

use crate::error::OnnxError;
use crate::proto::TensorProto;

/// The number of packed bytes that hold `n` elements of the storage-only type `t`.
pub(crate) fn packed_len(t: ElementType, n: usize) -> Option<usize> {
    let width = storage_bit_width(t)? as usize;
    Some(n.saturating_mul(width).div_ceil(8))
}

/// `data`'s elements packed as `raw_data` holds them; `None` when `data` is not of a
/// storage-only type.
pub(crate) fn pack(data: &TensorData) -> Option<Vec<u8>> {
    let t = data.element_type();
    let width = storage_bit_width(t)? as usize;
    let bits = storage_bits(data)?;
    let per_byte = 8 / width;
    let mut out = vec![0u8; packed_len(t, bits.len())?];
    for (i, b) in bits.into_iter().enumerate() {
        out[i / per_byte] |= b << (width * (i % per_byte));
    }
    Some(out)
}

/// `n` elements of the storage-only type `t` unpacked from `bytes`, which must be exactly
/// [`packed_len`] long; `None` otherwise or when `t` is not storage-only.
pub(crate) fn unpack(t: ElementType, bytes: &[u8], n: usize) -> Option<TensorData> {
    let width = storage_bit_width(t)? as usize;
    if bytes.len() != packed_len(t, n)? {
        return None;
    }
    let per_byte = 8 / width;
    let mask = ((1u16 << width) - 1) as u8;
    let bits = (0..n).map(|i| (bytes[i / per_byte] >> (width * (i % per_byte))) & mask);
    storage_from_bits(t, bits)
}

/// The elements of a storage-only type `et` from `raw_data`, or else from `int32_data` (one
/// packed byte per entry), either holding exactly `bytes` bytes.
pub(crate) fn from_proto(
    t: &TensorProto,
    et: ElementType,
    n: usize,
    bytes: usize,
    invalid: &dyn Fn(String) -> OnnxError,
) -> Result<TensorData, OnnxError> {
    let (field, packed) = if !t.raw_data.is_empty() || n == 0 {
        ("raw_data", t.raw_data.clone())
    } else {
        let ints = t.int32_data.iter().map(|&x| x as u8).collect();
        ("int32_data", ints)
    };
    unpack(et, &packed, n).ok_or_else(|| {
        invalid(format!(
            "{field} has {} bytes; {n} elements of {} need {bytes} bytes",
            packed.len(),
            crate::tensor::data_type_name(t.data_type)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{data_type, TensorProto};
    use crate::tensor::{encode_tensor_proto, read_tensor_proto};
    use graphlift_ir::{Shape, F4E2M1, F8E5M2, I2, I4, U2, U4};
    use prost::Message;

    #[test]
    fn sub_byte_types_pack_low_bits_first_with_odd_counts() {
        let i4 = TensorData::I4(vec![I4(-8), I4(7), I4(-1)]);
        assert_eq!(pack(&i4), Some(vec![0x78, 0x0f]));
        assert_eq!(unpack(ElementType::I4, &[0x78, 0x0f], 3), Some(i4.clone()));
        let u2 = TensorData::U2(vec![U2(1), U2(2), U2(3), U2(0), U2(3)]);
        assert_eq!(pack(&u2), Some(vec![0b00_11_10_01, 0b11]));
        assert_eq!(unpack(ElementType::U2, &[0x39, 0x03], 5), Some(u2.clone()));
        for data in [
            TensorData::U4((0..15).map(U4).collect()),
            TensorData::F4E2M1((0..7).map(F4E2M1).collect()),
            TensorData::I2(vec![I2(-2), I2(-1), I2(0), I2(1), I2(-2), I2(1), I2(0)]),
            TensorData::F8E5M2(vec![F8E5M2(0x7c), F8E5M2(0xfe), F8E5M2(0)]),
        ] {
            let packed = pack(&data).unwrap();
            assert_eq!(
                Some(packed.len()),
                packed_len(data.element_type(), data.len())
            );
            assert_eq!(unpack(data.element_type(), &packed, data.len()), Some(data));
        }
        // Through a TensorProto: raw_data, and int32_data holding one packed byte each.
        let shape = Shape::from([5]);
        let bytes = encode_tensor_proto("q", &u2, &shape);
        let back = read_tensor_proto(&bytes).unwrap();
        assert_eq!((back.data, back.shape), (u2, shape));
        let t = TensorProto {
            dims: vec![3],
            data_type: data_type::INT4,
            int32_data: vec![0x78, 0x0f],
            ..Default::default()
        };
        assert_eq!(read_tensor_proto(&t.encode_to_vec()).unwrap().data, i4);
        let short = TensorProto {
            int32_data: vec![0x78],
            ..t
        };
        let e = read_tensor_proto(&short.encode_to_vec())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("int32_data has 1 bytes; 3 elements of INT4 need 2"),
            "{e}"
        );
        // The wrong number of bytes, and a type that is not storage-only.
        assert_eq!(unpack(ElementType::I4, &[0x78], 3), None);
        assert_eq!(pack(&TensorData::U8(vec![1])), None);
    }
}
