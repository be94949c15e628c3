//! The sixteen-lane instantiation against the one-lane one, bit for bit.

use super::super::{forms, functions, MAX_PARAMS};

/// An AVX-512 entry (plain and streaming stores).
type Wide = fn(&[f32], &mut [f32], &[f32; MAX_PARAMS]) -> usize;

/// An AVX-512 function, the lane code it must match, and the parameters to check it
/// with (a form's as the importers write it; ignored by the single functions).
struct Case {
    name: &'static str,
    plain: Wide,
    streaming: Wide,
    lane: fn(f32, [f32; MAX_PARAMS]) -> f32,
    c: [f32; MAX_PARAMS],
}

/// The [`Case`] of `super::$f` in both its store kinds.
macro_rules! case {
    ($f:ident, $lane:expr, $c:expr) => {
        Case {
            name: stringify!($f),
            plain: super::$f::<false>,
            streaming: super::$f::<true>,
            lane: $lane,
            c: $c,
        }
    };
}

const NONE: [f32; MAX_PARAMS] = [0.0; MAX_PARAMS];
const GELU: [f32; MAX_PARAMS] = [0.5, 0.044715, 0.797_884_6, 1.0];
const GELU_ERF: [f32; MAX_PARAMS] = [0.5, std::f32::consts::FRAC_1_SQRT_2, 1.0, 0.0];
const GELU_ERF_DIVIDE: [f32; MAX_PARAMS] = [std::f32::consts::SQRT_2, 1.0, 0.5, 0.0];
const CASES: [Case; 10] = [
    case!(erf, |x, _| functions::erf(x), NONE),
    case!(gelu_erf, forms::gelu_erf, GELU_ERF),
    case!(gelu_erf_divide, forms::gelu_erf_divide, GELU_ERF_DIVIDE),
    case!(exp, |x, _| functions::exp(x), NONE),
    case!(sigmoid, |x, _| functions::sigmoid(x), NONE),
    case!(tanh, |x, _| functions::tanh(x), NONE),
    case!(silu, forms::silu, NONE),
    case!(silu_exp, forms::silu_exp, [1.0, 0.0, 0.0, 0.0]),
    case!(swish, forms::swish, [1.0, 1.702, 0.0, 0.0]),
    case!(gelu_tanh, forms::gelu_tanh, GELU),
];

/// Checks `xs` through both; returns the number of elements the AVX-512 code did.
fn check(xs: &[f32], out: &mut [f32]) -> usize {
    let mut done = 0;
    for &Case {
        name,
        plain,
        lane,
        c,
        ..
    } in &CASES
    {
        done = plain(xs, out, &c);
        for (&x, &y) in xs[..done].iter().zip(&out[..done]) {
            let want = lane(x, c);
            assert!(
                y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                "{name}({x:e} = {:#x}): AVX-512 {y:e}, lane code {want:e}",
                x.to_bits()
            );
        }
    }
    done
}

#[test]
fn the_sixteen_lanes_give_the_one_lane_bits_on_a_sample() {
    let mut xs: Vec<f32> = (0..=u32::MAX).step_by(4_099).map(f32::from_bits).collect();
    xs.extend(graphlift_testkit::F32_SPECIALS);
    // The clamp edges of `exp` and `tanh` (both signs), where GELU's `tanh` argument
    // reaches `tanh`'s clamp, and `erf`'s clamp and split.
    let clamp = crate::vmath::tanh::CLAMP;
    let erf = crate::vmath::erf::FORM;
    let edges = [
        -104.0f32, 89.0, -87.33655, 88.72284, clamp, -clamp, 3.9, -3.9, erf.clamp, -erf.clamp,
        erf.split, -erf.split,
    ];
    xs.extend(edges.iter().flat_map(|t| {
        let b = t.to_bits();
        (b - 64..b + 64).map(f32::from_bits)
    }));
    let mut out = vec![0.0; xs.len()];
    let done = check(&xs, &mut out);
    let whole = xs.len() / 16 * 16;
    assert_eq!(done, if super::host_has_avx512() { whole } else { 0 });
}

