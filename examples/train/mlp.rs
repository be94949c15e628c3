//! The training example's model, data and loop, shared by `examples/train/main.rs` and
//! `tests/train_example.rs` (which includes this file with `#[path]`).
//!
//! The data: scikit-learn's digits ([`load_digits`]), split once with a fixed seed
//! ([`split`]). The model: a two-layer perceptron `64 -> hidden (tanh) -> 10` whose weights
//! are variables with random initial values ([`Mlp`]). The loss: the softmax cross-entropy
//! `-mean(sum(y * log(softmax(logits))))` (the autodiff takes `Log(Softmax(x))` as one stable
//! pattern). The optimiser: Adam, written as assigns of every variable in one function
//! (the step), next to a second function of the test set's logits (the evaluation).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use graphlift::ir::{ReduceOp, Reduction};
use graphlift::{Backend, ElementType::F32, Executable, FunctionBuilder, Op, Tensor, Value};
use rand::rngs::ChaCha8Rng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Pixels per image (8 x 8), each 0..=16.
pub const FEATURES: usize = 64;
/// Digits 0..=9.
pub const CLASSES: usize = 10;
/// The trainable variables, in the order the step computes their gradients.
pub const PARAMETERS: [&str; 4] = ["w1", "b1", "w2", "b2"];

/// The hyper-parameters and seeds of one training run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Units of the hidden layer.
    pub hidden: usize,
    /// Rows per mini-batch (the last partial batch of an epoch is dropped).
    pub batch: usize,
    /// Passes over the training set.
    pub epochs: usize,
    /// Adam's step size.
    pub learning_rate: f64,
    /// Seed of the weights' initial values (the builder's `random_normal`).
    pub init_seed: u64,
    /// Seed of the train / test split and of the order of each epoch's batches.
    pub shuffle_seed: u64,
    /// Rows held out for the test set.
    pub test_rows: usize,
}

impl Default for Config {
    /// The example's run: see its module doc for the accuracy this reaches.
    fn default() -> Config {
        Config {
            hidden: 64,
            batch: 32,
            epochs: 30,
            learning_rate: 0.01,
            init_seed: 1,
            shuffle_seed: 2026,
            test_rows: 360,
        }
    }
}

/// Labelled images: `features` holds `FEATURES` values per row, scaled to [0, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct Digits {
    /// Row-major, `FEATURES` per row.
    pub features: Vec<f32>,
    /// One label in 0..CLASSES per row.
    pub labels: Vec<usize>,
}

impl Digits {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// The rows at `indices`, in that order.
    fn rows(&self, indices: &[usize]) -> Digits {
        let mut features = Vec::with_capacity(indices.len() * FEATURES);
        for &i in indices {
            features.extend_from_slice(&self.features[i * FEATURES..(i + 1) * FEATURES]);
        }
        let labels = indices.iter().map(|&i| self.labels[i]).collect();
        Digits { features, labels }
    }

    /// The rows at `indices` as the step's inputs: features `[n, FEATURES]` and one-hot
    /// labels `[n, CLASSES]`.
    pub fn batch(&self, indices: &[usize]) -> Result<[Tensor; 2], graphlift::RuntimeError> {
        let rows = self.rows(indices);
        let n = indices.len();
        let mut one_hot = vec![0.0f32; n * CLASSES];
        for (r, &label) in rows.labels.iter().enumerate() {
            one_hot[r * CLASSES + label] = 1.0;
        }
        Ok([
            Tensor::from_vec(rows.features, [n, FEATURES])?,
            Tensor::from_vec(one_hot, [n, CLASSES])?,
        ])
    }
}

/// A data file that cannot be read or parsed: the file, the line (1-based; 0 for the file
/// as a whole) and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct DataError {
    /// The file.
    pub path: PathBuf,
    /// The 1-based line, or 0 when the problem is the file itself.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.path.display(), self.message),
            line => write!(f, "{}:{line}: {}", self.path.display(), self.message),
        }
    }
}

impl std::error::Error for DataError {}

/// Where `scripts/fetch-datasets.sh` puts `digits.csv`: `GRAPHLIFT_DATASETS`, else
/// `<repo>/target/datasets`.
pub fn digits_path() -> PathBuf {
    std::env::var_os("GRAPHLIFT_DATASETS")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/datasets"),
            PathBuf::from,
        )
        .join("digits.csv")
}

