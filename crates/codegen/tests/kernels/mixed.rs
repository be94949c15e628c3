//! The mixed-width vector loop ([`Lanes::Mixed`]: four elements per body, 32-bit values as
//! one `X4` vector, 64-bit values as two `X2` vectors, masks moved between the two forms).
//!
//! Every kernel here is asserted to be a `Mixed` kernel (so a silent fall-back to another
//! width fails the test) and compared bit for bit with the interpreter over the whole range
//! and sub-ranges ([`check`]), at every size from 0 to 20 (the unrolled step of 8, the
//! single 4-element body, every tail of 1–3) and larger ones, on special values: NaN, ±inf,
//! ±0, subnormals, integer MIN/MAX, values past the `f32` range and past `i32`/`i64`, and
//! the rounding cases 2^24 + 1, 2^53 + 1 and 2^60 + 2^36 + 1 (which `i64` → `f32` rounds
//! differently when it goes through `f64`), and both sides of ±2^51 (the edge of the exact
//! vector `i64` ↔ `f64` code of `codegen::convert`).

use super::{check, data, gather, specials, Expect};
use graphlift_codegen::lanes::Lanes;
use graphlift_codegen::plan::plan_kernel;
use graphlift_codegen::JitKernel;
use graphlift_ir::{select, ElementType, Function, FunctionBuilder, TensorData};
use graphlift_runtime::Tensor;
use ElementType::{Bool, F32, F64, I32, I64};

const TYPES: [ElementType; 5] = [F32, F64, I32, I64, Bool];

/// Every size from 0 to 20, then a few larger ones (odd, so the tail runs).
fn sizes() -> impl Iterator<Item = usize> {
    (0..=20).chain([37, 1001])
}

fn tensor(d: TensorData, shape: &[usize]) -> Tensor {
    Tensor::from_data(d, shape).unwrap()
}

/// Values that conversions between widths round, saturate or wrap, beside [`specials`].
fn edge_values(t: ElementType) -> TensorData {
    const P24: i64 = 1 << 24;
    const P51: i64 = 1 << 51;
    const P53: i64 = 1 << 53;
    const DOUBLE_ROUNDING: i64 = (1 << 60) + (1 << 36) + 1;
    let extra = match t {
        F32 => TensorData::F32(vec![
            16_777_216.0,
            16_777_218.0,
            -16_777_218.0,
            2_147_483_648.0,
            -2_147_483_904.0,
            9.223_372e18,
            -9.223_372e18,
            1e19,
            -1e19,
            1e-45,
            -1e-45,
            P51 as f32,
            -(P51 as f32),
            (2 * P51) as f32,
            f32::from_bits(0x007f_ffff),
            -f32::NAN,
        ]),
        F64 => TensorData::F64(vec![
            (P24 + 1) as f64,
            (P53 + 1) as f64,
            9_007_199_254_740_994.0,
            1e39,
            -1e39,
            3.402_823_567_797_336_6e38,
            -3.402_823_567_797_336_6e38,
            3.402_823_466_385_288_6e38,
            1.4e-45,
            7.0e-46,
            -7.1e-46,
            1e-300,
            f64::from(f32::MIN_POSITIVE) * 0.75,
            2_147_483_647.5,
            2_147_483_648.0,
            -2_147_483_648.9,
            -2_147_483_649.0,
            1e10,
            -1e10,
            9_223_372_036_854_775_807.0,
            -9_223_372_036_854_775_808.0,
            1e19,
            4.5,
            -4.5,
            (P51 - 1) as f64 + 0.5,
            P51 as f64,
            (P51 + 1) as f64,
            -(P51 + 1) as f64,
            (2 * P51 - 1) as f64,
            -f64::NAN,
        ]),
        I32 => TensorData::I32(vec![
            (P24 + 1) as i32,
            -(P24 + 1) as i32,
            (P24 + 3) as i32,
            i32::MAX - 63,
            0x7fff_ffc0,
        ]),
        I64 => TensorData::I64(vec![
            P24 + 1,
            -(P24 + 1),
            P53 + 1,
            -(P53 + 1),
            P53 + 3,
            DOUBLE_ROUNDING,
            -DOUBLE_ROUNDING,
            1 << 31,
            -(1 << 31) - 1,
            0x1_0000_0001,
            -0x1_0000_0001,
            0xffff_ffff,
            i64::MAX - 511,
            P51 - 1,
            -P51,
            P51,
            -P51 - 1,
            P51 + 1,
            (1 << 62) + (1 << 38) + 1,
        ]),
        Bool => TensorData::Bool(vec![true, false, false]),
        other => panic!("fused kernels do not lower {other}"),
    };
    concat(&specials(t), &extra)
}

