//! Reverse-mode derivatives (`FunctionBuilder::deriv`, `gradients`) against central finite
//! differences in f64, on both backends, one op at a time at points away from the kinks.

#[path = "support/gradient_check.rs"]
mod gradient_check;
use gradient_check::{check, sum_all, tensors, weighted_sum as scalar, Input, BACKENDS};

use graphlift::ir::{ReduceOp, Reduction};
use graphlift::{
    select, Backend, ElementType::F64, FunctionBuilder, IrError, Op, Shape, Tensor, Value,
};

/// A deterministic value in [lo, hi) for element `i` of input `k`.
fn point(k: usize, i: usize, lo: f64, hi: f64) -> f64 {
    let u = ((k * 7919 + i * 104_729 + 13) % 1000) as f64 / 1000.0;
    lo + (hi - lo) * u
}

fn input(k: usize, dims: &[usize], lo: f64, hi: f64) -> Input {
    let n = dims.iter().product();
    (dims.to_vec(), (0..n).map(|i| point(k, i, lo, hi)).collect())
}

#[test]
fn unary_ops() {
    let away = input(0, &[2, 3], 0.2, 1.5);
    let signed = (vec![6], vec![-1.3, -0.4, 0.3, 0.9, -2.3, 1.7]);
    check("negative", std::slice::from_ref(&signed), |_, x| -x[0]);
    check("abs", std::slice::from_ref(&signed), |_, x| x[0].abs());
    check("relu", std::slice::from_ref(&signed), |_, x| x[0].relu());
    check("exp", std::slice::from_ref(&signed), |_, x| x[0].exp());
    check("log", std::slice::from_ref(&away), |_, x| x[0].log());
    check("sqrt", std::slice::from_ref(&away), |_, x| x[0].sqrt());
    check("tanh", std::slice::from_ref(&signed), |_, x| x[0].tanh());
    check("sigmoid", std::slice::from_ref(&signed), |_, x| {
        x[0].sigmoid()
    });
    check("erf", std::slice::from_ref(&signed), |_, x| x[0].erf());
    check("expm1", std::slice::from_ref(&signed), |b, x| {
        b.op(Op::Unary(graphlift::ir::UnaryOp::Expm1), &[x[0]])
    });
    check("log1p", &[away], |b, x| {
        b.op(Op::Unary(graphlift::ir::UnaryOp::Log1p), &[x[0]])
    });
    check("floor_is_flat", &[signed], |_, x| x[0].floor() + x[0]);
}

/// The trigonometric and hyperbolic functions, each on points inside its domain and away
/// from its poles (`tan` at ±π/2, `asin`/`acos`/`atanh` at ±1, `acosh` at 1).
#[test]
fn trigonometric_and_hyperbolic_ops() {
    use graphlift::ir::UnaryOp;
    let signed = (vec![6], vec![-2.3, -1.3, -0.4, 0.3, 0.9, 1.7]);
    let inner = (vec![6], vec![-1.2, -0.7, -0.2, 0.1, 0.6, 1.1]);
    let unit = (vec![6], vec![-0.85, -0.5, -0.1, 0.2, 0.55, 0.8]);
    let above_one = input(5, &[2, 3], 1.2, 3.0);
    let table = [
        (UnaryOp::Sin, &signed),
        (UnaryOp::Cos, &signed),
        (UnaryOp::Tan, &inner),
        (UnaryOp::Asin, &unit),
        (UnaryOp::Acos, &unit),
        (UnaryOp::Atan, &signed),
        (UnaryOp::Sinh, &signed),
        (UnaryOp::Cosh, &signed),
        (UnaryOp::Asinh, &signed),
        (UnaryOp::Acosh, &above_one),
        (UnaryOp::Atanh, &unit),
    ];
    assert_eq!(table.len(), UnaryOp::TRIG.len());
    for (op, at) in table {
        check(
            &op.name().to_ascii_lowercase(),
            std::slice::from_ref(at),
            |b, x| b.op(Op::Unary(op), &[x[0]]),
        );
    }
}

