//! Test data shared by the unit tests of graphlift's crates (a dev-dependency only): inputs
//! that are deterministic across runs and hosts, the special values of each element type, and
//! bitwise comparison of results.

pub mod reference;

use graphlift_ir::{ElementType, Function, TensorData};
use graphlift_runtime::Tensor;

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
    }
}

/// Index of the first element where `got` and `want` differ (bitwise; NaN matches NaN).
pub fn first_difference(got: &TensorData, want: &TensorData) -> Option<usize> {
    if got.element_type() != want.element_type() || got.len() != want.len() {
        return Some(0);
    }
    fn pos<T: Copy>(a: &[T], b: &[T], same: impl Fn(T, T) -> bool) -> Option<usize> {
        a.iter().zip(b).position(|(&x, &y)| !same(x, y))
    }
    match (got, want) {
        (TensorData::F32(a), TensorData::F32(b)) => pos(a, b, |x, y| {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        (TensorData::F64(a), TensorData::F64(b)) => pos(a, b, |x, y| {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        }),
        (TensorData::I32(a), TensorData::I32(b)) => pos(a, b, |x, y| x == y),
        (TensorData::I64(a), TensorData::I64(b)) => pos(a, b, |x, y| x == y),
        (TensorData::Bool(a), TensorData::Bool(b)) => pos(a, b, |x, y| x == y),
        _ => Some(0),
    }
}

/// The bits of each `f32` tensor's elements.
pub fn bits(outs: &[Tensor]) -> Vec<Vec<u32>> {
    outs.iter()
        .map(|t| {
            t.read::<f32>()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect()
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
