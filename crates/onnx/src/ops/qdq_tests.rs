//! The QDQ lowering end to end: models in the static QDQ form quantization tools write
//! (`QuantizeLinear -> DequantizeLinear` on the activation, `DequantizeLinear` of a constant
//! 8-bit weight, `MatMul` or `Gemm`, the result quantized again), imported and run on
//! CPU-JIT (where the pass makes a `QuantizedMatMul`) and on the INTERPRETER (float QDQ),
//! against the integer arithmetic of onnxruntime's `QLinearMatMul`, computed here.

use graphlift_ir::{Shape, TensorData};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Backend, Executable, InterpreterBackend, Tensor};
use prost::Message;

use crate::proto::*;
use crate::tests::{attr_i, model_opset, node, vi};
use crate::{import_model_bytes, tensor_to_proto};

/// One product: `M x K x N`, the activation's 8-bit type (the output's too), the weight's,
/// a per-column weight scale or one per tensor, `Gemm` with `transB = 1` or `MatMul`, and
/// both operands activations (attention's products) instead of a constant weight.
#[derive(Debug, Clone, Copy)]
struct Case {
    m: usize,
    k: usize,
    n: usize,
    signed_activation: bool,
    unsigned_weight: bool,
    per_column: bool,
    gemm: bool,
    activations: bool,
    /// UINT8 weights over the whole range with zero point 0: `W - zp` leaves INT8.
    wide_weights: bool,
    seed: u64,
}

/// A small deterministic generator (the tests need no statistical quality).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next() % 10_000) as f32 / 10_000.0
    }
}

/// `sat(round_half_even(v) + zp)` to the 8-bit range of `signed`.
fn saturate(v: f32, zp: i32, signed: bool) -> i32 {
    let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
    (v.round_ties_even() as i32 + zp).clamp(lo, hi)
}

fn eight_bit(values: &[i32], signed: bool) -> TensorData {
    if signed {
        TensorData::I8(values.iter().map(|&v| v as i8).collect())
    } else {
        TensorData::U8(values.iter().map(|&v| v as u8).collect())
    }
}