fn concat(a: &TensorData, b: &TensorData) -> TensorData {
    match (a, b) {
        (TensorData::F32(x), TensorData::F32(y)) => TensorData::F32([&x[..], y].concat()),
        (TensorData::F64(x), TensorData::F64(y)) => TensorData::F64([&x[..], y].concat()),
        (TensorData::I32(x), TensorData::I32(y)) => TensorData::I32([&x[..], y].concat()),
        (TensorData::I64(x), TensorData::I64(y)) => TensorData::I64([&x[..], y].concat()),
        (TensorData::Bool(x), TensorData::Bool(y)) => TensorData::Bool([&x[..], y].concat()),
        _ => panic!("concat of different element types"),
    }
}

/// `n` elements: the edge values in order from `phase` (repeated up to three times), then
/// the pseudo-random fill of [`data`].
fn edge_data(t: ElementType, n: usize, phase: usize) -> TensorData {
    let v = edge_values(t);
    let m = v.len();
    let head_len = n.min(3 * m);
    let idx: Vec<usize> = (0..head_len).map(|i| (i + phase) % m).collect();
    let head = gather(&v, &idx);
    let rest = data(t, n, phase);
    let tail_idx: Vec<usize> = (head_len..n).collect();
    concat(&head, &gather(&rest, &tail_idx))
}

/// Asserts that `body` compiles to a mixed-width kernel, then checks it against the
/// reference ([`check`]).
fn check_mixed(what: &str, body: &Function, inputs: &[Tensor]) {
    assert_eq!(
        plan_kernel("k", body).unwrap().lanes,
        Lanes::Mixed,
        "{what}: not a mixed kernel"
    );
    let k = JitKernel::compile(body).unwrap_or_else(|e| panic!("{what}: compile: {e}"));
    assert_eq!(k.lanes(), 4, "{what}");
    assert!(k.is_vectorized() && k.is_mixed_width(), "{what}");
    check(what, body, inputs, Expect::Exact);
}

/// Anchors that make a kernel converting `a` to `b` mixed: a number of the width `a` and
/// `b` lack (both widths when neither is a number).
fn anchor_types(a: ElementType, b: ElementType) -> Vec<ElementType> {
    let wide = [a, b].iter().any(|t| matches!(t, F64 | I64));
    let narrow = [a, b].iter().any(|t| matches!(t, F32 | I32));
    let mut anchors = Vec::new();
    if !narrow {
        anchors.push(F32);
    }
    if !wide {
        anchors.push(F64);
    }
    anchors
}

#[test]
fn mixed_kernels_report_four_lanes_of_both_widths() {
    let b = FunctionBuilder::new("mask");
    let mask = b.parameter("mask", I64, [9]);
    let scores = b.parameter("scores", F32, [9]);
    let body = b.finish(&[mask.convert(F32) * -10000.0 + scores]).unwrap();
    assert_eq!(plan_kernel("k", &body).unwrap().lanes, Lanes::Mixed);
    let k = JitKernel::compile(&body).unwrap();
    assert_eq!(k.lanes(), 4);
    assert!(k.is_vectorized() && k.is_mixed_width());
    let ir = k.ir();
    assert!(ir.contains("i64x2") && ir.contains("f32x4"), "{ir}");
    let n = 1001;
    let mask: Vec<i64> = (0..n as i64).map(|i| i % 3 % 2).collect();
    let ins = [
        tensor(mask.into(), &[n]),
        tensor(edge_data(F32, n, 0), &[n]),
    ];
    let b = FunctionBuilder::new("mask");
    let m = b.parameter("mask", I64, [n]);
    let s = b.parameter("scores", F32, [n]);
    let body = b.finish(&[m.convert(F32) * -10000.0 + s]).unwrap();
    check_mixed("attention mask", &body, &ins);
}

