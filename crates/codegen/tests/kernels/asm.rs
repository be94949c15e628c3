//! Assembled kernels ([`graphlift_codegen::asm`], the host's widest instruction set: AVX-512
//! or AVX2): which kernels qualify, and bit-identity with the Cranelift code of the same
//! kernel on every range shape (tails of 1 to 15 elements, ranges that start and end
//! mid-row, rows shorter than a vector).

use super::{bits, check, outputs_of_range, Expect};
use graphlift_codegen::asm::host_isa;
use graphlift_codegen::vmath;
use graphlift_codegen::JitKernel;
use graphlift_ir::{CompareOp, ElementType, Function, FunctionBuilder, Op, Shape, UnaryOp};
use graphlift_kernels::target::VectorIsa;
use graphlift_runtime::reference;
use graphlift_runtime::Tensor;
use graphlift_testkit::inputs_of;

const F32: ElementType = ElementType::F32;

/// `relu((a+b)*c)+d` over `[n]`.
fn e1(n: usize) -> Function {
    let b = FunctionBuilder::new("e1");
    let p: Vec<_> = ["a", "b", "c", "d"]
        .iter()
        .map(|s| b.parameter(s, F32, [n]))
        .collect();
    b.finish(&[((p[0] + p[1]) * p[2]).relu() + p[3]]).unwrap()
}

/// `relu(X + bias)` (and `X * bias - s` as a second output) over `[m, k]`.
fn bias_relu(m: usize, k: usize) -> Function {
    let b = FunctionBuilder::new("bias_relu");
    let x = b.parameter("x", F32, [m, k]);
    let bias = b.parameter("bias", F32, [k]);
    let s = b.parameter("s", F32, Shape::scalar());
    b.finish(&[(x + bias).relu(), x * bias - s]).unwrap()
}

/// Every op the assembler takes, with constant bounds whose zero must win, a value that is
/// stored twice, an invariant output and a parameter passed through.
fn every_op(n: usize) -> Function {
    let b = FunctionBuilder::new("every_op");
    let x = b.parameter("x", F32, [n]);
    let y = b.parameter("y", F32, [n]);
    let s = b.parameter("s", F32, Shape::scalar());
    let t = (x / y - x.abs()).sqrt() + (-y).floor() * x.ceil() - (x * 3.5).round();
    let bounded = t.max(t.scalar_like(0.0)).min(t.scalar_like(-0.0)) + x.max(x.scalar_like(1.5));
    let invariant = (s * 2.0).sqrt().broadcast_to([n]);
    b.finish(&[bounded, x.min(x.scalar_like(0.25)), bounded, invariant, y])
        .unwrap()
}

/// Checks that `body` is assembled code (where the host has it) whose every output bit equals
/// the Cranelift code's, on the whole range and on ranges with every tail length, and matches
/// the interpreter (through [`check`]).
fn same_as_cranelift(what: &str, body: &Function) {
    let ins = inputs_of(body, 3);
    same_bits_as_cranelift(what, body, &ins);
    check(what, body, &ins, Expect::Exact);
}

/// Checks that `body` is assembled code (where the host has it, the library off) whose every
/// output bit on `ins` equals the Cranelift code's (a NaN for a NaN), on the whole range and on ranges
/// with every tail length.
fn same_bits_as_cranelift(what: &str, body: &Function, ins: &[Tensor]) {
    // (Without the library: a kernel whose vector math is all library calls keeps them.)
    let target = graphlift_kernels::target::Target::from_env().with_veclib(false);
    same_bits_on(what, body, ins, &target, host_isa());
}

