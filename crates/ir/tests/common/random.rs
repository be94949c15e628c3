//! Random functions for property tests.
//!
//! A random [`Graph`] recipe is built into a Function through the builder (elementwise ops
//! with numpy broadcasting, constants of every element type including NaN payloads, signed
//! zeros, infinities and subnormals), then hand-made fused kernels whose bodies are built
//! the same way (nested one level deeper), results, random names, metadata, provenance tags,
//! pass histories and control dependencies, and sometimes dead-node removal (arena holes).

use std::sync::Arc;

use graphlift_ir::{
    BinaryOp, CompareOp, CreationSite, ElementType, Function, FunctionBuilder, FusedKernel, Op,
    Output, Shape, TensorData, UnaryOp, Value,
};
use proptest::prelude::*;

/// Shapes that all broadcast with each other: every axis is 1 or the family's extent.
pub const FAMILIES: [&[&[usize]]; 2] = [
    &[
        &[],
        &[1],
        &[3],
        &[2, 1],
        &[2, 3],
        &[1, 3],
        &[4, 2, 3],
        &[4, 1, 1],
    ],
    &[&[], &[1], &[0], &[2, 1], &[2, 0], &[1, 0]],
];

/// Up to 24 elements of each type for constants (the largest shape holds 24).
#[derive(Debug, Clone)]
pub struct Pools {
    f32s: Vec<f32>,
    f64s: Vec<f64>,
    i32s: Vec<i32>,
    i64s: Vec<i64>,
    bools: Vec<bool>,
}

#[derive(Debug, Clone)]
enum Step {
    Unary(usize, usize),
    Binary(usize, usize, usize),
    Compare(usize, usize, usize),
    Select(usize, usize, usize),
    Convert(usize, usize),
    Constant(usize, usize, usize),
    Broadcast(usize),
    Scalar(usize, f64),
}

#[derive(Debug, Clone)]
struct Annotation {
    node: usize,
    rename: Option<String>,
    metadata: Vec<(String, String)>,
    tags: Vec<String>,
    passes: Vec<String>,
}

#[derive(Debug, Clone)]
struct Kernel {
    live_ins: Vec<usize>,
    body: Graph,
    site: (String, u32, u32),
}

#[derive(Debug, Clone)]
pub struct Graph {
    /// (element type, shape) indices; bodies take their live-ins' types instead.
    params: Vec<(usize, usize)>,
    steps: Vec<Step>,
    kernels: Vec<Kernel>,
    results: Vec<(usize, Option<String>)>,
    annotations: Vec<Annotation>,
    deps: Vec<(usize, usize)>,
    remove_dead: bool,
}

fn f32_value() -> impl Strategy<Value = f32> {
    prop_oneof![
        3 => any::<u32>().prop_map(f32::from_bits),
        1 => (0x7f80_0001u32..=0x7fff_ffff, any::<bool>())
            .prop_map(|(b, neg)| f32::from_bits(b | (u32::from(neg) << 31))),
        1 => prop::sample::select(vec![
            f32::NAN, -0.0, 0.0, f32::INFINITY, f32::NEG_INFINITY,
            f32::from_bits(1), f32::MIN_POSITIVE / 2.0, f32::MAX, f32::MIN,
        ]),
    ]
}

fn f64_value() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => any::<u64>().prop_map(f64::from_bits),
        1 => (0x7ff0_0000_0000_0001u64..=0x7fff_ffff_ffff_ffff, any::<bool>())
            .prop_map(|(b, neg)| f64::from_bits(b | (u64::from(neg) << 63))),
        1 => prop::sample::select(vec![
            f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY,
            f64::from_bits(1), f64::MIN_POSITIVE / 2.0, f64::MAX,
        ]),
    ]
}

fn i64_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        prop::sample::select(vec![i64::MAX, i64::MIN, (1 << 53) + 1, -(1 << 53) - 1, 0]),
    ]
}

pub fn pools() -> impl Strategy<Value = Pools> {
    (
        prop::collection::vec(f32_value(), 24),
        prop::collection::vec(f64_value(), 24),
        prop::collection::vec(any::<i32>(), 24),
        prop::collection::vec(i64_value(), 24),
        prop::collection::vec(any::<bool>(), 24),
    )
        .prop_map(|(f32s, f64s, i32s, i64s, bools)| Pools {
            f32s,
            f64s,
            i32s,
            i64s,
            bools,
        })
}

