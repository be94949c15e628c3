//! Unit tests of the JIT against the reference kernels of `graphlift-runtime`.
//!
//! Each kernel is compiled on its own ([`graphlift_codegen::JitKernel`]) and compared with
//! `reference::evaluate_function` on its body: bit for bit (any NaN matches any NaN), except
//! the `f32` vector math functions, which are held to their documented ulp bounds.

mod abi;
mod asm;
mod asm_divide;
mod asm_fold;
mod asm_narrow;
mod broadcast;
mod mixed;
mod ops;
mod storage;
mod stream;
mod veclib;
mod x2;
use graphlift_codegen::JitKernel;
use graphlift_ir::{ElementType, Function, TensorData};
use graphlift_runtime::reference::evaluate_function;
use graphlift_runtime::Tensor;
pub use graphlift_testkit::{bits, data, first_difference, specials, uniform, F32_SPECIALS};

/// Sizes that exercise the unrolled loop and every tail length, of every vector width (4
/// lanes and mixed: step 8, tail 1–7 in trips of 4; 2 lanes: step 4, tail 1–3 in trips of 2).
pub const SIZES: [usize; 12] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 1000];

/// All pairs of special values: `(a, b)` with `a[i] = s[i / m]`, `b[i] = s[i % m]`.
pub fn all_pairs(t: ElementType) -> (TensorData, TensorData) {
    let s = specials(t);
    let m = s.len();
    let idx_a: Vec<usize> = (0..m * m).map(|i| i / m).collect();
    let idx_b: Vec<usize> = (0..m * m).map(|i| i % m).collect();
    (gather(&s, &idx_a), gather(&s, &idx_b))
}

pub fn gather(d: &TensorData, idx: &[usize]) -> TensorData {
    graphlift_ir::map_data!(d, v => idx.iter().map(|&i| v[i]).collect(),
        String(v) => idx.iter().map(|&i| v[i].clone()).collect())
}

/// Output tensors for a body, zero-filled.
pub fn outputs_for(body: &Function) -> Vec<Tensor> {
    body.result_types()
        .into_iter()
        .map(|t| Tensor::zeros(t.element_type, t.shape).unwrap())
        .collect()
}

/// Runs the body with the JIT and the reference; returns (jit, reference).
pub fn run_both(body: &Function, inputs: &[Tensor]) -> (Vec<Tensor>, Vec<Tensor>) {
    let k = JitKernel::compile(body).unwrap_or_else(|e| panic!("compile: {e}"));
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let mut out = outputs_for(body);
    k.call(&refs, &mut out).unwrap();
    let want = evaluate_function(body, inputs).unwrap();
    (out, want)
}

/// Asserts bitwise equality of every output, naming the first difference and the inputs
/// there.
pub fn assert_exact(what: &str, inputs: &[Tensor], got: &[Tensor], want: &[Tensor]) {
    assert_eq!(got.len(), want.len(), "{what}: output count");
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        if let Some(i) = first_difference(g.data(), w.data()) {
            let ins: Vec<String> = inputs
                .iter()
                .map(|t| format!("{:?}", t.data().get_f64(i % t.len().max(1))))
                .collect();
            panic!(
                "{what}: output {o} element {i}: jit {:?}, reference {:?} (inputs there: {})",
                element(g.data(), i),
                element(w.data(), i),
                ins.join(", ")
            );
        }
    }
}

/// One element, printed with its type.
pub fn element(d: &TensorData, i: usize) -> String {
    match d {
        TensorData::F32(v) => v.get(i).map(|x| format!("{x:e} ({:#x})", x.to_bits())),
        TensorData::F64(v) => v.get(i).map(|x| format!("{x:e}")),
        TensorData::I32(v) => v.get(i).map(|x| x.to_string()),
        TensorData::I64(v) => v.get(i).map(|x| x.to_string()),
        other => other
            .get_f64(i)
            .map(|x| format!("{x:e} ({})", other.element_type())),
    }
    .unwrap_or_else(|| "<none>".into())
}

/// A value no kernel writes by accident: output elements outside a called range must keep
/// it.
pub fn sentinel(t: ElementType, n: usize) -> TensorData {
    match t {
        ElementType::F32 => TensorData::F32(vec![1234.5678; n]),
        ElementType::F64 => TensorData::F64(vec![1234.5678; n]),
        ElementType::I32 => TensorData::I32(vec![0x5a5a_5a5a; n]),
        ElementType::I64 => TensorData::I64(vec![0x5a5a_5a5a_5a5a; n]),
        ElementType::Bool => TensorData::Bool(vec![true; n]),
        ElementType::I8 => TensorData::I8(vec![0x5a; n]),
        ElementType::U8 => TensorData::U8(vec![0xa5; n]),
        ElementType::I16 => TensorData::I16(vec![0x5a5a; n]),
        ElementType::U16 => TensorData::U16(vec![0xa5a5; n]),
        ElementType::U32 => TensorData::U32(vec![0xa5a5_a5a5; n]),
        ElementType::F16 => TensorData::F16(vec![graphlift_ir::f16::from_f32(1234.5); n]),
        ElementType::BF16 => TensorData::BF16(vec![graphlift_ir::bf16::from_f32(1234.5); n]),
        other => panic!("fused kernels do not lower {other}"),
    }
}

