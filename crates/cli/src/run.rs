//! `graphlift run`: import, compile, run (traced with `--trace`), print, compare, write.

use std::fs;
use std::path::Path;
use std::time::Instant;

use graphlift::onnx::{import_model_file_binding, ImportOptions, ImportedModel, OnnxError};
use graphlift::runtime::compare;
use graphlift::runtime::trace::Tracer;
use graphlift::{Executable, Tensor};
use graphlift::{Function, TensorType};

use crate::error::CliError;
use crate::tensor_io::{read_tensor, write_npy};
use crate::{default_model, RunArgs};

/// How many leading values of each output are printed.
const SHOWN_VALUES: usize = 8;

/// What `run` runs: a Function with the names and types of its inputs, outputs and
/// variables, from an ONNX model or a saved graphlift Function.
struct Program {
    function: Function,
    inputs: Vec<(String, TensorType)>,
    outputs: Vec<(String, TensorType)>,
    /// The Function's Variable nodes (by node name, in node id order), whose values are
    /// printed after each call.
    variables: Vec<(String, TensorType)>,
}

impl From<ImportedModel> for Program {
    fn from(m: ImportedModel) -> Program {
        let values = |v: Vec<graphlift::onnx::ModelValue>| {
            v.into_iter().map(|v| (v.name, v.tensor_type)).collect()
        };
        Program {
            inputs: values(m.inputs),
            outputs: values(m.outputs),
            variables: variables_of(&m.function),
            function: m.function,
        }
    }
}

/// The name and type of each Variable node of `function`, in node id order.
fn variables_of(function: &Function) -> Vec<(String, TensorType)> {
    function
        .variables()
        .map(|n| (n.name().to_string(), n.output_type().clone()))
        .collect()
}

impl Program {
    /// A Function saved as JSON ([`Function::load_json`]): its parameters and results by
    /// node name, in call order.
    fn load_json(path: &Path) -> Result<Program, CliError> {
        let function = Function::load_json(path)?;
        let named = |ids: &[graphlift::ir::NodeId]| -> Result<Vec<(String, TensorType)>, CliError> {
            ids.iter()
                .map(|&id| {
                    let n = function.node(id)?;
                    Ok((n.name().to_string(), n.output_type().clone()))
                })
                .collect()
        };
        let inputs = named(function.parameters())?;
        let outputs = named(function.results())?;
        Ok(Program {
            variables: variables_of(&function),
            function,
            inputs,
            outputs,
        })
    }
}

/// Runs `graphlift run`.
///
/// # Errors
/// Any import, compile or run error; [`CliError::Usage`] for a wrong number of inputs or
/// expected outputs; [`CliError::Mismatch`] when an output differs from `--expect`.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let (model, inputs, expected) = match &args.model {
        Some(path) => {
            let inputs = args
                .inputs
                .iter()
                .map(|p| read_tensor(p))
                .collect::<Result<Vec<_>, _>>()?;
            let is_json = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"));
            let (model, inputs) = if is_json {
                if !args.shapes.is_empty() {
                    return Err(CliError::Usage(
                        "--shape binds ONNX inputs' symbolic dimensions; a saved Function has static shapes".into(),
                    ));
                }
                (Program::load_json(path)?, inputs)
            } else {
                match import_for(path, &inputs, &args.shapes) {
                    // A node of data-dependent shape: the model runs in stages.
                    Err(CliError::Onnx(e @ OnnxError::DataDependentShape { .. })) => {
                        return crate::run_stages::run_in_stages(args, path, &inputs, &e);
                    }
                    r => {
                        let (model, call) = r?;
                        (model.into(), call)
                    }
                }
            };
            let expected = args
                .expects
                .iter()
                .map(|p| read_tensor(p))
                .collect::<Result<Vec<_>, _>>()?;
            println!("model: {}", path.display());
            (model, inputs, expected)
        }
        None => {
            if !args.inputs.is_empty() || !args.expects.is_empty() {
                return Err(CliError::Usage(
                    "--input and --expect need a MODEL; without one the embedded default model runs on its own inputs".into(),
                ));
            }
            let d = default_model::default_model()?;
            println!("model: embedded default ({})", default_model::DESCRIPTION);
            (d.model.into(), d.inputs, d.expected)
        }
    };
    check_counts(&model, &inputs, &expected)?;

    let backend = args.scope.backend(&args.backend, None)?;
    let start = Instant::now();
    let exe = backend.compile(&model.function)?;
    let compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let tracer = args.trace.as_ref().map(|_| Tracer::start());
    let start = Instant::now();
    let mut outputs = exe.run(&inputs)?;
    let run_ms = start.elapsed().as_secs_f64() * 1e3;
    for call in 2..=args.calls {
        print_call(&model, &*exe, &outputs, Some(call - 1))?;
        outputs = exe.run(&inputs)?;
    }
    if let (Some(tracer), Some(path)) = (tracer, &args.trace) {
        let trace = tracer.finish();
        trace.save_chrome(path)?;
        println!(
            "trace: {} step(s) written to {}",
            trace.step_count(),
            path.display()
        );
    }
    println!(
        "backend: {} (compile {compile_ms:.2} ms, run {run_ms:.3} ms)",
        backend.name()
    );

    if let Some(peak) = exe.peak_intermediate_bytes() {
        println!(
            "intermediates: peak {:.3} MiB live at once (liveness plan)",
            peak as f64 / (1 << 20) as f64
        );
    }
    let kernels = exe.kernels();
    println!("fused kernels: {}", kernels.len());
    for k in &kernels {
        println!(
            "  {}: {} nodes [{}], {} live-in(s), {} output(s), {} bytes of machine code",
            k.name,
            k.fused_nodes.len(),
            k.fused_nodes.join(", "),
            k.live_ins,
            k.outputs,
            k.code_size
        );
        if !k.tags.is_empty() {
            println!("    provenance: {}", k.tags.join(", "));
        }
    }

    print_call(
        &model,
        &*exe,
        &outputs,
        (args.calls > 1).then_some(args.calls),
    )?;

    check_and_write(args, &outputs, &expected)
}