/// Reads scikit-learn's `digits.csv`: per line `FEATURES` pixel values in 0..=16, then the
/// label 0..=9, comma-separated. Pixels are scaled to [0, 1].
///
/// # Errors
/// A [`DataError`] naming the file (absent: how to fetch it) or the first bad line.
pub fn load_digits(path: &Path) -> Result<Digits, DataError> {
    let error = |line, message: String| DataError {
        path: path.to_path_buf(),
        line,
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::NotFound {
            " (run `bash scripts/fetch-datasets.sh`, or set GRAPHLIFT_DATASETS to the folder \
             that holds digits.csv)"
        } else {
            ""
        };
        error(0, format!("{e}{hint}"))
    })?;
    let mut digits = Digits {
        features: Vec::new(),
        labels: Vec::new(),
    };
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != FEATURES + 1 {
            let found = fields.len();
            let want = FEATURES + 1;
            return Err(error(
                i + 1,
                format!("expected {want} comma-separated values, found {found}"),
            ));
        }
        for (column, field) in fields[..FEATURES].iter().enumerate() {
            match field.parse::<f32>() {
                Ok(v) if (0.0..=16.0).contains(&v) => digits.features.push(v / 16.0),
                _ => {
                    let message = format!(
                        "column {}: `{field}` is not a pixel value in 0..=16",
                        column + 1
                    );
                    return Err(error(i + 1, message));
                }
            }
        }
        let label = fields[FEATURES];
        match label.parse::<f32>() {
            Ok(v) if v.fract() == 0.0 && (0.0..CLASSES as f32).contains(&v) => {
                digits.labels.push(v as usize)
            }
            _ => {
                let message = format!("last column: `{label}` is not a label in 0..{CLASSES}");
                return Err(error(i + 1, message));
            }
        }
    }
    if digits.labels.is_empty() {
        return Err(error(0, "no rows".to_string()));
    }
    Ok(digits)
}

/// Splits `data` into (train, test) after shuffling its rows with `seed`; the test set has
/// `test_rows` rows.
///
/// # Errors
/// When `test_rows` leaves no row to train on.
pub fn split(data: &Digits, test_rows: usize, seed: u64) -> Result<(Digits, Digits), String> {
    if test_rows >= data.len() {
        return Err(format!(
            "{test_rows} test rows of {} leave none to train on",
            data.len()
        ));
    }
    let mut order: Vec<usize> = (0..data.len()).collect();
    order.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    let (test, train) = order.split_at(test_rows);
    Ok((data.rows(train), data.rows(test)))
}

/// `sum(v)` over every axis: a scalar.
fn sum_all(v: Value<'_>) -> Value<'_> {
    let rank = v.tensor_type().map_or(0, |t| t.1.rank());
    let sum = Reduction {
        op: ReduceOp::Sum,
        axes: (0..rank).collect(),
        keep_dims: false,
    };
    v.builder().op(Op::Reduce(sum), &[v])
}

/// The MLP's parameters as new variables of `b`, named as [`PARAMETERS`]: Glorot's normal
/// initialisation for the weights (suited to tanh units), 0 for the biases.
fn parameters<'b>(b: &'b FunctionBuilder, config: &Config) -> [Value<'b>; 4] {
    let glorot = |name: &str, fan_in: usize, fan_out: usize, seed: u64| {
        let scale = (2.0 / (fan_in + fan_out) as f64).sqrt();
        b.variable(
            name,
            b.random_normal(F32, [fan_in, fan_out], 0.0, scale, seed),
        )
    };
    let h = config.hidden;
    [
        glorot(PARAMETERS[0], FEATURES, h, config.init_seed),
        zeros(b, PARAMETERS[1], &[h]),
        glorot(PARAMETERS[2], h, CLASSES, config.init_seed.wrapping_add(1)),
        zeros(b, PARAMETERS[3], &[CLASSES]),
    ]
}

