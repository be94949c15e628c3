//! The PP-OCR direction classifier (`ch_ppocr_mobile_v2.0_cls_infer.onnx`, input `x`
//! `[1, 3, 48, 192]`) on CPU-JIT: one call of the forward Function beside one call of its
//! gradient (the derivative of the output's class-0 probability, summed, with respect to
//! the input image: every convolution's and pooling's adjoint), both compiled once.
//!
//! `cargo bench --bench model_gradients` (needs `scripts/fetch-models.sh`; without the
//! model it says so and measures nothing). Issue 25 asks the gradient within 3x of the
//! forward (BENCHMARKS.md).

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use graphlift::ir::{ReduceOp, Reduction, SliceAxis};
use graphlift::onnx::{import_model_file_with, ImportOptions};
use graphlift::{Backend, Function, FunctionBuilder, Op, Tensor};

const MODEL: &str = "ch_ppocr_mobile_v2.0_cls_infer.onnx";
const SHAPE: [usize; 4] = [1, 3, 48, 192];

/// The model's forward Function, and the gradient of its output's first column summed with
/// respect to `x`.
fn functions(path: &Path) -> (Function, Function) {
    let options = ImportOptions {
        input_shapes: Default::default(),
        ordered_input_shapes: vec![SHAPE.to_vec()],
        ..ImportOptions::default()
    };
    let model = import_model_file_with(path, &options).expect("imports");
    let f = model.function;
    let of = f.result_source(f.results()[0]).expect("an output");
    let x = *f.parameters().first().expect("an input");
    let b = FunctionBuilder::from_function(f.clone());
    let y = b.value_of(of);
    let dims = y.tensor_type().expect("typed").1;
    let mut first: Vec<SliceAxis> = dims.dims().iter().map(|&d| SliceAxis::full(d)).collect();
    first[1].len = 1;
    let sum = Reduction {
        op: ReduceOp::Sum,
        axes: (0..dims.rank()).collect(),
        keep_dims: false,
    };
    let c = b.op(Op::Reduce(sum), &[b.op(Op::Slice(first), &[y])]);
    let dx = b.deriv(c, b.value_of(x.into()));
    (f, b.finish(&[dx]).expect("builds"))
}

fn bench(c: &mut Criterion) {
    let dir = std::env::var_os("GRAPHLIFT_MODELS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/models"),
        Into::into,
    );
    let path = dir.join(MODEL);
    if !path.exists() {
        eprintln!(
            "model_gradients: {} is absent (run scripts/fetch-models.sh); nothing measured",
            path.display()
        );
        return;
    }
    let (forward, gradient) = functions(&path);
    let n: usize = SHAPE.iter().product();
    let image: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect();
    let inputs = vec![Tensor::from_vec(image, SHAPE).expect("tensor")];
    let backend = Backend::create("CPU-JIT").expect("backend");
    let mut group = c.benchmark_group("ppocr_cls_b1");
    for (name, f) in [("forward", &forward), ("gradient", &gradient)] {
        let exe = backend.compile(f).expect("compiles");
        let mut out = exe.run(&inputs).expect("runs");
        group.bench_function(name, |b| {
            b.iter(|| {
                exe.call(black_box(&mut out), black_box(&inputs))
                    .expect("runs")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
