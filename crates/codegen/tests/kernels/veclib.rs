//! The vector math library and strip-mined kernels: the library's results are the inline
//! code's bit for bit, and a kernel that calls it computes what the inline kernel computes,
//! at every length and range, with broadcast inputs, chained calls, values used on both
//! sides of a call, and several outputs; activation forms are found where they are whole
//! and only there.

use graphlift_codegen::strip::StripPlan;
use graphlift_codegen::JitKernel;
use graphlift_ir::{ElementType, Function, FunctionBuilder, Op, UnaryOp, Value};
use graphlift_kernels::target::Target;
use graphlift_kernels::veclib::{VecFn, MAX_PARAMS};
use graphlift_runtime::Tensor;

/// Every library function with its op.
const FUNCTIONS: [(VecFn, UnaryOp); 4] = [
    (VecFn::Exp, UnaryOp::Exp),
    (VecFn::Sigmoid, UnaryOp::Sigmoid),
    (VecFn::Tanh, UnaryOp::Tanh),
    (VecFn::Erf, UnaryOp::Erf),
];

/// The special values, every 65,521st bit pattern (all binades, both signs, subnormals, NaNs),
/// and the neighbours of the functions' thresholds.
fn sample() -> Vec<f32> {
    let mut xs = super::F32_SPECIALS.to_vec();
    xs.extend((0..=u32::MAX).step_by(65_521).map(f32::from_bits));
    for t in [
        -104.0f32, 89.0, 1.25, 1.140_625, 9.011_108, 3.940_131, 0.5, 88.72,
    ] {
        let b = t.to_bits();
        xs.extend((b - 40..b + 40).flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)]));
    }
    xs
}

/// Equal bits, or both NaN (a NaN's sign and payload are not specified by IEEE 754, and
/// the compilers may order the operands of commutative operations differently).
fn same(a: u32, b: u32) -> bool {
    a == b || (f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan())
}

fn run(k: &JitKernel, inputs: &[&Tensor], count: usize, range: (usize, usize)) -> Vec<Vec<u32>> {
    super::bits(&super::outputs_of_range(k, inputs, count, range))
}

/// The kernel of `body` with library calls gives the inline kernel's bits on `inputs`, over
/// the whole space and over a range that starts inside a strip; returns whether it called
/// the library.
fn same_as_inline(what: &str, body: &Function, inputs: &[&Tensor]) -> bool {
    let lib = JitKernel::compile_for(body, &strips()).unwrap();
    let inline = JitKernel::compile_inline(body).unwrap();
    assert!(!inline.calls_library());
    let n = lib.element_count();
    for range in [(0, n), (n / 3, n - n / 5), (n.saturating_sub(1), n)] {
        let (a, b) = (run(&lib, inputs, n, range), run(&inline, inputs, n, range));
        for (o, (a, b)) in a.iter().zip(&b).enumerate() {
            if let Some(i) = (0..n).find(|&i| !same(a[i], b[i])) {
                panic!(
                    "{what}: range {range:?} of {n}: output {o} element {i}: {:e} with calls, {:e} inline",
                    f32::from_bits(a[i]),
                    f32::from_bits(b[i])
                );
            }
        }
    }
    lib.calls_library()
}

/// Whether [`JitKernel::compile`] plans library calls here (the host and the environment).
fn library_on() -> bool {
    Target::from_env().veclib()
}

/// The target of the library's code path: Cranelift code in strips, without assembled code
/// (which computes every function inline, `graphlift_codegen::asm`).
fn strips() -> Target {
    Target::from_env().with_assembler(false)
}