/// The MLP's logits for `x` (`[rows, FEATURES]`): `tanh(x w1 + b1) w2 + b2`.
fn logits<'b>(x: Value<'b>, p: &[Value<'b>; 4]) -> Value<'b> {
    let b = x.builder();
    let [w1, b1, w2, b2] = *p;
    let hidden = (b.op(Op::MatMul, &[x, w1]) + b1).tanh();
    b.op(Op::MatMul, &[hidden, w2]) + b2
}

/// Adam's decay rates and the term that keeps its division finite.
const BETA1: f64 = 0.9;
const BETA2: f64 = 0.999;
const EPSILON: f64 = 1e-8;

/// The compiled model: the training step and the evaluation.
pub struct Mlp {
    /// Inputs `x [batch, FEATURES]` and one-hot `y [batch, CLASSES]`; result the batch's
    /// mean loss; every variable (the parameters and Adam's state) assigned.
    step: Arc<dyn Executable>,
    /// Input `x [test_rows, FEATURES]`; result the logits `[test_rows, CLASSES]`.
    eval: Arc<dyn Executable>,
    /// The step's output, reused from call to call.
    outputs: Vec<Tensor>,
}

impl Mlp {
    /// Builds the step and the evaluation for `config` and compiles both on `backend`.
    ///
    /// They are two functions, each from its own builder over the same variables
    /// ([`parameters`]): a computation of one builder takes every parameter made on it, so
    /// the step (`x`, `y`) and the evaluation (`x_test`) cannot share one graph. The
    /// evaluation's variables are set from the step's before each use ([`Mlp::accuracy`]).
    ///
    /// # Errors
    /// An unknown backend, or a graph that does not build or compile.
    pub fn new(backend: &str, config: &Config) -> Result<Mlp, Box<dyn std::error::Error>> {
        let b = FunctionBuilder::new("mlp_step");
        let params = parameters(&b, config);
        let x = b.parameter("x", F32, [config.batch, FEATURES]);
        let y = b.parameter("y", F32, [config.batch, CLASSES]);
        let log_p = b.op(Op::Softmax(1), &[logits(x, &params)]).log();
        let loss = -sum_all(y * log_p) / config.batch as f64;
        let grads = b.gradients(loss, &params);
        adam(&b, &PARAMETERS, &params, &grads, config.learning_rate);
        let step = b.finish(&[loss])?;

        let b = FunctionBuilder::new("mlp_eval");
        let params = parameters(&b, config);
        let x_test = b.parameter("x_test", F32, [config.test_rows, FEATURES]);
        let eval = b.finish(&[logits(x_test, &params)])?;

        let backend = Backend::create(backend)?;
        let step = backend.compile(&step)?;
        let outputs = step
            .results()
            .iter()
            .map(|r| Tensor::zeros(r.tensor_type.element_type, r.tensor_type.shape.clone()))
            .collect::<Result<_, _>>()?;
        Ok(Mlp {
            eval: backend.compile(&eval)?,
            step,
            outputs,
        })
    }

    /// One Adam step on a batch (`x`, one-hot `y`: [`Digits::batch`]); returns the batch's
    /// mean loss before the step.
    ///
    /// # Errors
    /// Tensors of the wrong type or shape.
    pub fn step(&mut self, batch: &[Tensor; 2]) -> Result<f32, graphlift::RuntimeError> {
        self.step.call_with_validate(&mut self.outputs, batch)?;
        Ok(self.outputs[0].read::<f32>()?[0])
    }

    /// The step's variables (the parameters and Adam's state), by name.
    #[allow(
        dead_code,
        reason = "tests/train_example.rs compares them across backends"
    )]
    ///
    /// # Errors
    /// A backend that fails to read them.
    pub fn variables(&self) -> Result<Vec<(String, Tensor)>, graphlift::RuntimeError> {
        let names = self.step.variables().into_iter().map(|s| s.name);
        names
            .map(|n| Ok((n.clone(), self.step.variable(&n)?)))
            .collect()
    }

    /// The fraction of `test` (of `Config::test_rows` rows) classified right by the
    /// parameters the steps have reached.
    ///
    /// # Errors
    /// A test set of another size.
    pub fn accuracy(&self, test: &Digits) -> Result<f64, graphlift::RuntimeError> {
        for name in PARAMETERS {
            self.eval.set_variable(name, &self.step.variable(name)?)?;
        }
        let x = Tensor::from_vec(test.features.clone(), [test.len(), FEATURES])?;
        let logits = self.eval.run(&[x])?;
        let logits = logits[0].read::<f32>()?;
        let right = logits
            .chunks_exact(CLASSES)
            .zip(&test.labels)
            .filter(|(row, &label)| argmax(row) == label)
            .count();
        Ok(right as f64 / test.len() as f64)
    }
}