#[test]
fn binary_ops_select_and_broadcast() {
    let a = input(1, &[2, 3], -1.5, 1.5);
    let b3 = input(2, &[3], 0.5, 2.0);
    let pos = input(3, &[2, 3], 0.3, 2.0);
    check("add", &[a.clone(), b3.clone()], |_, x| x[0] + x[1]);
    check("subtract", &[a.clone(), b3.clone()], |_, x| x[0] - x[1]);
    check("multiply", &[a.clone(), b3.clone()], |_, x| x[0] * x[1]);
    check("divide", &[a.clone(), b3.clone()], |_, x| x[0] / x[1]);
    check("maximum", &[a.clone(), pos.clone()], |_, x| x[0].max(x[1]));
    check("minimum", &[a.clone(), pos.clone()], |_, x| x[0].min(x[1]));
    check("power", &[pos.clone(), a.clone()], |_, x| x[0].pow(x[1]));
    check("select", &[a.clone(), pos.clone()], |_, x| {
        select(x[0].gt(x[0].scalar_like(0.0)), x[0] * x[1], x[1].exp())
    });
    check("chain", &[a, pos], |_, x| {
        (x[0] * x[1]).tanh() * x[0] + (x[1] * 0.5).sigmoid()
    });
}

#[test]
fn layout_reductions_matmul_and_softmax() {
    let m = input(4, &[2, 3, 4], -1.0, 1.0);
    check("reshape", std::slice::from_ref(&m), |b, x| {
        b.op(Op::Reshape(Shape::new(vec![6, 4])), &[x[0]]).tanh()
    });
    check("transpose", std::slice::from_ref(&m), |b, x| {
        b.op(Op::Transpose(vec![2, 0, 1]), &[x[0]]).exp()
    });
    for (op, name) in [
        (ReduceOp::Sum, "sum"),
        (ReduceOp::Mean, "mean"),
        (ReduceOp::Max, "max"),
        (ReduceOp::Min, "min"),
    ] {
        let r = Reduction {
            op,
            axes: vec![1],
            keep_dims: false,
        };
        check(name, std::slice::from_ref(&m), move |b, x| {
            b.op(Op::Reduce(r.clone()), &[x[0].tanh()])
        });
    }
    let a = input(5, &[3, 4], -1.0, 1.0);
    let w = input(6, &[4, 2], -1.0, 1.0);
    check("matmul", &[a, w.clone()], |b, x| {
        b.op(Op::MatMul, &[x[0], x[1]])
    });
    check("matmul_batched", &[m.clone(), w], |b, x| {
        b.op(Op::MatMul, &[x[0], x[1]]).tanh()
    });
    check("softmax", &[m], |b, x| b.op(Op::Softmax(2), &[x[0]]) * x[0]);
}

#[test]
fn provenance_marks_the_backward_nodes() {
    let b = FunctionBuilder::new("tags");
    let x = b.parameter("x", F64, [4]);
    let y = x.tanh().tagged("onnx:Tanh:/act");
    let c = sum_all(y);
    let dx = b.deriv(c, x);
    let f = b.finish(&[dx]).unwrap();
    let backward: Vec<_> = f
        .nodes()
        .filter(|n| n.pass_history().iter().any(|p| p == "autodiff"))
        .collect();
    assert!(!backward.is_empty());
    assert!(
        backward
            .iter()
            .any(|n| n.tags().contains("deriv:onnx:Tanh:/act")),
        "{f}"
    );
}