/// The streaming code writes the plain code's bits where `dst` is 64-byte aligned, and
/// nothing (returning 0) where it is not.
#[test]
fn streaming_stores_write_the_same_bits_from_a_line_boundary_only() {
    let xs: Vec<f32> = (0..300).map(|i| (i as f32 * 0.37).sin() * 6.0).collect();
    let mut buf = vec![f32::NAN; xs.len() + 32];
    let line = buf.as_ptr().align_offset(64);
    for &Case {
        name,
        plain,
        streaming,
        c,
        ..
    } in &CASES
    {
        let mut want = vec![0.0; xs.len()];
        plain(&xs, &mut want, &c);
        for offset in 0..16 {
            for len in [0, 15, 16, 17, 64, 100, 255, 300 - offset] {
                buf.fill(f32::NAN);
                let dst = &mut buf[line + offset..line + offset + len];
                let done = streaming(&xs[..len], dst, &c);
                let expect = if offset == 0 && super::host_has_avx512() {
                    len / 16 * 16
                } else {
                    0
                };
                assert_eq!(done, expect, "{name}: offset {offset}, length {len}");
                let out = &buf[line + offset..line + offset + len];
                for (i, (&y, &w)) in out.iter().zip(&want).enumerate() {
                    let ok = if i < done {
                        y.to_bits() == w.to_bits()
                    } else {
                        y.is_nan()
                    };
                    assert!(ok, "{name}: offset {offset}, length {len}, element {i}");
                }
            }
        }
    }
}

/// Every length from 0 to 300 (whole blocks of the pipeline, vectors after them, and
/// lengths that are no whole vector): the AVX-512 code does every whole vector and
/// nothing past it, with the lane code's bits.
#[test]
fn every_length_maps_its_whole_vectors_and_nothing_more() {
    let xs: Vec<f32> = (0..300).map(|i| (i as f32 * 0.37).sin() * 6.0).collect();
    for len in 0..=xs.len() {
        let mut out = vec![f32::NAN; xs.len()];
        let done = check(&xs[..len], &mut out[..len]);
        let whole = len / 16 * 16;
        assert_eq!(done, if super::host_has_avx512() { whole } else { 0 });
        assert!(
            out[done..].iter().all(|y| y.is_nan()),
            "length {len}: wrote past {done}"
        );
    }
}

/// Every `f32` for the nine functions (ignored: about twenty minutes in a release build):
/// `cargo test --release -p graphlift-kernels -- --ignored every_f32`.
#[test]
#[ignore]
fn the_sixteen_lanes_give_the_one_lane_bits_on_every_f32() {
    let mut out = vec![0.0; 1 << 20];
    for chunk in 0..(1u64 << 12) {
        let xs: Vec<f32> = (chunk << 20..(chunk + 1) << 20)
            .map(|b| f32::from_bits(b as u32))
            .collect();
        check(&xs, &mut out);
    }
}

/// Softmax rows with a NaN (40 elements) and with `+inf` (33).
fn nan_and_infinity_rows() -> [Vec<f32>; 2] {
    [
        (0..40)
            .map(|i| if i == 17 { f32::NAN } else { i as f32 })
            .collect(),
        (0..33)
            .map(|i| if i == 32 { f32::INFINITY } else { -(i as f32) })
            .collect(),
    ]
}

