use super::*;
use graphlift_ir::{
    BinaryOp, Convolution, ElementType, LayerNorm, ReduceOp, Reduction, TensorData, UnaryOp, Window,
};
use graphlift_runtime::reference::evaluate_function;
use graphlift_runtime::Tensor;

fn param(f: &mut Function, name: &str, t: ElementType, dims: &[usize]) -> Output {
    f.add_parameter(name, t, Shape::new(dims)).unwrap().into()
}

fn constant(f: &mut Function, dims: &[usize], seed: usize) -> Output {
    let n: usize = dims.iter().product();
    let v = (0..n)
        .map(|i| ((i * 7 + seed * 13) % 23) as f32 / 11.0 - 1.0)
        .collect();
    f.add_constant(TensorData::F32(v), Shape::new(dims))
        .unwrap()
        .into()
}

fn node(f: &mut Function, op: Op, ins: &[Output]) -> Output {
    f.add_node(op, ins).unwrap().into()
}

fn binary(f: &mut Function, op: BinaryOp, a: Output, b: Output) -> Output {
    node(f, Op::Binary(op), &[a, b])
}

fn broadcast(f: &mut Function, x: Output, dims: &[usize]) -> Output {
    node(f, Op::Broadcast(Shape::new(dims)), &[x])
}

fn reshape(f: &mut Function, x: Output, dims: &[usize]) -> Output {
    node(f, Op::Reshape(Shape::new(dims)), &[x])
}

/// Inputs for `f`: token ids in `0..10` for integer parameters, varied floats otherwise.
fn inputs(f: &Function) -> Vec<Tensor> {
    f.parameter_types()
        .iter()
        .enumerate()
        .map(|(p, t)| {
            let n = t.shape.element_count().unwrap();
            let data = match t.element_type {
                ElementType::I64 => {
                    TensorData::I64((0..n).map(|i| ((i * 3 + p) % 10) as i64).collect())
                }
                _ => TensorData::F32(
                    (0..n)
                        .map(|i| ((i * 37 + p * 11) % 41) as f32 / 9.0 - 2.0)
                        .collect(),
                ),
            };
            Tensor::from_data(data, t.shape.clone()).unwrap()
        })
        .collect()
}

/// Splits `f`, then checks that each sample of its results, as the reference interpreter
/// computes them, is bit for bit what the per-sample Function gives on that sample.
fn check_split(f: &Function, batch: usize) {
    let split = per_sample(f).unwrap_or_else(|why| panic!("not split: {why}"));
    assert_eq!(split.batch, batch);
    let g = &split.function;
    assert_eq!(g.parameters().len(), f.parameters().len());
    assert_eq!(g.results().len(), f.results().len());
    for (t, u) in f.parameter_types().iter().zip(g.parameter_types()) {
        assert_eq!(u.shape.dims()[0], 1);
        assert_eq!(u.shape.dims()[1..], t.shape.dims()[1..]);
    }
    let ins = inputs(f);
    let whole = evaluate_function(f, &ins).unwrap();
    for b in 0..batch {
        let sample: Vec<Tensor> = ins
            .iter()
            .zip(g.parameter_types())
            .map(|(t, u)| {
                let len = t.len() / batch;
                Tensor::from_data(t.data().range(b * len, len).unwrap(), u.shape).unwrap()
            })
            .collect();
        let got = evaluate_function(g, &sample).unwrap();
        for (w, s) in whole.iter().zip(&got) {
            let len = w.len() / batch;
            let want = w.data().range(b * len, len).unwrap();
            assert!(
                want.same_bits(s.data()),
                "sample {b}: {want:?} vs {:?}",
                s.data()
            );
        }
    }
}