#[test]
fn bad_derivatives_are_named_errors() {
    let b = FunctionBuilder::new("bad");
    let x = b.parameter("x", F64, [4]);
    b.deriv(x.exp(), x);
    let e = b.finish(&[]).unwrap_err();
    assert!(
        matches!(e, IrError::Derivative { .. }) && e.to_string().contains("scalar"),
        "{e}"
    );

    let b = FunctionBuilder::new("bad");
    let x = b.parameter("x", F64, [4]);
    let i = b.parameter("i", graphlift::ElementType::I32, [4]);
    let c = sum_all(x * i.convert(F64));
    b.deriv(c, i);
    let e = b.finish(&[]).unwrap_err();
    assert!(e.to_string().contains("only float values"), "{e}");

    // A second derivative through a pooling's adjoint: MaxPoolBackprop has no adjoint.
    let b = FunctionBuilder::new("bad");
    let x = b.parameter("x", F64, [1, 1, 4, 4]);
    let window = graphlift::ir::Window {
        shape: vec![2, 2],
        strides: vec![2, 2],
        dilations: vec![1, 1],
        pads_begin: vec![0, 0],
        pads_end: vec![0, 0],
    };
    let pooled = b.op(Op::MaxPool(window), &[x]);
    let dx = b.deriv(sum_all(pooled * pooled), x);
    b.deriv(sum_all(dx), x);
    let e = b.finish(&[]).unwrap_err();
    assert!(e.to_string().contains("MaxPoolBackprop"), "{e}");

    // Fused attention has no adjoint yet (scope fusion makes it after gradients are built).
    let b = FunctionBuilder::new("bad");
    let x = b.parameter("x", F64, [1, 3, 4]);
    let heads = graphlift::ir::Attention {
        heads: 2,
        scale: 0.5,
    };
    let y = b.op(Op::Attention(heads), &[x, x, x]);
    b.deriv(sum_all(y), x);
    let e = b.finish(&[]).unwrap_err();
    assert!(e.to_string().contains("Attention<heads=2"), "{e}");

    // A value that does not reach c has a zero derivative.
    let b = FunctionBuilder::new("zero");
    let x = b.parameter("x", F64, [2]);
    let unused = b.parameter("u", F64, [2]);
    let d = b.deriv(sum_all(x * x), unused);
    let f = b.finish(&[d]).unwrap();
    let exe = Backend::create("CPU-JIT").unwrap().compile(&f).unwrap();
    let two = Tensor::from_vec(vec![1.0f64, 2.0], [2]).unwrap();
    let out = exe.run(&[two.clone(), two]).unwrap();
    assert_eq!(out[0].read::<f64>().unwrap(), &[0.0, 0.0]);
}

/// Linear least squares trained by gradient descent: `w` a variable, the loss's gradient
/// with respect to it, and `w = w - lr * dw` as an assign; the loss falls on both backends.
#[test]
fn gradient_descent_with_variables_and_assigns() {
    let (n, d) = (16, 4);
    let x: Vec<f64> = (0..n * d).map(|i| point(7, i, -1.0, 1.0)).collect();
    let w_true = [0.5, -1.0, 2.0, 0.25];
    let y: Vec<f64> = (0..n)
        .map(|r| (0..d).map(|k| x[r * d + k] * w_true[k]).sum())
        .collect();
    let b = FunctionBuilder::new("least_squares");
    let xs = b.parameter("x", F64, [n, d]);
    let ys = b.parameter("y", F64, [n, 1]);
    let w = b.variable("w", b.constant(vec![0.0f64; d], [d, 1]));
    let err = b.op(Op::MatMul, &[xs, w]) - ys;
    let loss = sum_all(err * err) / n as f64;
    let dw = b.deriv(loss, w);
    b.assign(w, w - 0.5 * dw);
    let f = b.finish(&[loss]).unwrap();
    let inputs = [
        Tensor::from_vec(x, [n, d]).unwrap(),
        Tensor::from_vec(y, [n, 1]).unwrap(),
    ];
    for backend in BACKENDS {
        let exe = Backend::create(backend).unwrap().compile(&f).unwrap();
        let losses: Vec<f64> = (0..200)
            .map(|_| exe.run(&inputs).unwrap()[0].read::<f64>().unwrap()[0])
            .collect();
        assert!(
            losses.windows(2).all(|p| p[1] <= p[0]),
            "{backend}: {losses:?}"
        );
        assert!(
            losses[199] < 1e-12 * losses[0],
            "{backend}: {} -> {}",
            losses[0],
            losses[199]
        );
        let w = exe.variable("w").unwrap();
        for (got, want) in w.read::<f64>().unwrap().iter().zip(w_true) {
            assert!((got - want).abs() < 1e-6, "{backend}: {got} vs {want}");
        }
    }
}

