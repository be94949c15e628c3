//! The embedded default model of `graphlift run`: nGraph's `halide_subgraph` graph,
//! relu((A+B)*C)+D over `f32[8]`, with its SiLU y*sigmoid(y) as a second output, so the CLI
//! can show fusion on known answers without a model file.

use graphlift::onnx::prost::Message;
use graphlift::onnx::proto::{
    data_type, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeDimension,
    TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};
use graphlift::onnx::{import_model_bytes, ImportedModel};
use graphlift::Tensor;

use crate::error::CliError;

/// One line describing the model, for `graphlift run`'s output.
pub const DESCRIPTION: &str =
    "Y = relu((A+B)*C)+D, Z = Y*sigmoid(Y) over f32[8], nGraph's halide_subgraph data";

/// nGraph's data, used for all four inputs.
const DATA: [f32; 8] = [-1.0, 4.0, -2.0, 5.0, 1.0, 5.0, 7.0, 9.0];
/// nGraph's answer for Y.
const EXPECTED_Y: [f32; 8] = [1.0, 36.0, 6.0, 55.0, 3.0, 55.0, 105.0, 171.0];

/// The imported model, its inputs and its expected outputs.
pub struct DefaultModel {
    /// The imported model.
    pub model: ImportedModel,
    /// A, B, C, D.
    pub inputs: Vec<Tensor>,
    /// Y, Z.
    pub expected: Vec<Tensor>,
}

/// Builds, encodes and imports the default model.
///
/// It is built as an ONNX `ModelProto` in code and encoded to bytes, so it goes through the
/// same importer as a model file. Its inputs are nGraph's test data; the expected outputs are
/// nGraph's answer and the SiLU of it computed in `f64`.
///
/// # Errors
/// Only if the importer rejects it, which a test rules out.
pub fn default_model() -> Result<DefaultModel, CliError> {
    let bytes = model_proto().encode_to_vec();
    let model = import_model_bytes(&bytes)?;
    let input = Tensor::from_vec(DATA.to_vec(), [8])?;
    let z: Vec<f32> = EXPECTED_Y
        .iter()
        .map(|&y| {
            let y = f64::from(y);
            (y / (1.0 + (-y).exp())) as f32
        })
        .collect();
    Ok(DefaultModel {
        model,
        inputs: vec![input; 4],
        expected: vec![
            Tensor::from_vec(EXPECTED_Y.to_vec(), [8])?,
            Tensor::from_vec(z, [8])?,
        ],
    })
}

fn model_proto() -> ModelProto {
    let node = |op: &str, name: &str, inputs: &[&str], output: &str| NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.to_string()],
        name: name.to_string(),
        op_type: op.to_string(),
        ..Default::default()
    };
    let value = |name: &str| ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: data_type::FLOAT,
                shape: Some(TensorShapeProto {
                    dim: vec![TensorShapeDimension {
                        dim_value: Some(8),
                        ..Default::default()
                    }],
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        producer_name: "graphlift default model".to_string(),
        graph: Some(GraphProto {
            name: "halide_subgraph_silu".to_string(),
            node: vec![
                node("Add", "add_ab", &["A", "B"], "sum"),
                node("Mul", "mul_c", &["sum", "C"], "prod"),
                node("Relu", "relu", &["prod"], "act"),
                node("Add", "add_d", &["act", "D"], "Y"),
                node("Sigmoid", "sigmoid", &["Y"], "gate"),
                node("Mul", "silu", &["Y", "gate"], "Z"),
            ],
            input: ["A", "B", "C", "D"].map(value).to_vec(),
            output: ["Y", "Z"].map(value).to_vec(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_model_imports_with_four_inputs_and_two_outputs() {
        let d = default_model().unwrap();
        assert_eq!(d.model.inputs.len(), 4);
        assert_eq!(d.model.outputs.len(), 2);
        assert_eq!(d.model.outputs[0].name, "Y");
        assert_eq!(d.inputs.len(), 4);
    }
}