/// The model of `c`, its inputs and the output onnxruntime's `QLinearMatMul` gives.
fn build(c: Case) -> (ModelProto, Vec<Tensor>, Vec<f32>) {
    let mut rng = Lcg(c.seed);
    let (m, k, n) = (c.m, c.k, c.n);
    let x: Vec<f32> = (0..m * k).map(|_| rng.uniform(-3.0, 3.0)).collect();
    let (xs, xz) = (6.0f32 / 255.0, if c.signed_activation { -3 } else { 131 });
    let xq: Vec<i32> = x
        .iter()
        .map(|&v| saturate(v / xs, xz, c.signed_activation))
        .collect();
    // The second operand: a constant [K, N] weight (or [N, K] for Gemm's transB), or a
    // second activation [K, N] quantized like the first.
    let w_signed = !c.unsigned_weight;
    let cols = if c.per_column { n } else { 1 };
    let wz: Vec<i32> = (0..cols)
        .map(|_| {
            if w_signed {
                0
            } else {
                120 + (rng.next() % 16) as i32
            }
        })
        .collect();
    let ws: Vec<f32> = (0..cols).map(|_| rng.uniform(0.002, 0.02)).collect();
    let b_float: Vec<f32> = (0..k * n).map(|_| rng.uniform(-3.0, 3.0)).collect();
    let wq: Vec<i32> = (0..k * n)
        .map(|i| {
            let col = if c.per_column { i % n } else { 0 };
            if c.activations {
                saturate(b_float[i] / xs, xz, c.signed_activation)
            } else if c.wide_weights {
                (rng.next() % 256) as i32
            } else {
                let r = (rng.next() % 255) as i32 - 127;
                (r + wz[col]).clamp(
                    if w_signed { -128 } else { 0 },
                    if w_signed { 127 } else { 255 },
                )
            }
        })
        .collect();
    let (bz, bs): (Vec<i32>, Vec<f32>) = if c.activations {
        (vec![xz], vec![xs])
    } else {
        (wz.clone(), ws.clone())
    };
    // The integer product and the output scale that keeps it mostly in range.
    let acc: Vec<i32> = (0..m * n)
        .map(|i| {
            let (r, col) = (i / n, i % n);
            let z = bz[if bz.len() > 1 { col } else { 0 }];
            (0..k)
                .map(|kk| (xq[r * k + kk] - xz) * (wq[kk * n + col] - z))
                .sum()
        })
        .collect();
    let scale_of = |col: usize| bs[if bs.len() > 1 { col } else { 0 }];
    let widest = (0..m * n)
        .map(|i| (acc[i] as f32 * xs * scale_of(i % n)).abs())
        .fold(1e-3f32, f32::max);
    let (ys, yz) = (widest / 100.0, if c.signed_activation { 2 } else { 125 });
    let want: Vec<f32> = (0..m * n)
        .map(|i| {
            let mult = xs * scale_of(i % n) / ys;
            let q = saturate(acc[i] as f32 * mult, yz, c.signed_activation);
            (q - yz) as f32 * ys
        })
        .collect();

    let scalar = |v: f32| TensorData::F32(vec![v]);
    let zp = |v: i32, signed: bool| eight_bit(&[v], signed);
    let mut inits: Vec<(&str, TensorData, Vec<usize>)> = vec![
        ("xs", scalar(xs), vec![]),
        ("xz", zp(xz, c.signed_activation), vec![]),
        ("ys", scalar(ys), vec![]),
        ("yz", zp(yz, c.signed_activation), vec![]),
    ];
    let mut nodes = vec![
        node("QuantizeLinear", "qx", &["x", "xs", "xz"], &["xq"], vec![]),
        node(
            "DequantizeLinear",
            "dqx",
            &["xq", "xs", "xz"],
            &["xd"],
            vec![],
        ),
    ];
    let b_name = if c.activations {
        nodes.push(node(
            "QuantizeLinear",
            "qb",
            &["b", "xs", "xz"],
            &["bq"],
            vec![],
        ));
        nodes.push(node(
            "DequantizeLinear",
            "dqb",
            &["bq", "xs", "xz"],
            &["bd"],
            vec![],
        ));
        "bd"
    } else {
        let (data, dims, axis) = if c.gemm {
            let t: Vec<i32> = (0..n * k).map(|i| wq[(i % k) * n + i / k]).collect();
            (t, vec![n, k], 0)
        } else {
            (wq.clone(), vec![k, n], 1)
        };
        inits.push(("w", eight_bit(&data, w_signed), dims));
        let sdims = if c.per_column { vec![n] } else { vec![] };
        inits.push(("ws", TensorData::F32(ws.clone()), sdims.clone()));
        inits.push(("wz", eight_bit(&wz, w_signed), sdims));
        nodes.push(node(
            "DequantizeLinear",
            "dqw",
            &["w", "ws", "wz"],
            &["wd"],
            vec![attr_i("axis", axis)],
        ));
        "wd"
    };
    if c.gemm {
        nodes.push(node(
            "Gemm",
            "mm",
            &["xd", b_name],
            &["y"],
            vec![attr_i("transB", 1)],
        ));
    } else {
        nodes.push(node("MatMul", "mm", &["xd", b_name], &["y"], vec![]));
    }
    nodes.push(node(
        "QuantizeLinear",
        "qy",
        &["y", "ys", "yz"],
        &["yq"],
        vec![],
    ));
    nodes.push(node(
        "DequantizeLinear",
        "dqy",
        &["yq", "ys", "yz"],
        &["out"],
        vec![],
    ));
    let mut inputs = vec![vi("x", 1, &[m as i64, k as i64])];
    if c.activations {
        inputs.push(vi("b", 1, &[k as i64, n as i64]));
    }
    let mut model = model_opset(nodes, inputs, vec![vi("out", 1, &[m as i64, n as i64])], 13);
    if let Some(g) = model.graph.as_mut() {
        g.initializer = inits
            .iter()
            .map(|(name, d, s)| tensor_to_proto(name, d, &Shape::new(s)))
            .collect();
    }
    let mut feeds = vec![Tensor::from_data(TensorData::F32(x), Shape::new([m, k])).unwrap()];
    if c.activations {
        feeds.push(Tensor::from_data(TensorData::F32(b_float), Shape::new([k, n])).unwrap());
    }
    (model, feeds, want)
}

/// `got` within one output step (the smallest nonzero magnitude of `want`) of `want`.
fn within_one_step(got: &Tensor, want: &[f32], what: &str) {
    let step = want
        .iter()
        .filter(|v| **v != 0.0)
        .map(|v| v.abs())
        .fold(f32::MAX, f32::min);
    for (i, (g, w)) in got.read::<f32>().unwrap().iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= step * 1.001 + 1e-6,
            "{what}: element {i}: {g} vs {w}"
        );
    }
}

