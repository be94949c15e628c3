use graphlift_ir::{BinaryOp, ElementType, Function, FunctionBuilder, Op, UnaryOp};
use graphlift_runtime::Tensor;

use super::CanonicalForms;
use crate::testing::{eval, same_bits};
use crate::Pass;

/// Inputs with the special values each rule must keep: signed zeros, infinities, NaN,
/// subnormals, and ordinary values of both signs.
fn specials() -> Vec<f32> {
    vec![
        f32::NEG_INFINITY,
        -3.5,
        -1.0,
        -0.0,
        0.0,
        1e-41,
        0.3,
        1.0,
        2.5,
        3.0e10,
        f32::INFINITY,
        f32::NAN,
    ]
}

fn power(exponent: f32, x_type: ElementType) -> Function {
    let b = FunctionBuilder::new("pow");
    let n = specials().len();
    let x = b.parameter("x", x_type, [n]);
    let c = match x_type {
        ElementType::F32 => b.constant(vec![exponent; n], [n]),
        _ => b.constant(vec![exponent as i32; n], [n]),
    };
    let y = b
        .op(Op::Binary(BinaryOp::Power), &[x, c])
        .tagged("onnx:Pow:/act/Pow");
    b.finish(&[y]).unwrap()
}

fn ops(f: &Function, op: &Op) -> usize {
    f.nodes().filter(|n| n.op() == op).count()
}

/// The rewritten function's values: equal to the reference's bit for bit where the table
/// says exact, else within `ulps` units in the last place (NaN and infinities equal).
fn check_values(before: &Function, after: &Function, ulps: u32) {
    let x = Tensor::from_vec(specials(), [specials().len()]).unwrap();
    let (want, got) = (eval(before, std::slice::from_ref(&x)), eval(after, &[x]));
    if ulps == 0 {
        assert!(same_bits(&want, &got), "{want:?}\n{got:?}");
        return;
    }
    let (w, g) = (
        want[0].read::<f32>().unwrap(),
        got[0].read::<f32>().unwrap(),
    );
    for (a, b) in w.iter().zip(g) {
        let close = a.to_bits().abs_diff(b.to_bits()) <= ulps;
        assert!(close || (a.is_nan() && b.is_nan()), "{a} vs {b}");
    }
}

#[test]
fn powers_by_constants_become_products_and_roots() {
    for (c, ulps) in [
        (1.0, 0),
        (2.0, 0),
        (-1.0, 0),
        (0.5, 0),
        (-0.5, 1),
        (3.0, 2),
        (4.0, 2),
        (-2.0, 2),
    ] {
        let before = power(c, ElementType::F32);
        let mut after = before.clone();
        assert!(CanonicalForms.run(&mut after).unwrap(), "{c}");
        after.validate().unwrap();
        let pow = Op::Binary(BinaryOp::Power);
        assert_eq!(ops(&after, &pow), 0, "Pow({c}) left:\n{after}");
        check_values(&before, &after, ulps);
        // The normal form's last node keeps the Pow's provenance.
        let out = after.result_source(after.results()[0]).unwrap();
        let tags = after.node(out.node).unwrap().tags();
        assert!(tags.contains("onnx:Pow:/act/Pow"), "{c}: {tags:?}");
        assert!(!CanonicalForms.run(&mut after).unwrap(), "idempotent");
    }
}

#[test]
fn cube_is_the_tree_the_gelu_tanh_form_matches() {
    let mut f = power(3.0, ElementType::F32);
    CanonicalForms.run(&mut f).unwrap();
    let out = f.result_source(f.results()[0]).unwrap();
    let outer = f.node(out.node).unwrap();
    assert_eq!(outer.op(), &Op::Binary(BinaryOp::Multiply));
    let square = f.node(outer.inputs()[0].node).unwrap();
    assert_eq!(square.op(), &Op::Binary(BinaryOp::Multiply));
    assert_eq!(square.inputs()[0], square.inputs()[1]);
    assert_eq!(square.inputs()[0], outer.inputs()[1]);
}

#[test]
fn other_powers_are_left_alone() {
    // An exponent outside the table, one that is not a splat, one that is not constant,
    // and an integer power.
    let mut odd = power(5.0, ElementType::F32);
    let mut ints = power(2.0, ElementType::I32);
    let b = FunctionBuilder::new("mixed");
    let x = b.parameter("x", ElementType::F32, [2]);
    let mixed = b.constant(vec![2.0f32, 3.0], [2]);
    let e = b.parameter("e", ElementType::F32, [2]);
    let y = b.op(Op::Binary(BinaryOp::Power), &[x, mixed]);
    let z = b.op(Op::Binary(BinaryOp::Power), &[x, e]);
    let mut other = b.finish(&[y, z]).unwrap();
    for f in [&mut odd, &mut ints, &mut other] {
        let before = f.clone();
        assert!(!CanonicalForms.run(f).unwrap());
        assert_eq!(*f, before);
    }
}