/// How outputs are compared with the reference.
#[derive(Clone, Copy)]
pub enum Expect<'a> {
    /// Bit for bit.
    Exact,
    /// Within `ulp` of `exact(i)` (the `f64` value before rounding), one `f32` output.
    Ulp(f64, &'a dyn Fn(usize) -> f64),
    /// Within `ulp` (in `f64` ulp) of the 256-bit reference value of `op` at the input, one `f64` output
    /// of a one-input kernel.
    UlpF64(f64, graphlift_ir::UnaryOp),
    /// `Power` on `f64` (a two-input kernel, one output): within [`graphlift_codegen::vmath::pow::MAX_ULP_F64`]
    /// of the 256-bit reference value, and the interpreter's bits wherever an operand is special
    /// ([`graphlift_testkit::reference::pow_special_operands`]).
    PowF64,
    /// `Power` on `f32` (a two-input kernel, one output): within
    /// [`graphlift_codegen::vmath::pow::MAX_ULP`] of the interpreter's `f64` value before
    /// rounding, and the interpreter's bits wherever an operand or the result is special
    /// ([`graphlift_testkit::reference::pow_special_operands`], or a NaN or infinite value).
    PowF32,
    /// `Power` on `f16` or `bf16` (a two-input kernel, one output), computed as `f32`
    /// `Power` and rounded: the interpreter's bits, or its neighbour of the same sign (the
    /// `f32` result within [`graphlift_codegen::vmath::pow::MAX_ULP`] rounds the other way
    /// near a tie), and its bits wherever an operand is special.
    PowHalf,
}

