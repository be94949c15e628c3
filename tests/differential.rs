//! Differential property test: CPU-JIT against INTERPRETER on random elementwise graphs.
//!
//! Each case builds a random graph through `FunctionBuilder`: 1–4 parameters of random
//! element types whose shapes numpy-broadcast to a common shape (element counts that are
//! not multiples of 4, 0 and 1 included), then 1–10 random ops of the whole elementwise set
//! (unary, binary, compare, select, convert; the builder inserts the Broadcasts), with
//! special values in the inputs. Both backends run it and every result is compared.
//!
//! Soundness and strictness: exact ops (everything but the five `f32` vector math
//! functions) must agree **bit for bit** (any NaN matches any NaN). An `f32` `exp`, `log`,
//! `tanh`, `sigmoid` or `erf` is a *sink*: no later op uses it, so an approximation never
//! feeds an exact comparison; its input is always a result too, and the sink's output is
//! held to the documented ulp bound against the `f64` reference value of that (bit-equal)
//! input. A random subset of the other values (and every sink) are results, so kernels get
//! several outputs and intermediate values are compared too.

use std::sync::atomic::{AtomicUsize, Ordering};

use graphlift::ir::{BinaryOp, CompareOp, ElementType, Op, TensorData, UnaryOp};
use graphlift::jit::vmath;
use graphlift::runtime::reference::unary_f64;
use graphlift::{Backend, FunctionBuilder, Tensor, Value};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

const TYPES: [ElementType; 5] = ElementType::ALL;

#[derive(Debug, Clone)]
struct ParamSpec {
    ty: usize,
    /// Bit k set: axis k (from the right) is kept; clear: extent 1.
    keep: u8,
    /// Leading axes to drop.
    drop: usize,
}

#[derive(Debug, Clone)]
struct OpSpec {
    kind: usize,
    sub: usize,
    operands: [usize; 3],
    ty: usize,
}

#[derive(Debug, Clone)]
struct Case {
    dims: Vec<usize>,
    params: Vec<ParamSpec>,
    ops: Vec<OpSpec>,
    results: u64,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    let dim = prop_oneof![
        8 => prop::sample::select(vec![1usize, 2, 3, 5, 7, 9, 13]),
        1 => Just(0usize),
    ];
    (
        prop::collection::vec(dim, 0..=3),
        prop::collection::vec((0..5usize, any::<u8>(), 0..3usize), 1..=4),
        prop::collection::vec(
            (0..8usize, 0..64usize, any::<[usize; 3]>(), 0..5usize),
            1..=10,
        ),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(dims, params, ops, results, seed)| Case {
            dims,
            params: params
                .into_iter()
                .map(|(ty, keep, drop)| ParamSpec { ty, keep, drop })
                .collect(),
            ops: ops
                .into_iter()
                .map(|(kind, sub, operands, ty)| OpSpec {
                    kind,
                    sub,
                    operands,
                    ty,
                })
                .collect(),
            results,
            seed,
        })
}

/// A built value: handle, whether it is an approximate sink, and the op and operand index
/// for sinks.
struct Built<'b> {
    v: Value<'b>,
    sink: Option<(UnaryOp, usize)>,
}

fn ty_of(v: &Value<'_>) -> ElementType {
    v.tensor_type().map(|t| t.0).unwrap_or(ElementType::F32)
}

fn to<'b>(v: Value<'b>, t: ElementType) -> Value<'b> {
    if ty_of(&v) == t {
        v
    } else {
        v.convert(t)
    }
}

fn numeric(t: usize) -> ElementType {
    [
        ElementType::F32,
        ElementType::F64,
        ElementType::I32,
        ElementType::I64,
    ][t % 4]
}

/// Per result: `Some((op, index of the result holding its input))` for an approximate sink.
type Sinks = Vec<Option<(UnaryOp, usize)>>;