/// The sixteen-lane softmax against the `f64` softmax, within the bound
/// `native::normalize::softmax` documents (a relative `2^-21 · (1 + |x − max|)`), on every
/// length up to 70 (tails of each width), rows with NaN, `±inf` and `-inf` only, in blocks
/// of six rows, and no element written past the rows.
#[test]
fn the_sixteen_lane_softmax_is_within_its_bound_and_its_row() {
    let reference = |x: &[f32]| -> Vec<f64> {
        let max = x
            .iter()
            .map(|&v| f64::from(v))
            .fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = x.iter().map(|&v| (f64::from(v) - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        e.iter().map(|v| v / sum).collect()
    };
    let mut rows: Vec<Vec<f32>> = (0..=70)
        .map(|n| (0..n).map(|i| (i as f32 * 0.73).sin() * 9.0).collect())
        .collect();
    rows.push(vec![1.0, f32::NEG_INFINITY, 3.0, f32::NEG_INFINITY, -2.0]);
    rows.push(vec![f32::NEG_INFINITY; 20]);
    rows.extend(nan_and_infinity_rows());
    for x in rows.iter().filter(|x| !x.is_empty()) {
        let n = x.len();
        // Six rows (a group of four, then two alone), each the row turned by its index.
        let block: Vec<f32> = (0..6)
            .flat_map(|r| (0..n).map(move |i| x[(i + r) % n]))
            .collect();
        let mut out = vec![-7.0f32; block.len() + 16];
        if !super::softmax_rows(&block, &mut out, n) {
            assert!(
                !super::host_has_avx512(),
                "length {n}: not run on an AVX-512 host"
            );
            continue;
        }
        assert!(
            out[block.len()..].iter().all(|&y| y == -7.0),
            "length {n}: wrote past the rows"
        );
        for (r, (x, out)) in block.chunks(n).zip(out.chunks(n)).enumerate() {
            let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            for (i, (&y, w)) in out.iter().zip(reference(x)).enumerate() {
                if w.is_nan() {
                    assert!(y.is_nan(), "length {n}, row {r}, element {i}: {y} for NaN");
                    continue;
                }
                let bound = 2f64.powi(-21) * (1.0 + f64::from((x[i] - max).abs()));
                let err = (f64::from(y) - w).abs();
                assert!(
                    err == 0.0 || err <= bound * w,
                    "length {n}, row {r}, element {i}: {y} against {w}"
                );
            }
        }
    }
}

/// Attention's numerators against `f64`: `x = s + m` in `f32` as documented, each `e`
/// within a relative `2^-22 · (1 + |x − max|)` of `exp(x − max)` (its `exp` within an ulp,
/// `x − max` rounded once), each row's sum within `2^-21` of the sum of those; a mask row
/// shared by every row (step 0) and one per row, on every length up to 70 and 100 and 128,
/// rows with NaN, `+inf` and masked `-inf`, six rows (a group of four, then two alone), and
/// nothing written past the rows or the sums; a mask that does not cover the rows is
/// refused with nothing written.
#[test]
fn attention_numerators_are_within_their_bounds() {
    let mut lengths: Vec<usize> = (1..=70).collect();
    lengths.extend([100, 128]);
    let mut rows: Vec<Vec<f32>> = lengths
        .iter()
        .map(|&n| (0..n).map(|i| (i as f32 * 0.73).sin() * 9.0).collect())
        .collect();
    rows.extend(nan_and_infinity_rows());
    for x in &rows {
        let n = x.len();
        let block: Vec<f32> = (0..6)
            .flat_map(|r| (0..n).map(move |i| x[(i + r) % n]))
            .collect();
        // Per-row masks with a `-inf` every seventh element; the shared mask is row 0's.
        let masks: Vec<f32> = (0..6 * n)
            .map(|i| {
                if i % 7 == 3 {
                    f32::NEG_INFINITY
                } else {
                    (i as f32 * 0.37).cos()
                }
            })
            .collect();
        for step in [0, n] {
            let mut s = block.clone();
            s.extend([-7.0; 16]);
            let mut sums = vec![-7.0f64; 7];
            let rows_of = |s: &mut [f32], sums: &mut [f64]| {
                super::softmax_numerators(s, n, Some((&masks, step)), sums)
            };
            if !rows_of(&mut s[..6 * n], &mut sums) {
                assert!(
                    !super::host_has_avx512(),
                    "length {n}: not run on an AVX-512 host"
                );
                continue;
            }
            assert!(
                s[6 * n..].iter().all(|&y| y == -7.0),
                "length {n}: wrote past the rows"
            );
            assert_eq!(sums[6], -7.0, "length {n}: wrote past the sums");
            for r in 0..6 {
                let xs: Vec<f32> = (0..n)
                    .map(|i| block[r * n + i] + masks[r * step + i])
                    .collect();
                let max = xs
                    .iter()
                    .copied()
                    .filter(|v| !v.is_nan())
                    .fold(f32::NEG_INFINITY, f32::max);
                let mut want_sum = 0.0;
                for (i, &xv) in xs.iter().enumerate() {
                    let want = (f64::from(xv) - f64::from(max)).exp();
                    want_sum += want;
                    let got = f64::from(s[r * n + i]);
                    if want.is_nan() {
                        assert!(got.is_nan(), "length {n}, row {r}, element {i}: {got}");
                        continue;
                    }
                    let bound = 2f64.powi(-22) * (1.0 + f64::from((xv - max).abs()));
                    let err = (got - want).abs();
                    assert!(
                        err == 0.0 || err <= bound * want,
                        "length {n}, step {step}, row {r}, element {i}: {got} against {want}"
                    );
                }
                let sum = sums[r];
                assert!(
                    (want_sum.is_nan() && sum.is_nan())
                        || (sum - want_sum).abs() <= 2f64.powi(-21) * want_sum,
                    "length {n}, step {step}, row {r}: sum {sum} against {want_sum}"
                );
            }
        }
        // A per-row mask one value short, and too few sums: refused, nothing written.
        let mut s = block.clone();
        let mut sums = vec![-7.0f64; 6];
        assert!(!super::softmax_numerators(
            &mut s,
            n,
            Some((&masks[..6 * n - 1], n)),
            &mut sums
        ));
        assert!(!super::softmax_numerators(&mut s, n, None, &mut sums[..5]));
        let same = s
            .iter()
            .zip(&block)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(
            same && sums.iter().all(|&v| v == -7.0),
            "length {n}: written"
        );
    }
}
