//! `graphlift grad`: the gradient of the sum of one model output with respect to named graph
//! inputs or initializers, computed by the model's derivative graph
//! ([`graphlift::FunctionBuilder::gradients`]) and written as `grad_<k>.npy`.

use graphlift::ir::{Op, Output, ReduceOp, Reduction};
use graphlift::onnx::ImportedModel;
use graphlift::{Backend, Function, FunctionBuilder};

use crate::error::CliError;
use crate::run::import_for;
use crate::tensor_io::{read_tensor, write_npy};
use crate::{GradArgs, GradientOf};

/// Runs `graphlift grad`.
///
/// # Errors
/// [`CliError::Usage`] naming an `--of` that is no output or a `--wrt` that is no graph
/// input or initializer (listing the inputs); the IR's error for an output that is not a
/// float or an op without an adjoint; any import, run or write error.
pub fn grad(args: &GradArgs) -> Result<(), CliError> {
    let inputs = args
        .inputs
        .iter()
        .map(|p| read_tensor(p))
        .collect::<Result<Vec<_>, _>>()?;
    let (model, inputs) = import_for(&args.model, &inputs, &[])?;
    let (gradient, output) = gradient_model(&model, args.of.as_deref(), &args.wrt)?;
    let grads = Backend::create(&args.backend)?
        .compile(&gradient)?
        .run(&inputs)?;
    std::fs::create_dir_all(&args.output_dir).map_err(|source| CliError::Io {
        path: args.output_dir.clone(),
        source,
    })?;
    for (k, (g, name)) in grads.iter().zip(&args.wrt).enumerate() {
        let file = format!("grad_{k}.npy");
        write_npy(&args.output_dir.join(&file), g)?;
        println!("{file}: d sum({output}) / d {name}: {}", g.tensor_type());
    }
    Ok(())
}

/// The gradient Function of `model`: the same parameters, one result per name of `wrt` (a
/// graph input or initializer), the gradient of the sum of output `of` (default the first)
/// with respect to it; and the output's name.
///
/// # Errors
/// [`CliError::Usage`] naming an `of` that is no output or a `wrt` that is no graph input
/// or initializer; the IR's error for an output that is not a float or an op without an
/// adjoint.
pub fn gradient_model(
    model: &ImportedModel,
    of: Option<&str>,
    wrt: &[String],
) -> Result<(Function, String), CliError> {
    let f = &model.function;
    let outputs: Vec<&str> = model.outputs.iter().map(|o| o.name.as_str()).collect();
    let which = match of {
        Some(of) => outputs.iter().position(|n| *n == of).ok_or_else(|| {
            CliError::Usage(format!(
                "--of `{of}`: the model has no such output; its outputs: {}",
                outputs.join(", ")
            ))
        })?,
        None => 0,
    };
    let result = *f
        .results()
        .get(which)
        .ok_or_else(|| CliError::Usage("the model has no outputs".into()))?;
    let source = f.result_source(result)?;
    let wrt = wrt
        .iter()
        .map(|name| find(f, name))
        .collect::<Result<Vec<_>, _>>()?;
    let gradient = gradient_function(f.clone(), source, &wrt)?;
    Ok((gradient, outputs[which].to_string()))
}

/// The model's forward Function, or with `--wrt` its gradient Function
/// ([`gradient_model`]); and which of them, in words.
///
/// # Errors
/// As [`gradient_model`].
pub fn chosen_function(
    model: &ImportedModel,
    gradient: &GradientOf,
) -> Result<(Function, String), CliError> {
    if gradient.wrt.is_empty() {
        return Ok((model.function.clone(), "forward".to_string()));
    }
    let (f, output) = gradient_model(model, gradient.of.as_deref(), &gradient.wrt)?;
    let wrt = gradient.wrt.join(", ");
    Ok((f, format!("gradient of sum({output}) w.r.t. {wrt}")))
}

/// The value of the graph input (a Parameter) or initializer (a Constant the importer tags
/// `onnx:initializer:NAME`) called `name`.
fn find(f: &Function, name: &str) -> Result<Output, CliError> {
    let tag = format!("onnx:initializer:{name}");
    let node = f
        .nodes()
        .find(|n| (matches!(n.op(), Op::Parameter) && n.name() == name) || n.tags().contains(&tag));
    node.map(|n| Output::from(n.id())).ok_or_else(|| {
        let inputs: Vec<&str> = f
            .parameters()
            .iter()
            .filter_map(|&p| f.get(p).map(|n| n.name()))
            .collect();
        CliError::Usage(format!(
            "--wrt `{name}`: no graph input or initializer of that name; the inputs: {}",
            inputs.join(", ")
        ))
    })
}

/// The model with one result per `wrt`: the gradient of the sum of `of`.
fn gradient_function(model: Function, of: Output, wrt: &[Output]) -> Result<Function, CliError> {
    let b = FunctionBuilder::from_function(model);
    let y = b.value_of(of);
    let rank = y.tensor_type().map_or(0, |t| t.1.rank());
    let sum = Reduction {
        op: ReduceOp::Sum,
        axes: (0..rank).collect(),
        keep_dims: false,
    };
    let c = b.op(Op::Reduce(sum), &[y]);
    let wrt: Vec<_> = wrt.iter().map(|&w| b.value_of(w)).collect();
    let grads = b.gradients(c, &wrt);
    Ok(b.finish(&grads)?)
}