/// Checks that `body` compiled for `target` is assembled code of `expect` whose every
/// output bit on `ins` equals the Cranelift code's, as [`same_bits_as_cranelift`].
pub(super) fn same_bits_on(
    what: &str,
    body: &Function,
    ins: &[Tensor],
    target: &graphlift_kernels::target::Target,
    expect: Option<VectorIsa>,
) {
    let wide = JitKernel::compile_for(body, target).unwrap();
    let narrow = JitKernel::compile_inline(body).unwrap();
    assert_eq!(
        wide.assembled(),
        expect,
        "{what}: {:?}\n{}",
        wide.compiled().assembler_refusal(),
        wide.ir()
    );
    assert!(narrow.assembled().is_none());
    let refs: Vec<&Tensor> = ins.iter().collect();
    let n = wide.element_count();
    let mut ranges = vec![(0, n)];
    for begin in [0, 1, 5, 15, 16, 17, 63, 64, 100] {
        for len in (0..=80).chain([127, 128, 129, 300]) {
            if begin + len <= n {
                ranges.push((begin, begin + len));
            }
        }
    }
    // Any NaN matches any NaN (x86 keeps the first operand's payload; which operand is
    // first is not specified).
    let nan_blind = |outs: &[Tensor]| -> Vec<Vec<u32>> {
        bits(outs)
            .into_iter()
            .map(|o| {
                o.into_iter()
                    .map(|b| {
                        if f32::from_bits(b).is_nan() {
                            0x7FC0_0000
                        } else {
                            b
                        }
                    })
                    .collect()
            })
            .collect()
    };
    for &(b, e) in &ranges {
        assert_eq!(
            nan_blind(&outputs_of_range(&wide, &refs, n, (b, e))),
            nan_blind(&outputs_of_range(&narrow, &refs, n, (b, e))),
            "{what}: range {b}..{e}"
        );
    }
}

#[test]
fn simple_f32_kernels_are_assembled_with_cranelifts_bits() {
    for n in [1, 15, 16, 17, 64, 65, 1000] {
        same_as_cranelift(&format!("e1 [{n}]"), &e1(n));
        // (At one element every value is invariant: more than AVX2's sixteen registers.)
        if n > 1 || host_isa() == Some(VectorIsa::Avx512) {
            same_as_cranelift(&format!("every_op [{n}]"), &every_op(n));
        }
    }
}

#[test]
fn row_vectors_are_read_per_segment_for_every_row_length() {
    // Rows shorter than a vector, one vector, just over, and long rows.
    for (m, k) in [(40, 1), (30, 3), (20, 16), (20, 17), (5, 100), (3, 1024)] {
        same_as_cranelift(&format!("bias_relu [{m}, {k}]"), &bias_relu(m, k));
    }
}

/// `x * scale + shift` with per-channel `[C, 1, 1]` vectors over `[n, C, h, w]` (batch
/// norm), the same with a row vector `[w]`, and `x - col + row` over `[m, k]`: run
/// broadcasts alone, and with row vectors (segments end at whichever boundary comes
/// first).
#[test]
fn column_and_channel_vectors_are_one_value_per_segment() {
    for (n, c, h, w) in [(1, 3, 4, 5), (2, 3, 4, 5), (2, 5, 1, 16), (1, 4, 6, 24)] {
        let b = FunctionBuilder::new("channels");
        let x = b.parameter("x", F32, [n, c, h, w]);
        let scale = b.parameter("scale", F32, [c, 1, 1]);
        let shift = b.parameter("shift", F32, [c, 1, 1]);
        let body = b.finish(&[(x * scale + shift).relu()]).unwrap();
        same_as_cranelift(&format!("channels [{n}, {c}, {h}, {w}]"), &body);
        // With a row vector too: runs of h·w elements, rows of w.
        let b = FunctionBuilder::new("channels_rows");
        let x = b.parameter("x", F32, [n, c, h, w]);
        let scale = b.parameter("scale", F32, [c, 1, 1]);
        let row = b.parameter("row", F32, [w]);
        let body = b.finish(&[x * scale + row]).unwrap();
        same_as_cranelift(&format!("channels_rows [{n}, {c}, {h}, {w}]"), &body);
    }
    for (m, k) in [(7, 16), (5, 40), (3, 100)] {
        let b = FunctionBuilder::new("column_row");
        let x = b.parameter("x", F32, [m, k]);
        let col = b.parameter("col", F32, [m, 1]);
        let row = b.parameter("row", F32, [k]);
        let body = b.finish(&[x - col + row, col + row]).unwrap();
        same_as_cranelift(&format!("column_row [{m}, {k}]"), &body);
    }
}

