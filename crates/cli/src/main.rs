//! `graphlift`: the command-line front end, which runs, times, explains and measures ONNX
//! models and the JIT's vector math on the CPU-JIT or INTERPRETER backend.

mod accuracy;
mod bench;
mod bench_expr;
mod default_model;
mod error;
mod explain;
mod grad;
mod profile;
mod run;
mod run_stages;
mod tensor_io;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

/// A JIT graph compiler for CPUs: fuses elementwise regions into Cranelift SIMD kernels.
#[derive(Debug, Parser)]
#[command(name = "graphlift", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run an ONNX model (or the embedded default model) and print its outputs.
    Run(RunArgs),
    /// Time a peer expression (E1-E4, the peers benchmark's expressions) over N elements and print
    /// `ns_per_element=<float>` (the peers harness's external-program protocol).
    BenchExpr {
        /// E1, E2, E3 or E4, or an ONNX file (`*.onnx`) of an expression with static shapes
        /// and `f32` inputs.
        expr: String,
        /// Number of output elements (of an ONNX file's first output).
        n: usize,
        /// Backend to time.
        #[arg(long, default_value = "CPU-JIT")]
        backend: String,
    },
    /// Time an ONNX model: median latency of repeated runs after warm-up.
    Bench(BenchArgs),
    /// Explain how a model compiles on CPU-JIT: pass pipeline with timings, kernels with
    /// their nodes' provenance and pass histories, nodes left outside kernels and why.
    Explain(ExplainArgs),
    /// Write the gradient of the sum of a model output with respect to named graph inputs or
    /// initializers, as `grad_<k>.npy` (reverse-mode derivatives as a graph).
    Grad(GradArgs),
    /// Measure the inline f32 vector math (exp, expm1, log, log1p, tanh, sigmoid, erf) over every f32
    /// value through the kernels' JIT code: max ulp, max relative error, worst inputs.
    Accuracy(AccuracyArgs),
}

/// Arguments of `graphlift accuracy`.
#[derive(Debug, clap::Args)]
pub struct AccuracyArgs {
    /// Check every K-th f32 bit pattern (1: all 2^32); with `--pow`, every K-th positive f32
    /// base.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub step: u64,
    /// Sweep the scalar loop instead of the vector loop (F32X4, or F64X2 with `--f64`).
    #[arg(long)]
    pub scalar: bool,
    /// Sweep the vector math library's wide code (f32 exp, sigmoid, tanh and erf; the code
    /// fused kernels call on a host with AVX2 and FMA) instead of the inline vector loop.
    #[arg(long)]
    pub library: bool,
    /// Sweep the assembled code (the assembler's translation of the inline code at the
    /// host's full width: sixteen AVX-512 lanes, or eight AVX2 lanes) instead of the inline
    /// vector loop.
    #[arg(long)]
    pub assembled: bool,
    /// Measure the f64 functions instead, against 256-bit references, on a dense sample: `--per-binade`
    /// bit patterns in every binade of both signs, special values and the neighbourhoods
    /// of every threshold.
    #[arg(long = "f64")]
    pub f64: bool,
    /// Measure `Power` instead. On `f32` (inline, in `f32` arithmetic): every K-th
    /// (`--step`) positive base and its negation, each with a fixed set of special and
    /// ordinary exponents and with exponents aimed at results near the overflow and
    /// underflow thresholds. With `--f64`, against 256-bit references: the bases of the dense sample, each with fixed
    /// exponents and with exponents aimed at results across the whole range.
    #[arg(long)]
    pub pow: bool,
    /// With `--f64`: bit patterns per binade (default 4096: 16.8 million inputs per
    /// function; with `--pow`, default 64: 17 million pairs).
    #[arg(long, value_name = "N")]
    pub per_binade: Option<u64>,
    /// Functions to sweep (default: all of them).
    pub functions: Vec<String>,
}

