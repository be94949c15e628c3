//! Derivatives of the windowed ops (issue 25): `Convolution` with respect to its data and
//! its filter, `MaxPool`, `BatchNormInference`, against central finite differences in f64 on
//! both backends; `MaxPool`'s tie rule; the adjoint ops (`ConvolutionBackpropData`,
//! `ConvolutionBackpropFilters`, `MaxPoolBackprop`) equal on CPU-JIT's native kernels and the
//! INTERPRETER's reference; bad operands are `IrError`s.

#[path = "support/gradient_check.rs"]
mod gradient_check;
use gradient_check::{check, sum_all, tensors, weighted_sum, Input, BACKENDS};

use graphlift::ir::{Convolution, ConvolutionBackprop, Window};
use graphlift::{
    Backend, ElementType, ElementType::F64, Function, FunctionBuilder, IrError, Op, Shape, Tensor,
    TensorData,
};

/// A deterministic value in [lo, hi) for element `i` of input `k`.
fn point(k: usize, i: usize, lo: f64, hi: f64) -> f64 {
    let u = ((k * 7919 + i * 104_729 + 13) % 1000) as f64 / 1000.0;
    lo + (hi - lo) * u
}

fn input(k: usize, dims: &[usize]) -> Input {
    let n = dims.iter().product();
    (
        dims.to_vec(),
        (0..n).map(|i| point(k, i, -1.0, 1.0)).collect(),
    )
}