/// The first output of `before` and of `after`, each evaluated by the reference on the
/// `f32` vector `xs`.
fn first_outputs(before: &Function, after: &Function, xs: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let t = Tensor::from_vec(xs.to_vec(), [xs.len()]).unwrap();
    let (want, got) = (eval(before, std::slice::from_ref(&t)), eval(after, &[t]));
    let first = |out: &[Tensor]| out[0].read::<f32>().unwrap().to_vec();
    (first(&want), first(&got))
}

/// `x / (e^-z + 1)` (`after`) against `x · sigmoid(z)` (`before`) on the specials: a few
/// ulp, and the same specials (the tiny negative inputs' products are subnormal or zero
/// either way).
fn assert_within_a_few_ulp(before: &Function, after: &Function) {
    let (w, g) = first_outputs(before, after, &specials());
    for (a, b) in w.iter().zip(&g) {
        let close = (a - b).abs() <= 4.0 * f32::EPSILON * a.abs() + 1e-38;
        assert!(close || (a.is_nan() && b.is_nan()) || a == b, "{a} vs {b}");
    }
}

#[test]
fn both_silu_spellings_become_the_library_form() {
    for sigmoid_first in [false, true] {
        let b = FunctionBuilder::new("silu");
        let x = b.parameter("x", ElementType::F32, [specials().len()]);
        let s = x.sigmoid();
        let y = if sigmoid_first { s * x } else { x * s };
        let before = b.finish(&[y.tagged("onnx:Mul:/act/Mul")]).unwrap();
        let mut after = before.clone();
        assert!(CanonicalForms.run(&mut after).unwrap());
        assert_eq!(ops(&after, &Op::Unary(UnaryOp::Sigmoid)), 0, "{after}");
        assert_eq!(ops(&after, &Op::Unary(UnaryOp::Exp)), 1, "{after}");
        let out = after.result_source(after.results()[0]).unwrap();
        assert_eq!(
            after.node(out.node).unwrap().op(),
            &Op::Binary(BinaryOp::Divide)
        );
        assert_within_a_few_ulp(&before, &after);
    }
}

/// Swish (`x · sigmoid(β·x)`, CLIP's QuickGELU at `β = 1.702`) with each product's operands
/// either way round becomes `x / (e^-(x·β) + 1)`, keeping the product `x·β`; a slope that is
/// not a constant, or a sigmoid of another value, is left alone.
#[test]
fn swish_spellings_become_the_library_form_and_others_stay() {
    let n = specials().len();
    for spelling in 0..4 {
        let b = FunctionBuilder::new("swish");
        let x = b.parameter("x", ElementType::F32, [n]);
        let z = if spelling % 2 == 0 {
            x * 1.702
        } else {
            1.702 * x
        };
        let s = z.sigmoid();
        let y = if spelling < 2 { x * s } else { s * x };
        let before = b.finish(&[y]).unwrap();
        let mut after = before.clone();
        assert!(CanonicalForms.run(&mut after).unwrap(), "{spelling}");
        assert_eq!(ops(&after, &Op::Unary(UnaryOp::Sigmoid)), 0, "{after}");
        assert_eq!(ops(&after, &Op::Unary(UnaryOp::Exp)), 1, "{after}");
        assert_eq!(ops(&after, &Op::Binary(BinaryOp::Multiply)), 1, "{after}");
        let out = after.result_source(after.results()[0]).unwrap();
        assert_eq!(
            after.node(out.node).unwrap().op(),
            &Op::Binary(BinaryOp::Divide)
        );
        assert_within_a_few_ulp(&before, &after);
    }
    // The slope a parameter; the sigmoid of another value scaled.
    let b = FunctionBuilder::new("not_swish");
    let x = b.parameter("x", ElementType::F32, [n]);
    let w = b.parameter("w", ElementType::F32, [n]);
    let y = x * (x * w).sigmoid() + x * (w * 1.702).sigmoid();
    let mut f = b.finish(&[y]).unwrap();
    let before = f.clone();
    assert!(!CanonicalForms.run(&mut f).unwrap());
    assert_eq!(f, before);
}

