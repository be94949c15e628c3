//! AVX-512 kernels ([`graphlift_codegen::avx512`]): which kernels qualify, and bit-identity
//! with the Cranelift code of the same kernel on every range shape (tails of 1 to 15
//! elements, ranges that start and end mid-row, rows shorter than a vector).

use super::{bits, check, outputs_of_range, Expect};
use graphlift_codegen::avx512::host_supported;
use graphlift_codegen::JitKernel;
use graphlift_ir::{ElementType, Function, FunctionBuilder, Shape};
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

/// Checks that `body` is AVX-512 code (where the host has it) whose every output bit equals
/// the Cranelift code's, on the whole range and on ranges with every tail length, and matches
/// the interpreter (through [`check`]).
fn same_as_cranelift(what: &str, body: &Function) {
    let wide = JitKernel::compile(body).unwrap();
    let narrow = JitKernel::compile_inline(body).unwrap();
    assert_eq!(wide.is_avx512(), host_supported(), "{what}:\n{}", wide.ir());
    assert!(!narrow.is_avx512());
    let ins = inputs_of(body, 3);
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
    for &(b, e) in &ranges {
        assert_eq!(
            bits(&outputs_of_range(&wide, &refs, n, (b, e))),
            bits(&outputs_of_range(&narrow, &refs, n, (b, e))),
            "{what}: range {b}..{e}"
        );
    }
    check(what, body, &ins, Expect::Exact);
}

#[test]
fn simple_f32_kernels_are_avx512_code_with_cranelifts_bits() {
    for n in [1, 15, 16, 17, 64, 65, 1000] {
        same_as_cranelift(&format!("e1 [{n}]"), &e1(n));
        same_as_cranelift(&format!("every_op [{n}]"), &every_op(n));
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
    fn x(b: &FunctionBuilder) -> graphlift_ir::Value<'_> {
        b.parameter("x", F32, [100])
    }
    let build = |what: &str, f: &dyn Fn(&FunctionBuilder) -> Vec<graphlift_ir::Value<'_>>| {
        let b = FunctionBuilder::new(what);
        let results = f(&b);
        (what.to_string(), b.finish(&results).unwrap())
    };
    let cases = [
        build("exp", &|b| vec![x(b).exp()]),
        build("max of two values", &|b| {
            vec![x(b).max(b.parameter("y", F32, [n]))]
        }),
        build("column broadcast under a vector", &|b| {
            vec![b.parameter("xm", F32, [10, 10]) + b.parameter("col", F32, [10, 1])]
        }),
        build("two-group broadcast", &|b| {
            vec![b.parameter("xm", F32, [2, 3, 16]) + b.parameter("g", F32, [2, 1, 16])]
        }),
        build("i32", &|b| {
            let i = b.parameter("i", ElementType::I32, [n]);
            vec![i + i]
        }),
        build("sign", &|b| vec![x(b).sign()]),
    ];
    for (what, body) in cases {
        let k = JitKernel::compile(&body).unwrap();
        assert!(!k.is_avx512(), "{what}:\n{}", k.ir());
        if what != "exp" {
            // (`exp` is held to its ulp bound elsewhere.)
            check(&what, &body, &inputs_of(&body, 1), Expect::Exact);
        }
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
        assert!(!k.is_avx512(), "{}", body.name());
        check(body.name(), &body, &inputs_of(&body, 2), Expect::Exact);
    }
}

#[test]
fn avx512_code_has_a_listing_and_attributes_its_code_to_the_nodes() {
    if !host_supported() {
        return;
    }
    let k = JitKernel::compile(&e1(1000)).unwrap();
    assert!(k.ir().contains("vaddps zmm"), "{}", k.ir());
    assert_eq!(k.lanes(), 16);
    let info = k.info();
    let nodes: std::collections::BTreeSet<&str> =
        info.code_ranges.iter().map(|r| r.node.as_str()).collect();
    assert!(nodes.len() >= 4, "{nodes:?}");
    assert!(info
        .code_ranges
        .iter()
        .all(|r| r.start < r.end && r.end as usize <= k.code_size()));
}