#[test]
fn other_kernels_stay_with_cranelift() {
    let n = 100;
    let build = |what: &str, f: &dyn Fn(&FunctionBuilder) -> Vec<graphlift_ir::Value<'_>>| {
        let b = FunctionBuilder::new(what);
        let results = f(&b);
        (what.to_string(), b.finish(&results).unwrap())
    };
    let cases = [
        build("column broadcast under a vector", &|b| {
            vec![b.parameter("xm", F32, [10, 7]) + b.parameter("col", F32, [10, 1])]
        }),
        build("two-group broadcast", &|b| {
            vec![b.parameter("xm", F32, [2, 3, 16]) + b.parameter("g", F32, [2, 1, 16])]
        }),
        build("integer division", &|b| {
            let i = b.parameter("i", ElementType::I32, [n]);
            vec![i / i]
        }),
    ];
    for (what, body) in cases {
        let k = JitKernel::compile(&body).unwrap();
        assert!(k.assembled().is_none(), "{what}:\n{}", k.ir());
        check(&what, &body, &inputs_of(&body, 1), Expect::Exact);
    }
}

#[test]
fn kernels_beyond_the_registers_stay_with_cranelift() {
    // Nine per-element buffers need more than the eight pointer registers; forty distinct
    // constants more than the 32 vector registers.
    let n = 50;
    let b = FunctionBuilder::new("pointers");
    let ps: Vec<_> = (0..9)
        .map(|k| b.parameter(&format!("p{k}"), F32, [n]))
        .collect();
    let sum = ps[1..].iter().fold(ps[0], |acc, &p| acc + p);
    let many_buffers = b.finish(&[sum]).unwrap();
    let b = FunctionBuilder::new("constants");
    let x = b.parameter("x", F32, [n]);
    let mut acc = x;
    for k in 0..40 {
        acc = acc * (1.0 + k as f64 / 64.0);
    }
    let many_constants = b.finish(&[acc]).unwrap();
    for body in [many_buffers, many_constants] {
        let k = JitKernel::compile(&body).unwrap();
        assert!(k.assembled().is_none(), "{}", body.name());
        check(body.name(), &body, &inputs_of(&body, 2), Expect::Exact);
    }
}

#[test]
fn assembled_code_has_a_listing_and_attributes_its_code_to_the_nodes() {
    let Some(isa) = host_isa() else {
        return;
    };
    let k = JitKernel::compile(&e1(1000)).unwrap();
    let register = match isa {
        VectorIsa::Avx512 => "vaddps zmm",
        VectorIsa::Avx2 => "vaddps ymm",
    };
    assert!(k.ir().contains(register), "{}", k.ir());
    assert_eq!(k.lanes(), isa.lanes());
    let info = k.info();
    let nodes: std::collections::BTreeSet<&str> =
        info.code_ranges.iter().map(|r| r.node.as_str()).collect();
    assert!(nodes.len() >= 4, "{nodes:?}");
    assert!(info
        .code_ranges
        .iter()
        .all(|r| r.start < r.end && r.end as usize <= k.code_size()));
}

/// The AVX2 target (the library off) on a host that has AVX-512 as well, whose code the
/// tests of the host's code leave unchecked.
pub(super) fn avx2_beside_avx512() -> Option<graphlift_kernels::target::Target> {
    let host = graphlift_kernels::target::CpuFeatures::host();
    (host_isa() == Some(VectorIsa::Avx512) && host.has_avx2_kernels()).then(|| {
        graphlift_kernels::target::Target::from_env()
            .with_avx512(false)
            .with_veclib(false)
    })
}

/// `f32` inputs for the vector math: every special value, then values spread over the
/// functions' ranges (a sweep of magnitudes from 2^-30 to 2^30 of both signs, and a dense
/// part around 0), `n` in all.
pub(super) fn math_inputs(n: usize, phase: usize) -> Vec<f32> {
    let mut xs: Vec<f32> = super::F32_SPECIALS.to_vec();
    let mut i = phase;
    while xs.len() < n {
        let t = i as f32 * 0.618_034;
        let v = match i % 3 {
            0 => (t.fract() - 0.5) * 8.0,
            1 => 2f32.powf((t.fract() - 0.5) * 60.0),
            _ => -(2f32.powf((t.fract() - 0.5) * 60.0)),
        };
        xs.push(v);
        i += 1;
    }
    xs.truncate(n);
    xs
}