/// `-sum(y * log(softmax(x)))`: the derivative is `softmax(x) - y` also where the softmax
/// underflows to 0 (logits 1000 apart), which the plain chain rule turns into NaN.
#[test]
fn cross_entropy_of_a_softmax_is_stable() {
    let b = FunctionBuilder::new("cross_entropy");
    let x = b.parameter("x", F64, [2, 3]);
    let y = b.constant(vec![0.0f64, 0.0, 1.0, 0.0, 1.0, 0.0], [2, 3]);
    let log_p = b.op(Op::Softmax(1), &[x]).log();
    let loss = -sum_all(y * log_p);
    let dx = b.deriv(loss, x);
    let f = b.finish(&[dx]).unwrap();
    let logits = vec![1000.0f64, 0.0, -1000.0, 1.0, 2.0, 3.0];
    let e: Vec<f64> = [1.0f64, 2.0, 3.0].iter().map(|v| (v - 3.0).exp()).collect();
    let total: f64 = e.iter().sum();
    let want = [
        1.0,
        0.0,
        -1.0,
        e[0] / total,
        e[1] / total - 1.0,
        e[2] / total,
    ];
    for backend in BACKENDS {
        let exe = Backend::create(backend).unwrap().compile(&f).unwrap();
        let out = exe
            .run(&[Tensor::from_vec(logits.clone(), [2, 3]).unwrap()])
            .unwrap();
        for (got, want) in out[0].read::<f64>().unwrap().iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{backend}: {got} vs {want}");
        }
    }
    let moderate = input(8, &[2, 3], -2.0, 2.0);
    check("log_softmax", &[moderate], |b, x| {
        b.op(Op::Softmax(1), &[x[0]]).log()
    });
}

#[test]
fn layer_norm() {
    let x = input(9, &[2, 3, 4], -1.0, 1.0);
    let scale = input(10, &[4], 0.5, 1.5);
    let bias = input(11, &[4], -0.5, 0.5);
    let ln = graphlift::ir::LayerNorm {
        axis: 2,
        epsilon: 1e-5,
    };
    check(
        "layer_norm",
        &[x.clone(), scale.clone(), bias.clone()],
        move |b, v| b.op(Op::LayerNorm(ln), &[v[0], v[1], v[2]]),
    );
    let scale2 = input(12, &[3, 4], 0.5, 1.5);
    let bias2 = input(13, &[3, 4], -0.5, 0.5);
    let ln = graphlift::ir::LayerNorm {
        axis: 1,
        epsilon: 1e-3,
    };
    check("layer_norm_two_axes", &[x, scale2, bias2], move |b, v| {
        b.op(Op::LayerNorm(ln), &[v[0], v[1], v[2]]).tanh()
    });
}

#[test]
fn concat() {
    let a = input(14, &[2, 3], -1.0, 1.0);
    let b2 = input(15, &[2, 2], -1.0, 1.0);
    check("concat", &[a, b2], |b, x| {
        b.op(Op::Concat(1), &[x[0].tanh(), x[1] * x[1]])
    });
}

/// One step of a random differentiable graph over values of shape [2, 3].
#[derive(Debug, Clone)]
enum Step {
    Tanh(usize),
    Sigmoid(usize),
    Multiply(usize, usize),
    Add(usize, usize),
    Subtract(usize, usize),
    Softmax(usize),
    LayerNorm(usize),
    /// `v @ W` with the [3, 3] input.
    MatMul(usize),
    /// A row mean broadcast back (a reduction with broadcasting).
    RowMean(usize),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let i = 0usize..16;
    prop_oneof![
        i.clone().prop_map(Step::Tanh),
        i.clone().prop_map(Step::Sigmoid),
        (i.clone(), i.clone()).prop_map(|(a, b)| Step::Multiply(a, b)),
        (i.clone(), i.clone()).prop_map(|(a, b)| Step::Add(a, b)),
        (i.clone(), i.clone()).prop_map(|(a, b)| Step::Subtract(a, b)),
        i.clone().prop_map(Step::Softmax),
        i.clone().prop_map(Step::LayerNorm),
        i.clone().prop_map(Step::MatMul),
        i.prop_map(Step::RowMean),
    ]
}

