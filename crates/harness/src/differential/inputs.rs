//! Deterministic inputs of a Function under test: special values first, then spread values
//! of each element type.

use graphlift_ir::{ElementType, Function, TensorData};
use graphlift_runtime::reference::convert;
use graphlift_runtime::Tensor;

/// The special `f32` values inputs are drawn from a third of the time: signed zeros, ±1,
/// halves (round-to-even cases), ±inf, NaN, a denormal, the extremes, a value past `i32`'s
/// range, and the smallest normal.
pub const SPECIAL_F32: [f32; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.5,
    -2.5,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1e-40,
    f32::MAX,
    f32::MIN,
    3e9,
    -7.0,
    f32::MIN_POSITIVE,
];

/// `n` input values of type `t` from `seed` (xorshift64): a third special values
/// ([`SPECIAL_F32`]; `0, ±1, MIN, MAX, 2` for integers), the rest spread over many binades
/// for floats and small magnitudes for integers (so that arithmetic mostly stays in range);
/// `f16`/`bf16` are the `f32` values rounded, the narrower and unsigned integers the `i64`
/// values wrapped.
pub fn input(t: ElementType, n: usize, seed: u64) -> TensorData {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut pick = |special: bool| -> (u64, bool) {
        let r = next();
        (r, special && r % 3 == 0)
    };
    let special = |r: u64| SPECIAL_F32[((r >> 8) % 16) as usize];
    match t {
        ElementType::F32 => TensorData::F32(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => special(r),
                    (r, false) => ((r >> 11) as i32 as f32) * 2f32.powi((r % 24) as i32 - 40),
                })
                .collect(),
        ),
        ElementType::F64 => TensorData::F64(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => f64::from(special(r)),
                    (r, false) => ((r >> 11) as i64 as f64) * 2f64.powi((r % 40) as i32 - 70),
                })
                .collect(),
        ),
        ElementType::I32 => TensorData::I32(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => [0, 1, -1, i32::MIN, i32::MAX, 2][(r % 6) as usize],
                    (r, false) => (r >> 33) as i32 % 50,
                })
                .collect(),
        ),
        ElementType::I64 => TensorData::I64(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => [0, 1, -1, i64::MIN, i64::MAX, 2][(r % 6) as usize],
                    (r, false) => (r >> 20) as i64 % 1000,
                })
                .collect(),
        ),
        ElementType::Bool => TensorData::Bool((0..n).map(|_| pick(false).0 & 1 == 1).collect()),
        // The 16-bit floats: the `f32` values rounded (the specials stay special; the spread
        // overflows to infinity now and then, and underflows to subnormals and zero).
        // The other integers: the `i64` values wrapped into the type (the specials give 0,
        // ±1, 2 and the all-ones pattern: -1 signed, MAX unsigned). The storage-only floats
        // (float8, FLOAT4E2M1): the `f32` values rounded and saturated; the storage-only
        // integers (INT4, ...): the `i64` values wrapped. Strings: the `f32` values' text.
        other => {
            let float_like = (other.is_storage_only() && !graphlift_ir::is_storage_integer(other))
                || other == ElementType::String;
            let wide = if other.is_float() || float_like {
                ElementType::F32
            } else {
                ElementType::I64
            };
            // Only a conversion from strings can fail.
            convert(&input(wide, n, seed), other).unwrap_or_else(|_| TensorData::zeros(other, n))
        }
    }
}

/// The inputs of `f` for `seed`: parameter `k` gets [`input`] with `seed + 7919 k`.
///
/// # Panics
/// If a parameter's element count overflows `usize` (cases keep shapes small).
pub fn inputs(f: &Function, seed: u64) -> Vec<Tensor> {
    f.parameter_types()
        .into_iter()
        .enumerate()
        .map(|(k, t)| {
            let n = t
                .shape
                .element_count()
                .expect("case shapes are small enough to count");
            let data = input(t.element_type, n, seed.wrapping_add(k as u64 * 7919));
            Tensor::from_data(data, t.shape).expect("input data has the parameter's length")
        })
        .collect()
}