/// Runs `c` on both backends: CPU-JIT equals onnxruntime's integer arithmetic exactly and
/// reports the product lowered; the INTERPRETER (float QDQ) is within one output step.
fn check(c: Case) {
    let (model, x, want) = build(c);
    let imported = import_model_bytes(&model.encode_to_vec()).unwrap();
    let exe = CpuJitBackend::new()
        .compile_executable(&imported.function)
        .unwrap();
    let report = exe.pass_report().qdq().cloned().unwrap_or_default();
    assert_eq!(report.lowered.len(), 1, "{c:?}: {report:?}");
    assert!(
        report.lowered[0].1.contains("requantized") || c.activations,
        "{report:?}"
    );
    let got = exe.run(&x).unwrap();
    assert_eq!(got[0].read::<f32>().unwrap(), &want[..], "{c:?}");
    let reference = InterpreterBackend.compile(&imported.function).unwrap();
    let float = reference.run(&x).unwrap();
    let step = want
        .iter()
        .filter(|v| **v != 0.0)
        .map(|v| v.abs())
        .fold(f32::MAX, f32::min);
    for (i, (f, w)) in float[0]
        .read::<f32>()
        .unwrap()
        .iter()
        .zip(&want)
        .enumerate()
    {
        assert!(
            (f - w).abs() <= step * 1.001 + 1e-6,
            "{c:?}: element {i}: {f} vs {w}"
        );
    }
}

fn case(m: usize, k: usize, n: usize, seed: u64) -> Case {
    Case {
        m,
        k,
        n,
        signed_activation: false,
        unsigned_weight: false,
        per_column: true,
        gemm: false,
        activations: false,
        wide_weights: false,
        seed,
    }
}

#[test]
fn matmul_with_per_column_int8_weights_runs_on_integers() {
    for (m, k, n) in [
        (1, 1, 1),
        (3, 5, 7),
        (7, 70, 130),
        (13, 64, 17),
        (2, 384, 65),
    ] {
        check(case(m, k, n, (m * k * n) as u64));
    }
}

#[test]
fn int8_activations_uint8_weights_with_zero_points_and_per_tensor_scales() {
    for seed in 0..4 {
        let mut c = case(5, 33, 19, seed);
        c.signed_activation = seed % 2 == 0;
        c.unsigned_weight = true;
        c.per_column = seed < 2;
        check(c);
    }
}

#[test]
fn gemm_with_transposed_weights_runs_on_integers() {
    let mut c = case(6, 40, 24, 9);
    c.gemm = true;
    check(c);
}

#[test]
fn a_product_of_two_activations_is_scaled_after_the_integer_product() {
    // Depths past 258, where a float sum of 255² terms would round, stay exact in INT32.
    for (m, k, n) in [(9, 64, 11), (3, 7, 5), (20, 400, 40)] {
        let mut c = case(m, k, n, (m + k + n) as u64);
        c.activations = true;
        check(c);
    }
}

#[test]
fn weights_that_leave_int8_stay_in_float_and_say_why() {
    let mut c = case(4, 24, 9, 5);
    c.unsigned_weight = true;
    c.wide_weights = true;
    let (model, x, want) = build(c);
    let imported = import_model_bytes(&model.encode_to_vec()).unwrap();
    let exe = CpuJitBackend::new()
        .compile_executable(&imported.function)
        .unwrap();
    let report = exe.pass_report().qdq().cloned().unwrap_or_default();
    assert!(report.lowered.is_empty(), "{report:?}");
    assert_eq!(report.stayed_float.len(), 1, "{report:?}");
    assert!(
        report.stayed_float[0].1.contains("leaves INT8"),
        "{report:?}"
    );
    let got = exe.run(&x).unwrap();
    within_one_step(&got[0], &want, "float QDQ on CPU-JIT");
}

/// `Conv(DequantizeLinear(QuantizeLinear(x)), DequantizeLinear(W))` with a per-channel INT8
/// filter: CPU-JIT runs `ConvolutionInteger` on the 8-bit operands and scales once per
/// channel, giving `f32(acc) · (s_x · s_w[m])` exactly, for a small window and for one of
/// 360 values (where float sums of the integers could round); the INTERPRETER's float QDQ
/// agrees to rounding.
#[test]
fn a_convolution_of_quantized_operands_convolves_the_integers() {
    integer_convolution_case((3, 5, 9, 3), 11);
    integer_convolution_case((40, 4, 20, 9), 12);
}

