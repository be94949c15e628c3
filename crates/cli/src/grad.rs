//! `graphlift grad`: the gradient of the sum of one model output with respect to named graph
//! inputs or initializers, computed by the model's derivative graph
//! ([`graphlift::FunctionBuilder::gradients`]) and written as `grad_<k>.npy`.

use graphlift::ir::{Op, Output, ReduceOp, Reduction};
use graphlift::{Backend, Function, FunctionBuilder};

use crate::error::CliError;
use crate::run::import_for;
use crate::tensor_io::{read_tensor, write_npy};
use crate::GradArgs;

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
    let model = import_for(&args.model, &inputs, &[])?;
    let f = &model.function;
    let outputs: Vec<&str> = model.outputs.iter().map(|o| o.name.as_str()).collect();
    let which = match &args.of {
        Some(of) => outputs.iter().position(|n| n == of).ok_or_else(|| {
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
    let of = f.result_source(result)?;
    let wrt = args
        .wrt
        .iter()
        .map(|name| find(f, name))
        .collect::<Result<Vec<_>, _>>()?;
    let gradient = gradient_function(model.function.clone(), of, &wrt)?;
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
        let output = outputs[which];
        println!("{file}: d sum({output}) / d {name}: {}", g.tensor_type());
    }
    Ok(())
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
