//! Property test of the rewrite passes and the default pipeline on random graphs built from
//! edge-case constants: each keeps functions valid and values bit-exact.

use graphlift_ir::{
    BinaryOp, ElementType, Function, IrError, Op, Output, Shape, TensorData, UnaryOp,
};
use proptest::prelude::*;

use crate::testing::assert_same_values;
use crate::{
    AlgebraicSimplification, CommonSubexpressionElimination, ConstantFolding, DeadCodeElimination,
    ExtractionConfig, FusedOpExpansion, Pass, PassManager,
};

#[derive(Debug, Clone)]
struct Step {
    kind: u8,
    a: usize,
    b: usize,
}

fn step() -> impl Strategy<Value = Step> {
    (0u8..10, any::<usize>(), any::<usize>()).prop_map(|(kind, a, b)| Step { kind, a, b })
}

const FLOATS: [f64; 8] = [0.0, -0.0, 1.0, -1.0, 2.0, f64::NAN, f64::INFINITY, 0.5];
const INTS: [i64; 6] = [0, 1, -1, 2, i64::MIN, 7];
const UNARY: [UnaryOp; 4] = [
    UnaryOp::Negative,
    UnaryOp::Abs,
    UnaryOp::Relu,
    UnaryOp::Sign,
];
const BINARY: [BinaryOp; 5] = [
    BinaryOp::Add,
    BinaryOp::Subtract,
    BinaryOp::Multiply,
    BinaryOp::Divide,
    BinaryOp::Maximum,
];

fn splat_data(t: ElementType, pick: usize, len: usize) -> TensorData {
    let f = FLOATS[pick % FLOATS.len()];
    let i = INTS[pick % INTS.len()];
    match t {
        ElementType::F32 => TensorData::F32(vec![f as f32; len]),
        ElementType::F64 => TensorData::F64(vec![f; len]),
        ElementType::I32 => TensorData::I32(vec![i as i32; len]),
        _ => TensorData::I64(vec![i; len]),
    }
}

/// Builds the random function over parameters x0, x1 of `t`[4].
fn build(t: ElementType, steps: &[Step], ctrl: &[(usize, usize)]) -> Result<Function, IrError> {
    let mut f = Function::new("random");
    let mut vals: Vec<Output> = vec![
        f.add_parameter("x0", t, [4])?.into(),
        f.add_parameter("x1", t, [4])?.into(),
    ];
    let shape = Shape::new([4]);
    for s in steps {
        let a = vals[s.a % vals.len()];
        let b = vals[s.b % vals.len()];
        let v = match s.kind {
            0 | 1 => f.add_node(Op::Unary(UNARY[s.b % UNARY.len()]), &[a])?,
            2..=4 => f.add_node(Op::Binary(BINARY[s.b % BINARY.len()]), &[a, b])?,
            5 => {
                // A splat constant, broadcast from a scalar or in full.
                if s.a % 2 == 0 {
                    let c = f.add_constant(splat_data(t, s.b, 1), Shape::scalar())?;
                    f.add_node(Op::Broadcast(shape.clone()), &[c.into()])?
                } else {
                    f.add_constant(splat_data(t, s.b, 4), shape.clone())?
                }
            }
            6 => {
                // A binary op with a splat constant: the simplifier's patterns.
                let c = f.add_constant(splat_data(t, s.b / 7, 1), Shape::scalar())?;
                let c = f.add_node(Op::Broadcast(shape.clone()), &[c.into()])?;
                let (l, r) = if s.b % 2 == 0 {
                    (a, c.into())
                } else {
                    (c.into(), a)
                };
                f.add_node(Op::Binary(BINARY[s.b % BINARY.len()]), &[l, r])?
            }
            7 => {
                // Repeat the op of an earlier node on the same inputs (work for CSE).
                let src = f.node(a.node)?.clone();
                if matches!(src.op(), Op::Parameter | Op::Constant(_) | Op::Result) {
                    f.add_node(Op::Binary(BinaryOp::Subtract), &[a, a])?
                } else {
                    f.add_node(src.op().clone(), src.inputs())?
                }
            }
            8 => {
                let n = f.add_node(Op::Unary(UnaryOp::Negative), &[a])?;
                f.add_node(Op::Unary(UnaryOp::Negative), &[n.into()])?
            }
            _ => {
                let c = f.add_node(Op::Compare(graphlift_ir::CompareOp::Less), &[a, b])?;
                let n = f.add_node(Op::Unary(UnaryOp::Not), &[c.into()])?;
                let n = f.add_node(Op::Unary(UnaryOp::Not), &[n.into()])?;
                f.add_node(Op::Select, &[n.into(), a, b])?
            }
        };
        vals.push(v.into());
    }
    let ids: Vec<_> = vals.iter().map(|o| o.node).collect();
    for &(x, y) in ctrl {
        // Later nodes wait for earlier ones; refused cycles are skipped.
        let (x, y) = (ids[x % ids.len()], ids[y % ids.len()]);
        if x > y {
            let _ = f.add_control_dependency(x, y);
        }
    }
    if let Some(&last) = vals.last() {
        f.add_result(last, None)?;
    }
    for &o in vals.iter().skip(2).step_by(3) {
        f.add_result(o, None)?;
    }
    Ok(f)
}

fn check(pass: &dyn Pass, f: &Function) {
    let mut g = f.clone();
    pass.run(&mut g)
        .unwrap_or_else(|e| panic!("{} failed: {e}\n{f}", pass.name()));
    g.validate()
        .unwrap_or_else(|e| panic!("{} left an invalid function: {e}\n{g}", pass.name()));
    assert_same_values(f, &g);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Random f32, f64, i32 and i64 graphs built from edge-case constants (±0, ±1, NaN,
    /// ±inf, MIN), broadcasts, duplicated computations and control dependencies. After each
    /// pass alone, and after the whole pipeline (with fused-op expansion in front, run
    /// twice), the function validates and computes the same values bit for bit on edge-case
    /// inputs.
    #[test]
    fn rewrites_keep_functions_valid_and_values_bit_exact(
        t in prop::sample::select(vec![
            ElementType::F32, ElementType::F64, ElementType::I32, ElementType::I64,
        ]),
        steps in prop::collection::vec(step(), 1..16),
        ctrl in prop::collection::vec((any::<usize>(), any::<usize>()), 0..3),
    ) {
        let f = build(t, &steps, &ctrl).expect("the generator builds valid graphs");
        f.validate().expect("valid");
        check(&ConstantFolding::new(), &f);
        check(&ConstantFolding::with_max_elements(1), &f);
        check(&CommonSubexpressionElimination, &f);
        check(&AlgebraicSimplification, &f);
        check(&DeadCodeElimination, &f);

        let mut pm = PassManager::default_pipeline(ExtractionConfig::default());
        pm.insert(0, Box::new(FusedOpExpansion));
        let mut g = f.clone();
        pm.run(&mut g).unwrap_or_else(|e| panic!("pipeline: {e}\n{f}"));
        assert_same_values(&f, &g);
        pm.run(&mut g).unwrap_or_else(|e| panic!("pipeline again: {e}\n{f}"));
        assert_same_values(&f, &g);
    }
}