fn integer_convolution_case((c, m, l, k): (usize, usize, usize, usize), seed: u64) {
    let mut rng = Lcg(seed);
    let x: Vec<f32> = (0..c * l).map(|_| rng.uniform(-2.0, 2.0)).collect();
    let (xs, xz) = (4.0f32 / 255.0, 128);
    let xq: Vec<i32> = x.iter().map(|&v| saturate(v / xs, xz, false)).collect();
    let w: Vec<i32> = (0..m * c * k)
        .map(|_| (rng.next() % 255) as i32 - 127)
        .collect();
    let ws: Vec<f32> = (0..m).map(|_| rng.uniform(0.001, 0.01)).collect();
    let lo = l - k + 1;
    let want: Vec<f32> = (0..m * lo)
        .map(|i| {
            let (mm, t) = (i / lo, i % lo);
            let acc: i32 = (0..c * k)
                .map(|j| {
                    let (cc, kk) = (j / k, j % k);
                    (xq[cc * l + t + kk] - xz) * w[(mm * c + cc) * k + kk]
                })
                .sum();
            acc as f32 * (xs * ws[mm])
        })
        .collect();
    let inits = [
        ("xs", TensorData::F32(vec![xs]), vec![]),
        ("xz", eight_bit(&[xz], false), vec![]),
        ("w", eight_bit(&w, true), vec![m, c, k]),
        ("ws", TensorData::F32(ws.clone()), vec![m]),
        ("wz", eight_bit(&vec![0; m], true), vec![m]),
    ];
    let nodes = vec![
        node("QuantizeLinear", "qx", &["x", "xs", "xz"], &["xq"], vec![]),
        node(
            "DequantizeLinear",
            "dqx",
            &["xq", "xs", "xz"],
            &["xd"],
            vec![],
        ),
        node(
            "DequantizeLinear",
            "dqw",
            &["w", "ws", "wz"],
            &["wd"],
            vec![attr_i("axis", 0)],
        ),
        node("Conv", "conv", &["xd", "wd"], &["out"], vec![]),
    ];
    let mut model = model_opset(
        nodes,
        vec![vi("x", 1, &[1, c as i64, l as i64])],
        vec![vi("out", 1, &[1, m as i64, lo as i64])],
        13,
    );
    if let Some(g) = model.graph.as_mut() {
        g.initializer = inits
            .iter()
            .map(|(name, d, s)| tensor_to_proto(name, d, &Shape::new(s)))
            .collect();
    }
    let x = vec![Tensor::from_data(TensorData::F32(x), Shape::new([1, c, l])).unwrap()];
    let imported = import_model_bytes(&model.encode_to_vec()).unwrap();
    let exe = CpuJitBackend::new()
        .compile_executable(&imported.function)
        .unwrap();
    let report = exe.pass_report().qdq().cloned().unwrap_or_default();
    assert_eq!(report.lowered.len(), 1, "{report:?}");
    assert!(
        report.lowered[0].1.starts_with("ConvolutionInteger"),
        "{report:?}"
    );
    let got = exe.run(&x).unwrap();
    assert_eq!(got[0].read::<f32>().unwrap(), &want[..]);
    let float = InterpreterBackend
        .compile(&imported.function)
        .unwrap()
        .run(&x)
        .unwrap();
    for (f, w) in float[0].read::<f32>().unwrap().iter().zip(&want) {
        assert!((f - w).abs() <= 1e-4 * w.abs().max(1.0), "{f} vs {w}");
    }
}

/// An `Add` between `DequantizeLinear` and `QuantizeLinear` after a lowered product stays in
/// float, and the report says so beside the integer product (what `graphlift explain`
/// prints).
#[test]
fn ops_without_integer_kernels_are_reported_in_float() {
    let (mut model, x, _) = build(case(4, 24, 9, 7));
    let g = model.graph.as_mut().unwrap();
    let half = TensorData::F32(vec![0.5]);
    g.initializer
        .push(tensor_to_proto("half", &half, &Shape::scalar()));
    g.node
        .push(node("Add", "add", &["out", "half"], &["a"], vec![]));
    g.node.push(node(
        "QuantizeLinear",
        "qa",
        &["a", "ys", "yz"],
        &["aq"],
        vec![],
    ));
    g.node.push(node(
        "DequantizeLinear",
        "dqa",
        &["aq", "ys", "yz"],
        &["last"],
        vec![],
    ));
    g.output = vec![vi("last", 1, &[4, 9])];
    let imported = import_model_bytes(&model.encode_to_vec()).unwrap();
    let exe = CpuJitBackend::new()
        .compile_executable(&imported.function)
        .unwrap();
    let report = exe.pass_report().qdq().cloned().unwrap_or_default();
    assert_eq!(report.lowered.len(), 1, "{report:?}");
    assert_eq!(report.stayed_float.len(), 1, "{report:?}");
    assert!(
        report.stayed_float[0].1.starts_with("Add stays in float"),
        "{report:?}"
    );
    let y = exe.run(&x).unwrap();
    assert_eq!(y[0].shape().dims(), [4, 9]);
}
