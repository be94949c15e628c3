//! Importing a model whose shape-like operands (`Reshape`'s shape, `Pad`'s pads, `Resize`'s
//! scales, `Slice`'s starts, ...) are computed from graph inputs: the values the call gives
//! for those inputs are bound at import ([`ImportOptions::input_values`]), since graphlift's
//! shapes are static within a compiled Function, and the rest stay parameters. A caller that
//! calls again with other values for the bound inputs imports (and compiles, through the
//! backends' caches) again.

use std::path::Path;

use graphlift_runtime::Tensor;
use prost::Message;

use super::{import_model_file_with, ImportOptions, ImportedModel};
use crate::error::OnnxError;
use crate::proto::ModelProto;

/// The names of a model file's graph inputs that are not initializers, in graph order.
///
/// # Errors
/// [`OnnxError::Io`] or [`OnnxError::Protobuf`] naming the file.
pub fn graph_input_names(path: &Path) -> Result<Vec<String>, OnnxError> {
    let bytes = std::fs::read(path).map_err(|e| OnnxError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    let model = ModelProto::decode(bytes.as_slice()).map_err(|e| OnnxError::Protobuf {
        path: Some(path.display().to_string()),
        message_type: "ModelProto",
        message: e.to_string(),
    })?;
    let graph = model.graph.unwrap_or_default();
    let initializers: std::collections::HashSet<&str> =
        graph.initializer.iter().map(|t| t.name.as_str()).collect();
    Ok(graph
        .input
        .iter()
        .filter(|v| !initializers.contains(v.name.as_str()))
        .map(|v| v.name.clone())
        .collect())
}

/// [`import_model_file_with`], binding from `inputs` (the call's values, in the order of
/// [`graph_input_names`]) each graph input the import needs as a constant
/// ([`OnnxError::RunTimeOperand`]: the model is imported again with that input's value until
/// it imports). Returns the model and the inputs left for the call (those still parameters,
/// in call order).
///
/// # Errors
/// As [`import_model_file_with`]; a [`OnnxError::RunTimeOperand`] whose input has no value
/// in `inputs` is returned as it is.
pub fn import_model_file_binding(
    path: &Path,
    options: &ImportOptions,
    inputs: &[Tensor],
) -> Result<(ImportedModel, Vec<Tensor>), OnnxError> {
    let names = graph_input_names(path)?;
    let mut options = options.clone();
    let model = loop {
        match import_model_file_with(path, &options) {
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
        .filter(|(n, _)| model.inputs.iter().any(|i| &i.name == *n))
        .map(|(_, t)| t.clone())
        .collect();
    Ok((model, call))
}
