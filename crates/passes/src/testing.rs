//! Test helpers shared by the rewrite passes' tests: inputs full of edge cases, the
//! reference evaluator (the INTERPRETER executable for functions with state), and
//! bit-for-bit comparison of results and variables.

use graphlift_ir::{ElementType, Function, Node, NodeId, TensorData};
use graphlift_runtime::reference::evaluate_function;
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};

use crate::Pass;

/// Edge-case `f64` values: signed zeros, ones, infinities, NaN, a denormal, large values.
const FLOATS: [f64; 12] = [
    -0.0,
    0.0,
    1.0,
    -1.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    3.25,
    1e30,
    -1e-40,
    -7.0,
    0.5,
];

/// Edge-case integers: zero, ±1, the extremes of i32, small values.
const INTS: [i64; 9] = [0, 1, -1, i32::MIN as i64, i32::MAX as i64, 7, -42, 2, -3];

/// Inputs for every parameter of `f`, cycling through edge cases from an offset that
/// depends on the parameter and on `seed`, so parameters differ from each other.
pub(crate) fn edge_inputs(f: &Function, seed: usize) -> Vec<Tensor> {
    f.parameter_types()
        .iter()
        .enumerate()
        .map(|(p, t)| {
            let len = t.shape.element_count().expect("small shapes in tests");
            let at = |i: usize| i + p * 5 + seed * 3;
            let data = match t.element_type {
                ElementType::F32 => {
                    TensorData::F32((0..len).map(|i| FLOATS[at(i) % 12] as f32).collect())
                }
                ElementType::F64 => TensorData::F64((0..len).map(|i| FLOATS[at(i) % 12]).collect()),
                ElementType::I32 => {
                    TensorData::I32((0..len).map(|i| INTS[at(i) % 9] as i32).collect())
                }
                ElementType::I64 => {
                    let big = |x: i64| match x {
                        x if x < -100 => i64::MIN,
                        x if x > 100 => i64::MAX,
                        x => x,
                    };
                    TensorData::I64((0..len).map(|i| big(INTS[at(i) % 9])).collect())
                }
                ElementType::Bool => TensorData::Bool((0..len).map(|i| at(i) % 3 == 0).collect()),
                // The other types: the same edge cases converted (rounded or wrapped).
                other if other.is_float() => graphlift_runtime::reference::convert(
                    &TensorData::F64((0..len).map(|i| FLOATS[at(i) % 12]).collect()),
                    other,
                )
                .expect("numbers convert"),
                other => graphlift_runtime::reference::convert(
                    &TensorData::I64((0..len).map(|i| INTS[at(i) % 9]).collect()),
                    other,
                )
                .expect("numbers convert"),
            };
            Tensor::from_data(data, t.shape.clone()).expect("fits")
        })
        .collect()
}

/// The results of `f` on `inputs` by the reference interpreter.
pub(crate) fn eval(f: &Function, inputs: &[Tensor]) -> Vec<Tensor> {
    evaluate_function(f, inputs).expect("the reference evaluates")
}

/// The bits of every element (any NaN is one value: NaN payloads are not semantics).
fn bits(t: &Tensor) -> Vec<u64> {
    const NAN: u64 = u64::MAX;
    match t.data() {
        // 64-bit integers exactly (`f64` would round them beyond 2^53).
        TensorData::I64(v) => v.iter().map(|&x| x as u64).collect(),
        TensorData::U64(v) => v.clone(),
        // Every other type widens to `f64` exactly and one-to-one (signed zeros kept).
        d => (0..d.len())
            .map(|i| {
                d.get_f64(i)
                    .filter(|x| !x.is_nan())
                    .map_or(NAN, f64::to_bits)
            })
            .collect(),
    }
}

/// Whether two result lists have the same types and the same values bit for bit (signed
/// zeros distinct, any NaN equal to any NaN).
pub(crate) fn same_bits(a: &[Tensor], b: &[Tensor]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.tensor_type() == y.tensor_type() && bits(x) == bits(y))
}

/// Calls made of a function with state, each on the variables the one before left: the
/// third call sees what two calls wrote.
pub(crate) const STATEFUL_CALLS: usize = 3;

/// Whether `f` has Variables, reads or assigns (then only an Executable runs it).
pub(crate) fn has_state(f: &Function) -> bool {
    f.nodes().any(|n| n.op().is_stateful())
}