#[test]
fn a_convolutional_network_is_split_into_its_images() {
    let mut f = Function::new("cnn");
    let x = param(&mut f, "x", ElementType::F32, &[3, 2, 6, 6]);
    let w = constant(&mut f, &[4, 2, 3, 3], 1);
    let window = Window {
        shape: vec![3, 3],
        strides: vec![1, 1],
        dilations: vec![1, 1],
        pads_begin: vec![1, 1],
        pads_end: vec![1, 1],
    };
    let conv = Op::Convolution(Convolution { window, groups: 1 });
    let c = node(&mut f, conv, &[x, w]);
    let bias = constant(&mut f, &[1, 4, 1, 1], 2);
    let bias = broadcast(&mut f, bias, &[3, 4, 6, 6]);
    let c = binary(&mut f, BinaryOp::Add, c, bias);
    let c = node(&mut f, Op::Unary(UnaryOp::Relu), &[c]);
    let mean = Reduction {
        op: ReduceOp::Mean,
        axes: vec![2, 3],
        keep_dims: false,
    };
    let pooled = node(&mut f, Op::Reduce(mean), &[c]);
    let fc = constant(&mut f, &[4, 5], 3);
    let logits = node(&mut f, Op::MatMul, &[pooled, fc]);
    let p = node(&mut f, Op::Softmax(1), &[logits]);
    f.add_result(p, Some("p".into())).unwrap();
    check_split(&f, 3);
}

#[test]
fn an_encoder_with_a_mask_and_position_embeddings_is_split_into_its_sequences() {
    let (b, s, e, h) = (2, 5, 8, 2);
    let mut f = Function::new("encoder");
    let ids = param(&mut f, "ids", ElementType::I64, &[b, s]);
    let mask = param(&mut f, "mask", ElementType::F32, &[b, s]);
    // Word and position embeddings; the positions are one row broadcast over the batch.
    let table = constant(&mut f, &[10, e], 4);
    let words = node(&mut f, Op::Gather(0), &[table, ids]);
    let row: Output = f
        .add_constant(TensorData::I64((0..s as i64).collect()), Shape::new([1, s]))
        .unwrap()
        .into();
    let positions = broadcast(&mut f, row, &[b, s]);
    let ptable = constant(&mut f, &[s, e], 5);
    let pos = node(&mut f, Op::Gather(0), &[ptable, positions]);
    let x = binary(&mut f, BinaryOp::Add, words, pos);
    // Token type embeddings as an importer folds them: one constant row per sequence.
    let row: Vec<f32> = (0..s * e).map(|i| (i % 7) as f32 / 8.0).collect();
    let types = TensorData::F32(row.repeat(b));
    let types: Output = f.add_constant(types, Shape::new([b, s, e])).unwrap().into();
    let x = binary(&mut f, BinaryOp::Add, x, types);
    // The additive mask, (1 - mask) · -1e4, from scalars broadcast to [b, 1, 1, s].
    let m = reshape(&mut f, mask, &[b, 1, 1, s]);
    let one = constant(&mut f, &[], 6);
    let one = broadcast(&mut f, one, &[b, 1, 1, s]);
    let m = binary(&mut f, BinaryOp::Subtract, one, m);
    let big = constant(&mut f, &[], 7);
    let big = broadcast(&mut f, big, &[b, 1, 1, s]);
    let m = binary(&mut f, BinaryOp::Multiply, m, big);
    // One head split, scores, softmax, context, merge.
    let heads = |f: &mut Function, seed| {
        let w = constant(f, &[e, e], seed);
        let y = node(f, Op::MatMul, &[x, w]);
        let y = reshape(f, y, &[b, s, h, e / h]);
        node(f, Op::Transpose(vec![0, 2, 1, 3]), &[y])
    };
    let (q, k, v) = (heads(&mut f, 8), heads(&mut f, 9), heads(&mut f, 10));
    let kt = node(&mut f, Op::Transpose(vec![0, 1, 3, 2]), &[k]);
    let scores = node(&mut f, Op::MatMul, &[q, kt]);
    let m = broadcast(&mut f, m, &[b, h, s, s]);
    let scores = binary(&mut f, BinaryOp::Add, scores, m);
    let p = node(&mut f, Op::Softmax(3), &[scores]);
    let ctx = node(&mut f, Op::MatMul, &[p, v]);
    let ctx = node(&mut f, Op::Transpose(vec![0, 2, 1, 3]), &[ctx]);
    let ctx = reshape(&mut f, ctx, &[b, s, e]);
    let (g, beta) = (constant(&mut f, &[e], 11), constant(&mut f, &[e], 12));
    let ln = LayerNorm {
        axis: 2,
        epsilon: 1e-5,
    };
    let y = node(&mut f, Op::LayerNorm(ln), &[ctx, g, beta]);
    let sum = Reduction {
        op: ReduceOp::Sum,
        axes: vec![1],
        keep_dims: false,
    };
    let pooled = node(&mut f, Op::Reduce(sum), &[y]);
    f.add_result(pooled, Some("pooled".into())).unwrap();
    f.add_result(ids, Some("ids_out".into())).unwrap();
    check_split(&f, b);
}