/// Every `f32` function with an inline approximation ([`vmath::inline`]), alone over `[n]`,
/// and applied to `x + row` with a row vector over `[m, k]` (segments per row): AVX-512 code
/// (and, alone, AVX2 code on such a host) with the Cranelift code's bits on every range
/// shape, and within the function's documented bound of the interpreter's exact value. The
/// inputs reach `2^30`, past the range of `Sin`, `Cos` and `Tan`'s inline code, whose lanes
/// beyond it are the reference's (by a call from the assembled code).
#[test]
fn vector_math_is_assembled_with_cranelifts_bits() {
    let functions = UnaryOp::ALL
        .into_iter()
        .filter(|&u| vmath::inline(u, F32) && !vmath::trig_fallback(u, F32) && u.accepts(F32));
    for u in functions {
        for n in [1, 15, 16, 17, 100, 1000] {
            let what = format!("{} [{n}]", u.name());
            let b = FunctionBuilder::new(what.clone());
            let x = b.parameter("x", F32, [n]);
            let body = b.finish(&[b.op(Op::Unary(u), &[x])]).unwrap();
            let xs = math_inputs(n, 0);
            let ins = vec![Tensor::from_vec(xs.clone(), [n]).unwrap()];
            same_bits_as_cranelift(&what, &body, &ins);
            if let Some(avx2) = avx2_beside_avx512() {
                same_bits_on(&what, &body, &ins, &avx2, Some(VectorIsa::Avx2));
            }
            let bound = vmath::max_ulp(u, F32).unwrap();
            let exact = move |i: usize| reference::unary_f64(u, f64::from(xs[i]));
            check(&what, &body, &ins, Expect::Ulp(bound, &exact));
        }
        for (m, k) in [(3, 17), (4, 100)] {
            let what = format!("{}(x + row) [{m}, {k}]", u.name());
            let b = FunctionBuilder::new(what.clone());
            let x = b.parameter("x", F32, [m, k]);
            let row = b.parameter("row", F32, [k]);
            let body = b.finish(&[b.op(Op::Unary(u), &[x + row]) * x]).unwrap();
            let ins = vec![
                Tensor::from_vec(math_inputs(m * k, 1), [m, k]).unwrap(),
                Tensor::from_vec(math_inputs(k, 2), [k]).unwrap(),
            ];
            same_bits_as_cranelift(&what, &body, &ins);
        }
    }
}

/// Comparisons, selects, `Maximum` / `Minimum` of two values (NaN and signed zeros among
/// the inputs), `Sign`, `i32` arithmetic and conversions, and a chain of vector math with a
/// column broadcast: AVX-512 code, bit for bit the Cranelift code's and the interpreter's
/// (the vector math within its bound, through `ops.rs`).
#[test]
fn selects_and_integer_ops_are_assembled_with_cranelifts_bits() {
    let specials = |n: usize, phase: usize| -> Vec<f32> {
        (0..n)
            .map(|i| super::F32_SPECIALS[(i * 7 + phase) % super::F32_SPECIALS.len()])
            .collect()
    };
    // (At one element every value is invariant: more than the registers hold.)
    for n in [2, 15, 17, 100, 1000] {
        let b = FunctionBuilder::new("selects");
        let x = b.parameter("x", F32, [n]);
        let y = b.parameter("y", F32, [n]);
        let i = b.parameter("i", ElementType::I32, [n]);
        let lt = b.op(Op::Compare(CompareOp::Less), &[x, y]);
        let ge = b.op(
            Op::Compare(CompareOp::GreaterEq),
            &[x, x.scalar_like(0.5).broadcast_to([n])],
        );
        let eq = b.op(
            Op::Compare(CompareOp::Equal),
            &[i, i.scalar_like(3.0).broadcast_to([n])],
        );
        let picked = graphlift_ir::select(lt, x, y * 2.0);
        let constant = graphlift_ir::select(
            ge,
            x.scalar_like(1.0).broadcast_to([n]),
            x.scalar_like(-1.0).broadcast_to([n]),
        );
        let ints = graphlift_ir::select(eq, i * i - i, i + i.scalar_like(7.0));
        let body = b
            .finish(&[
                picked + constant + x.max(y),
                x.min(y) * x.sign(),
                (ints + (i.convert(F32) * x).convert(ElementType::I32)).convert(F32),
            ])
            .unwrap();
        let ints: Vec<i32> = (0..n as i32).map(|k| k % 11 - 5).collect();
        let ins = vec![
            Tensor::from_vec(specials(n, 0), [n]).unwrap(),
            Tensor::from_vec(specials(n, 3), [n]).unwrap(),
            Tensor::from_vec(ints, [n]).unwrap(),
        ];
        same_bits_as_cranelift(&format!("selects [{n}]"), &body, &ins);
        check(&format!("selects [{n}]"), &body, &ins, Expect::Exact);
    }
    for (m, k) in [(5, 16), (3, 100)] {
        // log(1 + x·x)·sigmoid(col) − erf(x)/2: column broadcasts (runs), three functions.
        let b = FunctionBuilder::new("chain");
        let x = b.parameter("x", F32, [m, k]);
        let col = b.parameter("col", F32, [m, 1]);
        let unary = |u: UnaryOp, v| b.op(Op::Unary(u), &[v]);
        let body = b
            .finish(&[
                unary(UnaryOp::Log, x * x + 1.0) * unary(UnaryOp::Sigmoid, col)
                    - unary(UnaryOp::Erf, x) * 0.5,
            ])
            .unwrap();
        let ins = vec![
            Tensor::from_vec(math_inputs(m * k, 3), [m, k]).unwrap(),
            Tensor::from_vec(math_inputs(m, 4), [m, 1]).unwrap(),
        ];
        same_bits_as_cranelift(&format!("chain [{m}, {k}]"), &body, &ins);
    }
}

