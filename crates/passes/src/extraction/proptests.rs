//! Property test of subgraph extraction on random DAGs of elementwise ops with barriers,
//! broadcasts, constants and control dependencies.

use graphlift_ir::{
    BinaryOp, CompareOp, ElementType::F32, Function, NodeId, Op, Output, Shape, TensorData, UnaryOp,
};
use proptest::prelude::*;

use super::tests::{extract_checked, kernels};
use super::*;

/// One random construction step; the numbers pick ops and operands.
#[derive(Debug, Clone)]
struct Step {
    kind: u8,
    a: usize,
    b: usize,
    stop: bool,
}

fn step() -> impl Strategy<Value = Step> {
    (
        0u8..8,
        any::<usize>(),
        any::<usize>(),
        prop::bool::weighted(0.1),
    )
        .prop_map(|(kind, a, b, stop)| Step { kind, a, b, stop })
}

const UNARY: [UnaryOp; 6] = [
    UnaryOp::Relu,
    UnaryOp::Abs,
    UnaryOp::Negative,
    UnaryOp::Exp,
    UnaryOp::Tanh,
    UnaryOp::Sign,
];
const BINARY: [BinaryOp; 4] = [
    BinaryOp::Add,
    BinaryOp::Subtract,
    BinaryOp::Multiply,
    BinaryOp::Maximum,
];

/// Builds the random function: parameters x0, x1 of f32[4] and y of f32[2, 4], then one
/// node (or a few) per step, control dependencies from later to earlier nodes, and a
/// Result for every value nobody uses plus a few more.
fn build(
    steps: &[Step],
    ctrl: &[(usize, usize)],
    extra: &[usize],
) -> Result<Function, graphlift_ir::IrError> {
    let mut f = Function::new("random");
    let mut vals: Vec<Output> = vec![
        f.add_parameter("x0", F32, [4])?.into(),
        f.add_parameter("x1", F32, [4])?.into(),
        f.add_parameter("y", F32, [2, 4])?.into(),
    ];
    let mut created: Vec<NodeId> = Vec::new();
    for s in steps {
        let va = vals[s.a % vals.len()];
        let shape = f.output_type(va)?.shape.clone();
        let same: Vec<Output> = vals
            .iter()
            .copied()
            .filter(|&v| f.output_type(v).map(|t| t.shape == shape).unwrap_or(false))
            .collect();
        let vb = same[s.b % same.len()];
        let len = shape.element_count()?;
        let new = match s.kind {
            0 => add(
                &mut f,
                &mut created,
                Op::Unary(UNARY[s.b % UNARY.len()]),
                &[va],
            )?,
            1 | 2 => add(
                &mut f,
                &mut created,
                Op::Binary(BINARY[s.b / 7 % BINARY.len()]),
                &[va, vb],
            )?,
            3 if shape.rank() == 1 => add(
                &mut f,
                &mut created,
                Op::Broadcast(Shape::new([2, 4])),
                &[va],
            )?,
            3 => add(&mut f, &mut created, Op::Unary(UnaryOp::Abs), &[va])?,
            4 => {
                let data: Vec<f32> = (0..len)
                    .map(|i| (s.b % 5 + i) as f32 * 0.25 - 0.5)
                    .collect();
                let c = f.add_constant(TensorData::F32(data), shape.clone())?;
                created.push(c);
                add(
                    &mut f,
                    &mut created,
                    Op::Binary(BinaryOp::Add),
                    &[va, c.into()],
                )?
            }
            5 => {
                let c = f.add_constant(
                    TensorData::F32(vec![(s.b % 3) as f32 + 0.5]),
                    Shape::scalar(),
                )?;
                created.push(c);
                let bc = add(
                    &mut f,
                    &mut created,
                    Op::Broadcast(shape.clone()),
                    &[c.into()],
                )?;
                add(
                    &mut f,
                    &mut created,
                    Op::Binary(BinaryOp::Multiply),
                    &[va, bc.into()],
                )?
            }
            6 => {
                let cmp = add(
                    &mut f,
                    &mut created,
                    Op::Compare(CompareOp::Greater),
                    &[va, vb],
                )?;
                add(&mut f, &mut created, Op::Select, &[cmp.into(), va, vb])?
            }
            _ => add(&mut f, &mut created, Op::Convert(F32), &[va])?,
        };
        if s.stop {
            f.set_metadata(new, STOP_FUSION_KEY, "true")?;
        }
        vals.push(new.into());
    }
    for &(i, j) in ctrl {
        let (i, j) = (i % created.len(), j % created.len());
        if i < j {
            f.add_control_dependency(created[j], created[i])?;
        }
    }
    let sinks: Vec<Output> = created
        .iter()
        .filter(|&&id| f.get(id).is_some_and(|n| !n.has_users()))
        .map(|&id| id.into())
        .collect();
    for v in sinks
        .into_iter()
        .chain(extra.iter().map(|&k| vals[k % vals.len()]))
    {
        f.add_result(v, None)?;
    }
    Ok(f)
}

fn add(
    f: &mut Function,
    created: &mut Vec<NodeId>,
    op: Op,
    ins: &[Output],
) -> Result<NodeId, graphlift_ir::IrError> {
    let id = f.add_node(op, ins)?;
    created.push(id);
    Ok(id)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random DAGs of elementwise ops, with barriers (an excluded op type and `stop_fusion`
    /// metadata), broadcasts, constants and random control dependencies. After extraction
    /// the function validates (so it is acyclic), every kernel body validates and keeps one
    /// iteration space, the multiset of compute ops (inside bodies included) is unchanged,
    /// the values computed are the same bit for bit, and the pass is deterministic and
    /// idempotent.
    #[test]
    fn extraction_keeps_graphs_valid_and_equivalent(
        steps in prop::collection::vec(step(), 1..28),
        ctrl in prop::collection::vec((any::<usize>(), any::<usize>()), 0..6),
        extra in prop::collection::vec(any::<usize>(), 0..3),
        max_ops in prop_oneof![Just(2usize), Just(3), Just(256)],
    ) {
        let f = build(&steps, &ctrl, &extra).expect("the generator builds valid graphs");
        let config = ExtractionConfig::default().with_max_ops(max_ops).exclude("Tanh");

        let mut once = f.clone();
        let report = extract_checked(&mut once, &config);
        for k in kernels(&once) {
            let mut ins = k.inputs().to_vec();
            ins.sort();
            ins.dedup();
            prop_assert_eq!(ins.len(), k.inputs().len(), "live-ins are deduplicated");
        }

        let mut again = f.clone();
        let report_again = extract_subgraphs(&mut again, &config).expect("runs");
        prop_assert_eq!(&report, &report_again);
        prop_assert_eq!(&once, &again, "deterministic");

        let twice = extract_subgraphs(&mut again, &config).expect("runs");
        prop_assert!(twice.kernels.is_empty(), "idempotent: {:?}", twice);
    }
}