/// Names, tags and metadata with characters that need escaping in JSON and DOT.
fn text() -> impl Strategy<Value = String> {
    "[a-z0-9_/:. \"\\\\\n\t{}é∑😀-]{0,10}"
}

fn step() -> impl Strategy<Value = Step> {
    let i = || any::<usize>();
    prop_oneof![
        (i(), i()).prop_map(|(k, a)| Step::Unary(k, a)),
        (i(), i(), i()).prop_map(|(k, a, b)| Step::Binary(k, a, b)),
        (i(), i(), i()).prop_map(|(k, a, b)| Step::Compare(k, a, b)),
        (i(), i(), i()).prop_map(|(c, a, b)| Step::Select(c, a, b)),
        (i(), i()).prop_map(|(k, a)| Step::Convert(k, a)),
        (i(), i(), i()).prop_map(|(t, s, o)| Step::Constant(t, s, o)),
        i().prop_map(Step::Broadcast),
        (i(), -4.0f64..4.0).prop_map(|(a, x)| Step::Scalar(a, x)),
    ]
}

fn annotation() -> impl Strategy<Value = Annotation> {
    (
        any::<usize>(),
        prop::option::of(text()),
        prop::collection::vec((text(), text()), 0..3),
        prop::collection::vec(text(), 0..3),
        prop::collection::vec(text(), 0..3),
    )
        .prop_map(|(node, rename, metadata, tags, passes)| Annotation {
            node,
            rename,
            metadata,
            tags,
            passes,
        })
}

pub fn graph(depth: u32) -> BoxedStrategy<Graph> {
    let kernels = if depth >= 2 {
        Just(Vec::new()).boxed()
    } else {
        let max = if depth == 0 { 3 } else { 2 };
        prop::collection::vec(
            (
                prop::collection::vec(any::<usize>(), 1..3),
                graph(depth + 1),
                (text(), any::<u32>(), any::<u32>()),
            )
                .prop_map(|(live_ins, body, site)| Kernel {
                    live_ins,
                    body,
                    site,
                }),
            0..max,
        )
        .boxed()
    };
    let n_steps = if depth == 0 { 0..12 } else { 0..5 };
    (
        prop::collection::vec((any::<usize>(), any::<usize>()), 1..4),
        prop::collection::vec(step(), n_steps),
        kernels,
        prop::collection::vec((any::<usize>(), prop::option::of(text())), 1..4),
        prop::collection::vec(annotation(), 0..5),
        prop::collection::vec((any::<usize>(), any::<usize>()), 0..4),
        any::<bool>(),
    )
        .prop_map(
            |(params, steps, kernels, results, annotations, deps, remove_dead)| Graph {
                params,
                steps,
                kernels,
                results,
                annotations,
                deps,
                remove_dead,
            },
        )
        .boxed()
}

fn pick<T: Copy>(items: &[T], k: usize) -> T {
    items[k % items.len()]
}

fn constant_data(t: ElementType, n: usize, offset: usize, p: &Pools) -> TensorData {
    let take = |len: usize| (0..n).map(move |i| (offset + i) % len);
    match t {
        ElementType::F32 => TensorData::F32(take(24).map(|i| p.f32s[i]).collect()),
        ElementType::F64 => TensorData::F64(take(24).map(|i| p.f64s[i]).collect()),
        ElementType::I32 => TensorData::I32(take(24).map(|i| p.i32s[i]).collect()),
        ElementType::I64 => TensorData::I64(take(24).map(|i| p.i64s[i]).collect()),
        ElementType::Bool => TensorData::Bool(take(24).map(|i| p.bools[i]).collect()),
        // The narrower types take the low bits of the 64-bit pool (every bit pattern of the
        // 16-bit floats: NaN payloads, infinities, subnormals).
        ElementType::I8 => TensorData::I8(take(24).map(|i| p.i64s[i] as i8).collect()),
        ElementType::U8 => TensorData::U8(take(24).map(|i| p.i64s[i] as u8).collect()),
        ElementType::I16 => TensorData::I16(take(24).map(|i| p.i64s[i] as i16).collect()),
        ElementType::U16 => TensorData::U16(take(24).map(|i| p.i64s[i] as u16).collect()),
        ElementType::U32 => TensorData::U32(take(24).map(|i| p.i64s[i] as u32).collect()),
        ElementType::U64 => TensorData::U64(take(24).map(|i| p.i64s[i] as u64).collect()),
        ElementType::F16 => TensorData::F16(
            take(24)
                .map(|i| graphlift_ir::f16::from_bits(p.i64s[i] as u16))
                .collect(),
        ),
        ElementType::BF16 => TensorData::BF16(
            take(24)
                .map(|i| graphlift_ir::bf16::from_bits(p.i64s[i] as u16))
                .collect(),
        ),
        // Numbers' text (NaN and the infinities as "NaN", "INF", "-INF"), so that a
        // conversion to a number reads them.
        ElementType::String => TensorData::String(
            take(24)
                .map(|i| graphlift_ir::float_text(p.f64s[i], p.f64s[i]))
                .collect(),
        ),
        // The storage-only types: every bit pattern (NaNs, infinities, -0 of the float8s).
        t => graphlift_ir::storage_from_bits(t, take(24).map(|i| p.i64s[i] as u8))
            .unwrap_or_else(|| TensorData::zeros(t, n)),
    }
}