/// Builds the case's function and says which results are approximate sinks.
fn build(c: &Case) -> Option<(graphlift::Function, Sinks)> {
    let b = FunctionBuilder::new("differential");
    let mut vals: Vec<Built<'_>> = Vec::new();
    for (k, p) in c.params.iter().enumerate() {
        let rank = c.dims.len().saturating_sub(p.drop.min(c.dims.len()));
        let offset = c.dims.len() - rank;
        let shape: Vec<usize> = (0..rank)
            .map(|a| {
                let d = c.dims[offset + a];
                let from_right = rank - 1 - a;
                if p.keep >> (from_right % 8) & 1 == 1 {
                    d
                } else {
                    1
                }
            })
            .collect();
        let v = b.parameter(&format!("p{k}"), TYPES[p.ty], shape);
        vals.push(Built { v, sink: None });
    }
    let mut must_result: Vec<usize> = Vec::new();
    for op in &c.ops {
        let live: Vec<usize> = (0..vals.len())
            .filter(|&i| vals[i].sink.is_none())
            .collect();
        let pick = |k: usize| live[op.operands[k] % live.len()];
        let (ia, ib, ic) = (pick(0), pick(1), pick(2));
        let (a, bb, cc) = (vals[ia].v, vals[ib].v, vals[ic].v);
        let built = match op.kind % 5 {
            0 | 4 => {
                let u = UnaryOp::ALL[op.sub % UnaryOp::ALL.len()];
                let x = match u {
                    UnaryOp::Not => to(a, ElementType::Bool),
                    UnaryOp::Exp
                    | UnaryOp::Log
                    | UnaryOp::Sqrt
                    | UnaryOp::Tanh
                    | UnaryOp::Sigmoid
                    | UnaryOp::Erf => {
                        if ty_of(&a).is_float() {
                            a
                        } else {
                            to(a, [ElementType::F32, ElementType::F64][op.ty % 2])
                        }
                    }
                    _ if ty_of(&a) == ElementType::Bool => to(a, numeric(op.ty)),
                    _ => a,
                };
                let y = b.op(Op::Unary(u), &[x]);
                let approx = ty_of(&x) == ElementType::F32 && vmath::max_ulp(u).is_some();
                if approx {
                    vals.push(Built { v: x, sink: None });
                    must_result.push(vals.len() - 1);
                    Built {
                        v: y,
                        sink: Some((u, vals.len() - 1)),
                    }
                } else {
                    Built { v: y, sink: None }
                }
            }
            1 => {
                let op_b = BinaryOp::ALL[op.sub % BinaryOp::ALL.len()];
                let logical = matches!(op_b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
                let t = if logical {
                    ElementType::Bool
                } else if ty_of(&a) == ElementType::Bool {
                    numeric(op.ty)
                } else {
                    ty_of(&a)
                };
                let y = b.broadcasting_op(Op::Binary(op_b), &[to(a, t), to(bb, t)]);
                Built { v: y, sink: None }
            }
            2 => {
                let cmp = CompareOp::ALL[op.sub % CompareOp::ALL.len()];
                let y = b.broadcasting_op(Op::Compare(cmp), &[a, to(bb, ty_of(&a))]);
                Built { v: y, sink: None }
            }
            _ if op.kind % 8 >= 5 => {
                let y = graphlift::select(to(cc, ElementType::Bool), a, to(bb, ty_of(&a)));
                Built { v: y, sink: None }
            }
            _ => Built {
                v: to(a, TYPES[op.ty]),
                sink: None,
            },
        };
        vals.push(built);
    }
    let mut chosen: Vec<usize> = (0..vals.len())
        .filter(|&i| {
            vals[i].sink.is_some() || must_result.contains(&i) || c.results >> (i % 64) & 1 == 1
        })
        .collect();
    if chosen.is_empty() {
        chosen.push(vals.len() - 1);
    }
    let results: Vec<Value<'_>> = chosen.iter().map(|&i| vals[i].v).collect();
    let sinks = chosen
        .iter()
        .map(|&i| {
            vals[i].sink.map(|(u, input)| {
                (
                    u,
                    chosen
                        .iter()
                        .position(|&j| j == input)
                        .unwrap_or(usize::MAX),
                )
            })
        })
        .collect();
    let f = b.finish(&results).ok()?;
    Some((f, sinks))
}

fn special_f32(k: u64) -> f32 {
    const S: [f32; 16] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.5,
        -2.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        f32::MAX,
        f32::MIN,
        3e9,
        -7.0,
        f32::MIN_POSITIVE,
    ];
    S[(k % 16) as usize]
}

fn input(t: ElementType, n: usize, seed: u64) -> TensorData {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut pick = |special: bool| -> (u64, bool) {
        let r = next();
        (r, special && r % 3 == 0)
    };
    match t {
        ElementType::F32 => TensorData::F32(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => special_f32(r >> 8),
                    (r, false) => ((r >> 11) as i32 as f32) * 2f32.powi((r % 24) as i32 - 40),
                })
                .collect(),
        ),
        ElementType::F64 => TensorData::F64(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => f64::from(special_f32(r >> 8)),
                    (r, false) => ((r >> 11) as i64 as f64) * 2f64.powi((r % 40) as i32 - 70),
                })
                .collect(),
        ),
        ElementType::I32 => TensorData::I32(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => [0, 1, -1, i32::MIN, i32::MAX, 2][(r % 6) as usize],
                    (r, false) => (r >> 33) as i32 % 50,
                })
                .collect(),
        ),
        ElementType::I64 => TensorData::I64(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => [0, 1, -1, i64::MIN, i64::MAX, 2][(r % 6) as usize],
                    (r, false) => (r >> 20) as i64 % 1000,
                })
                .collect(),
        ),
        ElementType::Bool => TensorData::Bool((0..n).map(|_| pick(false).0 & 1 == 1).collect()),
    }
}