/// The graph of `steps` over the inputs `x` [2, 3], `row` [3] (broadcast over rows) and `w`
/// [3, 3]; operands index the values made so far (modulo their count).
fn random_graph<'b>(b: &'b FunctionBuilder, x: &[Value<'b>], steps: &[Step]) -> Value<'b> {
    let mut values = vec![x[0], x[0] * x[1]];
    let pick = |values: &[Value<'b>], i: usize| values[i % values.len()];
    for s in steps {
        let v = match *s {
            Step::Tanh(a) => pick(&values, a).tanh(),
            Step::Sigmoid(a) => pick(&values, a).sigmoid(),
            Step::Multiply(a, c) => pick(&values, a) * pick(&values, c),
            Step::Add(a, c) => pick(&values, a) + pick(&values, c),
            Step::Subtract(a, c) => pick(&values, a) - pick(&values, c),
            Step::Softmax(a) => b.op(Op::Softmax(1), &[pick(&values, a)]),
            Step::LayerNorm(a) => {
                let ln = graphlift::ir::LayerNorm {
                    axis: 1,
                    epsilon: 1e-3,
                };
                b.op(Op::LayerNorm(ln), &[pick(&values, a), x[1], x[1]])
            }
            Step::MatMul(a) => b.op(Op::MatMul, &[pick(&values, a), x[2]]).tanh(),
            Step::RowMean(a) => {
                let r = Reduction {
                    op: ReduceOp::Mean,
                    axes: vec![1],
                    keep_dims: true,
                };
                b.op(Op::Reduce(r), &[pick(&values, a)])
                    .broadcast_to([2, 3])
            }
        };
        values.push(v);
    }
    values[values.len() - 1]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    #[test]
    fn random_differentiable_graphs(steps in proptest::collection::vec(step(), 1..7)) {
        let inputs = [
            input(16, &[2, 3], -1.0, 1.0),
            input(17, &[3], 0.5, 1.5),
            input(18, &[3, 3], -0.8, 0.8),
        ];
        check("random", &inputs, |b, x| random_graph(b, x, &steps));
    }
}

/// The backward pass of GELU (tanh form) is one fused kernel: the adjoint's elementwise
/// chain fuses with the forward values it recomputes.
#[test]
fn gelu_backward_is_one_fused_kernel() {
    let b = FunctionBuilder::new("gelu_backward");
    let x = b.parameter("x", graphlift::ElementType::F32, [1 << 12]);
    let inner = (x + 0.044715 * x * x * x) * 0.7978845608;
    let gelu = 0.5 * x * (1.0 + inner.tanh());
    let dx = b.deriv(sum_all(gelu), x);
    let f = b.finish(&[dx]).unwrap();
    let exe = Backend::create("CPU-JIT").unwrap().compile(&f).unwrap();
    let steps = exe.steps();
    assert_eq!(exe.kernels().len(), 1, "{steps:#?}");
    assert!(steps.iter().all(|s| s.fused), "{steps:#?}");
}

#[test]
fn slice_with_unit_steps() {
    use graphlift::ir::SliceAxis;
    let m = input(19, &[3, 5, 4], -1.0, 1.0);
    check("slice", std::slice::from_ref(&m), |b, x| {
        let axes = vec![
            SliceAxis {
                start: 1,
                step: 1,
                len: 2,
            },
            SliceAxis::full(5),
            SliceAxis {
                start: 0,
                step: 1,
                len: 3,
            },
        ];
        b.op(Op::Slice(axes), &[x[0].tanh()])
    });
    check("slice_middle", &[m], |b, x| {
        let axes = vec![
            SliceAxis::full(3),
            SliceAxis {
                start: 2,
                step: 1,
                len: 1,
            },
            SliceAxis {
                start: 1,
                step: 1,
                len: 2,
            },
        ];
        b.op(Op::Slice(axes), &[x[0]]) * 3.0
    });
}

/// Strided and reversed slices, whose adjoint is one `Pad` with interior zeros.
#[test]
fn strided_and_reversed_slices() {
    use graphlift::ir::SliceAxis;
    let m = input(21, &[7, 6], -1.0, 1.0);
    let axis = |start, step, len| SliceAxis { start, step, len };
    check("slice_step_2", std::slice::from_ref(&m), |b, x| {
        b.op(
            Op::Slice(vec![axis(1, 2, 3), axis(0, 3, 2)]),
            &[x[0].tanh()],
        )
    });
    check("slice_reversed", std::slice::from_ref(&m), |b, x| {
        b.op(Op::Slice(vec![axis(6, -2, 3), axis(4, -1, 4)]), &[x[0]]) * x[0].scalar_like(2.0)
    });
    check("slice_empty_axis", &[m], |b, x| {
        let empty = b.op(Op::Slice(vec![axis(0, 1, 0), SliceAxis::full(6)]), &[x[0]]);
        let rows = b.op(Op::Slice(vec![axis(2, 1, 1), SliceAxis::full(6)]), &[x[0]]);
        b.op(Op::Concat(0), &[empty, rows]).exp()
    });
}

/// `Pad` (the slice adjoint's op) has its own adjoint: the data's elements, and the rest for
/// the padding value.
#[test]
fn pad() {
    use graphlift::ir::{Pad, PadMode};
    let m = input(22, &[3, 4], -1.0, 1.0);
    let v = (vec![], vec![0.7]);
    check("pad", &[m, v], |b, x| {
        let p = Pad {
            low: vec![1, 0],
            high: vec![2, 1],
            interior: vec![1, 2],
            mode: PadMode::Constant,
        };
        b.op(Op::Pad(p), &[x[0].tanh(), x[1]]).sigmoid()
    });
}

/// A `Pad` that copies elements (reflect, edge, wrap) has no adjoint: `deriv` says so.
#[test]
fn pad_of_a_copying_mode_has_no_adjoint() {
    use graphlift::ir::{Pad, PadMode};
    let b = FunctionBuilder::new("reflect");
    let x = b.parameter("x", F64, [4]);
    let p = Pad {
        low: vec![2],
        high: vec![1],
        interior: vec![0],
        mode: PadMode::Reflect,
    };
    let padded = b.op(Op::Pad(p), &[x]);
    b.deriv(sum_all(padded * padded), x);
    let e = b.finish(&[]).unwrap_err();
    assert!(e.to_string().contains("only constant-mode Pad"), "{e}");
}

/// `ReduceProd`'s adjoint is the product of the other elements, also where some are 0 (a
/// product is linear in each element, so central differences are exact there too).
#[test]
fn reduce_prod_with_and_without_zeros() {
    let prod = |axes: Vec<usize>| Reduction {
        op: ReduceOp::Prod,
        axes,
        keep_dims: false,
    };
    let m = input(23, &[3, 4], 0.5, 1.5);
    check("prod", std::slice::from_ref(&m), |b, x| {
        b.op(Op::Reduce(prod(vec![1])), &[x[0]])
    });
    // Row 0 has no zero, row 1 one zero, row 2 two zeros.
    let zeros = (
        vec![3, 4],
        vec![0.9, -1.2, 0.6, 1.1, 0.7, 0.0, -0.8, 1.3, 0.0, 0.5, 0.0, 1.4],
    );
    check("prod_zeros", std::slice::from_ref(&zeros), |b, x| {
        b.op(Op::Reduce(prod(vec![1])), &[x[0]])
    });
    check("prod_all", &[zeros], |b, x| {
        b.op(Op::Reduce(prod(vec![0, 1])), &[x[0] + 0.25])
    });
}

/// A Gather of a ScatterAdd: the scatter's adjoint is a gather.
#[test]
fn scatter_add() {
    use graphlift::ir::ScatterAdd;
    let u = input(24, &[4, 3], -1.0, 1.0);
    check("scatter_add", &[u], |b, x| {
        let ids = b.constant(vec![2i64, 0, 2, -1], [4]);
        let s = ScatterAdd {
            axis: 0,
            shape: Shape::new(vec![5, 3]),
        };
        b.op(Op::ScatterAdd(s), &[x[0], ids]).tanh()
    });
}

/// `CumSum` along a middle axis, each of its four directions: its adjoint is the scan of `dy`
/// the other way, as exclusive as the forward one.
#[test]
fn cum_sum() {
    use graphlift::ir::CumSum;
    let m = input(25, &[2, 4, 3], -1.0, 1.0);
    for (exclusive, reverse) in [(false, false), (true, false), (false, true), (true, true)] {
        let c = CumSum {
            axis: 1,
            exclusive,
            reverse,
        };
        check(
            &format!("cum_sum_{exclusive}_{reverse}"),
            std::slice::from_ref(&m),
            |b, x| b.op(Op::CumSum(c), &[x[0]]).tanh(),
        );
    }
}

/// The derivative of a function whose elementwise regions are already fused kernels (with
/// two outputs, one input read twice) equals the derivative of the unfused function.
#[test]
fn through_fused_kernels() {
    use graphlift::ir::Output;
    use graphlift::passes::{extract_subgraphs, ExtractionConfig};
    fn forward(b: &FunctionBuilder) -> [Value<'_>; 4] {
        let x = b.parameter("x", F64, [2, 3]);
        let y = b.parameter("y", F64, [3]);
        let yb = y.broadcast_to([2, 3]);
        let t = (x * yb).tanh() + x;
        let e = (x - yb).exp() * t;
        [x, y, t, e]
    }
    fn tail<'b>(b: &'b FunctionBuilder, t: Value<'b>, e: Value<'b>) -> Value<'b> {
        let w = |v: Value<'b>| scalar(b, b.op(Op::Softmax(1), &[v]));
        w(t) + w(e)
    }
    let b = FunctionBuilder::new("unfused");
    let [x, y, t, e] = forward(&b);
    let c = tail(&b, t, e);
    let grads = b.gradients(c, &[x, y]);
    let unfused = b.finish(&grads).unwrap();

    let b = FunctionBuilder::new("fused");
    let [_, _, t, e] = forward(&b);
    let mut f = b.finish(&[t, e]).unwrap();
    let report = extract_subgraphs(&mut f, &ExtractionConfig::default()).unwrap();
    assert_eq!(report.kernels.len(), 1);
    let sources: Vec<Output> = f
        .results()
        .iter()
        .map(|&r| f.result_source(r).unwrap())
        .collect();
    let params: Vec<Output> = f.parameters().iter().map(|&p| p.into()).collect();
    let b = FunctionBuilder::from_function(f);
    let c = tail(&b, b.value_of(sources[0]), b.value_of(sources[1]));
    let wrt: Vec<Value> = params.iter().map(|&p| b.value_of(p)).collect();
    let grads = b.gradients(c, &wrt);
    let fused = b.finish(&grads).unwrap();
    assert!(
        fused.nodes().any(|n| matches!(n.op(), Op::FusedKernel(_))),
        "{fused}"
    );

    let inputs = [input(25, &[2, 3], -1.0, 1.0), input(26, &[3], -1.0, 1.0)];
    for backend in BACKENDS {
        let run = |f: &graphlift::Function| {
            let exe = Backend::create(backend).unwrap().compile(f).unwrap();
            exe.run(&tensors(&inputs)).unwrap()
        };
        let (want, got) = (run(&unfused), run(&fused));
        for (w, g) in want.iter().zip(&got) {
            let (w, g) = (w.read::<f64>().unwrap(), g.read::<f64>().unwrap());
            for (a, b) in w.iter().zip(g) {
                assert!(
                    (a - b).abs() <= 1e-12 * a.abs().max(1.0),
                    "{backend}: {w:?} vs {g:?}"
                );
            }
        }
    }
}