/// Applies one step; every op is built on operands it accepts, so nothing fails.
fn apply<'b>(
    b: &'b FunctionBuilder,
    pool: &[Value<'b>],
    step: &Step,
    family: &[&[usize]],
    p: &Pools,
) -> Value<'b> {
    let ty = |v: Value<'_>| v.tensor_type().expect("generator builds valid values");
    let same_type = |t: ElementType| -> Vec<Value<'b>> {
        pool.iter().copied().filter(|v| ty(*v).0 == t).collect()
    };
    // The storage-only types and strings accept no arithmetic and no (ordered) comparison:
    // read through f32.
    let numeric = |v: Value<'b>| -> Value<'b> {
        if ty(v).0.is_storage_only() || ty(v).0 == ElementType::String {
            v.convert(ElementType::F32)
        } else {
            v
        }
    };
    let full = family
        .iter()
        .try_fold(Shape::scalar(), |acc, s| {
            Shape::broadcast(&acc, &Shape::from(*s))
        })
        .expect("a family broadcasts");
    match *step {
        Step::Unary(k, a) => {
            let v = numeric(pick(pool, a));
            let ops: Vec<UnaryOp> = UnaryOp::ALL
                .into_iter()
                .filter(|u| u.accepts(ty(v).0))
                .collect();
            b.op(Op::Unary(pick(&ops, k)), &[v])
        }
        Step::Binary(k, a, c) => {
            let v = pick(pool, a);
            let w = numeric(pick(&same_type(ty(v).0), c));
            let v = numeric(v);
            let ops: Vec<BinaryOp> = BinaryOp::ALL
                .into_iter()
                .filter(|o| o.accepts(ty(v).0))
                .collect();
            b.broadcasting_op(Op::Binary(pick(&ops, k)), &[v, w])
        }
        Step::Compare(k, a, c) => {
            let v = pick(pool, a);
            let w = numeric(pick(&same_type(ty(v).0), c));
            let v = numeric(v);
            b.broadcasting_op(Op::Compare(pick(&CompareOp::ALL, k)), &[v, w])
        }
        Step::Select(c, a, d) => {
            let v = pick(pool, a);
            let w = pick(&same_type(ty(v).0), d);
            let conds = same_type(ElementType::Bool);
            let cond = if conds.is_empty() {
                b.broadcasting_op(Op::Compare(CompareOp::Less), &[numeric(v), numeric(w)])
            } else {
                pick(&conds, c)
            };
            b.broadcasting_op(Op::Select, &[cond, v, w])
        }
        Step::Convert(k, a) => pick(pool, a).convert(pick(&ElementType::ALL, k)),
        Step::Constant(t, s, o) => {
            let shape = Shape::from(pick(family, s));
            let n = shape.element_count().expect("small shape");
            b.constant(constant_data(pick(&ElementType::ALL, t), n, o, p), shape)
        }
        Step::Broadcast(a) => pick(pool, a).broadcast_to(full),
        Step::Scalar(a, x) => {
            let v = pick(pool, a);
            if ty(v).0 == ElementType::Bool {
                !v
            } else {
                numeric(v) * x
            }
        }
    }
}

