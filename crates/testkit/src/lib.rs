//! Test data shared by the unit tests of graphlift's crates (a dev-dependency only): inputs
//! that are deterministic across runs and hosts, the special values of each element type, and
//! bitwise comparison of results.

pub mod reference;

use graphlift_ir::{map_data, match_data, ElementType, Function, TensorData};
use graphlift_runtime::Tensor;

/// The reference conversion ([`graphlift_runtime::reference::convert`]) of test data, which
/// never holds strings that are not numbers.
fn convert(x: &TensorData, to: ElementType) -> TensorData {
    graphlift_runtime::reference::convert(x, to).expect("test data converts")
}

/// `n` deterministic `f32` values in `[-1, 1)` from a small LCG (Numerical Recipes'
/// constants) seeded with `seed`.
pub fn uniform(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

/// Special and boundary `f32` inputs of the vector math: signed zeros, infinities, NaNs,
/// the extremes, subnormals, and the edges of the functions' clamps and pieces.
pub const F32_SPECIALS: [f32; 30] = [
    0.0f32,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    -f32::NAN,
    f32::MIN_POSITIVE,
    1e-45,
    -1e-45,
    1e-40,
    -1e-40,
    f32::MAX,
    f32::MIN,
    88.72,
    88.73,
    -87.4,
    -103.9,
    -104.0,
    -200.0,
    7.0,
    9.0,
    -9.1,
    20.0,
    3.9,
    3.95,
    4.0,
    -1.0,
    1.0,
    0.625,
    -0.625,
];

/// Special values of each element type, as `f64`-free typed vectors.
pub fn specials(t: ElementType) -> TensorData {
    match t {
        ElementType::F32 => TensorData::F32(vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            3.7,
            -3.7,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            1e-40,
            -1e-40,
            f32::MAX,
            f32::MIN,
            3e10,
            -3e10,
            2147483520.0,
            -2147483648.0,
            100.0,
            -100.0,
            88.7,
            -104.5,
            1e-7,
            7.0,
            -7.0,
        ]),
        ElementType::F64 => TensorData::F64(vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            3.7,
            -3.7,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            1e-310,
            -1e-310,
            f64::MAX,
            f64::MIN,
            3e20,
            -3e20,
            9.3e18,
            -9.3e18,
            100.0,
            -100.0,
            709.0,
            -745.5,
            1e-17,
            7.0,
            -7.0,
        ]),
        ElementType::I32 => TensorData::I32(vec![
            0,
            1,
            -1,
            2,
            -2,
            3,
            7,
            -7,
            31,
            100,
            -100,
            65536,
            i32::MAX,
            i32::MIN,
            i32::MIN + 1,
            i32::MAX - 1,
        ]),
        ElementType::I64 => TensorData::I64(vec![
            0,
            1,
            -1,
            2,
            -2,
            3,
            7,
            -7,
            63,
            100,
            -100,
            1 << 40,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
            i64::MAX - 1,
        ]),
        ElementType::Bool => TensorData::Bool(vec![false, true]),
        // Empty, case, digits and number spellings, multi-byte UTF-8, an interior NUL.
        ElementType::String => TensorData::String(
            [
                "",
                "a",
                "A",
                "0",
                "-1.5",
                "NaN",
                "INF",
                "\u{fc}",
                "\u{65e5}\u{672c}",
                "a b",
                "a\0b",
            ]
            .map(String::from)
            .to_vec(),
        ),
        // The narrower integers: the `i64` specials wrapped into the type, then its bounds.
        t if t.is_integer() => {
            let mut v: Vec<i64> = match specials(ElementType::I64) {
                TensorData::I64(v) => v,
                _ => Vec::new(),
            };
            let (min, max) = match t {
                ElementType::I8 => (i64::from(i8::MIN), i64::from(i8::MAX)),
                ElementType::U8 => (0, i64::from(u8::MAX)),
                ElementType::I16 => (i64::from(i16::MIN), i64::from(i16::MAX)),
                ElementType::U16 => (0, i64::from(u16::MAX)),
                ElementType::U32 => (0, i64::from(u32::MAX)),
                _ => (0, -1), // u64: -1 wraps to the greatest value
            };
            v.extend([min, max, min + 1, max - 1, 127, 128, 255, 256]);
            convert(&TensorData::I64(v), t)
        }
        // The 16-bit floats: the `f32` specials rounded to the type, then its own extremes.
        t => {
            let mut v: Vec<f32> = match specials(ElementType::F32) {
                TensorData::F32(v) => v,
                _ => Vec::new(),
            };
            let (max, tiny) = if t == ElementType::F16 {
                (
                    graphlift_ir::f16::MAX.to_f32(),
                    graphlift_ir::f16::from_bits(1).to_f32(),
                )
            } else {
                (
                    graphlift_ir::bf16::MAX.to_f32(),
                    graphlift_ir::bf16::from_bits(1).to_f32(),
                )
            };
            v.extend([max, -max, tiny, -tiny, 65520.0, 0.1, 0.333_333_34]);
            convert(&TensorData::F32(v), t)
        }
    }
}

