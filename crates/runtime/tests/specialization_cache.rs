//! A loop body specialised per iteration caches its specialisations, and a backend their
//! compilations, both bounded by the body's one setting ([`Specialized::with_capacity`]):
//! with a small capacity the least recently used specialisation is evicted, and only it is
//! specialised and compiled again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use graphlift_ir::control_flow::{
    Body, ControlFlow, Loop, Specialized, Specializer, DEFAULT_SPECIALIZATION_CAPACITY,
};
use graphlift_ir::{
    BinaryOp,
    ElementType::{Bool, F32, I64},
    Function, Op, Shape, TensorData,
};
use graphlift_runtime::control_flow::{Bodies, CompileFn, CompiledBodies};
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};

/// Hands out one body, counting the specialisations asked for.
#[derive(Debug)]
struct Counting {
    body: Function,
    calls: AtomicUsize,
}

impl Specializer for Counting {
    fn specialize(&self, _: &[TensorData]) -> Result<Function, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(self.body.clone())
    }
}

/// `(i, cond, acc) -> (cond, acc + acc)` over `f32[2]`.
fn doubling_body() -> Function {
    let mut f = Function::new("double");
    f.add_parameter("i", I64, Shape::scalar()).unwrap();
    let c = f.add_parameter("cond", Bool, Shape::scalar()).unwrap();
    let acc = f.add_parameter("acc", F32, [2]).unwrap();
    let twice = f
        .add_node(Op::Binary(BinaryOp::Add), &[acc.into(), acc.into()])
        .unwrap();
    f.add_result(c.into(), None).unwrap();
    f.add_result(twice.into(), None).unwrap();
    f
}

/// The bound value of iteration `i`.
fn at(i: i64) -> [TensorData; 1] {
    [TensorData::I64(vec![i])]
}

#[test]
fn a_small_capacity_evicts_the_least_recently_used_specialisation() {
    let body = doubling_body();
    let counting = Arc::new(Counting {
        body: body.clone(),
        calls: AtomicUsize::new(0),
    });
    let specialized = |capacity: Option<usize>| {
        let s = Specialized::new(
            "double",
            vec![0],
            body.parameter_types(),
            body.result_types(),
            Arc::clone(&counting) as Arc<dyn Specializer>,
        );
        match capacity {
            Some(n) => s.with_capacity(n),
            None => s,
        }
    };
    assert_eq!(
        specialized(None).capacity(),
        DEFAULT_SPECIALIZATION_CAPACITY
    );
    let spec = Arc::new(specialized(Some(2)));
    assert_eq!(spec.capacity(), 2);

    // The body's cache: 0, 1, then 0 again (a hit, now the most recent); 2 evicts 1.
    let calls = || counting.calls.load(Ordering::SeqCst);
    for i in [0, 1, 0, 2] {
        spec.function_for(&at(i)).unwrap();
    }
    assert_eq!((calls(), spec.cached()), (3, 2));
    spec.function_for(&at(0)).unwrap();
    assert_eq!(calls(), 3, "0 was used more recently than 1: kept");
    spec.function_for(&at(1)).unwrap();
    assert_eq!(
        calls(),
        4,
        "1 was the least recently used: specialised again"
    );

    // A backend's compilations of the same body: as many entries, evicted the same way.
    let compiled = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&compiled);
    let compile: CompileFn = Arc::new(move |f: &Function| {
        counter.fetch_add(1, Ordering::SeqCst);
        InterpreterBackend.compile(f)
    });
    let cf = ControlFlow::Loop(Loop {
        body: Body::Specialized(Arc::clone(&spec)),
        carried: 1,
        scan_outputs: 0,
        scan_length: None,
    });
    let bodies = CompiledBodies::new(&cf, &compile, Arc::clone(&compile)).unwrap();
    assert_eq!(bodies.capacity(), 2);
    let inputs = [
        Tensor::from_vec(vec![0i64], Shape::scalar()).unwrap(),
        Tensor::from_vec(vec![true], Shape::scalar()).unwrap(),
        Tensor::from_vec(vec![1.5f32, -2.0], [2]).unwrap(),
    ];
    let compiles = || compiled.load(Ordering::SeqCst);
    for i in [0, 1, 0, 2] {
        let out = bodies.run_specialized(&spec, &at(i), &inputs).unwrap();
        assert_eq!(out[1].read::<f32>().unwrap(), [3.0, -4.0]);
    }
    assert_eq!((compiles(), bodies.specializations()), (3, 2));
    bodies.run_specialized(&spec, &at(0), &inputs).unwrap();
    assert_eq!(compiles(), 3, "0 was used more recently than 1: kept");
    bodies.run_specialized(&spec, &at(1), &inputs).unwrap();
    assert_eq!(
        compiles(),
        4,
        "1 was the least recently used: compiled again"
    );
}