#[test]
fn attention_with_the_batch_merged_into_the_heads_is_split() {
    // PyTorch's exports of attention: [B, S, E] -> [B, S, H, D] -> [B, H, S, D] ->
    // [B·H, S, D], a causal mask broadcast over B·H, and back to [B, S, E].
    let (b, s, e, h) = (3, 4, 6, 2);
    let mut f = Function::new("merged");
    let x = param(&mut f, "x", ElementType::F32, &[b, s, e]);
    let heads = |f: &mut Function, seed| {
        let w = constant(f, &[e, e], seed);
        let y = node(f, Op::MatMul, &[x, w]);
        let y = reshape(f, y, &[b, s, h, e / h]);
        let y = node(f, Op::Transpose(vec![0, 2, 1, 3]), &[y]);
        reshape(f, y, &[b * h, s, e / h])
    };
    let (q, k, v) = (heads(&mut f, 1), heads(&mut f, 2), heads(&mut f, 3));
    let kt = node(&mut f, Op::Transpose(vec![0, 2, 1]), &[k]);
    let scores = node(&mut f, Op::MatMul, &[q, kt]);
    let causal = constant(&mut f, &[1, s, s], 4);
    let causal = broadcast(&mut f, causal, &[b * h, s, s]);
    let scores = binary(&mut f, BinaryOp::Add, scores, causal);
    let p = node(&mut f, Op::Softmax(2), &[scores]);
    let ctx = node(&mut f, Op::MatMul, &[p, v]);
    let ctx = reshape(&mut f, ctx, &[b, h, s, e / h]);
    let ctx = node(&mut f, Op::Transpose(vec![0, 2, 1, 3]), &[ctx]);
    let y = reshape(&mut f, ctx, &[b, s, e]);
    f.add_result(y, None).unwrap();
    check_split(&f, b);
    // Merged with the sequence instead, the batch cannot come back apart from its rows.
    let mut f = Function::new("rows");
    let x = param(&mut f, "x", ElementType::F32, &[b, s, e]);
    let rows = reshape(&mut f, x, &[b * s, e]);
    let r = Reduction {
        op: ReduceOp::Sum,
        axes: vec![0],
        keep_dims: false,
    };
    let total = node(&mut f, Op::Reduce(r), &[rows]);
    let total = broadcast(&mut f, total, &[b, s, e]);
    let y = binary(&mut f, BinaryOp::Add, x, total);
    f.add_result(y, None).unwrap();
    let why = per_sample(&f).unwrap_err();
    assert!(why.contains("reduces over the batch axis"), "{why}");
}

#[test]
fn a_scalar_spread_over_square_axes_shrinks_along_the_batch_axis() {
    // [2, 2]: the broadcast scalar is uniform along both axes; the batch decides which.
    let mut f = Function::new("square");
    let x = param(&mut f, "x", ElementType::F32, &[2, 2]);
    let c = constant(&mut f, &[], 1);
    let c = broadcast(&mut f, c, &[2, 2]);
    let y = binary(&mut f, BinaryOp::Multiply, x, c);
    f.add_result(y, None).unwrap();
    check_split(&f, 2);
}

/// `per_sample`'s refusal of the Function `build` makes from `x: f32[2, 3]`.
fn refusal(build: impl Fn(&mut Function, Output) -> Output) -> String {
    let mut f = Function::new("f");
    let x = param(&mut f, "x", ElementType::F32, &[2, 3]);
    let y = build(&mut f, x);
    f.add_result(y, None).unwrap();
    per_sample(&f).expect_err("mixes samples")
}