#[test]
fn library_results_are_the_inline_codes_bit_for_bit() {
    let xs = sample();
    let input = Tensor::from_vec(xs.clone(), [xs.len()]).unwrap();
    for (f, op) in FUNCTIONS {
        let b = FunctionBuilder::new(op.name());
        let x = b.parameter("x", ElementType::F32, [xs.len()]);
        let body = b.finish(&[b.op(Op::Unary(op), &[x])]).unwrap();
        let inline = run(
            &JitKernel::compile_inline(&body).unwrap(),
            &[&input],
            xs.len(),
            (0, xs.len()),
        );
        let mut direct = vec![0.0f32; xs.len()];
        f.map(&xs, &mut direct, [0.0; MAX_PARAMS]);
        let direct: Vec<u32> = direct.iter().map(|x| x.to_bits()).collect();
        for (i, (&d, &v)) in direct.iter().zip(&inline[0]).enumerate() {
            assert!(
                same(d, v),
                "{}({:e}): library {d:#x}, inline {v:#x}",
                op.name(),
                xs[i]
            );
        }
        // Through a kernel: one call per strip, the input passed in place.
        let called = same_as_inline(op.name(), &body, &[&input]);
        assert_eq!(called, library_on(), "{}", op.name());
    }
}

/// `f32` data in `[-6, 6]` with a few special values.
fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut v = super::uniform(n, seed);
    for x in &mut v {
        *x = 12.0 * *x - 6.0;
    }
    for (i, s) in [f32::NAN, f32::INFINITY, -0.0, f32::NEG_INFINITY]
        .into_iter()
        .enumerate()
    {
        if let Some(x) = v.get_mut(i * 7 + 3) {
            *x = s;
        }
    }
    v
}