/// `Power` on `f32` (sixteen `f32` lanes) over every pair of special values and over bases
/// and exponents of every magnitude, alone and with a row-vector exponent: AVX-512 code with
/// the Cranelift code's bits; within its bound of the interpreter, the special pairs bit for
/// bit.
#[test]
fn power_is_assembled_with_cranelifts_bits() {
    let (a, e) = super::all_pairs(F32);
    let n = a.len();
    let b = FunctionBuilder::new("pow pairs");
    let x = b.parameter("a", F32, [n]);
    let y = b.parameter("b", F32, [n]);
    let body = b.finish(&[x.pow(y)]).unwrap();
    let ins = vec![
        Tensor::from_data(a, [n]).unwrap(),
        Tensor::from_data(e, [n]).unwrap(),
    ];
    same_bits_as_cranelift("pow pairs", &body, &ins);
    check("pow pairs", &body, &ins, Expect::PowF32);
    for (m, k) in [(1, 1000), (3, 17), (4, 100)] {
        let what = format!("pow(|x|, row) [{m}, {k}]");
        let b = FunctionBuilder::new(what.clone());
        let x = b.parameter("x", F32, [m, k]);
        let row = b.parameter("row", F32, [k]);
        let body = b.finish(&[x.abs().pow(row) + x]).unwrap();
        let exponents: Vec<f32> = math_inputs(k, 5)
            .iter()
            .map(|v| v.clamp(-40.0, 40.0))
            .collect();
        let ins = vec![
            Tensor::from_vec(math_inputs(m * k, 6), [m, k]).unwrap(),
            Tensor::from_vec(exponents, [k]).unwrap(),
        ];
        same_bits_as_cranelift(&what, &body, &ins);
    }
}

/// `erf` spells a negated factor of a fused multiply-add and a `copysign` in four-lane
/// operations; the assembled AVX-512 code fuses them (`vfnmadd`, `vpternlogd`), with the
/// Cranelift code's bits (`vector_math_is_assembled_with_cranelifts_bits`).
#[test]
fn negated_factors_and_copysign_are_fused() {
    if host_isa() != Some(VectorIsa::Avx512) {
        return;
    }
    let target = graphlift_kernels::target::Target::from_env().with_veclib(false);
    let b = FunctionBuilder::new("erf");
    let x = b.parameter("x", F32, [1000]);
    let body = b.finish(&[x.erf()]).unwrap();
    let k = JitKernel::compile_for(&body, &target).unwrap();
    let listing = k.ir();
    assert!(listing.contains("vfnmadd213ps zmm"), "{listing}");
    assert!(listing.contains("vpternlogd zmm"), "{listing}");
}

