//! `native::writes_into_seed` tells the truth: the native kernels it names write their result
//! into the buffer they are handed (the same allocation comes back), and those it does not
//! name allocate their own, so that the CPU-JIT's memory planner gives the latter buffers
//! of their own (`BufferPlan::assign`).

use graphlift_ir::{ElementType, Function, Op, Shape, TensorType};
use graphlift_kernels::native::{evaluate, writes_into_seed};
use graphlift_kernels::parallel::{Parallel, ThreadConfig};
use graphlift_runtime::Tensor;

/// `op` over parameters of `shapes` (`f32`), run natively with a zeroed seed of its result's
/// type: whether `writes_into_seed` names it, and whether the seed's allocation came back.
fn seed_taken(op: Op, shapes: &[&[usize]]) -> (bool, bool) {
    let mut f = Function::new("seed");
    let params: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let p = f.add_parameter(format!("p{k}"), ElementType::F32, Shape::new(*s));
            p.unwrap().into()
        })
        .collect();
    let id = f.add_node(op, &params).unwrap();
    let node = f.node(id).unwrap();
    let inputs: Vec<Tensor> = shapes
        .iter()
        .map(|s| {
            let n = s.iter().product::<usize>();
            Tensor::from_vec((0..n).map(|i| i as f32 / 7.0).collect(), s.to_vec()).unwrap()
        })
        .collect();
    let TensorType {
        element_type,
        shape,
    } = node.output_type().clone();
    let seed = Tensor::zeros(element_type, shape).unwrap();
    let at = seed.data().as_ptr();
    let parallel = Parallel::new(ThreadConfig::with_threads(1));
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let out = evaluate(node, &refs, vec![Some(seed)], &parallel).unwrap();
    (writes_into_seed(node), out[0].data().as_ptr() == at)
}

#[test]
fn the_ops_named_write_into_their_seed_and_the_others_allocate() {
    let cases: Vec<(&str, Op, Vec<&[usize]>, bool)> = vec![
        ("MatMul", Op::MatMul, vec![&[4, 8], &[8, 16]], true),
        ("Transpose", Op::Transpose(vec![1, 0]), vec![&[4, 8]], true),
        ("Concat", Op::Concat(0), vec![&[2, 3], &[5, 3]], true),
        ("Softmax", Op::Softmax(1), vec![&[4, 16]], true),
        (
            "Reshape",
            Op::Reshape(Shape::new([32])),
            vec![&[4, 8]],
            true,
        ),
        (
            "Convert",
            Op::Convert(ElementType::F64),
            vec![&[4, 8]],
            false,
        ),
    ];
    for (name, op, shapes, writes) in cases {
        let (named, taken) = seed_taken(op, &shapes);
        assert_eq!(
            (named, taken),
            (writes, writes),
            "{name}: (named, seed taken)"
        );
    }
}