/// What `calls` calls of `f` on `inputs` show, on a fresh INTERPRETER executable: each
/// call's results, then every variable's name and value after the last call.
pub(crate) fn run_calls(
    f: &Function,
    inputs: &[Tensor],
    calls: usize,
) -> (Vec<Vec<Tensor>>, Vec<(String, Tensor)>) {
    let exe = InterpreterBackend
        .compile(f)
        .expect("the interpreter compiles");
    let results = (0..calls)
        .map(|_| exe.run(inputs).expect("the interpreter runs"))
        .collect();
    let variables = exe
        .variables()
        .into_iter()
        .map(|v| {
            let value = exe.variable(&v.name).expect("a listed variable");
            (v.name, value)
        })
        .collect();
    (results, variables)
}

/// Asserts that `before` and `after` compute the same results bit for bit on several sets
/// of edge-case inputs. A function with state ([`has_state`]) runs [`STATEFUL_CALLS`] times
/// on each side, and after that every variable live in `before` must exist in `after` with
/// the same value (a variable nothing live reads or assigns has no effect, and dead-node
/// removal drops it).
pub(crate) fn assert_same_values(before: &Function, after: &Function) {
    for seed in 0..4 {
        let inputs = edge_inputs(before, seed);
        if !has_state(before) && !has_state(after) {
            let (x, y) = (eval(before, &inputs), eval(after, &inputs));
            assert!(
                same_bits(&x, &y),
                "values differ (seed {seed}):\nbefore: {x:?}\nafter: {y:?}\n{before}\n{after}"
            );
            continue;
        }
        let (x, x_vars) = run_calls(before, &inputs, STATEFUL_CALLS);
        let (y, y_vars) = run_calls(after, &inputs, STATEFUL_CALLS);
        for (call, (x, y)) in x.iter().zip(&y).enumerate() {
            assert!(
                same_bits(x, y),
                "call {call} differs (seed {seed}):\nbefore: {x:?}\nafter: {y:?}\n{before}\n{after}"
            );
        }
        let live = before.live_nodes();
        let live_variables: Vec<&str> = before
            .variables()
            .filter(|n| live[n.id().index()])
            .map(|n| n.name())
            .collect();
        for (name, x) in x_vars
            .iter()
            .filter(|(n, _)| live_variables.contains(&&**n))
        {
            let y = y_vars.iter().find(|(n, _)| n == name).map(|(_, t)| t);
            let y = y.unwrap_or_else(|| panic!("variable `{name}` is gone:\n{after}"));
            assert!(
                same_bits(std::slice::from_ref(x), std::slice::from_ref(y)),
                "variable `{name}` differs after {STATEFUL_CALLS} calls (seed {seed}):\n\
                 before: {x:?}\nafter: {y:?}\n{before}\n{after}"
            );
        }
    }
}

/// Runs `pass` on `f` and checks what every pass must keep: the result validates, the
/// parameters and results are the same nodes, the values are the same bit for bit, and a
/// second run changes nothing more. Returns whether the first run changed `f`.
pub(crate) fn run_checked(pass: &dyn Pass, f: &mut Function) -> bool {
    let before = f.clone();
    let changed = pass.run(f).expect("the pass runs");
    f.validate().expect("the rewritten function validates");
    assert_eq!(f.parameters(), before.parameters(), "parameters untouched");
    assert_eq!(f.results(), before.results(), "results untouched");
    assert_same_values(&before, f);
    if !changed {
        assert!(
            same_function(f, &before),
            "a pass that reports no change changes nothing"
        );
    }
    let once = f.clone();
    assert!(
        !pass.run(f).expect("runs again"),
        "idempotent:\n{once}\n{f}"
    );
    assert!(same_function(f, &once));
    changed
}

/// `a == b`, except that NaNs in Constants are equal to themselves (compared through
/// `Debug`, which is exact for a function and its clone).
pub(crate) fn same_function(a: &Function, b: &Function) -> bool {
    a == b || format!("{a:?}") == format!("{b:?}")
}

/// The node named `name`.
pub(crate) fn by_name<'f>(f: &'f Function, name: &str) -> &'f Node {
    f.node_by_name(name)
        .unwrap_or_else(|| panic!("no node `{name}` in\n{f}"))
}

/// The node feeding result `i`.
pub(crate) fn result_node(f: &Function, i: usize) -> &Node {
    let src = f.result_source(f.results()[i]).expect("a result");
    f.node(src.node).expect("its source")
}

/// The id of the node behind a builder value.
pub(crate) fn id(v: graphlift_ir::Value<'_>) -> NodeId {
    v.output().expect("built").node
}

/// Tags of a node, in order.
pub(crate) fn tags(n: &Node) -> Vec<&str> {
    n.tags().iter().collect()
}

/// How many live nodes have the op type `name` ([`graphlift_ir::Op::type_name`]).
pub(crate) fn count_op(f: &Function, name: &str) -> usize {
    f.nodes().filter(|n| n.op().type_name() == name).count()
}