#[test]
fn functions_that_mix_samples_are_refused_with_the_node_and_why() {
    let reduce = |f: &mut Function, x| {
        let r = Reduction {
            op: ReduceOp::Sum,
            axes: vec![0],
            keep_dims: true,
        };
        let s = node(f, Op::Reduce(r), &[x]);
        broadcast(f, s, &[2, 3])
    };
    assert!(refusal(reduce).contains("reduces over the batch axis"));
    let rows = |f: &mut Function, x| {
        let c = constant(f, &[2, 3], 1);
        binary(f, BinaryOp::Add, x, c)
    };
    assert!(refusal(rows).contains("not uniform along the batch axis"));
    // [2, 3] as [3, 2]: the second row holds the end of sample 0 and the start of sample 1.
    let flat = |f: &mut Function, x| {
        let y = reshape(f, x, &[3, 2]);
        reshape(f, y, &[2, 3])
    };
    assert!(refusal(flat).contains("splits a sample"));
    let gram = |f: &mut Function, x| {
        let t = node(f, Op::Transpose(vec![1, 0]), &[x]);
        let g = node(f, Op::MatMul, &[t, x]);
        node(f, Op::MatMul, &[x, g])
    };
    let why = refusal(gram);
    assert!(why.contains("(MatMul): its operands' batch axes"), "{why}");
    // A spread constant added to the batch and also summed whole.
    let both = |f: &mut Function, x| {
        let c = constant(f, &[], 1);
        let c = broadcast(f, c, &[2, 3]);
        let r = Reduction {
            op: ReduceOp::Sum,
            axes: vec![0, 1],
            keep_dims: false,
        };
        let total = node(f, Op::Reduce(r), &[c]);
        let total = broadcast(f, total, &[2, 3]);
        let y = binary(f, BinaryOp::Add, x, c);
        binary(f, BinaryOp::Add, y, total)
    };
    let why = refusal(both);
    assert!(
        why.contains("read along the batch by some nodes and whole by"),
        "{why}"
    );
}

#[test]
fn a_function_without_a_batch_is_not_split() {
    let mut f = Function::new("one");
    let x = param(&mut f, "x", ElementType::F32, &[1, 3]);
    f.add_result(x, None).unwrap();
    assert!(per_sample(&f).unwrap_err().contains("the batch is 1"));
    let mut f = Function::new("two");
    let x = param(&mut f, "x", ElementType::F32, &[2, 3]);
    let _ = param(&mut f, "y", ElementType::F32, &[3, 3]);
    f.add_result(x, None).unwrap();
    assert!(per_sample(&f).unwrap_err().contains("lead with 2 and 3"));
}

#[test]
fn a_constant_matrix_times_a_batch_of_matrices_is_split() {
    // [2, 3] · [B, 3, 4]: the batch is the right operand's batch axis.
    let mut f = Function::new("left");
    let x = param(&mut f, "x", ElementType::F32, &[3, 3, 4]);
    let c = constant(&mut f, &[2, 3], 1);
    let y = node(&mut f, Op::MatMul, &[c, x]);
    f.add_result(y, None).unwrap();
    check_split(&f, 3);
}

#[test]
fn a_batch_flattened_with_its_rows_keeps_each_sample_in_one_run() {
    // [2, 3] -> [6]: sample b is elements 3b..3b + 3, a group of three along the one axis.
    let mut f = Function::new("flat");
    let x = param(&mut f, "x", ElementType::F32, &[2, 3]);
    let y = reshape(&mut f, x, &[6]);
    let y = node(&mut f, Op::Unary(UnaryOp::Relu), &[y]);
    let y = reshape(&mut f, y, &[2, 3]);
    f.add_result(y, None).unwrap();
    check_split(&f, 2);
}

/// A nearest (or linear) upsampling by 2 of `[b, 2, 3, 3]` images, concatenated with
/// itself, under coordinate transform `t`.
fn upsampling(b: usize, t: graphlift_ir::CoordinateTransform) -> Function {
    let mut f = Function::new("upsample");
    let x = param(&mut f, "x", ElementType::F32, &[b, 2, 3, 3]);
    let resize = graphlift_ir::Resize {
        mode: graphlift_ir::ResizeMode::Linear,
        coordinate_transform: t,
        scales: vec![1.0, 1.0, 2.0, 2.0],
        shape: vec![b, 2, 6, 6],
        roi: vec![[0.0, 1.0]; 4],
        exclude_outside: false,
        extrapolation_value: 0.0,
        antialias: false,
    };
    let y = node(&mut f, Op::Resize(resize), &[x]);
    let y = node(&mut f, Op::Concat(1), &[y, y]);
    f.add_result(y, None).unwrap();
    f
}