#[test]
fn every_conversion_pair_in_a_mixed_loop_at_every_size() {
    for from in TYPES {
        for to in TYPES {
            for n in sizes() {
                let b = FunctionBuilder::new(format!("convert_{from}_{to}"));
                let x = b.parameter("x", from, [n]);
                let mut results = vec![x.convert(to)];
                let mut ins = vec![tensor(edge_data(from, n, n), &[n])];
                for t in anchor_types(from, to) {
                    let a = b.parameter(&format!("anchor_{t}"), t, [n]);
                    results.push(-a);
                    ins.push(tensor(data(t, n, 5), &[n]));
                }
                let body = b.finish(&results).unwrap();
                check_mixed(&format!("Convert {from} -> {to} [{n}]"), &body, &ins);
            }
        }
    }
}

#[test]
fn every_conversion_pair_of_every_edge_value() {
    // Each edge value of `from` at every position of a vector body (phases 0..4).
    for from in TYPES {
        for to in TYPES {
            let n = 4 * edge_values(from).len() + 3;
            for phase in 0..4 {
                let b = FunctionBuilder::new(format!("convert_{from}_{to}"));
                let x = b.parameter("x", from, [n]);
                let mut results = vec![x.convert(to)];
                let mut ins = vec![tensor(edge_data(from, n, phase), &[n])];
                for t in anchor_types(from, to) {
                    let a = b.parameter(&format!("anchor_{t}"), t, [n]);
                    results.push(a.convert(to));
                    ins.push(tensor(edge_data(t, n, phase), &[n]));
                }
                let body = b.finish(&results).unwrap();
                check_mixed(
                    &format!("Convert {from} -> {to} phase {phase}"),
                    &body,
                    &ins,
                );
            }
        }
    }
}

#[test]
fn compares_feed_selects_and_logic_across_widths() {
    for n in sizes() {
        let b = FunctionBuilder::new("masks");
        let [x, y] = ["x", "y"].map(|p| b.parameter(p, F32, [n]));
        let [u, v] = ["u", "v"].map(|p| b.parameter(p, F64, [n]));
        let i = b.parameter("i", I32, [n]);
        let j = b.parameter("j", I64, [n]);
        let p = b.parameter("p", Bool, [n]);
        let narrow = x.lt(y); // an X4 mask
        let wide = u.ge(v); // an X2 mask
        let body = b
            .finish(&[
                select(narrow, u, v),
                select(wide, x, y),
                select(j.gt(j * 3.0), i, i * 2.0),
                select(i.le(i * -1.0), j, j + 1.0),
                narrow.and(wide),
                wide.or(p),
                select(p, j, j - 1.0),
                select(narrow.xor(wide), i.convert(F64), u),
                !wide,
                wide.convert(F32) + narrow.convert(F64).convert(F32),
                wide.convert(I32),
                p.and(narrow).convert(I64),
                wide.eq(narrow),
                u.convert(Bool).lt(x.convert(Bool)),
            ])
            .unwrap();
        let ins = [
            tensor(edge_data(F32, n, 0), &[n]),
            tensor(edge_data(F32, n, 3), &[n]),
            tensor(edge_data(F64, n, 1), &[n]),
            tensor(edge_data(F64, n, 4), &[n]),
            tensor(edge_data(I32, n, 2), &[n]),
            tensor(edge_data(I64, n, 5), &[n]),
            tensor(data(Bool, n, 6), &[n]),
        ];
        check_mixed(&format!("masks across widths [{n}]"), &body, &ins);
    }
}

/// (source shape, target shape): splat, rows of 2, 3, 4, 5 and 9 (vectors of either width
/// that fit a row and that wrap around it), columns and general maps.
const PATTERNS: &[(&[usize], &[usize])] = &[
    (&[], &[3, 5]),
    (&[1, 1], &[3, 3]),
    (&[2], &[5, 2]),
    (&[3], &[3, 3]),
    (&[4], &[3, 4]),
    (&[5], &[3, 5]),
    (&[9], &[2, 9]),
    (&[3, 1], &[3, 5]),
    (&[2, 1, 3], &[2, 3, 3]),
    (&[1, 3, 1], &[2, 3, 3]),
];

