//! Property test of the rewrite passes and the default pipeline on random graphs built from
//! edge-case constants, some with a variable: each keeps functions valid, values bit-exact
//! and, over several calls on the INTERPRETER, the variable's writes.

use graphlift_ir::{
    BinaryOp, ElementType, Function, IrError, NodeId, Op, Output, Shape, TensorData, UnaryOp,
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

/// Where a random program has state: before step `at` (modulo the steps), the latest value
/// is assigned to the variable, as a sink or not, that step uses the assign's value, and
/// with `reread` the variable is read again.
#[derive(Debug, Clone, Copy)]
struct StatePlan {
    at: usize,
    sink: bool,
    reread: bool,
}

/// The variable `v` of a random program, ordered as the builder orders it: an assign after
/// every read made before it, a read made after the assign after it.
struct State {
    variable: NodeId,
    reads: Vec<NodeId>,
    assign: Option<NodeId>,
}

impl State {
    /// Adds `v` of `t`[4], its initial value a splat of `pick`.
    fn new(f: &mut Function, t: ElementType, pick: usize) -> Result<State, IrError> {
        let mut init = Function::new("v_initializer");
        let c = init.add_constant(splat_data(t, pick, 4), [4])?;
        init.add_result(c.into(), None)?;
        Ok(State {
            variable: f.add_variable("v", init)?,
            reads: Vec::new(),
            assign: None,
        })
    }

    /// A new read of `v`, after the assign once there is one.
    fn read(&mut self, f: &mut Function) -> Result<Output, IrError> {
        let r = f.add_node(Op::ReadVariable, &[self.variable.into()])?;
        match self.assign {
            Some(a) => f.add_control_dependency(r, a)?,
            None => self.reads.push(r),
        }
        Ok(r.into())
    }

    /// The assign of `value` to `v`, after every read so far; a sink when `sink`.
    fn assign(&mut self, f: &mut Function, value: Output, sink: bool) -> Result<Output, IrError> {
        let a = f.add_node(Op::Assign, &[self.variable.into(), value])?;
        for &r in &self.reads {
            f.add_control_dependency(a, r)?;
        }
        if sink {
            f.add_sink(a)?;
        }
        self.assign = Some(a);
        Ok(a.into())
    }
}

/// Builds the random function over parameters x0, x1 of `t`[4], and with `plan` a variable
/// `v` whose first read is the third value.
fn build(
    t: ElementType,
    steps: &[Step],
    ctrl: &[(usize, usize)],
    plan: Option<StatePlan>,
) -> Result<Function, IrError> {
    let mut f = Function::new("random");
    let mut vals: Vec<Output> = vec![
        f.add_parameter("x0", t, [4])?.into(),
        f.add_parameter("x1", t, [4])?.into(),
    ];
    let mut state = match plan {
        Some(p) => Some(State::new(&mut f, t, p.at)?),
        None => None,
    };
    if let Some(st) = &mut state {
        vals.push(st.read(&mut f)?);
    }
    let shape = Shape::new([4]);
    for (i, s) in steps.iter().enumerate() {
        // The step right after the assign uses its value.
        let mut assigned = None;
        if let (Some(st), Some(p)) = (&mut state, plan) {
            if i == p.at % steps.len() {
                let latest = vals[vals.len() - 1];
                let a = st.assign(&mut f, latest, p.sink)?;
                vals.push(a);
                assigned = Some(a);
                if p.reread {
                    vals.push(st.read(&mut f)?);
                }
            }
        }
        let a = assigned.unwrap_or(vals[s.a % vals.len()]);
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
                // Repeat the op of an earlier node on the same inputs (work for CSE): a
                // read is read again (in order), an assign is not repeated.
                let src = f.node(a.node)?.clone();
                match (src.op(), &mut state) {
                    (Op::ReadVariable, Some(st)) => st.read(&mut f)?.node,
                    (Op::Parameter | Op::Constant(_) | Op::Result | Op::Assign, _) => {
                        f.add_node(Op::Binary(BinaryOp::Subtract), &[a, a])?
                    }
                    _ => f.add_node(src.op().clone(), src.inputs())?,
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
    /// ±inf, MIN), broadcasts, duplicated computations and control dependencies, half of
    /// them with a variable read, assigned (in the main stream or not) and maybe read again.
    /// After each pass alone, and after the whole pipeline (with fused-op expansion in
    /// front, run twice), the function validates and computes the same values bit for bit
    /// on edge-case inputs; with a variable, over several calls, writing the same values.
    #[test]
    fn rewrites_keep_functions_valid_and_values_bit_exact(
        t in prop::sample::select(vec![
            ElementType::F32, ElementType::F64, ElementType::I32, ElementType::I64,
        ]),
        steps in prop::collection::vec(step(), 1..16),
        ctrl in prop::collection::vec((any::<usize>(), any::<usize>()), 0..3),
        plan in prop::option::of((any::<usize>(), any::<bool>(), any::<bool>())
            .prop_map(|(at, sink, reread)| StatePlan { at, sink, reread })),
    ) {
        let f = build(t, &steps, &ctrl, plan).expect("the generator builds valid graphs");
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
