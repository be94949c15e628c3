//! Broadcast inputs read in place: every numpy pattern, at every range.

use super::{check, data, Expect};
use graphlift_codegen::broadcast::Addressing;
use graphlift_codegen::plan::{plan_kernel, SlotOp};
use graphlift_ir::{ElementType, FunctionBuilder, Op, Shape, TensorData};
use graphlift_runtime::Tensor;

/// (source shape, target shape) pairs covering each addressing form.
const PATTERNS: &[(&[usize], &[usize])] = &[
    (&[], &[5, 7]),
    (&[1, 1], &[9, 11]),
    (&[7], &[5, 7]),
    (&[8], &[5, 8]),
    (&[4], &[1, 4]),
    (&[3], &[5, 3]),
    (&[1, 9], &[4, 9]),
    (&[3, 4], &[5, 3, 4]),
    (&[5, 1], &[5, 7]),
    (&[2, 1, 4], &[2, 3, 4]),
    (&[3, 1], &[2, 3, 5]),
    (&[1, 3, 1, 5], &[2, 3, 4, 5]),
    (&[2, 1, 1], &[2, 3, 6]),
    // Runs of exactly four (one f32 vector) and NCHW channels: the splat fast path.
    (&[6, 1], &[6, 4]),
    (&[1, 4, 1, 1], &[2, 4, 3, 8]),
];

fn tensor(d: TensorData, shape: &[usize]) -> Tensor {
    Tensor::from_data(d, shape).unwrap()
}

#[test]
fn every_broadcast_pattern_on_every_type() {
    for &(src, dst) in PATTERNS {
        let n: usize = dst.iter().product();
        let m: usize = src.iter().product();
        for t in graphlift_codegen::ELEMENT_TYPES {
            let b = FunctionBuilder::new("bcast");
            let x = b.parameter("x", t, dst);
            let p = b.parameter("p", t, src);
            let r = match t {
                ElementType::Bool => x.xor(p),
                _ => x - p,
            };
            let body = b.finish(&[r, p.lt(x)]).unwrap();
            let ins = [tensor(data(t, n, 0), dst), tensor(data(t, m, 11), src)];
            check(
                &format!("{t} {src:?} -> {dst:?}"),
                &body,
                &ins,
                Expect::Exact,
            );
            // A broadcast bool condition selecting between full-size values.
            let b = FunctionBuilder::new("bcast_select");
            let c = b.parameter("c", ElementType::Bool, src);
            let x = b.parameter("x", t, dst);
            let y = b.parameter("y", t, dst);
            let body = b.finish(&[graphlift_ir::select(c, x, y)]).unwrap();
            let ins = [
                tensor(data(ElementType::Bool, m, 3), src),
                tensor(data(t, n, 0), dst),
                tensor(data(t, n, 7), dst),
            ];
            check(
                &format!("select {t} {src:?} -> {dst:?}"),
                &body,
                &ins,
                Expect::Exact,
            );
        }
    }
}

#[test]
fn addressing_is_chosen_per_pattern() {
    type Case = (&'static [usize], &'static [usize], fn(&Addressing) -> bool);
    let cases: [Case; 5] = [
        (&[], &[5, 7], |a| *a == Addressing::Splat),
        (&[7], &[5, 7], |a| *a == Addressing::Row { len: 7 }),
        (&[1, 7], &[5, 7], |a| *a == Addressing::Row { len: 7 }),
        (&[5, 1], &[5, 7], |a| {
            matches!(a, Addressing::General { .. })
        }),
        (&[1, 5, 7], &[5, 7], |a| *a == Addressing::Contiguous),
    ];
    for (src, dst, ok) in cases {
        let b = FunctionBuilder::new("addr");
        let x = b.parameter("x", ElementType::F32, dst);
        let p = b.parameter("p", ElementType::F32, src);
        let r = if src.len() > dst.len() {
            // [1, 5, 7] + [5, 7]: x is the broadcast one.
            p + x
        } else {
            x + p
        };
        let body = b.finish(&[r]).unwrap();
        let plan = plan_kernel("addr", &body).unwrap();
        let addressing: Vec<&Addressing> = plan
            .slots
            .iter()
            .filter_map(|s| match &s.op {
                SlotOp::Load { arg: 1, addressing } => Some(addressing),
                _ => None,
            })
            .collect();
        assert_eq!(addressing.len(), 1, "{src:?} -> {dst:?}");
        assert!(ok(addressing[0]), "{src:?} -> {dst:?}: {:?}", addressing[0]);
    }
}