/// Distinct values `lo, lo + 0.1, ...` in a scrambled order (ties in a pooling window are
/// 0.1 apart at least, far beyond the finite-difference step).
fn distinct(dims: &[usize], lo: f64) -> Input {
    let n: usize = dims.iter().product();
    let step = (1..).map(|s| 37 + 2 * s).find(|s| gcd(*s, n) == 1).unwrap();
    (
        dims.to_vec(),
        (0..n).map(|i| lo + ((i * step) % n) as f64 * 0.1).collect(),
    )
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A window over `k.len()` spatial axes.
fn window(
    k: &[usize],
    strides: &[usize],
    dilations: &[usize],
    pads: (&[usize], &[usize]),
) -> Window {
    Window {
        shape: k.to_vec(),
        strides: strides.to_vec(),
        dilations: dilations.to_vec(),
        pads_begin: pads.0.to_vec(),
        pads_end: pads.1.to_vec(),
    }
}

/// A convolution of data `x` with filter `f` (both checked: `check` differentiates with
/// respect to every input).
fn conv_case(name: &str, x: &[usize], f: &[usize], w: Window, groups: usize) {
    let c = Convolution { window: w, groups };
    check(name, &[input(1, x), input(2, f)], move |b, v| {
        b.op(Op::Convolution(c.clone()), &[v[0], v[1]])
    });
}

#[test]
fn convolution_1d() {
    let w = window(&[3], &[1], &[1], (&[1], &[0]));
    conv_case("conv1d", &[2, 3, 7], &[4, 3, 3], w, 1);
    // Stride 2 with dilation 2 and uneven padding (one input column no window reads).
    let w = window(&[2], &[2], &[2], (&[0], &[1]));
    conv_case("conv1d_strided_dilated", &[1, 2, 10], &[2, 2, 2], w, 1);
}

#[test]
fn convolution_2d_strides_dilations_pads() {
    let w = window(&[3, 3], &[1, 1], &[1, 1], (&[1, 1], &[1, 1]));
    conv_case("conv2d", &[1, 3, 5, 6], &[4, 3, 3, 3], w, 1);
    let w = window(&[3, 2], &[2, 1], &[1, 1], (&[1, 0], &[0, 1]));
    conv_case(
        "conv2d_stride2_asymmetric",
        &[2, 2, 6, 5],
        &[3, 2, 3, 2],
        w,
        1,
    );
    let w = window(&[3, 3], &[2, 2], &[2, 2], (&[2, 1], &[1, 2]));
    conv_case("conv2d_dilated_strided", &[1, 2, 8, 7], &[2, 2, 3, 3], w, 1);
    let w = window(&[1, 1], &[1, 1], &[1, 1], (&[0, 0], &[0, 0]));
    conv_case("conv2d_pointwise", &[2, 4, 3, 3], &[5, 4, 1, 1], w, 1);
}

#[test]
fn convolution_2d_groups_and_depthwise() {
    let w = window(&[3, 3], &[1, 2], &[1, 1], (&[1, 1], &[1, 0]));
    conv_case("conv2d_groups2", &[1, 4, 5, 5], &[6, 2, 3, 3], w, 2);
    let w = window(&[3, 3], &[2, 2], &[1, 1], (&[1, 1], &[1, 1]));
    conv_case("depthwise", &[2, 3, 6, 6], &[3, 1, 3, 3], w.clone(), 3);
    // Depthwise with a channel multiplier of 2.
    conv_case("depthwise_x2", &[1, 3, 5, 6], &[6, 1, 3, 3], w, 3);
    let w = window(&[1, 1], &[1, 1], &[1, 1], (&[0, 0], &[0, 0]));
    conv_case("pointwise_groups2", &[1, 4, 3, 2], &[4, 2, 1, 1], w, 2);
}

#[test]
fn max_pool_away_from_ties() {
    let cases = [
        (
            "pool2x2",
            vec![1, 2, 4, 6],
            window(&[2, 2], &[2, 2], &[1, 1], (&[0, 0], &[0, 0])),
        ),
        // Overlapping windows with padding; all values negative, so padding read as 0 would
        // win.
        (
            "pool3x3_padded",
            vec![2, 1, 5, 5],
            window(&[3, 3], &[2, 2], &[1, 1], (&[1, 1], &[1, 1])),
        ),
        (
            "pool_dilated_asymmetric",
            vec![1, 2, 7, 6],
            window(&[2, 3], &[1, 2], &[2, 1], (&[0, 1], &[1, 0])),
        ),
        (
            "pool1d",
            vec![2, 2, 9],
            window(&[3], &[1], &[1], (&[1], &[2])),
        ),
    ];
    for (name, dims, w) in cases {
        let n: usize = dims.iter().product();
        let x = distinct(&dims, -0.1 * n as f64 - 1.0);
        check(name, &[x], move |b, v| {
            b.op(Op::MaxPool(w.clone()), &[v[0]])
        });
    }
}

#[test]
fn batch_norm_inference_every_input() {
    let x = input(3, &[2, 3, 2, 2]);
    let scale = input(4, &[3]);
    let bias = input(5, &[3]);
    let mean = input(6, &[3]);
    let variance = (vec![3], vec![0.5, 1.5, 0.25]);
    check("batch_norm", &[x, scale, bias, mean, variance], |b, v| {
        b.op(Op::BatchNormInference(1e-3), v).tanh()
    });
}

/// The gradient of `weighted_sum(MaxPool(x))` with respect to `x`, on `backend`.
fn max_pool_gradient(backend: &str, x: Input, w: Window) -> Vec<f64> {
    let b = FunctionBuilder::new("ties");
    let p = b.parameter("x", F64, x.0.clone());
    let c = weighted_sum(&b, b.op(Op::MaxPool(w), &[p]));
    let f = b.finish(&[b.deriv(c, p)]).unwrap();
    let exe = Backend::create(backend).unwrap().compile(&f).unwrap();
    exe.run(&tensors(&[x])).unwrap()[0]
        .read::<f64>()
        .unwrap()
        .to_vec()
}

/// A tie in a window goes to its first maximum in row-major window order; padding never
/// takes it. (The weights of `weighted_sum` are 0.5, 0.75, 1.0, 1.25, ...)
#[test]
fn max_pool_ties_go_to_the_first_maximum() {
    for backend in BACKENDS {
        // 2x2 windows, stride 1, over a 3x3 plane of equal values: each window's top-left.
        let flat = window(&[2, 2], &[1, 1], &[1, 1], (&[0, 0], &[0, 0]));
        let dx = max_pool_gradient(backend, (vec![1, 1, 3, 3], vec![2.0; 9]), flat);
        assert_eq!(
            dx,
            [0.5, 0.75, 0.0, 1.0, 1.25, 0.0, 0.0, 0.0, 0.0],
            "{backend}"
        );
        // [3, 1, 3], windows of 3, pad 1: [pad, 3, 1], [3, 1, 3] (the first 3), [1, 3, pad].
        let padded = window(&[3], &[1], &[1], (&[1], &[1]));
        let dx = max_pool_gradient(
            backend,
            (vec![1, 1, 3], vec![3.0, 1.0, 3.0]),
            padded.clone(),
        );
        assert_eq!(dx, [0.5 + 0.75, 0.0, 1.0], "{backend}");
        // Negative values beside the padding: the padding never wins.
        let dx = max_pool_gradient(backend, (vec![1, 1, 3], vec![-3.0, -5.0, -4.0]), padded);
        assert_eq!(dx, [0.5 + 0.75, 0.0, 1.0], "{backend}");
    }
}

/// An op and the element types and shapes of its operands.
type OpCase = (Op, Vec<(ElementType, &'static [usize])>);

/// A convolution's window, groups, and the shapes of its data, filter and output.
type ConvCase = (
    Window,
    usize,
    &'static [usize],
    &'static [usize],
    &'static [usize],
);

/// A function of the one op `op` on parameters of `types`.
fn single(op: Op, types: &[(ElementType, &[usize])]) -> Result<Function, IrError> {
    let b = FunctionBuilder::new("single");
    let ps: Vec<_> = types
        .iter()
        .enumerate()
        .map(|(k, (t, d))| b.parameter(&format!("p{k}"), *t, d.to_vec()))
        .collect();
    let y = b.op(op, &ps);
    b.finish(&[y])
}

fn backprop(w: Window, groups: usize, shape: &[usize]) -> ConvolutionBackprop {
    ConvolutionBackprop {
        convolution: Convolution { window: w, groups },
        shape: Shape::new(shape),
    }
}

/// Inputs of `types` with values in [-1, 1).
fn values(types: &[(ElementType, &[usize])]) -> Vec<Tensor> {
    types
        .iter()
        .enumerate()
        .map(|(k, &(t, d))| {
            let v = input(k + 7, d).1;
            let data = match t {
                F64 => TensorData::F64(v),
                _ => TensorData::F32(v.iter().map(|&x| x as f32).collect()),
            };
            Tensor::from_data(data, Shape::new(d)).unwrap()
        })
        .collect()
}

fn as_f64(t: &Tensor) -> Vec<f64> {
    match t.data() {
        TensorData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        TensorData::F64(v) => v.clone(),
        other => panic!("not a float: {other:?}"),
    }
}

/// CPU-JIT (native kernels for 2-D convolutions) gives the INTERPRETER's results, up to the
/// rounding of an f32 or f64 sum.
#[test]
fn adjoint_ops_agree_between_the_backends() {
    let same = window(&[3, 3], &[1, 1], &[1, 1], (&[1, 1], &[1, 1]));
    let strided = window(&[3, 2], &[2, 2], &[2, 1], (&[2, 0], &[1, 1]));
    let one = window(&[1, 1], &[1, 1], &[1, 1], (&[0, 0], &[0, 0]));
    let line = window(&[3], &[2], &[1], (&[1], &[0]));
    // (window, groups, x, filter, dy)
    let convs: Vec<ConvCase> = vec![
        (same.clone(), 1, &[2, 3, 6, 7], &[4, 3, 3, 3], &[2, 4, 6, 7]),
        (
            strided.clone(),
            2,
            &[1, 4, 9, 8],
            &[6, 2, 3, 2],
            &[1, 6, 4, 4],
        ),
        (same, 5, &[1, 5, 8, 8], &[5, 1, 3, 3], &[1, 5, 8, 8]),
        (strided, 3, &[2, 3, 9, 9], &[6, 1, 3, 2], &[2, 6, 4, 5]),
        (one, 1, &[1, 6, 4, 5], &[3, 6, 1, 1], &[1, 3, 4, 5]),
        (line, 1, &[2, 2, 9], &[3, 2, 3], &[2, 3, 4]),
    ];
    let pool = window(&[3, 3], &[2, 2], &[1, 1], (&[1, 1], &[1, 1]));
    for t in [ElementType::F32, F64] {
        let tol = if t == F64 { 1e-12 } else { 1e-5 };
        let mut cases: Vec<OpCase> = Vec::new();
        for (w, groups, x, f, dy) in &convs {
            let data = backprop(w.clone(), *groups, x);
            let filters = backprop(w.clone(), *groups, f);
            cases.push((Op::ConvolutionBackpropData(data), vec![(t, dy), (t, f)]));
            cases.push((
                Op::ConvolutionBackpropFilters(filters),
                vec![(t, x), (t, dy)],
            ));
        }
        let pooled: (&[usize], &[usize]) = (&[2, 3, 7, 6], &[2, 3, 4, 3]);
        cases.push((
            Op::MaxPoolBackprop(pool.clone()),
            vec![(t, pooled.0), (t, pooled.1)],
        ));
        for (op, types) in cases {
            let f = single(op.clone(), &types).unwrap();
            let inputs = values(&types);
            let run = |backend: &str| {
                let exe = Backend::create(backend).unwrap().compile(&f).unwrap();
                as_f64(&exe.run(&inputs).unwrap()[0])
            };
            let (native, reference) = (run("CPU-JIT"), run("INTERPRETER"));
            assert_eq!(native.len(), reference.len(), "{op}");
            for (a, b) in native.iter().zip(&reference) {
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1.0),
                    "{op} {t}: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn bad_operands_are_errors() {
    use ElementType::{F32, I32};
    let w = window(&[3, 3], &[2, 2], &[1, 1], (&[1, 1], &[1, 1]));
    let data = |shape: &[usize]| Op::ConvolutionBackpropData(backprop(w.clone(), 2, shape));
    let filters = |shape: &[usize]| Op::ConvolutionBackpropFilters(backprop(w.clone(), 2, shape));
    // Good: dx [1, 4, 10, 9] from dy [1, 6, 5, 5] and the filter [6, 2, 3, 3].
    assert!(single(
        data(&[1, 4, 10, 9]),
        &[(F32, &[1, 6, 5, 5]), (F32, &[6, 2, 3, 3])]
    )
    .is_ok());
    let bad: Vec<OpCase> = vec![
        // dy of another extent, filter of another group width, mixed and integer types.
        (
            data(&[1, 4, 10, 9]),
            vec![(F32, &[1, 6, 4, 5]), (F32, &[6, 2, 3, 3])],
        ),
        (
            data(&[1, 4, 10, 9]),
            vec![(F32, &[1, 6, 5, 5]), (F32, &[6, 4, 3, 3])],
        ),
        (
            data(&[1, 4, 10, 9]),
            vec![(F32, &[1, 6, 5, 5]), (F64, &[6, 2, 3, 3])],
        ),
        (
            data(&[1, 4, 10, 9]),
            vec![(I32, &[1, 6, 5, 5]), (I32, &[6, 2, 3, 3])],
        ),
        // An attribute shape of the wrong rank, or with no room for the window.
        (
            data(&[4, 10, 9]),
            vec![(F32, &[1, 6, 5, 5]), (F32, &[6, 2, 3, 3])],
        ),
        (
            data(&[1, 4, 1, 1]),
            vec![(F32, &[1, 6, 5, 5]), (F32, &[6, 2, 3, 3])],
        ),
        (data(&[1, 4, 10, 9]), vec![(F32, &[1, 6, 5, 5])]),
        (
            filters(&[6, 2, 3, 3]),
            vec![(F32, &[1, 4, 10, 9]), (F32, &[1, 6, 5, 4])],
        ),
        (
            filters(&[6, 2, 2, 2]),
            vec![(F32, &[1, 4, 10, 9]), (F32, &[1, 6, 5, 5])],
        ),
        (
            filters(&[6, 4, 3, 3]),
            vec![(F32, &[1, 4, 10, 9]), (F32, &[1, 6, 5, 5])],
        ),
        (
            filters(&[usize::MAX, 2, 3, 3]),
            vec![(F32, &[1, 4, 10, 9]), (F32, &[1, 6, 5, 5])],
        ),
        (
            Op::MaxPoolBackprop(w.clone()),
            vec![(F32, &[1, 4, 10, 9]), (F32, &[1, 4, 5, 4])],
        ),
        (
            Op::MaxPoolBackprop(w.clone()),
            vec![(F32, &[4, 10]), (F32, &[4, 5])],
        ),
        (
            Op::MaxPoolBackprop(w.clone()),
            vec![(F32, &[1, 4, 10, 9]), (F64, &[1, 4, 5, 5])],
        ),
        (
            Op::MaxPoolBackprop(window(&[3], &[0], &[1], (&[0], &[0]))),
            vec![(F32, &[1, 1, 4]), (F32, &[1, 1, 2])],
        ),
    ];
    for (op, types) in bad {
        let e = single(op.clone(), &types).expect_err(&format!("{op} on {types:?}"));
        assert!(e.to_string().contains(op.type_name()), "{op}: {e}");
    }
}

/// A gradient through a convolution and a pooling saves to JSON and loads back equal.
#[test]
fn a_convolution_gradient_saves_and_loads_exactly() {
    let b = FunctionBuilder::new("saved");
    let x = b.parameter("x", F64, [1, 2, 6, 6]);
    let f = b.parameter("f", F64, [2, 1, 3, 3]);
    let c = Convolution {
        window: window(&[3, 3], &[1, 1], &[1, 1], (&[1, 1], &[1, 1])),
        groups: 2,
    };
    let y = b.op(Op::Convolution(c), &[x, f]);
    let pool = window(&[2, 2], &[2, 2], &[1, 1], (&[0, 0], &[0, 0]));
    let p = b.op(Op::MaxPool(pool), &[y]);
    let grads = b.gradients(sum_all(p), &[x, f]);
    let f = b.finish(&grads).unwrap();
    for name in [
        "ConvolutionBackpropData",
        "ConvolutionBackpropFilters",
        "MaxPoolBackprop",
    ] {
        assert!(f.nodes().any(|n| n.op().type_name() == name), "{f}");
    }
    let g = Function::from_json(&f.to_json()).unwrap();
    assert_eq!(f, g);
}