/// GELU, tanh form: the argument of the call computed, `x` used again after it.
fn gelu(x: Value<'_>) -> Value<'_> {
    let inner = (x + x * x * x * 0.044715) * 0.797_884_6;
    x * 0.5 * (inner.tanh() + 1.0)
}

#[test]
fn strip_mined_kernels_compute_what_inline_kernels_compute() {
    // Lengths around the strip (1,024 elements for these kernels) and the vector bodies.
    for n in [1, 2, 3, 5, 8, 9, 17, 1023, 1024, 1025, 2048 + 13, 5000] {
        let b = FunctionBuilder::new("gelu_and_more");
        let x = b.parameter("x", ElementType::F32, [n]);
        let y = b.parameter("y", ElementType::F32, [n]);
        // A chain of calls (`exp` of `tanh`), the argument an input in place (`sigmoid(y)`),
        // a call's result written to an output and read from there by later stages (twice an
        // output), divisions of two values (SiLU as exported: `x / (1 + e^-x)`; one of an
        // input by a call's result) and by a constant (inline), and an output that needs no
        // call.
        let sig = y.sigmoid();
        let outputs = [
            gelu(x),
            y.tanh().exp() * sig,
            (x - y).erf(),
            sig,
            x * y + 1.0,
            x / ((-x).exp() + 1.0),
            y / sig + x / 3.0,
            sig,
        ];
        let body = b.finish(&outputs).unwrap();
        let xs = Tensor::from_vec(data(n, 1), [n]).unwrap();
        let ys = Tensor::from_vec(data(n, 2), [n]).unwrap();
        let called = same_as_inline(&format!("n = {n}"), &body, &[&xs, &ys]);
        // (A one-element kernel computes everything once, before its loop.)
        assert_eq!(called, library_on() && n > 1, "n = {n}");
    }
}

#[test]
fn a_kernel_of_one_call_has_no_loop_and_no_buffer() {
    for n in [2, 7, 300, 1000] {
        for what in ["tanh", "divide"] {
            let b = FunctionBuilder::new(what);
            let x = b.parameter("x", ElementType::F32, [n]);
            let y = b.parameter("y", ElementType::F32, [n]);
            let out = if what == "tanh" { x.tanh() } else { x / y };
            let body = b.finish(&[out]).unwrap();
            let xs = Tensor::from_vec(data(n, 8), [n]).unwrap();
            let ys = Tensor::from_vec(data(n, 9), [n]).unwrap();
            assert_eq!(same_as_inline(what, &body, &[&xs, &ys]), library_on());
            if library_on() {
                let ir = JitKernel::compile_for(&body, &strips())
                    .unwrap()
                    .ir()
                    .to_string();
                assert!(!ir.contains("stack_addr"), "{what}: {ir}");
            }
        }
    }
}

#[test]
fn broadcast_and_invariant_values_around_calls() {
    // SiLU on a row-broadcast bias add, a per-row scale, and a call on an invariant value
    // (computed once, before the loop: not a call).
    let (rows, cols) = (37, 96);
    let b = FunctionBuilder::new("bias_silu");
    let x = b.parameter("x", ElementType::F32, [rows, cols]);
    let bias = b.parameter("bias", ElementType::F32, [cols]);
    let scale = b.parameter("scale", ElementType::F32, [rows, 1]);
    let c = b.parameter("c", ElementType::F32, []);
    let v = x + bias.broadcast_to([rows, cols]);
    let silu = v / ((-v).exp() + 1.0);
    let inv = c.broadcast_to([rows, cols]).tanh();
    let body = b
        .finish(&[silu * scale.broadcast_to([rows, cols]) + inv])
        .unwrap();
    let ins = [
        Tensor::from_vec(data(rows * cols, 3), [rows, cols]).unwrap(),
        Tensor::from_vec(data(cols, 4), [cols]).unwrap(),
        Tensor::from_vec(data(rows, 5), [rows, 1]).unwrap(),
        Tensor::from_vec(vec![0.3f32], [0usize; 0]).unwrap(),
    ];
    let refs: Vec<&Tensor> = ins.iter().collect();
    assert_eq!(same_as_inline("bias_silu", &body, &refs), library_on());
}

#[test]
fn chains_of_calls_stay_exact_and_long_ones_compile_inline() {
    // Calls each on the previous value plus the input: one stage per call. Up to eight
    // stages the kernel is strip-mined (the values between calls kept in buffers); a longer
    // chain compiles its vector math inline.
    let n = 3000;
    for depth in [2, 3, 5, 8, 9, 40] {
        let b = FunctionBuilder::new("deep");
        let x = b.parameter("x", ElementType::F32, [n]);
        // A value of three operations that every stage uses: computed once, kept in a buffer.
        let w = (x * x + x) * x;
        let mut v = x;
        for k in 0..depth {
            let op = [UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Erf][k % 3];
            v = b.op(Op::Unary(op), &[v]) * w + x * 0.5 - x;
        }
        let body = b.finish(&[v]).unwrap();
        let xs = Tensor::from_vec(data(n, 6), [n]).unwrap();
        let called = same_as_inline(&format!("depth {depth}"), &body, &[&xs]);
        assert_eq!(called, library_on() && depth <= 8, "depth {depth}");
        if called {
            let k = JitKernel::compile_for(&body, &strips()).unwrap();
            let strips = StripPlan::of(&k.compiled().plan).unwrap();
            assert_eq!(strips.kept_for_later_stages(), 1, "depth {depth}: `w`");
        }
    }
}

/// The library functions the kernel of `body` calls (none when it is not strip-mined).
fn called(body: &Function) -> Vec<VecFn> {
    let k = JitKernel::compile_for(body, &strips()).unwrap();
    StripPlan::of(&k.compiled().plan).map_or_else(Vec::new, |s| s.functions())
}

/// A kernel body of one output from `x`.
type OfX = for<'b> fn(Value<'b>) -> Value<'b>;

/// The forms as written by the peers' expressions, the ONNX importer and PyTorch's
/// exporters, with operands in both orders, each with its form; and near misses that are
/// no form, with the single function they call.
const FORMS: [(OfX, VecFn); 13] = [
    (gelu, VecFn::GeluTanh),
    // Operands the other way round, other constants.
    (
        |x| (0.25 + ((0.03 * (x * (x * x)) + x) * 0.7).tanh()) * (0.5 * x),
        VecFn::GeluTanh,
    ),
    (
        |x| x * 0.5 * ((x * std::f64::consts::FRAC_1_SQRT_2).erf() + 1.0),
        VecFn::GeluErf,
    ),
    (
        |x| x * ((x / std::f64::consts::SQRT_2).erf() + 1.0) * 0.5,
        VecFn::GeluErfDivide,
    ),
    (|x| x * x.sigmoid(), VecFn::Silu),
    (|x| x.sigmoid() * x, VecFn::Silu),
    (|x| x / ((-x).exp() + 1.0), VecFn::SiluExp),
    (|x| x / (1.0 + (-x).exp()), VecFn::SiluExp),
    (|x| x / ((-(x * 1.702)).exp() + 1.0), VecFn::Swish),
    (|x| x / (1.0 + (-(0.5 * x)).exp()), VecFn::Swish),
    // No forms: the cube used twice, a different op, a different argument.
    (
        |x| {
            let cube = x * x * x;
            x * 0.5 * ((x + cube * 0.044715) * 0.8).tanh() + cube
        },
        VecFn::Tanh,
    ),
    (
        |x| x * ((x / std::f64::consts::SQRT_2).erf() - 1.0) * 0.5,
        VecFn::Erf,
    ),
    (|x| x * (x + 1.0).sigmoid(), VecFn::Sigmoid),
];

