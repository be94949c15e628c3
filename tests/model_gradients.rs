//! Gradients of real models (issue 25), against central finite differences: MiniLM's pooled
//! sentence embedding, summed, with respect to its word-embedding table (an initializer
//! reached through `Gather`, then LayerNorm, attention, GELU and mean pooling), at entries
//! of the rows its input looks up; the PP-OCR direction classifier's class-0 probability
//! with respect to its input image (convolutions, depthwise and strided, batch norms folded,
//! HardSwish, squeeze-excitation, MaxPool, softmax). Needs `scripts/fetch-models.sh` (run by
//! `scripts/test.sh`).

#[path = "support/model_files.rs"]
mod model_files;
use model_files::{models_dir, read_npy};

use graphlift::ir::{Output, ReduceOp, Reduction, SliceAxis};
use graphlift::onnx::{import_model_file_with, ImportOptions};
use graphlift::{Backend, Function, FunctionBuilder, Op, Tensor, TensorData};

const TABLE: &str = "model.0.auto_model.embeddings.word_embeddings.weight";

/// The sum of the output named `461` (the pooled embedding) as the one result of `f`'s
/// graph, and `f`'s value of the table.
fn pooled_sum(f: Function, of: Output, table: Output, derivative: bool) -> Function {
    let b = FunctionBuilder::from_function(f);
    let y = b.value_of(of);
    let rank = y.tensor_type().unwrap().1.rank();
    let sum = Reduction {
        op: ReduceOp::Sum,
        axes: (0..rank).collect(),
        keep_dims: false,
    };
    let c = b.op(Op::Reduce(sum), &[y]);
    let result = if derivative {
        b.deriv(c, b.value_of(table))
    } else {
        c
    };
    b.finish(&[result]).unwrap()
}

#[test]
fn minilm_word_embedding_gradient_matches_finite_differences() {
    let dir = models_dir();
    let case = dir.join("minilm_b1_s7");
    let inputs: Vec<Tensor> = (0..2)
        .map(|i| read_npy(&case.join(format!("input_{i}.npy"))))
        .collect();
    let options = ImportOptions {
        input_shapes: Default::default(),
        ordered_input_shapes: inputs.iter().map(|t| t.shape().dims().to_vec()).collect(),
        ..ImportOptions::default()
    };
    let model =
        import_model_file_with(&dir.join("paraphrase-MiniLM-L3-v2.onnx"), &options).unwrap();
    let f = model.function;
    let k = model.outputs.iter().position(|o| o.name == "461").unwrap();
    let of = f.result_source(f.results()[k]).unwrap();
    let tag = format!("onnx:initializer:{TABLE}");
    let table = f.nodes().find(|n| n.tags().contains(&tag)).unwrap().id();
    let Op::Constant(data) = f.node(table).unwrap().op().clone() else {
        panic!("the table is a Constant");
    };
    let backend = Backend::create("CPU-JIT").unwrap();
    let grad_f = pooled_sum(f.clone(), of, table.into(), true);
    let grad = backend.compile(&grad_f).unwrap().run(&inputs).unwrap();
    let grad = grad[0].read::<f32>().unwrap();
    let width = 384;
    // The sum with entry `at` of the table moved by `delta`.
    let sum_at = |at: usize, delta: f32| {
        let mut moved = (*data).clone();
        if let TensorData::F32(v) = &mut moved {
            v[at] += delta;
        }
        let mut g = f.clone();
        let shape = g.node(table).unwrap().output_type().shape.clone();
        let c = g.add_constant(moved, shape).unwrap();
        g.replace_node(table, c).unwrap();
        let forward = pooled_sum(g, of, c.into(), false);
        let out = backend.compile(&forward).unwrap().run(&inputs).unwrap();
        f64::from(out[0].read::<f32>().unwrap()[0])
    };
    let ids = inputs[0].read::<i64>().unwrap().to_vec();
    let h = 1e-2f32;
    for (row, col) in [
        (ids[1] as usize, 5),
        (ids[2] as usize, 200),
        (ids[4] as usize, 383),
    ] {
        let at = row * width + col;
        let want = (sum_at(at, h) - sum_at(at, -h)) / (2.0 * f64::from(h));
        let got = f64::from(grad[at]);
        assert!(
            (got - want).abs() <= 1e-2 * want.abs().max(2e-2),
            "d sum / d table[{row}, {col}] = {got}, finite differences {want}"
        );
    }
    // Rows the input does not look up get no gradient.
    let unused = (0..30522).find(|r| !ids.contains(&(*r as i64))).unwrap();
    assert!(grad[unused * width..(unused + 1) * width]
        .iter()
        .all(|&x| x == 0.0));
}