#[test]
fn broadcast_of_a_computed_value_is_recomputed_at_the_source_index() {
    for t in [ElementType::F32, ElementType::I32, ElementType::F64] {
        let b = FunctionBuilder::new("bcast_computed");
        let x = b.parameter("x", t, [6, 5]);
        let p = b.parameter("p", t, [5]);
        let q = b.parameter("q", t, [6, 1]);
        let body = b
            .finish(&[x * (p * 3.0 + 1.0) - q.abs(), (p - 2.0).max(p * p)])
            .ok();
        // The second result has another element count: one kernel per iteration space.
        assert!(body.is_none() || plan_kernel("k", body.as_ref().unwrap()).is_err());
        let b = FunctionBuilder::new("bcast_computed");
        let x = b.parameter("x", t, [6, 5]);
        let p = b.parameter("p", t, [5]);
        let q = b.parameter("q", t, [6, 1]);
        let body = b.finish(&[x * (p * 3.0 + 1.0) - q.abs()]).unwrap();
        let ins = [
            tensor(data(t, 30, 0), &[6, 5]),
            tensor(data(t, 5, 4), &[5]),
            tensor(data(t, 6, 9), &[6, 1]),
        ];
        check(&format!("computed {t}"), &body, &ins, Expect::Exact);
    }
}

#[test]
fn constants_scalar_row_and_full() {
    let b = FunctionBuilder::new("consts");
    let x = b.parameter("x", ElementType::F32, [3, 5]);
    let row = b.constant(vec![1.0f32, -2.0, 3.5, f32::NAN, -0.0], [5]);
    let full = b.constant((0..15).map(|i| i as f32 * 0.25).collect::<Vec<_>>(), [3, 5]);
    let flags = b.constant(vec![true, false, true], [3, 1]);
    let r = graphlift_ir::select(flags, x * row + full, x * 2.0 - 1.0);
    let body = b.finish(&[r]).unwrap();
    let plan = plan_kernel("consts", &body).unwrap();
    assert_eq!(
        plan.constants.len(),
        3,
        "row, full and flags are hidden inputs"
    );
    let ins = [tensor(data(ElementType::F32, 15, 0), &[3, 5])];
    check("constants", &body, &ins, Expect::Exact);
}

#[test]
fn loop_invariants_are_hoisted() {
    let b = FunctionBuilder::new("hoist");
    let x = b.parameter("x", ElementType::F32, [37]);
    let s = b.parameter("s", ElementType::F32, Shape::scalar());
    let body = b.finish(&[x + (s * 3.0).sqrt()]).unwrap();
    let plan = plan_kernel("hoist", &body).unwrap();
    let sqrt = plan
        .slots
        .iter()
        .find(|sl| matches!(sl.op, SlotOp::Unary(graphlift_ir::UnaryOp::Sqrt, _)))
        .unwrap();
    assert!(sqrt.invariant);
    let add = plan
        .slots
        .iter()
        .find(|sl| matches!(sl.op, SlotOp::Binary(graphlift_ir::BinaryOp::Add, ..)))
        .unwrap();
    assert!(!add.invariant);
    // The IR computes the square root once, in the preheader.
    let k = graphlift_codegen::JitKernel::compile(&body).unwrap();
    assert_eq!(k.ir().matches("sqrt").count(), 1, "{}", k.ir());
    let ins = [
        tensor(data(ElementType::F32, 37, 0), &[37]),
        tensor(TensorData::F32(vec![2.0]), &[]),
    ];
    check("hoist", &body, &ins, Expect::Exact);
}

#[test]
fn bias_relu_e4_style() {
    // relu(X[N/8, 8] + b[8]) for N = 8 * 125.
    let b = FunctionBuilder::new("bias_relu");
    let x = b.parameter("X", ElementType::F32, [125, 8]);
    let bias = b.parameter("b", ElementType::F32, [8]);
    let body = b.finish(&[(x + bias).relu()]).unwrap();
    let ins = [
        tensor(data(ElementType::F32, 1000, 0), &[125, 8]),
        tensor(data(ElementType::F32, 8, 2), &[8]),
    ];
    check("bias relu", &body, &ins, Expect::Exact);
    let _ = Op::Result;
}