/// Builds `g` into a function whose parameters have `param_types` (or `g.params`).
pub fn build(
    name: &str,
    g: &Graph,
    param_types: Option<&[(ElementType, Shape)]>,
    family: &[&[usize]],
    p: &Pools,
) -> Function {
    let b = FunctionBuilder::new(name);
    let params: Vec<(ElementType, Shape)> = match param_types {
        Some(t) => t.to_vec(),
        None => g
            .params
            .iter()
            .map(|&(t, s)| (pick(&ElementType::ALL, t), Shape::from(pick(family, s))))
            .collect(),
    };
    let mut pool: Vec<Value<'_>> = params
        .iter()
        .enumerate()
        .map(|(i, (t, s))| b.parameter(&format!("p{i}"), *t, s.clone()))
        .collect();
    for s in &g.steps {
        let v = apply(&b, &pool, s, family, p);
        pool.push(v);
    }
    assert!(b.error().is_none(), "generator bug: {:?}", b.error());
    let mut outputs: Vec<Output> = pool.iter().map(|v| v.output().unwrap()).collect();
    let mut f = b.finish(&[]).unwrap();

    for (k, kernel) in g.kernels.iter().enumerate() {
        let ins: Vec<Output> = kernel.live_ins.iter().map(|&i| pick(&outputs, i)).collect();
        let types: Vec<(ElementType, Shape)> = ins
            .iter()
            .map(|&o| {
                let t = f.output_type(o).unwrap();
                (t.element_type, t.shape.clone())
            })
            .collect();
        let body = build(
            &format!("{name}/k{k}"),
            &kernel.body,
            Some(&types),
            family,
            p,
        );
        let n_out = body.results().len();
        let site = CreationSite {
            file: kernel.site.0.as_str().into(),
            line: kernel.site.1,
            column: kernel.site.2,
        };
        let id = f
            .add_node_at(Op::FusedKernel(Arc::new(FusedKernel { body })), &ins, site)
            .unwrap();
        outputs.extend((0..n_out).map(|j| Output::new(id, j)));
    }
    for (r, result_name) in &g.results {
        let o = pick(&outputs, *r);
        if f.add_result(o, result_name.clone()).is_err() {
            f.add_result(o, None).unwrap(); // the name was taken
        }
    }
    let ids: Vec<_> = f.nodes().map(|n| n.id()).collect();
    for a in &g.annotations {
        let id = pick(&ids, a.node);
        if let Some(n) = &a.rename {
            let _ = f.set_name(id, n.as_str()); // a taken name is simply not used
        }
        for (k, v) in &a.metadata {
            f.set_metadata(id, k.as_str(), v.as_str()).unwrap();
        }
        for t in &a.tags {
            f.add_tag(id, t.as_str()).unwrap();
        }
        for pass in &a.passes {
            f.record_pass(id, pass).unwrap();
        }
    }
    for &(x, y) in &g.deps {
        let (a, b) = (pick(&ids, x), pick(&ids, y));
        if a != b {
            // Every edge goes from a lower id to a higher one, so this adds no cycle.
            f.add_control_dependency(a.max(b), a.min(b)).unwrap();
        }
    }
    if g.remove_dead {
        f.remove_dead_nodes();
    }
    f.validate().unwrap();
    f
}

/// A random valid function.
pub fn function() -> impl Strategy<Value = Function> {
    (graph(0), any::<bool>(), pools())
        .prop_map(|(g, zero_size, p)| build("main", &g, None, FAMILIES[usize::from(zero_size)], &p))
}

/// One step of a random stateful graph ([`stateful`]); indices pick from the variables and
/// value pools modulo their length.
#[derive(Debug, Clone)]
enum StateStep {
    /// A new `f32[2]` value: a vector value plus variable `var` (so the variable is read
    /// where it is used, and broadcast first when it is a scalar).
    Use { var: usize, value: usize },
    /// Assigns variable `var` a value of its type, inside `saved_user_deps` when
    /// `guarded`; the value written joins the pool.
    Assign {
        var: usize,
        value: usize,
        guarded: bool,
    },
    /// A new `f32[2]` value: the product of two vector values.
    Combine(usize, usize),
}

/// What a result of a random stateful computation is.
#[derive(Debug, Clone)]
enum StateResult {
    /// A vector value of the pool.
    Vector(usize),
    /// A scalar value of the pool.
    Scalar(usize),
    /// A variable (the computation reads it after everything).
    Variable(usize),
}

