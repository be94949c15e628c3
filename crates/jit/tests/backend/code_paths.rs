//! The backend gives each kernel the code path its plan qualifies for (two-lane `f64`,
//! mixed-width, AVX-512, library calls), and its switches change the code, never the bits.

use graphlift_codegen::asm::host_isa;
use graphlift_ir::{
    ElementType,
    ElementType::{BF16, F16, F32, F64, I64},
    Function, FunctionBuilder, Shape, Value,
};
use graphlift_jit::VectorIsa;
use graphlift_runtime::{Backend, Executable, InterpreterBackend, Tensor};

use super::{bits, data, first_difference};
use graphlift_jit::CpuJitBackend;
use graphlift_testkit::inputs_of;

/// Runs `f` on CPU-JIT (through `exe`) and on the INTERPRETER and asserts equal bits (any
/// NaN matching any NaN).
fn assert_matches_interpreter(what: &str, f: &Function, exe: &dyn Executable, inputs: &[Tensor]) {
    let got = exe.run(inputs).unwrap();
    let want = InterpreterBackend.compile(f).unwrap().run(inputs).unwrap();
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        if let Some(i) = first_difference(g.data(), w.data()) {
            panic!("{what}: output {k} differs from the interpreter at element {i}");
        }
    }
}

#[test]
fn the_backend_runs_an_f64_graph_as_an_x2_kernel() {
    let n = 1003;
    let b = FunctionBuilder::new("halide_f64");
    let [a, bb, c, d] = ["A", "B", "C", "D"].map(|p| b.parameter(p, F64, [n]));
    let f = b.finish(&[((a + bb) * c).relu() + d]).unwrap();
    let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
    let ks = exe.kernels();
    assert_eq!(ks.len(), 1);
    assert_eq!(exe.kernel_lanes(&ks[0].name), Some(2));
    assert_eq!(exe.kernel_is_vectorized(&ks[0].name), Some(true));
    assert_matches_interpreter("halide f64", &f, &exe, &inputs_of(&f, 5));
}

#[test]
fn the_backend_runs_a_mixed_graph_as_a_mixed_kernel() {
    let n = 1003;
    let b = FunctionBuilder::new("attention_mask");
    let mask = b.parameter("mask", I64, [n]);
    let scores = b.parameter("scores", F32, [n]);
    let f = b.finish(&[mask.convert(F32) * -10000.0 + scores]).unwrap();
    let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
    let ks = exe.kernels();
    assert_eq!(ks.len(), 1);
    assert_eq!(exe.kernel_lanes(&ks[0].name), Some(4));
    assert_eq!(exe.kernel_is_vectorized(&ks[0].name), Some(true));
    assert_eq!(exe.kernel_is_mixed_width(&ks[0].name), Some(true));
    let mask: Vec<i64> = (0..n as i64).map(|i| i % 5 % 2).collect();
    let inputs = [
        Tensor::from_data(graphlift_ir::TensorData::I64(mask), [n]).unwrap(),
        Tensor::from_data(data(F32, n, 0), [n]).unwrap(),
    ];
    assert_matches_interpreter("attention mask", &f, &exe, &inputs);
}

#[test]
fn the_assembler_settings_switch_between_the_codes_with_equal_results() {
    let b = FunctionBuilder::new("bias_relu");
    let x = b.parameter("x", F32, [64, 48]);
    let bias = b.parameter("bias", F32, [48]);
    let s = b.parameter("s", F32, Shape::scalar());
    let body = b.finish(&[(x + bias).relu(), x * bias - s.exp()]).unwrap();
    let ins = inputs_of(&body, 4);
    let host = CpuJitBackend::new().target().features;
    // (AVX-512 on, assembler on), (AVX-512 off, assembler on), (assembler off).
    let expect = [
        host_isa(),
        host.has_avx2_kernels().then_some(VectorIsa::Avx2),
        None,
    ];
    let mut results = Vec::new();
    for ((avx512, assembler), isa) in [(true, true), (false, true), (true, false)]
        .into_iter()
        .zip(expect)
    {
        let backend = CpuJitBackend::new()
            .with_avx512(avx512)
            .with_assembler(assembler);
        assert_eq!(backend.vector_isa(), isa);
        let exe = backend.compile_executable(&body).unwrap();
        let name = exe.kernels()[0].name.clone();
        assert_eq!(exe.kernel_assembled(&name), Some(isa));
        let register = match isa {
            Some(VectorIsa::Avx512) => "zmm",
            Some(VectorIsa::Avx2) => "ymm",
            None => "f32x4",
        };
        assert!(exe.kernel_ir(&name).unwrap().contains(register));
        results.push(bits(&exe.run(&ins).unwrap()));
    }
    assert!(results.iter().all(|r| *r == results[0]));
}