fn compare_range(
    what: &str,
    inputs: &[Tensor],
    got: &[Tensor],
    want: &[Tensor],
    range: (usize, usize),
    expect: Expect,
) {
    let (b, e) = range;
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        let s = sentinel(g.element_type(), g.len());
        let outside: Vec<usize> = (0..b).chain(e..g.len()).collect();
        let (gi, si) = (gather(g.data(), &outside), gather(&s, &outside));
        if let Some(i) = first_difference(&gi, &si) {
            panic!(
                "{what}: range {b}..{e} wrote output {o} element {}",
                outside[i]
            );
        }
        let inside: Vec<usize> = (b..e).collect();
        let (gi, wi) = (gather(g.data(), &inside), gather(w.data(), &inside));
        match expect {
            Expect::Exact => {
                if let Some(i) = first_difference(&gi, &wi) {
                    let at = inside[i];
                    let ins: Vec<String> = inputs
                        .iter()
                        .map(|t| element(t.data(), at % t.len().max(1)))
                        .collect();
                    panic!(
                        "{what}: range {b}..{e}: output {o} element {at}: jit {}, reference {} (inputs: {})",
                        element(&gi, i),
                        element(&wi, i),
                        ins.join(", ")
                    );
                }
            }
            Expect::Ulp(bound, exact) => {
                let TensorData::F32(v) = &gi else {
                    panic!("{what}: ulp comparison of a non-f32 output")
                };
                for (k, &y) in v.iter().enumerate() {
                    let at = inside[k];
                    let err = graphlift_codegen::vmath::ulp_error(y, exact(at));
                    assert!(
                        err <= bound,
                        "{what}: element {at}: {y:e} is {err} ulp from {:e} (bound {bound}); input {}",
                        exact(at),
                        element(inputs[0].data(), at)
                    );
                }
            }
            Expect::PowF64 => {
                let (
                    TensorData::F64(v),
                    TensorData::F64(xs),
                    TensorData::F64(ys),
                    TensorData::F64(r),
                ) = (&gi, inputs[0].data(), inputs[1].data(), &wi)
                else {
                    panic!("{what}: f64 Power comparison of a non-f64 kernel")
                };
                let bound = graphlift_codegen::vmath::pow::MAX_ULP_F64;
                for (k, (&y, &want)) in v.iter().zip(r).enumerate() {
                    let at = inside[k];
                    let (a, p) = (xs[at % xs.len()], ys[at % ys.len()]);
                    let err = graphlift_testkit::reference::ulp_error(
                        y,
                        &graphlift_testkit::reference::exact_pow(a, p),
                    );
                    assert!(
                        err <= bound,
                        "{what}: element {at}: pow({a:e}, {p:e}) = {y:e} is {err} ulp off (bound {bound})"
                    );
                    if graphlift_testkit::reference::pow_special_operands(a, p) {
                        assert!(
                            y.to_bits() == want.to_bits() || y.is_nan() && want.is_nan(),
                            "{what}: element {at}: pow({a:e}, {p:e}) = {y:e}, the interpreter gives {want:e}"
                        );
                    }
                }
            }
            Expect::PowF32 => {
                let (
                    TensorData::F32(v),
                    TensorData::F32(xs),
                    TensorData::F32(ys),
                    TensorData::F32(r),
                ) = (&gi, inputs[0].data(), inputs[1].data(), &wi)
                else {
                    panic!("{what}: f32 Power comparison of a non-f32 kernel")
                };
                let bound = graphlift_codegen::vmath::pow::MAX_ULP;
                for (k, (&y, &want)) in v.iter().zip(r).enumerate() {
                    let at = inside[k];
                    let (a, p) = (xs[at % xs.len()], ys[at % ys.len()]);
                    let exact = graphlift_runtime::reference::binary_f64(
                        graphlift_ir::BinaryOp::Power,
                        f64::from(a),
                        f64::from(p),
                    );
                    let err = graphlift_codegen::vmath::ulp_error(y, exact);
                    assert!(
                        err <= bound,
                        "{what}: element {at}: pow({a:e}, {p:e}) = {y:e} is {err} ulp off (bound {bound})"
                    );
                    let special = !exact.is_finite()
                        || graphlift_testkit::reference::pow_special_operands(
                            f64::from(a),
                            f64::from(p),
                        );
                    if special {
                        assert!(
                            y.to_bits() == want.to_bits() || y.is_nan() && want.is_nan(),
                            "{what}: element {at}: pow({a:e}, {p:e}) = {y:e}, the interpreter gives {want:e}"
                        );
                    }
                }
            }
            Expect::PowHalf => {
                // Bit patterns of the 16-bit type and the operands' values.
                let halves = |d: &TensorData| -> Vec<(u16, f64)> {
                    match d {
                        TensorData::F16(v) => v
                            .iter()
                            .map(|h| (h.to_bits(), f64::from(h.to_f32())))
                            .collect(),
                        TensorData::BF16(v) => v
                            .iter()
                            .map(|h| (h.to_bits(), f64::from(h.to_f32())))
                            .collect(),
                        _ => panic!("{what}: 16-bit Power comparison of another type"),
                    }
                };
                let (v, r) = (halves(&gi), halves(&wi));
                let (xs, ys) = (halves(inputs[0].data()), halves(inputs[1].data()));
                for (k, (&(y, yv), &(want, wv))) in v.iter().zip(&r).enumerate() {
                    let at = inside[k];
                    let (a, p) = (xs[at % xs.len()].1, ys[at % ys.len()].1);
                    let nan = yv.is_nan() && wv.is_nan();
                    let special = graphlift_testkit::reference::pow_special_operands(a, p);
                    let same_sign = (y ^ want) & 0x8000 == 0;
                    let near = same_sign && y.abs_diff(want) <= 1 && !special;
                    assert!(
                        nan || y == want || near,
                        "{what}: element {at}: pow({a:e}, {p:e}) = {yv:e}, the interpreter gives {wv:e}"
                    );
                }
            }
            Expect::UlpF64(bound, op) => {
                let (TensorData::F64(v), TensorData::F64(xs)) = (&gi, inputs[0].data()) else {
                    panic!("{what}: f64 ulp comparison of a non-f64 kernel")
                };
                for (k, &y) in v.iter().enumerate() {
                    let at = inside[k];
                    let x = xs[at % xs.len().max(1)];
                    let err = graphlift_testkit::reference::ulp_error(
                        y,
                        &graphlift_testkit::reference::exact(op, x),
                    );
                    assert!(
                        err <= bound,
                        "{what}: element {at}: {}({x:e}) = {y:e} is {err} ulp off (bound {bound})",
                        op.name()
                    );
                }
            }
        }
    }
}

/// Compiles `body` once and checks the whole range, then sub-ranges of every size in
/// [`SIZES`] at offsets 0, 3 and the end (the range ABI), against the reference.
pub fn check(what: &str, body: &Function, inputs: &[Tensor], expect: Expect) {
    let k = JitKernel::compile(body).unwrap_or_else(|e| panic!("{what}: compile: {e}"));
    let want = evaluate_function(body, inputs).unwrap();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let n = k.element_count();
    let mut ranges = vec![(0, n)];
    for s in SIZES {
        for b in [0, 3, n.saturating_sub(s)] {
            if b + s <= n {
                ranges.push((b, b + s));
            }
        }
    }
    for (b, e) in ranges {
        let mut out: Vec<Tensor> = outputs_for(body)
            .into_iter()
            .map(|t| {
                Tensor::from_data(sentinel(t.element_type(), t.len()), t.shape().clone()).unwrap()
            })
            .collect();
        k.call_range(&refs, &mut out, b, e)
            .unwrap_or_else(|err| panic!("{what}: call {b}..{e}: {err}"));
        compare_range(what, inputs, &out, &want, (b, e), expect);
    }
}

/// The outputs of `k` (each of `count` elements, zeros where the call does not write) after
/// a call on elements `range.0..range.1`.
pub fn outputs_of_range(
    k: &JitKernel,
    inputs: &[&Tensor],
    count: usize,
    range: (usize, usize),
) -> Vec<Tensor> {
    let mut outs: Vec<Tensor> = k
        .output_types()
        .into_iter()
        .map(|t| Tensor::zeros(t, [count]).unwrap())
        .collect();
    k.call_range(inputs, &mut outs, range.0, range.1).unwrap();
    outs
}