#[test]
fn a_resize_that_keeps_the_batch_axis_is_split_and_one_that_shifts_it_is_not() {
    use graphlift_ir::CoordinateTransform::{HalfPixel, TfHalfPixelForNn};
    check_split(&upsampling(3, HalfPixel), 3);
    // (x + 0.5) / 1 on the batch axis: linear interpolation between neighbouring samples.
    let why = per_sample(&upsampling(3, TfHalfPixelForNn)).unwrap_err();
    assert!(why.contains("resizes the batch axis"), "{why}");
}

/// A small xorshift generator for the random programs below.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

/// A random program of six steps over `x: f32[b, 2, 3]`: elementwise ops, reshapes
/// (some merging the batch with its neighbour, some mixing samples), transposes, sums,
/// broadcast constants (some with one row per sample), softmax, products with a constant
/// and joins; its result is its last value, reshaped to lead with `b` when it does not.
fn random_program(rng: &mut Rng, b: usize) -> Option<Function> {
    let mut f = Function::new("random");
    let mut values = vec![param(&mut f, "x", ElementType::F32, &[b, 2, 3])];
    let dims = |f: &Function, v: Output| f.output_type(v).unwrap().shape.dims().to_vec();
    for step in 0..6 {
        let v = values[rng.below(values.len())];
        let d = dims(&f, v);
        let n: usize = d.iter().product();
        let op = match rng.below(9) {
            0 => Some((Op::Unary(UnaryOp::Relu), vec![v])),
            1 => {
                let w = values[rng.below(values.len())];
                (dims(&f, w) == d).then(|| (Op::Binary(BinaryOp::Subtract), vec![v, w]))
            }
            2 => {
                let shapes = [
                    vec![n],
                    vec![b, n / b],
                    vec![b * 2, n / (2 * b)],
                    vec![2, n / 2],
                ];
                let to = &shapes[rng.below(shapes.len())];
                (to.iter().product::<usize>() == n).then(|| (Op::Reshape(Shape::new(to)), vec![v]))
            }
            3 if d.len() >= 2 => {
                let mut perm: Vec<usize> = (0..d.len()).collect();
                let (i, j) = (rng.below(d.len()), rng.below(d.len()));
                perm.swap(i, j);
                Some((Op::Transpose(perm), vec![v]))
            }
            4 => {
                let r = Reduction {
                    op: ReduceOp::Sum,
                    axes: vec![rng.below(d.len())],
                    keep_dims: true,
                };
                Some((Op::Reduce(r), vec![v]))
            }
            5 => {
                // A constant of one row broadcast over axis 0, or one row per index there.
                let mut cd = d.clone();
                if rng.below(4) > 0 {
                    cd[0] = 1;
                }
                let c = constant(&mut f, &cd, step);
                let c = broadcast(&mut f, c, &d);
                Some((Op::Binary(BinaryOp::Add), vec![v, c]))
            }
            6 => Some((Op::Softmax(rng.below(d.len())), vec![v])),
            7 if d.len() >= 2 => {
                let w = constant(&mut f, &[d[d.len() - 1], 2], step);
                Some((Op::MatMul, vec![v, w]))
            }
            _ => Some((Op::Concat(rng.below(d.len())), vec![v, v])),
        };
        if let Some((op, ins)) = op {
            if let Ok(id) = f.add_node(op, &ins) {
                values.push(id.into());
            }
        }
    }
    let last = *values.last()?;
    let n: usize = dims(&f, last).iter().product();
    let last = if dims(&f, last)[0] == b {
        last
    } else if n.is_multiple_of(b) {
        reshape(&mut f, last, &[b, n / b])
    } else {
        return None;
    };
    f.add_result(last, None).ok()?;
    Some(f)
}

#[test]
fn random_programs_split_only_where_every_sample_stays_apart() {
    // Every program the analysis splits must give, sample by sample, the bits of the
    // whole batch (`check_split`); a good share of them must split for that to say much.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut split, mut refused) = (0, 0);
    for case in 0..600 {
        let b = 2 + case % 3;
        let Some(f) = random_program(&mut rng, b) else {
            continue;
        };
        match per_sample(&f) {
            Ok(_) => {
                check_split(&f, b);
                split += 1;
            }
            Err(_) => refused += 1,
        }
    }
    assert!(
        split >= 40 && refused >= 40,
        "{split} split, {refused} refused"
    );
}