/// `n` elements: the special values in order (repeated), shifted by `phase`, then a
/// deterministic pseudo-random fill past the first `3 * specials` elements.
pub fn data(t: ElementType, n: usize, phase: usize) -> TensorData {
    let s = specials(t);
    let m = s.len();
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (phase as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let pick = |i: usize| (i + phase) % m;
    macro_rules! fill {
        ($v:expr, $rand:expr) => {
            (0..n)
                .map(|i| if i < 3 * m { $v[pick(i)] } else { $rand })
                .collect()
        };
    }
    match &s {
        TensorData::F32(v) => TensorData::F32(fill!(v, {
            let r = next();
            (r as i32 as f32) * 2f32.powi((r >> 40) as i32 % 40 - 50)
        })),
        TensorData::F64(v) => TensorData::F64(fill!(v, {
            let r = next();
            (r as i64 as f64) * 2f64.powi((r >> 40) as i32 % 60 - 80)
        })),
        TensorData::I32(v) => TensorData::I32(fill!(v, {
            let r = next();
            if r & 1 == 0 {
                (r >> 33) as i32 % 1000
            } else {
                (r >> 32) as i32
            }
        })),
        TensorData::I64(v) => TensorData::I64(fill!(v, {
            let r = next();
            if r & 1 == 0 {
                (r >> 33) as i64 % 1000
            } else {
                r as i64
            }
        })),
        TensorData::Bool(v) => TensorData::Bool(fill!(v, next() & 1 == 1)),
        // The other types: their specials, then the `i64` (integers, wrapped) or `f32`
        // (16-bit floats, rounded) fill converted.
        other => {
            let wide = if t.is_integer() {
                ElementType::I64
            } else {
                ElementType::F32
            };
            let mut out = convert(&data(wide, n, phase), t);
            let k = n.min(3 * m);
            fn prefix<T: Clone>(v: &[T], k: usize, pick: impl Fn(usize) -> usize) -> Vec<T> {
                (0..k).map(|i| v[pick(i)].clone()).collect()
            }
            let specials: TensorData = map_data!(other, v => prefix(v, k, pick));
            match_data!(&mut out, o => {
                if let Some(p) = specials.as_slice() {
                    o[..k].copy_from_slice(p);
                }
            }, String(o) => {
                if let Some(p) = specials.as_strings() {
                    o[..k].clone_from_slice(p);
                }
            });
            out
        }
    }
}

/// Index of the first element where `got` and `want` differ (bitwise; NaN matches NaN).
pub fn first_difference(got: &TensorData, want: &TensorData) -> Option<usize> {
    if got.element_type() != want.element_type() || got.len() != want.len() {
        return Some(0);
    }
    fn pos<T>(a: &[T], b: &[T], same: impl Fn(&T, &T) -> bool) -> Option<usize> {
        a.iter().zip(b).position(|(x, y)| !same(x, y))
    }
    fn same_f64(x: f64, y: f64) -> bool {
        x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
    }
    match (got, want) {
        (TensorData::F32(a), TensorData::F32(b)) => pos(a, b, |x, y| {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        (TensorData::F64(a), TensorData::F64(b)) => pos(a, b, |&x, &y| same_f64(x, y)),
        (TensorData::F16(a), TensorData::F16(b)) => pos(a, b, |x, y| {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        (TensorData::BF16(a), TensorData::BF16(b)) => pos(a, b, |x, y| {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        // The storage-only types (8- and 4-bit floats, 4- and 2-bit integers): their values
        // widened to f64 (exactly), bit for bit, any NaN matching any NaN.
        _ if got.element_type().is_storage_only() => {
            (0..got.len()).position(|i| match (got.get_f64(i), want.get_f64(i)) {
                (Some(x), Some(y)) => !same_f64(x, y),
                _ => true,
            })
        }
        // Equal types (checked above): the rest compare by value.
        _ => match_data!(got, a => pos(a, want.as_slice().unwrap_or_default(), |x, y| x == y),
            String(a) => pos(a, want.as_strings().unwrap_or_default(), |x, y| x == y)),
    }
}

/// The bits of each tensor's elements, zero-extended to 32 bits (`f32`, `i32`, `u32` and the
/// 8- and 16-bit types: floats' raw bits, integers' two's complement; `bool` as 0 or 1).
///
/// # Panics
/// On a tensor of another element type.
pub fn bits(outs: &[Tensor]) -> Vec<Vec<u32>> {
    fn each<T: Copy>(v: &[T], f: impl Fn(T) -> u32) -> Vec<u32> {
        v.iter().map(|&x| f(x)).collect()
    }
    outs.iter()
        .map(|t| match t.data() {
            TensorData::F32(v) => each(v, f32::to_bits),
            TensorData::I32(v) => each(v, |x| x as u32),
            TensorData::U32(v) => each(v, |x| x),
            TensorData::F16(v) => each(v, |x| u32::from(x.to_bits())),
            TensorData::BF16(v) => each(v, |x| u32::from(x.to_bits())),
            TensorData::I8(v) => each(v, |x| u32::from(x as u8)),
            TensorData::U8(v) => each(v, u32::from),
            TensorData::I16(v) => each(v, |x| u32::from(x as u16)),
            TensorData::U16(v) => each(v, u32::from),
            TensorData::Bool(v) => each(v, u32::from),
            other => panic!("no 32-bit view of {} elements", other.element_type()),
        })
        .collect()
}

/// One tensor per parameter of `f`, in call order: parameter `k` of type `t` and `n`
/// elements holds [`data`]`(t, n, phase + 7·k)`, in the parameter's shape.
///
/// # Panics
/// If a parameter id of `f` dangles or its shape has no element count (a test bug).
pub fn inputs_of(f: &Function, phase: usize) -> Vec<Tensor> {
    f.parameters()
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let t = f.node(p).unwrap().output_type().clone();
            let n = t.shape.element_count().unwrap();
            Tensor::from_data(data(t.element_type, n, phase + 7 * k), t.shape).unwrap()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::ElementType;

    /// An 8-bit float NaN matches a NaN of the other sign; a zero of the other sign and a
    /// different value do not match.
    #[test]
    fn storage_floats_match_any_nan_and_nothing_else() {
        let t = ElementType::F8E4M3FN;
        let got = TensorData::from_f64(t, &[f64::NAN, 1.0, 0.0, 2.0]);
        let want = TensorData::from_f64(t, &[-f64::NAN, 1.0, 0.0, 2.0]);
        assert_eq!(first_difference(&got, &want), None);
        let zero = TensorData::from_f64(t, &[f64::NAN, 1.0, -0.0, 2.0]);
        assert_eq!(first_difference(&got, &zero), Some(2));
        let other = TensorData::from_f64(t, &[f64::NAN, 1.0, 0.0, 3.0]);
        assert_eq!(first_difference(&got, &other), Some(3));
    }
}