/// Only the nodes between `c` and the values asked for are differentiated: a branch that
/// does not depend on them gets no backward nodes.
#[test]
fn only_the_path_to_the_values_asked_for_is_differentiated() {
    let b = FunctionBuilder::new("paths");
    let x = b.parameter("x", F64, [3]);
    let y = b.parameter("y", F64, [3]);
    let other = y.exp().tagged("onnx:Exp:/other");
    let c = sum_all(x.tanh() * other);
    let dx = b.deriv(c, x);
    let f = b.finish(&[dx]).unwrap();
    assert!(
        !f.nodes()
            .any(|n| n.tags().contains("deriv:onnx:Exp:/other")),
        "{f}"
    );
}

/// An embedding lookup: `Gather` rows of a table (indices repeat and count from the end);
/// the table's gradient adds up the rows' adjoints (`ScatterAdd`).
#[test]
fn gather_of_an_embedding_table() {
    let table = input(20, &[5, 3], -1.0, 1.0);
    check("gather_rows", std::slice::from_ref(&table), |b, x| {
        let ids = b.constant(vec![1i64, 3, 1, -1], [2, 2]);
        b.op(Op::Gather(0), &[x[0], ids]).tanh()
    });
    check("gather_columns", &[table], |b, x| {
        let ids = b.constant(vec![2i32, 0, 2], [3]);
        b.op(Op::Gather(1), &[x[0], ids]) * x[0].scalar_like(2.0)
    });
}

#[test]
fn a_gradient_function_saves_and_loads_exactly() {
    let b = FunctionBuilder::new("saved");
    let table = b.parameter("table", F64, [4, 2]);
    let ids = b.constant(vec![0i64, 3, 3], [3]);
    let rows = b.op(Op::Gather(0), &[table, ids]);
    let d = b.deriv(sum_all(rows.sigmoid()), table);
    let f = b.finish(&[d]).unwrap();
    assert!(
        f.nodes().any(|n| matches!(n.op(), Op::ScatterAdd(_))),
        "{f}"
    );
    let g = graphlift::Function::from_json(&f.to_json()).unwrap();
    assert_eq!(f, g);
}
