//! Small ONNX graphs written in tests: value infos, initializers, attributes, nodes named
//! as exporters name them, and the model around them (opset 13 unless given).

#![allow(dead_code)]

use graphlift::onnx::proto::*;

/// A float tensor value of extents `dims`.
pub fn vi(name: &str, dims: &[i64]) -> ValueInfoProto {
    vi_of(name, data_type::FLOAT, dims)
}

/// A tensor value of ONNX data type `elem_type` and extents `dims`.
pub fn vi_of(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    let dim = |d: &i64| TensorShapeDimension {
        dim_value: Some(*d),
        ..Default::default()
    };
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type,
                shape: Some(TensorShapeProto {
                    dim: dims.iter().map(dim).collect(),
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A float initializer.
pub fn init(name: &str, dims: &[i64], data: Vec<f32>) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: data_type::FLOAT,
        float_data: data,
        ..Default::default()
    }
}

/// An `int64` initializer (shapes, axes).
pub fn init_i64(name: &str, data: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: vec![data.len() as i64],
        data_type: data_type::INT64,
        int64_data: data.to_vec(),
        ..Default::default()
    }
}

/// An integer-list attribute (`axes`, `perm`).
pub fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::INTS,
        ints: v.to_vec(),
        ..Default::default()
    }
}

/// An integer attribute (`axis`).
pub fn int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::INT,
        i: v,
        ..Default::default()
    }
}

/// ONNX nodes, each named `name` with the output `name` + `suffix` (PyTorch writes
/// `_output_0`, tf2onnx `:0`).
pub struct Nodes {
    pub suffix: &'static str,
    pub nodes: Vec<NodeProto>,
}

impl Nodes {
    /// No nodes yet, outputs named with `suffix`.
    pub fn new(suffix: &'static str) -> Nodes {
        Nodes {
            suffix,
            nodes: Vec::new(),
        }
    }

    /// Adds a node; returns its output's name.
    pub fn add(
        &mut self,
        op: &str,
        name: &str,
        inputs: &[&str],
        attrs: Vec<AttributeProto>,
    ) -> String {
        let out = format!("{name}{}", self.suffix);
        self.nodes.push(NodeProto {
            op_type: op.into(),
            name: name.into(),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![out.clone()],
            attribute: attrs,
            ..Default::default()
        });
        out
    }

    /// The opset-13 model of these nodes.
    pub fn model(
        self,
        inputs: Vec<ValueInfoProto>,
        outputs: Vec<ValueInfoProto>,
        initializer: Vec<TensorProto>,
    ) -> ModelProto {
        self.model_at(13, inputs, outputs, initializer)
    }

    /// The model of these nodes at `opset`.
    pub fn model_at(
        self,
        opset: i64,
        inputs: Vec<ValueInfoProto>,
        outputs: Vec<ValueInfoProto>,
        initializer: Vec<TensorProto>,
    ) -> ModelProto {
        ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: opset,
            }],
            graph: Some(GraphProto {
                name: "g".into(),
                node: self.nodes,
                input: inputs,
                output: outputs,
                initializer,
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}