/// GELU-erf's three factors in every grouping exporters write become the library form of
/// their argument, with the same values bit for bit on ordinary inputs.
#[test]
fn gelu_erf_products_are_regrouped_into_the_library_forms() {
    type Spelling = fn(graphlift_ir::Value<'_>) -> graphlift_ir::Value<'_>;
    let spellings: [(Spelling, bool); 5] = [
        // TF/Keras: 0.5 * x * (1 + erf(x / sqrt(2))).
        (
            |x| (0.5 * x) * ((x / std::f64::consts::SQRT_2).erf() + 1.0),
            false,
        ),
        // x * (0.5 * (erf(x / sqrt(2)) + 1)).
        (
            |x| x * (((x / std::f64::consts::SQRT_2).erf() + 1.0) * 0.5),
            false,
        ),
        // 0.5 * (x * (1 + erf(x * c))).
        (
            |x| 0.5 * (x * ((x * std::f64::consts::FRAC_1_SQRT_2).erf() + 1.0)),
            true,
        ),
        // (x * (erf(x * c) + 1)) * 0.5.
        (
            |x| (x * ((std::f64::consts::FRAC_1_SQRT_2 * x).erf() + 1.0)) * 0.5,
            true,
        ),
        // Already the divide form: left alone.
        (
            |x| (x * ((x / std::f64::consts::SQRT_2).erf() + 1.0)) * 0.5,
            false,
        ),
    ];
    for (k, (spell, half_with_x)) in spellings.into_iter().enumerate() {
        let b = FunctionBuilder::new("gelu");
        let x = b.parameter("x", ElementType::F32, [8]);
        let before = b.finish(&[spell(x)]).unwrap();
        let mut after = before.clone();
        let changed = CanonicalForms.run(&mut after).unwrap();
        assert_eq!(changed, k != 4, "spelling {k}:\n{after}");
        // The root multiplies by 0.5 last (divide form) or pairs x with 0.5 (multiply form).
        let out = after.result_source(after.results()[0]).unwrap();
        let root = after.node(out.node).unwrap();
        let inner = after.node(root.inputs()[0].node).unwrap();
        let pairs_half = inner.inputs().iter().any(|&o| {
            matches!(
                after.node(o.node).unwrap().op(),
                Op::Constant(_) | Op::Broadcast(_)
            )
        });
        assert_eq!(pairs_half, half_with_x, "spelling {k}:\n{after}");
        let xs: Vec<f32> = vec![-3.0, -1.25, -0.5, -0.0, 0.0, 0.3, 1.7, 4.0];
        let t = Tensor::from_vec(xs, [8]).unwrap();
        let (want, got) = (eval(&before, std::slice::from_ref(&t)), eval(&after, &[t]));
        assert!(same_bits(&want, &got), "spelling {k}: {want:?} {got:?}");
    }
}

/// HardSwish as `(x · relu6(x + 3)) / 6` with the product and the sum either way round and
/// the clip's bounds in either order becomes `x · (relu6(x + 3) / 6)`: within 2 ulp of the
/// spelled form (the least subnormal apart where the results are subnormal) over a sweep of
/// magnitudes, `x` where `x · 6` overflows; the same NaN, infinities and zeros. Another
/// divisor, another clip, or a product read elsewhere is left alone.
#[test]
fn hard_swish_quotients_become_the_keras_product() {
    type Spelling = fn(graphlift_ir::Value<'_>) -> graphlift_ir::Value<'_>;
    let spellings: [Spelling; 4] = [
        |x| (x * (x + 3.0).max(x.scalar_like(0.0)).min(x.scalar_like(6.0))) / 6.0,
        |x| ((x + 3.0).max(x.scalar_like(0.0)).min(x.scalar_like(6.0)) * x) / 6.0,
        |x| (x * (3.0 + x).min(x.scalar_like(6.0)).max(x.scalar_like(0.0))) / 6.0,
        |x| (x * x.scalar_like(0.0).max(x + 3.0).min(x.scalar_like(6.0))) / 6.0,
    ];
    let mut xs = specials();
    xs.extend((0..4000).map(|i| (i as f32 - 2000.0) * 0.004_173));
    xs.extend((0..3000).flat_map(|i| {
        let v = 2f32.powf(i as f32 * 0.085 - 140.0);
        [v, -v]
    }));
    let n = xs.len();
    for (k, spell) in spellings.into_iter().enumerate() {
        let b = FunctionBuilder::new("hard_swish");
        let x = b.parameter("x", ElementType::F32, [n]);
        let before = b.finish(&[spell(x)]).unwrap();
        let mut after = before.clone();
        assert!(CanonicalForms.run(&mut after).unwrap(), "spelling {k}");
        let out = after.result_source(after.results()[0]).unwrap();
        let root = after.node(out.node).unwrap();
        assert_eq!(root.op(), &Op::Binary(BinaryOp::Multiply), "{after}");
        let quotient = after.node(root.inputs()[1].node).unwrap();
        assert_eq!(quotient.op(), &Op::Binary(BinaryOp::Divide), "{after}");
        let (w, g) = first_outputs(&before, &after, &xs);
        for ((&a, &b), &x) in w.iter().zip(&g).zip(&xs) {
            let ulps = a.to_bits().abs_diff(b.to_bits());
            let fine = (a.is_nan() && b.is_nan())
                || a == b
                || (a.is_finite() && a.signum() == b.signum() && ulps <= 2)
                || (a.abs() < f32::MIN_POSITIVE && (a - b).abs() <= f32::from_bits(1))
                || (a == f32::INFINITY && b == x);
            assert!(fine, "spelling {k}: x = {x:e}: {a:e} vs {b:e}");
        }
    }
    // Not HardSwish: a divisor of 5, a clip to [0, 5], `x - 3`, a product read elsewhere.
    let n = 8;
    let b = FunctionBuilder::new("others");
    let x = b.parameter("x", ElementType::F32, [n]);
    let (zero, five, six) = (x.scalar_like(0.0), x.scalar_like(5.0), x.scalar_like(6.0));
    let relu6 = (x + 3.0).max(zero).min(six);
    let relu5 = (x + 3.0).max(zero).min(five);
    let shifted_down = (x - 3.0).max(zero).min(six);
    let shared = x * relu6;
    let y = (x * relu6) / 5.0 + (x * relu5) / 6.0 + (x * shifted_down) / 6.0;
    let mut f = b.finish(&[y, shared / 6.0, shared]).unwrap();
    let before = f.clone();
    assert!(!CanonicalForms.run(&mut f).unwrap(), "{f}");
    assert_eq!(f, before);
}

/// `ln(e^x + 1)` and `ln(1 + e^x)` become `relu(x) + log1p(e^-|x|)`: within a few ulp of
/// the function (computed in `f64`) over the whole range, where the spelled form is not,
/// and equal to the spelled form within a few ulp for `x ≥ 0` but where `e^x` overflows.
/// A sum or `Exp` read elsewhere, or `e^x + 2`, is left alone.
#[test]
fn softplus_written_out_becomes_the_stable_form() {
    let mut xs = specials();
    xs.extend((0..4000).map(|i| (i as f32 - 2000.0) * 0.051));
    let n = xs.len();
    for one_first in [false, true] {
        let b = FunctionBuilder::new("softplus");
        let x = b.parameter("x", ElementType::F32, [n]);
        let e = x.exp();
        let sum = if one_first {
            x.scalar_like(1.0) + e
        } else {
            e + 1.0
        };
        let before = b.finish(&[sum.log()]).unwrap();
        let mut after = before.clone();
        assert!(CanonicalForms.run(&mut after).unwrap(), "{after}");
        assert_eq!(ops(&after, &Op::Unary(UnaryOp::Log)), 0, "{after}");
        assert_eq!(ops(&after, &Op::Unary(UnaryOp::Log1p)), 1, "{after}");
        let (s, g) = first_outputs(&before, &after, &xs);
        for ((&s, &g), &x) in s.iter().zip(&g).zip(&xs) {
            if x.is_nan() {
                assert!(g.is_nan() && s.is_nan());
                continue;
            }
            let x64 = f64::from(x);
            let exact = (x64.max(0.0) + (-x64.abs()).exp().ln_1p()) as f32;
            let ulps = |v: f32| v.to_bits().abs_diff(exact.to_bits());
            assert!(g == exact || ulps(g) <= 4, "x = {x}: {g} against {exact}");
            if (0.0..88.0).contains(&x) {
                assert!(
                    ulps(s) <= 4 && s.to_bits().abs_diff(g.to_bits()) <= 4,
                    "x = {x}"
                );
            }
            if x > 89.0 {
                assert_eq!((s, g), (f32::INFINITY, x));
            }
        }
    }
    let b = FunctionBuilder::new("others");
    let x = b.parameter("x", ElementType::F32, [4]);
    let shared = x.exp() + 1.0;
    let e = x.exp();
    let y = (x.exp() + 2.0).log() + shared.log() + (e + 1.0).log();
    let mut f = b.finish(&[y, shared, e]).unwrap();
    let before = f.clone();
    assert!(!CanonicalForms.run(&mut f).unwrap(), "{f}");
    assert_eq!(f, before);
}