#[test]
fn broadcast_inputs_of_either_width() {
    for &(src, dst) in PATTERNS {
        let n: usize = dst.iter().product();
        let m: usize = src.iter().product();
        for (wide, narrow) in [(F64, F32), (I64, I32), (F64, I32), (I64, F32)] {
            // A broadcast 64-bit value over a 32-bit iteration, and the reverse.
            for (big, small) in [(wide, narrow), (narrow, wide)] {
                let b = FunctionBuilder::new("bcast_mixed");
                let x = b.parameter("x", big, dst);
                let p = b.parameter("p", small, src);
                let c = b.parameter("c", Bool, src);
                let px = p.convert(big);
                let body = b
                    .finish(&[
                        x - px,
                        px.lt(x),
                        select(c, p, x.convert(small)),
                        c.and(px.ge(x)),
                    ])
                    .unwrap();
                let ins = [
                    tensor(edge_data(big, n, 0), dst),
                    tensor(edge_data(small, m, 7), src),
                    tensor(data(Bool, m, 5), src),
                ];
                check_mixed(&format!("{big} x {small} {src:?} -> {dst:?}"), &body, &ins);
            }
        }
    }
}

#[test]
fn invariants_across_widths_are_computed_before_the_loop() {
    // Splat scalars of either width converted to the other, and per-lane ops (division,
    // i64 power through a host helper) in a mixed kernel.
    for m in [1, 2, 7] {
        let shape = [m, 3];
        let b = FunctionBuilder::new("invariants");
        let x = b.parameter("x", F32, shape);
        let i = b.parameter("i", I64, shape);
        let s = b.parameter("s", F64, []);
        let k = b.parameter("k", I32, []);
        let row = b.constant(vec![1.5f32, f32::NAN, -0.0], [3]);
        let body = b
            .finish(&[
                x * s.convert(F32) + k.convert(F32),
                i / k.convert(I64) + s.convert(I64) + i.pow(k.convert(I64)),
                (x + row).convert(F64).sqrt() + s.floor(),
                (i.convert(I32) / k).convert(F64).ge(s).or(x.lt(row)),
            ])
            .unwrap();
        for (sv, kv) in [(2.5, 3i32), (f64::NAN, 0), (-700.0, -1), (1e300, i32::MIN)] {
            let ins = [
                tensor(edge_data(F32, 3 * m, 0), &shape),
                tensor(edge_data(I64, 3 * m, 4), &shape),
                tensor(vec![sv].into(), &[]),
                tensor(vec![kv].into(), &[]),
            ];
            check_mixed(&format!("invariants [{m}, 3] s={sv} k={kv}"), &body, &ins);
        }
    }
}

#[test]
fn bool_inputs_and_outputs_in_both_mask_forms() {
    for n in sizes() {
        let b = FunctionBuilder::new("bools");
        let p = b.parameter("p", Bool, [n]);
        let q = b.parameter("q", Bool, [n]);
        let u = b.parameter("u", F64, [n]);
        let x = b.parameter("x", F32, [n]);
        let wide = u.convert(Bool);
        let body = b
            .finish(&[
                p,
                wide,
                wide.xor(p),
                select(q, wide, p),
                x.convert(Bool).and(q),
            ])
            .unwrap();
        let ins = [
            tensor(data(Bool, n, 0), &[n]),
            tensor(data(Bool, n, 3), &[n]),
            tensor(edge_data(F64, n, 2), &[n]),
            tensor(edge_data(F32, n, 1), &[n]),
        ];
        check_mixed(&format!("bools [{n}]"), &body, &ins);
    }
}