/// The index of the largest value (the first of equals).
fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate() {
        if v > row[best] {
            best = i;
        }
    }
    best
}

/// A new `f32` variable of `shape` that starts at 0.
fn zeros<'b>(b: &'b FunctionBuilder, name: &str, shape: &[usize]) -> Value<'b> {
    let n = shape.iter().product();
    b.variable(name, b.constant(vec![0.0f32; n], shape.to_vec()))
}

/// Adam (Kingma & Ba) as graph updates: for each parameter `p` with gradient `g`, new
/// variables `<name>_m` and `<name>_v` (the moments, from 0) and
/// `m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; p = p - lr_t m / (sqrt(v) + eps)` with
/// the bias correction `lr_t = lr sqrt(1 - b2^t) / (1 - b1^t)`, whose powers `b1^t`, `b2^t`
/// are two more variables. The assigns are made in the main stream: every call of the
/// function runs them.
fn adam<'b>(
    b: &'b FunctionBuilder,
    names: &[&str],
    params: &[Value<'b>],
    grads: &[Value<'b>],
    learning_rate: f64,
) {
    let power = |name, beta: f64| {
        let p = b.variable(name, b.scalar(F32, 1.0));
        b.assign(p, p * beta)
    };
    let beta1_t = power("adam_beta1_power", BETA1);
    let beta2_t = power("adam_beta2_power", BETA2);
    let step_size = learning_rate * (1.0 - beta2_t).sqrt() / (1.0 - beta1_t);
    for ((name, &p), &g) in names.iter().zip(params).zip(grads) {
        let shape = p
            .tensor_type()
            .map(|t| t.1.dims().to_vec())
            .unwrap_or_default();
        let m = zeros(b, &format!("{name}_m"), &shape);
        let v = zeros(b, &format!("{name}_v"), &shape);
        let m_new = b.assign(m, BETA1 * m + (1.0 - BETA1) * g);
        let v_new = b.assign(v, BETA2 * v + (1.0 - BETA2) * g * g);
        b.assign(p, p - step_size * m_new / (v_new.sqrt() + EPSILON));
    }
}

/// Watches a training run; every method does nothing unless overridden.
pub trait Progress {
    /// Before the first step: `epochs` of `steps` steps each.
    fn start(&mut self, _epochs: usize, _steps: usize) {}
    /// After each step.
    fn step(&mut self) {}
    /// After each epoch.
    fn epoch(&mut self, _epoch: &Epoch) {}
}

impl Progress for () {}

/// One epoch's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Epoch {
    /// 1-based.
    pub number: usize,
    /// The mean of its batches' losses.
    pub loss: f64,
    /// Accuracy on the test set after it.
    pub test_accuracy: f64,
}

/// Trains an [`Mlp`] for `config` on `backend` over `train`, evaluating on `test` after
/// every epoch; returns the epochs' figures (the last holds the final test accuracy).
///
/// # Errors
/// As [`Mlp::new`], or a training set smaller than one batch.
pub fn train(
    backend: &str,
    config: &Config,
    train: &Digits,
    test: &Digits,
    progress: &mut dyn Progress,
) -> Result<Vec<Epoch>, Box<dyn std::error::Error>> {
    let steps = train.len() / config.batch;
    if steps == 0 {
        let n = train.len();
        return Err(format!("{n} training rows make no batch of {}", config.batch).into());
    }
    let mut mlp = Mlp::new(backend, config)?;
    let mut rng = ChaCha8Rng::seed_from_u64(config.shuffle_seed);
    let mut order: Vec<usize> = (0..train.len()).collect();
    let mut epochs = Vec::with_capacity(config.epochs);
    progress.start(config.epochs, steps);
    for number in 1..=config.epochs {
        order.shuffle(&mut rng);
        let mut loss = 0.0;
        for indices in order.chunks_exact(config.batch) {
            loss += f64::from(mlp.step(&train.batch(indices)?)?);
            progress.step();
        }
        let epoch = Epoch {
            number,
            loss: loss / steps as f64,
            test_accuracy: mlp.accuracy(test)?,
        };
        progress.epoch(&epoch);
        epochs.push(epoch);
    }
    Ok(epochs)
}