/// A random stateful computation made by the builder, and what it should hold.
#[derive(Debug, Clone)]
pub struct Stateful {
    /// `FunctionBuilder::computation` of the results.
    pub function: Result<Function, graphlift_ir::IrError>,
    /// The names of the assigns made in the main stream, in creation order: the sinks.
    pub main_assigns: Vec<String>,
    /// The names of the assigns made inside `saved_user_deps`.
    pub guarded_assigns: Vec<String>,
}

/// Random stateful computations: variables `v0`, `v1`, ... (`f32[]` or `f32[2]`) whose
/// initializers compute from constants, reads where variables are used, assigns `a0`,
/// `a1`, ... in the main stream and inside `saved_user_deps`, and results that may be
/// values, assigns or variables. Parameters `ps: f32[]` and `pv: f32[2]` seed the pools.
pub fn stateful() -> impl Strategy<Value = Stateful> {
    let variable = (any::<bool>(), -4.0f32..4.0, -4.0f32..4.0, -2.0f64..2.0);
    let step = prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(var, value)| StateStep::Use { var, value }),
        (any::<usize>(), any::<usize>(), any::<bool>()).prop_map(|(var, value, guarded)| {
            StateStep::Assign {
                var,
                value,
                guarded,
            }
        }),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| StateStep::Combine(a, b)),
    ];
    let result = prop_oneof![
        any::<usize>().prop_map(StateResult::Vector),
        any::<usize>().prop_map(StateResult::Scalar),
        any::<usize>().prop_map(StateResult::Variable),
    ];
    (
        prop::collection::vec(variable, 1..4),
        prop::collection::vec(step, 0..12),
        prop::collection::vec(result, 1..4),
    )
        .prop_map(|(variables, steps, results)| build_stateful(&variables, &steps, &results))
}

/// Builds a [`stateful`] case: `variables` are (scalar?, two initial values, a scale).
fn build_stateful(
    variables: &[(bool, f32, f32, f64)],
    steps: &[StateStep],
    results: &[StateResult],
) -> Stateful {
    const SCALAR: usize = 0;
    const VECTOR: usize = 1;
    let b = FunctionBuilder::new("stateful");
    let mut pools: [Vec<Value<'_>>; 2] = [
        vec![b.parameter("ps", ElementType::F32, Shape::scalar())],
        vec![b.parameter("pv", ElementType::F32, [2])],
    ];
    let vars: Vec<(usize, Value<'_>)> = variables
        .iter()
        .enumerate()
        .map(|(k, &(scalar, x, y, scale))| {
            let initial = if scalar {
                b.constant(vec![x], Shape::scalar())
            } else {
                b.constant(vec![x, y], [2])
            };
            let kind = if scalar { SCALAR } else { VECTOR };
            (kind, b.variable(&format!("v{k}"), (initial * scale).exp()))
        })
        .collect();
    let (mut main_assigns, mut guarded_assigns) = (Vec::new(), Vec::new());
    for step in steps {
        match *step {
            StateStep::Use { var, value } => {
                let v = pick(&pools[VECTOR], value) + pick(&vars, var).1;
                pools[VECTOR].push(v);
            }
            StateStep::Assign {
                var,
                value,
                guarded,
            } => {
                let (kind, v) = pick(&vars, var);
                let name = format!("a{}", main_assigns.len() + guarded_assigns.len());
                let value = pick(&pools[kind], value);
                let a = if guarded {
                    guarded_assigns.push(name.clone());
                    b.saved_user_deps(|| b.assign(v, value))
                } else {
                    main_assigns.push(name.clone());
                    b.assign(v, value)
                };
                pools[kind].push(a.named(&name));
            }
            StateStep::Combine(x, y) => {
                let v = pick(&pools[VECTOR], x) * pick(&pools[VECTOR], y);
                pools[VECTOR].push(v);
            }
        }
    }
    let results: Vec<Value<'_>> = results
        .iter()
        .map(|r| match *r {
            StateResult::Vector(k) => pick(&pools[VECTOR], k),
            StateResult::Scalar(k) => pick(&pools[SCALAR], k),
            StateResult::Variable(k) => pick(&vars, k).1,
        })
        .collect();
    Stateful {
        function: b.computation(&results),
        main_assigns,
        guarded_assigns,
    }
}
