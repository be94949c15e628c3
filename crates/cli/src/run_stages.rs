//! `graphlift run` of an ONNX model with a node of data-dependent shape (`NonZero`,
//! `Compress` or `NonMaxSuppression` over values computed at run time): a compiled Function
//! has static shapes, so the model runs in stages through a [`Session`], which runs such a
//! node on the host between them.

use std::path::Path;

use graphlift::onnx::{ImportOptions, OnnxError, Session};
use graphlift::Tensor;

use crate::error::CliError;
use crate::run::check_and_write;
use crate::tensor_io::read_tensor;
use crate::RunArgs;

/// Runs the model at `path` on `inputs` (graph order) through a [`Session`] on the
/// `--backend`, `--calls` times, prints each output, and compares and writes them as `run`
/// does; `why` is the import's [`OnnxError::DataDependentShape`].
///
/// # Errors
/// [`CliError::Usage`] for `--trace` (stages run no single traced Function); the session's
/// import, compile and run errors; those of [`check_and_write`].
pub(crate) fn run_in_stages(
    args: &RunArgs,
    path: &Path,
    inputs: &[Tensor],
    why: &OnnxError,
) -> Result<(), CliError> {
    if args.trace.is_some() {
        return Err(CliError::Usage(format!(
            "--trace: {why}; a model run in stages has no single traced Function"
        )));
    }
    println!("model: {}", path.display());
    println!("stages: {why}");
    let backend = args.scope.backend(&args.backend, None)?;
    let options = ImportOptions {
        input_shapes: args.shapes.iter().cloned().collect(),
        ..ImportOptions::default()
    };
    let session =
        Session::with_capacity(path, backend.clone(), options, Session::DEFAULT_CAPACITY)?;
    let mut outputs = Vec::new();
    for call in 1..=args.calls {
        outputs = session.run(inputs)?;
        let after = if args.calls > 1 {
            format!("call {call}: ")
        } else {
            String::new()
        };
        for (i, t) in outputs.iter().enumerate() {
            println!(
                "{after}output {i}: {} = {}",
                t.tensor_type(),
                crate::run::preview(t)
            );
        }
    }
    let stats = session.stats();
    println!(
        "backend: {} ({} specialisation(s) compiled over the stages)",
        backend.name(),
        stats.compiles
    );
    let expected = args
        .expects
        .iter()
        .map(|p| read_tensor(p))
        .collect::<Result<Vec<_>, _>>()?;
    if expected.len() > outputs.len() {
        return Err(CliError::Usage(format!(
            "{} expected outputs given, the model has {}",
            expected.len(),
            outputs.len()
        )));
    }
    check_and_write(args, &outputs, &expected)
}
