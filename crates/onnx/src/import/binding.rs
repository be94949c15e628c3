//! Importing a model whose shape-like operands (`Reshape`'s shape, `Pad`'s pads, `Resize`'s
//! scales, `Slice`'s starts, ...) are computed from graph inputs: the values the call gives
//! for those inputs are bound at import ([`ImportOptions::input_values`]), since graphlift's
//! shapes are static within a compiled Function, and the rest stay parameters. A caller that
//! calls again with other values for the bound inputs imports (and compiles, through the
//! backends' caches) again.

use std::path::Path;

use graphlift_runtime::Tensor;

use super::{import_with_source, read_model_file, ImportOptions, ImportedModel};
use crate::error::OnnxError;
use crate::proto::ModelProto;

/// The names of a model file's graph inputs that are not initializers, in graph order.
///
/// # Errors
/// [`OnnxError::Io`] or [`OnnxError::Protobuf`] naming the file.
pub fn graph_input_names(path: &Path) -> Result<Vec<String>, OnnxError> {
    Ok(input_names_of(&read_model_file(path)?))
}

/// The names of `model`'s graph inputs that are not initializers, in graph order.
pub(crate) fn input_names_of(model: &ModelProto) -> Vec<String> {
    let Some(graph) = &model.graph else {
        return Vec::new();
    };
    let initializers: std::collections::HashSet<&str> =
        graph.initializer.iter().map(|t| t.name.as_str()).collect();
    graph
        .input
        .iter()
        .filter(|v| !initializers.contains(v.name.as_str()))
        .map(|v| v.name.clone())
        .collect()
}

/// [`import_model_file_with`](super::import_model_file_with), binding from `inputs` (the call's values, in the order of
/// [`graph_input_names`]) each graph input the import needs as a constant
/// ([`OnnxError::RunTimeOperand`]: the model is imported again with that input's value until
/// it imports). Returns the model and the inputs left for the call (those still parameters,
/// in call order).
///
/// # Errors
/// As [`import_model_file_with`](super::import_model_file_with); a [`OnnxError::RunTimeOperand`] whose input has no value
/// in `inputs` is returned as it is.
pub fn import_model_file_binding(
    path: &Path,
    options: &ImportOptions,
    inputs: &[Tensor],
) -> Result<(ImportedModel, Vec<Tensor>), OnnxError> {
    import_binding(
        &read_model_file(path)?,
        &path.display().to_string(),
        options,
        inputs,
    )
}

/// [`import_model_file_binding`] on a decoded `model` (`source` names it in creation sites).
pub(crate) fn import_binding(
    model: &ModelProto,
    source: &str,
    options: &ImportOptions,
    inputs: &[Tensor],
) -> Result<(ImportedModel, Vec<Tensor>), OnnxError> {
    let names = input_names_of(model);
    let mut options = options.clone();
    let imported = loop {
        match import_with_source(model, source, &options) {
            Err(OnnxError::RunTimeOperand { input, at, what })
                if !options.input_values.contains_key(&input) =>
            {
                let value = names
                    .iter()
                    .position(|n| *n == input)
                    .and_then(|k| inputs.get(k));
                let Some(value) = value else {
                    return Err(OnnxError::RunTimeOperand { input, at, what });
                };
                options.input_values.insert(input, value.clone());
            }
            other => break other?,
        }
    };
    let call = names
        .iter()
        .zip(inputs)
        .filter(|(n, _)| imported.inputs.iter().any(|i| &i.name == *n))
        .map(|(_, t)| t.clone())
        .collect();
    Ok((imported, call))
}