fn same(a: &TensorData, b: &TensorData) -> Option<usize> {
    fn pos<T: Copy>(x: &[T], y: &[T], eq: impl Fn(T, T) -> bool) -> Option<usize> {
        if x.len() != y.len() {
            return Some(0);
        }
        x.iter().zip(y).position(|(&p, &q)| !eq(p, q))
    }
    match (a, b) {
        (TensorData::F32(x), TensorData::F32(y)) => pos(x, y, |p, q| {
            p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
        }),
        (TensorData::F64(x), TensorData::F64(y)) => pos(x, y, |p, q| {
            p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
        }),
        (TensorData::I32(x), TensorData::I32(y)) => pos(x, y, |p, q| p == q),
        (TensorData::I64(x), TensorData::I64(y)) => pos(x, y, |p, q| p == q),
        (TensorData::Bool(x), TensorData::Bool(y)) => pos(x, y, |p, q| p == q),
        _ => Some(0),
    }
}

#[test]
fn cpu_jit_matches_interpreter_on_random_elementwise_graphs() {
    let jit = Backend::create("CPU-JIT").unwrap();
    let interp = Backend::create("INTERPRETER").unwrap();
    let kernels = AtomicUsize::new(0);
    let multi_output = AtomicUsize::new(0);
    let compared = AtomicUsize::new(0);
    let approx = AtomicUsize::new(0);
    let cases = AtomicUsize::new(0);
    // 256 cases in CI; `GRAPHLIFT_DIFF_CASES=N` for a longer run.
    let n_cases = std::env::var("GRAPHLIFT_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256u32);
    let mut runner = TestRunner::new(Config {
        cases: n_cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |c| {
        let Some((f, sinks)) = build(&c) else {
            return Ok(());
        };
        cases.fetch_add(1, Ordering::Relaxed);
        let inputs: Vec<Tensor> = f
            .parameter_types()
            .into_iter()
            .enumerate()
            .map(|(k, t)| {
                let n = t.shape.element_count().unwrap();
                Tensor::from_data(input(t.element_type, n, c.seed.wrapping_add(k as u64 * 7919)), t.shape)
                    .unwrap()
            })
            .collect();
        let exe = jit.compile(&f).map_err(|e| TestCaseError::fail(format!("compile: {e}")))?;
        let ks = exe.kernels();
        kernels.fetch_add(ks.len(), Ordering::Relaxed);
        multi_output.fetch_add(ks.iter().filter(|k| k.outputs > 1).count(), Ordering::Relaxed);
        let got = exe.run(&inputs).map_err(|e| TestCaseError::fail(format!("jit: {e}")))?;
        let want = interp.compile(&f).unwrap().run(&inputs).unwrap();
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            prop_assert_eq!(g.tensor_type(), w.tensor_type());
            match sinks[k] {
                Some((u, input)) => {
                    let bound = vmath::max_ulp(u).unwrap_or(0.0);
                    let x = want[input].read::<f32>().unwrap();
                    let y = g.read::<f32>().unwrap();
                    for (i, (&xi, &yi)) in x.iter().zip(y).enumerate() {
                        let err = vmath::ulp_error(yi, unary_f64(u, f64::from(xi)));
                        prop_assert!(
                            err <= bound,
                            "result {} ({}) element {}: {}({:e}) = {:e}, {} ulp off\n{:?}",
                            k, u.name(), i, u.name(), xi, yi, err, c
                        );
                    }
                    approx.fetch_add(y.len(), Ordering::Relaxed);
                }
                None => {
                    if let Some(i) = same(g.data(), w.data()) {
                        return Err(TestCaseError::fail(format!(
                            "result {k} element {i}: jit {:?}, interpreter {:?}\nfunction: {:?}\ncase: {c:?}",
                            g.data().get_f64(i),
                            w.data().get_f64(i),
                            f
                        )));
                    }
                    compared.fetch_add(g.len(), Ordering::Relaxed);
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Not vacuous: most cases built, many kernels (some with several outputs), and a good
    // number of elements compared both ways.
    let (cases, kernels, multi) = (
        cases.into_inner(),
        kernels.into_inner(),
        multi_output.into_inner(),
    );
    let (exact, approx) = (compared.into_inner(), approx.into_inner());
    eprintln!("{cases} graphs, {kernels} kernels ({multi} multi-output), {exact} exact and {approx} approximate elements compared");
    let n = n_cases as usize;
    assert!(cases >= n * 3 / 4, "only {cases} graphs built");
    assert!(kernels >= n / 2, "only {kernels} kernels");
    assert!(multi >= n / 20, "only {multi} multi-output kernels");
    assert!(
        exact >= n * 8 && approx >= n / 2,
        "{exact} exact, {approx} approximate elements"
    );
}