/// Compares `outputs` with `expected` (`--expect`, as many as given) and writes them into
/// `--output-dir` as `output_<i>.npy`.
///
/// # Errors
/// [`CliError::Io`] or a write error for the output files; [`CliError::Mismatch`] when an
/// output differs from its expected tensor.
pub(crate) fn check_and_write(
    args: &RunArgs,
    outputs: &[Tensor],
    expected: &[Tensor],
) -> Result<(), CliError> {
    let mut failed = 0;
    for (i, (got, want)) in outputs.iter().zip(expected).enumerate() {
        let c = compare(got, want, args.rtol, args.atol);
        let verdict = if c.passed() { "ok" } else { "MISMATCH" };
        println!("expect {i}: {verdict} ({c})");
        failed += usize::from(!c.passed());
    }

    if let Some(dir) = &args.output_dir {
        fs::create_dir_all(dir).map_err(|source| CliError::Io {
            path: dir.clone(),
            source,
        })?;
        for (i, t) in outputs.iter().enumerate() {
            let path = dir.join(format!("output_{i}.npy"));
            write_npy(&path, t)?;
            println!("wrote {}", path.display());
        }
    }

    if failed > 0 {
        return Err(CliError::Mismatch {
            failed,
            total: expected.len(),
        });
    }
    Ok(())
}

/// Imports the model at `path` with its symbolic input dimensions bound by the shapes of
/// `inputs` (in graph order) and by `shapes` (`NAME`, dims), and the inputs that shape-like
/// operands are computed from bound to their values in `inputs`
/// ([`import_model_file_binding`]). Returns the model and the inputs left for the call.
///
/// # Errors
/// Any import error, naming the input whose shape does not fit, or the input whose value
/// the import needs and was not given.
pub(crate) fn import_for(
    path: &Path,
    inputs: &[Tensor],
    shapes: &[(String, Vec<usize>)],
) -> Result<(ImportedModel, Vec<Tensor>), CliError> {
    let options = ImportOptions {
        input_shapes: shapes.iter().cloned().collect(),
        ordered_input_shapes: inputs.iter().map(|t| t.shape().dims().to_vec()).collect(),
        ..ImportOptions::default()
    };
    Ok(import_model_file_binding(path, &options, inputs)?)
}

/// Prints each output's and then each variable's name, type and first values, as `exe`
/// holds them after the call that gave `outputs` (call `call` when several run).
///
/// # Errors
/// A variable of `model` that `exe` does not have.
fn print_call(
    model: &Program,
    exe: &dyn Executable,
    outputs: &[Tensor],
    call: Option<u64>,
) -> Result<(), CliError> {
    let after = call.map(|c| format!("call {c}: ")).unwrap_or_default();
    let show = |what: &str, i: usize, name: &str, t: &Tensor| {
        println!(
            "{after}{what} {i} `{name}`: {} = {}",
            t.tensor_type(),
            preview(t)
        );
    };
    for (i, ((name, _), t)) in model.outputs.iter().zip(outputs).enumerate() {
        show("output", i, name, t);
    }
    for (i, (name, _)) in model.variables.iter().enumerate() {
        show("variable", i, name, &exe.variable(name)?);
    }
    Ok(())
}

fn check_counts(model: &Program, inputs: &[Tensor], expected: &[Tensor]) -> Result<(), CliError> {
    if inputs.len() != model.inputs.len() {
        let want: Vec<String> = model
            .inputs
            .iter()
            .map(|(name, t)| format!("{name}: {t}"))
            .collect();
        return Err(CliError::Usage(format!(
            "the model takes {} input(s) ({}), {} given with --input",
            model.inputs.len(),
            want.join(", "),
            inputs.len()
        )));
    }
    if !expected.is_empty() && expected.len() != model.outputs.len() {
        return Err(CliError::Usage(format!(
            "the model has {} output(s), {} given with --expect",
            model.outputs.len(),
            expected.len()
        )));
    }
    Ok(())
}

/// The first few values of a tensor, e.g. `[1, 36, 6, ...]`, each in its own type's
/// shortest round-trip form; strings quoted and escaped (`["a b", "\n"]`).
pub(crate) fn preview(t: &Tensor) -> String {
    let n = t.len().min(SHOWN_VALUES);
    fn show<T: ToString>(v: &[T], n: usize) -> Vec<String> {
        v[..n].iter().map(ToString::to_string).collect()
    }
    let shown = graphlift::ir::match_data!(t.data(), v => show(v, n),
        String(v) => v[..n].iter().map(|s| format!("{s:?}")).collect());
    let more = if t.len() > SHOWN_VALUES { ", ..." } else { "" };
    format!("[{}{more}]", shown.join(", "))
}
