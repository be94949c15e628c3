//! A tiny f32 evaluator for tests: runs a function (fused kernels included, through their
//! bodies) so tests can check that extraction keeps what a function computes, bit for bit.
//! Supports the ops the tests build; anything else panics (tests only). Bool values are held
//! as f32 0.0 / 1.0.

use std::collections::HashMap;

use graphlift_ir::{BinaryOp, CompareOp, ElementType, Function, Op, Output, Shape, UnaryOp};

/// The values of `f`'s results for the given parameter values (f32, row-major).
pub(crate) fn eval(f: &Function, inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let mut values: HashMap<Output, Vec<f32>> = HashMap::new();
    for id in f.topological_order().expect("acyclic") {
        let n = f.node(id).expect("live");
        let arg = |k: usize| &values[&n.inputs()[k]];
        let outs: Vec<Vec<f32>> = match n.op() {
            Op::Parameter => {
                let k = f
                    .parameters()
                    .iter()
                    .position(|&p| p == id)
                    .expect("listed");
                vec![inputs[k].clone()]
            }
            Op::Constant(d) => vec![d.as_slice::<f32>().expect("f32 constant").to_vec()],
            Op::Result => vec![arg(0).clone()],
            Op::Unary(u) => vec![arg(0).iter().map(|&x| unary(*u, x)).collect()],
            Op::Binary(b) => vec![arg(0)
                .iter()
                .zip(arg(1))
                .map(|(&x, &y)| binary(*b, x, y))
                .collect()],
            Op::Compare(c) => vec![arg(0)
                .iter()
                .zip(arg(1))
                .map(|(&x, &y)| f32::from(u8::from(compare(*c, x, y))))
                .collect()],
            Op::Select => vec![arg(0)
                .iter()
                .zip(arg(1).iter().zip(arg(2)))
                .map(|(&c, (&x, &y))| if c != 0.0 { x } else { y })
                .collect()],
            Op::Convert(ElementType::F32) => vec![arg(0).clone()],
            Op::Broadcast(target) => {
                let from = &f.output_type(n.inputs()[0]).expect("typed").shape;
                vec![broadcast(arg(0), from, target)]
            }
            Op::FusedKernel(k) => {
                let ins: Vec<Vec<f32>> = (0..n.inputs().len()).map(|k| arg(k).clone()).collect();
                eval(&k.body, &ins)
            }
            op => panic!("test evaluator does not support {op}"),
        };
        for (i, v) in outs.into_iter().enumerate() {
            values.insert(Output::new(id, i), v);
        }
    }
    f.results()
        .iter()
        .map(|&r| values[&Output::from(r)].clone())
        .collect()
}

fn unary(u: UnaryOp, x: f32) -> f32 {
    match u {
        UnaryOp::Negative => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Relu => {
            if x.is_nan() {
                x
            } else {
                x.max(0.0)
            }
        }
        UnaryOp::Exp => x.exp(),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnaryOp::Sign => {
            if x == 0.0 || x.is_nan() {
                x
            } else {
                x.signum()
            }
        }
        u => panic!("test evaluator does not support {}", u.name()),
    }
}

fn binary(b: BinaryOp, x: f32, y: f32) -> f32 {
    match b {
        BinaryOp::Add => x + y,
        BinaryOp::Subtract => x - y,
        BinaryOp::Multiply => x * y,
        BinaryOp::Divide => x / y,
        BinaryOp::Maximum => x.max(y),
        BinaryOp::Minimum => x.min(y),
        b => panic!("test evaluator does not support {}", b.name()),
    }
}

fn compare(c: CompareOp, x: f32, y: f32) -> bool {
    match c {
        CompareOp::Equal => x == y,
        CompareOp::NotEqual => x != y,
        CompareOp::Less => x < y,
        CompareOp::LessEq => x <= y,
        CompareOp::Greater => x > y,
        CompareOp::GreaterEq => x >= y,
    }
}

fn broadcast(x: &[f32], from: &Shape, to: &Shape) -> Vec<f32> {
    let count = to.element_count().expect("small");
    let (to_strides, from_strides) = (to.strides(), from.strides());
    let offset = to.rank() - from.rank();
    (0..count)
        .map(|flat| {
            let mut src = 0;
            for (axis, &stride) in to_strides.iter().enumerate() {
                let coord = flat / stride % to.dims()[axis].max(1);
                if axis >= offset && from.dims()[axis - offset] != 1 {
                    src += coord * from_strides[axis - offset];
                }
            }
            x[src]
        })
        .collect()
}

/// Whether two result lists are the same bit for bit (any NaN equals any NaN).
pub(crate) fn same_bits(a: &[Vec<f32>], b: &[Vec<f32>]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()))
        })
}