/// Arguments of `graphlift bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The ONNX model.
    pub model: PathBuf,
    /// Backend: CPU-JIT or INTERPRETER.
    #[arg(long, default_value = "CPU-JIT")]
    pub backend: String,
    /// Threads of the CPU-JIT backend (default: GRAPHLIFT_NUM_THREADS, else all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Input tensors (`.pb` or `.npy`) in the order of the graph's inputs; without them,
    /// inputs are generated from the shapes (--shape): floats N(0, 1) from a fixed seed,
    /// integers 1, booleans true.
    #[arg(long = "input", num_args = 1..)]
    pub inputs: Vec<PathBuf>,
    /// Static shape for a graph input with symbolic dimensions, as `NAME=1x128`.
    #[arg(long = "shape", value_name = "NAME=DIMS", value_parser = parse_shape)]
    pub shapes: Vec<(String, Vec<usize>)>,
    /// Untimed runs first.
    #[arg(long, default_value_t = 5)]
    pub warmup: usize,
    /// Timed runs; the median is reported.
    #[arg(long, default_value_t = 50)]
    pub runs: usize,
    /// After the timed runs, trace this many more calls and print the time of their steps
    /// by op type, per call (parallel steps split over the threads as in untraced calls; a
    /// model run sample by sample runs its samples one after another while traced).
    #[arg(long, value_name = "CALLS")]
    pub profile: Option<usize>,
    /// With --profile: how many of the slowest steps to list (by their mean time over
    /// the traced calls).
    #[arg(long, value_name = "STEPS", default_value_t = 10)]
    pub slowest: usize,
    /// With --wrt: time the gradient Function instead of the forward pass.
    #[command(flatten)]
    pub gradient: GradientOf,
    /// Scope fusion passes to disable.
    #[command(flatten)]
    pub scope: ScopePasses,
}

/// The gradient Function `graphlift grad` computes, for `bench` and `explain` to take in
/// place of the model's forward pass.
#[derive(Debug, clap::Args)]
pub struct GradientOf {
    /// Take the gradient with respect to this graph input or initializer instead of the
    /// forward pass (repeat for several).
    #[arg(long = "wrt", value_name = "NAME")]
    pub wrt: Vec<String>,
    /// With --wrt: the output whose sum is differentiated (default: the first).
    #[arg(long, value_name = "OUTPUT", requires = "wrt")]
    pub of: Option<String>,
}

/// The scope fusion passes CPU-JIT runs, for `run`, `bench` and `explain`
/// (`GRAPHLIFT_DISABLE_SCOPE_PASSES=a,b` disables passes too).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ScopePasses {
    /// Disable the scope fusion pass NAME (`layer_norm`, `softmax`, `attention`, `conv_bn_activation`; repeat for several).
    #[arg(long = "disable-scope-pass", value_name = "NAME")]
    pub disable: Vec<String>,
}

impl ScopePasses {
    /// The built-in registry with the named passes disabled.
    ///
    /// # Errors
    /// A usage error naming the registered passes when a name is not one of them.
    pub fn registry(&self) -> Result<graphlift::passes::ScopeFusionRegistry, CliError> {
        let mut r = graphlift::passes::ScopeFusionRegistry::builtin();
        for name in &self.disable {
            r.disable(name)
                .map_err(|e| CliError::Usage(format!("--disable-scope-pass: {e}")))?;
        }
        Ok(r)
    }

    /// The backend `name`, with these scope fusion passes when it is CPU-JIT (the
    /// INTERPRETER runs no passes) and `threads` threads when given.
    ///
    /// # Errors
    /// As [`ScopePasses::registry`]; an unknown backend name.
    pub fn backend(
        &self,
        name: &str,
        threads: Option<usize>,
    ) -> Result<std::sync::Arc<dyn graphlift::runtime::Backend>, CliError> {
        let registry = self.registry()?;
        if name != "CPU-JIT" {
            return Ok(graphlift::Backend::create(name)?);
        }
        let b = graphlift::jit::CpuJitBackend::new().with_scope_fusion(registry);
        Ok(std::sync::Arc::new(match threads {
            Some(t) => b.with_threads(t),
            None => b,
        }))
    }
}

/// Arguments of `graphlift grad`.
#[derive(Debug, clap::Args)]
pub struct GradArgs {
    /// The ONNX model.
    pub model: PathBuf,
    /// A graph input or initializer to differentiate with respect to (repeat for several;
    /// the k-th gives `grad_<k>.npy`).
    #[arg(long = "wrt", required = true)]
    pub wrt: Vec<String>,
    /// The output whose sum is differentiated (default: the first).
    #[arg(long)]
    pub of: Option<String>,
    /// Input tensors (`.pb` or `.npy`), in the order of the graph's inputs.
    #[arg(long = "input", num_args = 1..)]
    pub inputs: Vec<PathBuf>,
    /// Directory to write `grad_<k>.npy` into.
    #[arg(long)]
    pub output_dir: PathBuf,
    /// Backend: CPU-JIT or INTERPRETER.
    #[arg(long, default_value = "CPU-JIT")]
    pub backend: String,
}