/// `exp`, `expm1` and `sigmoid` where `e^x` is subnormal, underflows, or overflows (the
/// scaling by `2^n`: in AVX-512 code one `vscalefps`, in the Cranelift code two exact-or-
/// rounding-once products): the Cranelift code's bits, input by input.
#[test]
fn exponentials_near_underflow_and_overflow_have_cranelifts_bits() {
    let n = 4000;
    let xs: Vec<f32> = (0..n)
        .map(|i| {
            let t = i as f32 / n as f32;
            match i % 4 {
                0 => -104.5 + 18.0 * t,
                1 => 87.0 + 2.5 * t,
                2 => -(87.0 + 2.5 * t),
                _ => f32::from_bits((-103.97f32).to_bits() + i as u32),
            }
        })
        .collect();
    let b = FunctionBuilder::new("exponentials");
    let x = b.parameter("x", F32, [n]);
    let body = b
        .finish(&[x.exp(), x.exp() - 1.0, x.sigmoid(), (-x).sigmoid() * x])
        .unwrap();
    let ins = vec![Tensor::from_vec(xs, [n]).unwrap()];
    same_bits_as_cranelift("exponentials", &body, &ins);
}

/// A clamp that the inline math writes as a compare and a select (`x < c ? c : x`, `x > c ?
/// c : x`: `exp`'s of its argument, `tanh`'s, `erf`'s) is one `vmaxps` or `vminps` in AVX-512
/// code, with the Cranelift code's bits on NaN, signed zeros, infinities, the bounds
/// themselves and values beyond them.
#[test]
fn clamps_by_select_are_one_max_or_min() {
    let specials = [
        f32::NAN,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -104.0,
        89.0,
        -104.5,
        89.5,
        1e-40,
    ];
    let n = 400;
    let xs: Vec<f32> = (0..n)
        .map(|i| match i % 3 {
            0 => specials[i / 3 % 10],
            _ => (i as f32 - 200.0) * 0.75,
        })
        .collect();
    let b = FunctionBuilder::new("clamps");
    let x = b.parameter("x", F32, [n]);
    let body = b.finish(&[x.exp(), x.tanh(), x.erf()]).unwrap();
    let ins = vec![Tensor::from_vec(xs, [n]).unwrap()];
    same_bits_as_cranelift("clamps", &body, &ins);
    if host_isa() == Some(VectorIsa::Avx512) {
        let target = graphlift_kernels::target::Target::from_env().with_veclib(false);
        let b = FunctionBuilder::new("exp");
        let x = b.parameter("x", F32, [n]);
        let exp = b.finish(&[x.exp()]).unwrap();
        let listing = JitKernel::compile_for(&exp, &target)
            .unwrap()
            .ir()
            .to_string();
        assert!(
            listing.contains("vmaxps zmm") && listing.contains("vminps zmm"),
            "{listing}"
        );
        assert!(
            !listing.contains("vcmplt_oqps") && !listing.contains("vcmpgt_oqps"),
            "{listing}"
        );
    }
}

/// The constants that `exp`'s program puts in registers of their own (its clamps' bounds,
/// its polynomial's first coefficient) are loaded once, before the loop, into registers
/// the body leaves free: every `vbroadcastss` of the listing comes before its first
/// arithmetic, and the bits are the Cranelift code's.
#[test]
fn constants_a_program_copies_are_held_in_registers() {
    let n = 1000;
    let b = FunctionBuilder::new("scaled exp");
    let x = b.parameter("x", F32, [n]);
    let body = b.finish(&[x.exp() * 1.5]).unwrap();
    let ins = vec![Tensor::from_vec(math_inputs(n, 11), [n]).unwrap()];
    same_bits_as_cranelift("scaled exp", &body, &ins);
    if host_isa() != Some(VectorIsa::Avx512) {
        return;
    }
    let target = graphlift_kernels::target::Target::from_env().with_veclib(false);
    let listing = JitKernel::compile_for(&body, &target)
        .unwrap()
        .ir()
        .to_string();
    let last_broadcast = listing.rfind("vbroadcastss zmm").expect("held constants");
    let first_arithmetic = listing.find("vfmadd").unwrap();
    assert!(last_broadcast < first_arithmetic, "{listing}");
}