#[test]
fn activation_forms_are_the_inline_codes_bit_for_bit() {
    let xs = sample();
    let n = xs.len();
    let input = Tensor::from_vec(xs, [n]).unwrap();
    for (k, (of, form)) in FORMS.into_iter().enumerate() {
        let b = FunctionBuilder::new("form");
        let x = b.parameter("x", ElementType::F32, [n]);
        let body = b.finish(&[of(x)]).unwrap();
        let what = format!("form {k} ({form:?})");
        let calls = same_as_inline(&what, &body, &[&input]);
        assert_eq!(calls, library_on(), "{what}");
        if calls {
            assert_eq!(called(&body), vec![form], "{what}");
        }
    }
}

/// A kernel body from `x`, `y` and a 0-d `c`.
type OfXyc = for<'b> fn(Value<'b>, Value<'b>, Value<'b>) -> Vec<Value<'b>>;

#[test]
fn a_form_is_found_only_where_it_is_whole() {
    fn t(x: Value<'_>) -> Value<'_> {
        ((x + x * x * x * 0.044715) * 0.797_884_6).tanh()
    }
    let n = 3000;
    let cases: [(&str, OfXyc, &[VecFn]); 5] = [
        // The `tanh` is an output too: the products are computed after a `tanh` call.
        (
            "tanh used outside",
            |x, _, _| vec![x * 0.5 * (t(x) + 1.0), t(x)],
            &[VecFn::Tanh],
        ),
        // A parameter that is not a constant.
        (
            "runtime scale",
            |x, _, c| vec![x * c.broadcast_to([3000]) * (t(x) + 1.0)],
            &[VecFn::Tanh],
        ),
        // Two values: `y · sigmoid(x)` is no SiLU.
        (
            "two values",
            |x, y, _| vec![y * x.sigmoid()],
            &[VecFn::Sigmoid],
        ),
        // A form on a computed value, another on an input, in one kernel.
        (
            "two forms",
            |x, y, _| vec![(x + y) * (x + y).sigmoid(), gelu(y) + 1.0],
            &[VecFn::GeluTanh, VecFn::Silu],
        ),
        // The form's value used by more code, its argument used elsewhere.
        (
            "form inside",
            |x, y, _| vec![(x / ((-x).exp() + 1.0)) * y + x],
            &[VecFn::SiluExp],
        ),
    ];
    let xs = Tensor::from_vec(data(n, 11), [n]).unwrap();
    let ys = Tensor::from_vec(data(n, 12), [n]).unwrap();
    let cs = Tensor::from_vec(vec![0.5f32], [0usize; 0]).unwrap();
    for (what, of, expect) in cases {
        let b = FunctionBuilder::new("partial");
        let x = b.parameter("x", ElementType::F32, [n]);
        let y = b.parameter("y", ElementType::F32, [n]);
        let c = b.parameter("c", ElementType::F32, []);
        let body = b.finish(&of(x, y, c)).unwrap();
        let calls = same_as_inline(what, &body, &[&xs, &ys, &cs]);
        assert_eq!(calls, library_on(), "{what}");
        if calls {
            assert_eq!(called(&body), expect, "{what}");
        }
    }
}