/// Arguments of `graphlift explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The ONNX model; without it, the embedded default model is explained.
    pub model: Option<PathBuf>,
    /// Static shape for a graph input with symbolic dimensions, as `NAME=1x128`.
    #[arg(long = "shape", value_name = "NAME=DIMS", value_parser = parse_shape)]
    pub shapes: Vec<(String, Vec<usize>)>,
    /// Write the compiled (post-pass) graph as Graphviz DOT to this file.
    #[arg(long)]
    pub dot: Option<PathBuf>,
    /// Render the compiled graph to SVG with Graphviz `dot -Tsvg` into this file.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Write the compiled graph as graphlift JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// With --wrt: explain the gradient Function instead of the forward pass.
    #[command(flatten)]
    pub gradient: GradientOf,
    /// Scope fusion passes to disable.
    #[command(flatten)]
    pub scope: ScopePasses,
}

/// Arguments of `graphlift run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The ONNX model, or a saved graphlift Function (`.json`, `Function::save_json`);
    /// without it, the embedded default model runs.
    pub model: Option<PathBuf>,
    /// Scope fusion passes to disable.
    #[command(flatten)]
    pub scope: ScopePasses,
    /// Calls of the compiled function, each printing its outputs (`--expect` compares the
    /// last call's).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub calls: u64,
    /// Backend: CPU-JIT or INTERPRETER.
    #[arg(long, default_value = "CPU-JIT")]
    pub backend: String,
    /// Input tensors (ONNX TensorProto `.pb` or numpy `.npy`), in the order of the graph's
    /// inputs.
    #[arg(long = "input", num_args = 1..)]
    pub inputs: Vec<PathBuf>,
    /// Expected outputs (`.pb` or `.npy`), in the order of the graph's outputs.
    #[arg(long = "expect", num_args = 1..)]
    pub expects: Vec<PathBuf>,
    /// Static shape for a graph input with symbolic dimensions, as `NAME=1x128` (repeat
    /// for several inputs). Inputs given with --input take their files' shapes already.
    #[arg(long = "shape", value_name = "NAME=DIMS", value_parser = parse_shape)]
    pub shapes: Vec<(String, Vec<usize>)>,
    /// Directory to write output i as `output_i.npy`.
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Relative tolerance of `--expect` (|got - want| <= atol + rtol * |want|).
    #[arg(long, default_value_t = 1e-5)]
    pub rtol: f64,
    /// Absolute tolerance of `--expect`.
    #[arg(long, default_value_t = 1e-6)]
    pub atol: f64,
    /// Write a Chrome trace-event JSON of the run to FILE (opens in Perfetto): one slice
    /// per executed step, the ops of each fused kernel nested inside it.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

/// Parses `NAME=1x128` (`NAME=` alone is a 0-d shape).
fn parse_shape(text: &str) -> Result<(String, Vec<usize>), String> {
    let (name, dims) = text
        .rsplit_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=DIMS (e.g. input_ids=1x128)"))?;
    let dims = if dims.is_empty() {
        Vec::new()
    } else {
        dims.split('x')
            .map(|d| d.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("`{dims}` is not a shape like 1x128: {e}"))?
    };
    Ok((name.to_string(), dims))
}

/// Parses the command line and runs its subcommand.
///
/// `graphlift run` with no model runs an embedded default model (nGraph's halide_subgraph
/// example extended with a SiLU), checks its outputs against the known answers, and shows the
/// fused kernels it compiled. `graphlift explain` shows what the compiler did to a model:
/// passes, kernels with provenance, nodes left outside kernels.
fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::BenchExpr { expr, n, backend } => bench_expr::bench_expr(&expr, n, &backend),
        Command::Bench(args) => bench::bench(&args),
        Command::Explain(args) => explain::explain(&args),
        Command::Grad(args) => grad::grad(&args),
        Command::Accuracy(args) => accuracy::accuracy(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graphlift: error: {e}");
            ExitCode::FAILURE
        }
    }
}
