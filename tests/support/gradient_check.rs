//! Symbolic gradients (`FunctionBuilder::gradients`) against central finite differences in
//! `f64` on both backends: the check of issue 25, shared by the autodiff tests.

use graphlift::ir::{ReduceOp, Reduction};
use graphlift::{Backend, ElementType::F64, FunctionBuilder, Op, Shape, Tensor, Value};

/// The backends every gradient is checked on.
pub const BACKENDS: [&str; 2] = ["INTERPRETER", "CPU-JIT"];

/// One input: its shape and values.
pub type Input = (Vec<usize>, Vec<f64>);

/// The sum of every element of `v`.
pub fn sum_all<'b>(v: Value<'b>) -> Value<'b> {
    let rank = v.tensor_type().unwrap().1.rank();
    let r = Reduction {
        op: ReduceOp::Sum,
        axes: (0..rank).collect(),
        keep_dims: false,
    };
    v.builder().op(Op::Reduce(r), &[v])
}

/// `c = sum(weights * y)`, with weights that differ per element so a gradient routed to the
/// wrong element shows.
pub fn weighted_sum<'b>(b: &'b FunctionBuilder, y: Value<'b>) -> Value<'b> {
    let dims = y.tensor_type().unwrap().1;
    let n = dims.element_count().unwrap();
    let w: Vec<f64> = (0..n).map(|i| 0.5 + (i % 7) as f64 * 0.25).collect();
    sum_all(y * b.constant(w, dims))
}

/// The inputs as tensors.
pub fn tensors(inputs: &[Input]) -> Vec<Tensor> {
    inputs
        .iter()
        .map(|(d, v)| Tensor::from_vec(v.clone(), Shape::new(d.clone())).unwrap())
        .collect()
}

/// Checks the gradients of `weighted_sum(build(inputs))` with respect to every input, on
/// both backends, against central differences (step `1e-6 · max(|x|, 1)`) of the forward
/// function on the INTERPRETER: relative error at most `1e-6`.
pub fn check(
    name: &str,
    inputs: &[Input],
    build: impl for<'b> Fn(&'b FunctionBuilder, &[Value<'b>]) -> Value<'b>,
) {
    // One graph, two computations: c itself, and its gradients.
    let b = FunctionBuilder::new(name);
    let ps: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(k, (d, _))| b.parameter(&format!("x{k}"), F64, d.clone()))
        .collect();
    let c = weighted_sum(&b, build(&b, &ps));
    let forward = b.computation(&[c]).unwrap();
    let grads = b.gradients(c, &ps);
    let gradient = b.finish(&grads).unwrap();
    let reference = Backend::create("INTERPRETER")
        .unwrap()
        .compile(&forward)
        .unwrap();
    let eval = |xs: &[Input]| {
        reference.run(&tensors(xs)).unwrap()[0]
            .read::<f64>()
            .unwrap()[0]
    };
    let mut want = Vec::new();
    for (k, (_, values)) in inputs.iter().enumerate() {
        let mut moved = inputs.to_vec();
        want.push(
            (0..values.len())
                .map(|i| {
                    let x = values[i];
                    let h = 1e-6 * x.abs().max(1.0);
                    moved[k].1[i] = x + h;
                    let up = eval(&moved);
                    moved[k].1[i] = x - h;
                    let down = eval(&moved);
                    moved[k].1[i] = x;
                    (up - down) / (2.0 * h)
                })
                .collect::<Vec<_>>(),
        );
    }
    for backend in BACKENDS {
        let exe = Backend::create(backend)
            .unwrap()
            .compile(&gradient)
            .unwrap();
        let grads = exe.run(&tensors(inputs)).unwrap();
        for (k, want) in want.iter().enumerate() {
            let got = grads[k].read::<f64>().unwrap();
            for (i, (&got, &want)) in got.iter().zip(want).enumerate() {
                let err = (got - want).abs() / want.abs().max(1.0);
                assert!(
                    err <= 1e-6,
                    "{name} on {backend}: d/dx{k}[{i}] = {got}, finite differences {want} (error {err:e})"
                );
            }
        }
    }
}
