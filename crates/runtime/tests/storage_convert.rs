//! The reference `Convert` to and from the storage-only types (ONNX `Cast` with its
//! defaults): integers keep their low bits, the 8-bit floats round and saturate, and every
//! value comes back out exactly.

use graphlift_ir::{ElementType, TensorData, F4E2M1, F8E4M3FN, F8E5M2, F8E8M0, I2, I4, U4};

/// The reference conversion, which fails only for strings that are not numbers.
fn convert(x: &TensorData, to: ElementType) -> TensorData {
    graphlift_runtime::reference::convert(x, to).expect("a numeric conversion")
}

#[test]
fn integers_keep_the_low_bits_of_every_width() {
    let wide = TensorData::U64(vec![u64::MAX, 0x17, 8]);
    assert_eq!(
        convert(&wide, ElementType::I4),
        TensorData::I4(vec![I4(-1), I4(7), I4(-8)])
    );
    let signed = TensorData::I64(vec![i64::MIN, -3, 200]);
    assert_eq!(
        convert(&signed, ElementType::U4),
        TensorData::U4(vec![U4(0), U4(13), U4(8)])
    );
    assert_eq!(
        convert(&TensorData::Bool(vec![true, false]), ElementType::I2),
        TensorData::I2(vec![I2(1), I2(0)])
    );
    // Out of INT4, through i8 and back: the value, sign-extended, then wrapped.
    let back = convert(&TensorData::I4(vec![I4(-8), I4(7)]), ElementType::U8);
    assert_eq!(back, TensorData::U8(vec![248, 7]));
}

#[test]
fn floats_round_to_nearest_even_and_saturate() {
    // u64::MAX is far above E4M3FN's largest finite 448, and positive; 17 and 19 are ties
    // between multiples of 2 (the spacing at 16): to 16 and 20, the even fractions.
    let big = TensorData::U64(vec![u64::MAX, 17, 19]);
    assert_eq!(
        convert(&big, ElementType::F8E4M3FN),
        TensorData::F8E4M3FN(vec![F8E4M3FN(0x7e), F8E4M3FN(0x58), F8E4M3FN(0x5a)])
    );
    let x = TensorData::F32(vec![f32::INFINITY, -1e9, 2.5, f32::NAN]);
    let e5 = convert(&x, ElementType::F8E5M2);
    assert_eq!(e5.get_f64(0), Some(57344.0));
    assert_eq!(e5.get_f64(1), Some(-57344.0));
    assert_eq!(e5.get_f64(2), Some(2.5));
    assert!(e5.get_f64(3).is_some_and(f64::is_nan));
    assert_eq!(
        convert(&x, ElementType::F4E2M1),
        TensorData::F4E2M1(vec![F4E2M1(0x7), F4E2M1(0xf), F4E2M1(0x4), F4E2M1(0x8)])
    );
    // E8M0 rounds up: 3 to 4 = 2^(129 - 127); 2 stays.
    assert_eq!(
        convert(&TensorData::F64(vec![3.0, 2.0]), ElementType::F8E8M0),
        TensorData::F8E8M0(vec![F8E8M0(129), F8E8M0(128)])
    );
    // The floats among them to integers: truncated toward zero, NaN to 0.
    assert_eq!(
        convert(&e5, ElementType::I32),
        TensorData::I32(vec![57344, -57344, 2, 0])
    );
}

#[test]
fn every_float8_value_widens_exactly() {
    let all = TensorData::F8E5M2((0..=255).map(F8E5M2).collect());
    let wide = convert(&all, ElementType::F64);
    let half = convert(&all, ElementType::F16);
    for i in 0..256 {
        let (w, h) = (wide.get_f64(i).unwrap(), half.get_f64(i).unwrap());
        assert!(w == h || (w.is_nan() && h.is_nan()), "{i}: {w} vs {h}");
    }
    // And back: every E5M2 value is an f16, so the round trip is the identity but on the 6
    // NaN patterns and the 2 infinities, which `Convert` (saturating) takes to ±57344.
    let again = convert(&half, ElementType::F8E5M2);
    let same = (0..256)
        .filter(|&i| again.get_f64(i) == all.get_f64(i))
        .count();
    assert_eq!(same, 256 - 6 - 2);
    assert_eq!(again.get_f64(0x7c), Some(57344.0));
}