/// The sum over the batch of the classifier's first output column (the probability of
/// class 0: the sum of both columns is 1, whose derivative is 0), as the one result of
/// `f`'s graph, or its derivative with respect to the input `x`.
fn class_0_sum(f: Function, derivative: bool) -> Function {
    let of = f.result_source(f.results()[0]).unwrap();
    let x = f.parameters()[0];
    let b = FunctionBuilder::from_function(f);
    let y = b.value_of(of);
    let dims = y.tensor_type().unwrap().1;
    let mut first: Vec<SliceAxis> = dims.dims().iter().map(|&d| SliceAxis::full(d)).collect();
    first[1].len = 1;
    let sum = Reduction {
        op: ReduceOp::Sum,
        axes: (0..dims.rank()).collect(),
        keep_dims: false,
    };
    let c = b.op(Op::Reduce(sum), &[b.op(Op::Slice(first), &[y])]);
    let result = if derivative {
        b.deriv(c, b.value_of(x.into()))
    } else {
        c
    };
    b.finish(&[result]).unwrap()
}

#[test]
fn ppocr_classifier_input_gradient_matches_finite_differences() {
    let dir = models_dir();
    let input = read_npy(&dir.join("ppocr_cls/input_0.npy"));
    let options = ImportOptions {
        input_shapes: Default::default(),
        ordered_input_shapes: vec![input.shape().dims().to_vec()],
        ..ImportOptions::default()
    };
    let model =
        import_model_file_with(&dir.join("ch_ppocr_mobile_v2.0_cls_infer.onnx"), &options).unwrap();
    let backend = Backend::create("CPU-JIT").unwrap();
    let grad_f = class_0_sum(model.function.clone(), true);
    let grad = backend
        .compile(&grad_f)
        .unwrap()
        .run(std::slice::from_ref(&input))
        .unwrap();
    let grad = grad[0].read::<f32>().unwrap().to_vec();
    let forward = backend
        .compile(&class_0_sum(model.function, false))
        .unwrap();
    let image = input.read::<f32>().unwrap().to_vec();
    let c_at = |at: usize, h: f32| {
        let mut moved = image.clone();
        moved[at] += h;
        let t = Tensor::from_vec(moved, input.shape().clone()).unwrap();
        f64::from(forward.run(&[t]).unwrap()[0].read::<f32>().unwrap()[0])
    };
    // The largest gradient of each of 8 bands of the image (the gradient is not tiny there).
    let band = image.len() / 8;
    let largest = grad.iter().map(|g| g.abs()).fold(0.0, f32::max);
    assert!(largest > 0.0, "the gradient is all zeros");
    for k in 0..8 {
        let at = (k * band..(k + 1) * band)
            .max_by(|&a, &b| grad[a].abs().total_cmp(&grad[b].abs()))
            .unwrap();
        let h = 1e-2 * image[at].abs().max(1.0);
        let want = (c_at(at, h) - c_at(at, -h)) / (2.0 * f64::from(h));
        let got = f64::from(grad[at]);
        assert!(
            (got - want).abs() <= 2e-2 * want.abs().max(1e-2 * f64::from(largest)),
            "d c / d x[{at}] = {got}, finite differences {want}"
        );
    }
}