/// GELU (tanh form) as exporters write it.
fn gelu(x: Value<'_>) -> Value<'_> {
    let inner = (x + x * x * x * 0.044715) * 0.797_884_6;
    x * 0.5 * (inner.tanh() + 1.0)
}

#[test]
fn the_veclib_setting_gives_identical_results() {
    let n = 70_000;
    let b = FunctionBuilder::new("gelu");
    let x = b.parameter("x", ElementType::F32, [n]);
    let f = b.finish(&[gelu(x)]).unwrap();
    let x = Tensor::from_data(data(F32, n, 7), [n]).unwrap();
    let outputs = |backend: CpuJitBackend| {
        let exe = backend.compile_executable(&f).unwrap();
        let kernels = exe.kernels();
        assert_eq!(kernels.len(), 1);
        let calls = exe.kernel_calls_library(&kernels[0].name).unwrap();
        assert_eq!(calls, backend.veclib());
        let functions = exe.kernel_library_functions(&kernels[0].name).unwrap();
        let expect: &[&str] = if calls { &["gelu_tanh"] } else { &[] };
        assert_eq!(functions, expect);
        exe.run(std::slice::from_ref(&x)).unwrap()
    };
    let on = outputs(CpuJitBackend::new().with_threads(2).with_veclib(true));
    let off = outputs(CpuJitBackend::new().with_threads(1).with_veclib(false));
    assert_eq!(first_difference(on[0].data(), off[0].data()), None);
}

/// Exporters' spellings reach the library's forms through canonical forms: PyTorch's
/// `x * sigmoid(x)` (either order) is the SiLU `exp` form, `gelu_new`'s `Pow(x, 3)` is the
/// GELU-tanh form's cube, and GELU-erf's factors in other groupings are a GELU-erf form.
#[test]
fn exporter_spellings_call_the_same_library_form() {
    let n = 4096;
    let spelled = |name: &str, spell: Spelling| {
        let b = FunctionBuilder::new(name);
        let x = b.parameter("x", ElementType::F32, [n]);
        b.finish(&[spell(x)]).unwrap()
    };
    type Spelling = fn(Value<'_>) -> Value<'_>;
    let cases: [(&str, Spelling, &str); 7] = [
        (
            "gelu_erf_keras",
            |x| (0.5 * x) * ((x / std::f64::consts::SQRT_2).erf() + 1.0),
            "gelu_erf_divide",
        ),
        (
            "gelu_erf_nested",
            |x| 0.5 * (x * ((x * std::f64::consts::FRAC_1_SQRT_2).erf() + 1.0)),
            "gelu_erf",
        ),
        ("silu", |x| x * x.sigmoid(), "silu_exp"),
        ("silu_commuted", |x| x.sigmoid() * x, "silu_exp"),
        ("quick_gelu", |x| x * (x * 1.702).sigmoid(), "swish"),
        ("swish_commuted", |x| (0.5 * x).sigmoid() * x, "swish"),
        (
            "gelu_new",
            |x| {
                let cube = x.pow(x.scalar_like(3.0));
                x * 0.5 * (((x + cube * 0.044715) * 0.797_884_6).tanh() + 1.0)
            },
            "gelu_tanh",
        ),
    ];
    for (name, spell, form) in cases {
        let f = spelled(name, spell);
        // (The library's path: AVX2 code computes SiLU inline, faster than the library.)
        let exe = CpuJitBackend::new()
            .with_veclib(true)
            .with_assembler(false)
            .compile_executable(&f)
            .unwrap();
        let kernels = exe.kernels();
        assert_eq!(kernels.len(), 1, "{name}");
        let functions = exe.kernel_library_functions(&kernels[0].name).unwrap();
        assert_eq!(functions, [form], "{name}");
    }
}

#[test]
fn each_kernel_says_why_it_is_not_assembled_code() {
    let b = FunctionBuilder::new("halide_f64");
    let [a, c] = ["A", "C"].map(|p| b.parameter(p, F64, [256]));
    let f64_graph = b.finish(&[(a * c).relu() + a]).unwrap();
    let b = FunctionBuilder::new("relu");
    let x = b.parameter("x", F32, [256]);
    let f32_graph = b.finish(&[(x * 2.0).relu() + x]).unwrap();
    let refusal = |backend: CpuJitBackend, f: &Function| {
        let exe = backend.compile_executable(f).unwrap();
        let name = exe.kernels()[0].name.clone();
        exe.kernel_assembler_refusal(&name)
    };
    let why_f64 = refusal(CpuJitBackend::new(), &f64_graph).unwrap();
    let why_off = refusal(CpuJitBackend::new().with_assembler(false), &f32_graph).unwrap();
    let on_f32 = refusal(CpuJitBackend::new(), &f32_graph);
    if host_isa().is_some() {
        assert_eq!(why_f64, "its values are not all 32-bit");
        assert!(why_off.contains("GRAPHLIFT_ASSEMBLER=0"), "{why_off}");
        assert_eq!(on_f32, None);
    } else {
        for why in [why_f64, why_off, on_f32.unwrap()] {
            assert!(why.contains("the host lacks AVX2, FMA and F16C"), "{why}");
        }
    }
}

#[test]
fn trigonometric_functions_run_inline_on_f32_and_per_lane_on_f64() {
    // f32 sin in a fused kernel is inline vector code; f64 sin calls the reference's scalar
    // function once per lane (bit for bit), and the executable says so.
    let n = 1003;
    for (t, calls) in [(F32, vec![]), (F64, vec!["Sin f64".to_string()])] {
        let b = FunctionBuilder::new("trig");
        let x = b.parameter("x", t, [n]);
        let f = b.finish(&[x.sin() * x + x.cos()]).unwrap();
        let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
        let ks = exe.kernels();
        assert_eq!(ks.len(), 1);
        assert_eq!(exe.kernel_is_vectorized(&ks[0].name), Some(true));
        let mut want = calls.clone();
        if t == F64 {
            want.push("Cos f64".to_string());
        }
        assert_eq!(exe.kernel_scalar_calls(&ks[0].name), Some(want), "{t}");
        if t == F64 {
            assert_matches_interpreter("f64 sin", &f, &exe, &inputs_of(&f, 5));
        }
    }
}

#[test]
fn trigonometric_functions_of_16_bit_floats_are_the_interpreters() {
    // f16 and bf16 stay outside fused kernels and compute through the reference in f32.
    for t in [F16, BF16] {
        let b = FunctionBuilder::new("trig16");
        let x = b.parameter("x", t, [67]);
        let f = b.finish(&[x.sin() + x.cosh()]).unwrap();
        let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
        assert_matches_interpreter("16-bit trig", &f, &exe, &inputs_of(&f, 3));
    }
}