#[test]
fn the_scalar_loop_still_computes_mixed_kernels() {
    // `compile_scalar` keeps the one-element loop that mixed kernels ran before; it must
    // agree with the interpreter (and so with the mixed loop) bit for bit.
    for n in [0, 1, 5, 37] {
        let b = FunctionBuilder::new("scalar");
        let x = b.parameter("x", F32, [n]);
        let j = b.parameter("j", I64, [n]);
        let body = b
            .finish(&[select(x.lt(j.convert(F32)), j.convert(F64), x.convert(F64))])
            .unwrap();
        let ins = [
            tensor(edge_data(F32, n, 0), &[n]),
            tensor(edge_data(I64, n, 2), &[n]),
        ];
        let k = JitKernel::compile_scalar(&body).unwrap();
        assert_eq!(k.lanes(), 1);
        assert!(!k.is_vectorized() && !k.is_mixed_width());
        let refs: Vec<&Tensor> = ins.iter().collect();
        let mut got = super::outputs_for(&body);
        k.call(&refs, &mut got).unwrap();
        let want = graphlift_runtime::reference::evaluate_function(&body, &ins).unwrap();
        super::assert_exact(&format!("scalar [{n}]"), &ins, &got, &want);
    }
}

/// Runs of 8 values of each tier of the `i64` ↔ float conversions (all lanes `i32`; all
/// within ±2^51; some beyond or NaN), then the tiers interleaved lane by lane, so every
/// vector body takes each path and the paths' switches are crossed.
fn tiers<T: Copy>(runs: &[[T; 8]]) -> Vec<T> {
    let mut v: Vec<T> = runs.iter().flatten().copied().collect();
    for k in 0..8 {
        for run in runs {
            v.push(run[k]);
        }
    }
    v
}

#[test]
fn every_path_of_the_64_bit_conversions() {
    const P: i64 = 1 << 51;
    let ints = tiers(&[
        [
            0,
            1,
            -1,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            16_777_217,
            -16_777_217,
            12_345,
        ],
        [
            1 << 31,
            -(1 << 31) - 1,
            (1 << 40) + 1,
            -((1 << 40) + (1 << 16) + 1),
            P - 1,
            -P,
            (1 << 33) + (1 << 9) + 1,
            0x7_ffff_ffff,
        ],
        [
            P,
            -P - 1,
            (1 << 53) + 1,
            i64::MAX,
            i64::MIN,
            (1 << 60) + (1 << 36) + 1,
            -(1 << 62),
            (1 << 52) + 1,
        ],
    ]);
    let f64s = tiers(&[
        [
            0.5,
            -0.5,
            -0.0,
            1e10 + 0.7,
            -((P - 1) as f64) + 0.25,
            (1u64 << 50) as f64 + 0.5,
            3.9,
            -3.9,
        ],
        [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            P as f64,
            -(P as f64) - 2.0,
            1e19,
            -1e19,
            (1u64 << 52) as f64 + 1.0,
        ],
    ]);
    let f32s = tiers(&[
        [
            0.5f32,
            -0.5,
            -0.0,
            1e10,
            -1e15,
            (1u64 << 50) as f32,
            3.9,
            -3.9,
        ],
        [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            P as f32,
            -(P as f32),
            1e19,
            -1e19,
            (1u64 << 60) as f32,
        ],
    ]);
    let cases: [(ElementType, ElementType, TensorData); 5] = [
        (I64, F32, ints.clone().into()),
        (I64, F64, ints.into()),
        (F64, I64, f64s.clone().into()),
        (F64, I32, f64s.into()),
        (F32, I64, f32s.into()),
    ];
    for (from, to, values) in cases {
        let n = values.len();
        for anchor in [None, Some(F32), Some(F64)] {
            let b = FunctionBuilder::new(format!("tiers_{from}_{to}"));
            let x = b.parameter("x", from, [n]);
            let mut results = vec![x.convert(to)];
            let mut ins = vec![tensor(values.clone(), &[n])];
            if let Some(t) = anchor {
                let a = b.parameter("anchor", t, [n]);
                results.push(-a);
                ins.push(tensor(data(t, n, 1), &[n]));
            }
            let body = b.finish(&results).unwrap();
            let what = format!("{from} -> {to} tiers, anchor {anchor:?}");
            if plan_kernel("k", &body).unwrap().lanes == Lanes::Mixed {
                check_mixed(&what, &body, &ins);
            } else {
                check(&what, &body, &ins, Expect::Exact);
            }
        }
    }
}
