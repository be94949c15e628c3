//! graphlift-onnx: ONNX import, `ModelProto` -> [`Function`].
//!
//! [`import_model_file`] maps a `.onnx` file (memmap2) and [`import_model_bytes`] takes its
//! bytes; both decode the protobuf with [`prost`] into the hand-written messages of
//! [`proto`] (a subset of `onnx.proto`, field numbers as the ONNX spec fixes them) and build
//! a [`Function`]:
//!
//! - graph inputs that are not initializers become Parameters, in graph order, named as in
//!   the graph; graph outputs become Results, in order, named as the graph outputs;
//! - initializers and `Constant` nodes become Constants;
//! - every other node becomes one or more IR ops: elementwise ops, layout ops (Reshape,
//!   Transpose, Slice, Concat, Gather), reductions, MatMul, Softmax, LayerNorm, Convolution,
//!   BatchNormInference, MaxPool; composite operators are decomposed (e.g.
//!   `Softplus = relu(x) + log1p(exp(-|x|))`), and ONNX's multidirectional broadcasting
//!   becomes explicit `Broadcast` nodes;
//! - a node whose inputs are all constants is evaluated at import with the reference kernels
//!   and becomes a Constant, so shape computations (`Shape -> Gather -> Unsqueeze -> Concat
//!   -> Reshape`) fold into the static attributes the IR needs;
//! - each IR node created for an ONNX node carries the provenance tag
//!   `onnx:<op_type>:<node name>` (the first output's name for an unnamed node).
//!
//! Operators (default domain, opsets 1 to 25, see [`SUPPORTED_OPS`]): Add, Sub, Mul, Div,
//! Neg, Abs, Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish, Tanh, Exp,
//! Log, Sqrt, Reciprocal, Pow, Max, Min, Sum, Mean, Clip, Softplus, Softsign, Erf, Gelu, Mish,
//! Sign, Floor, Ceil, Round, Where, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, Not,
//! And, Or, Xor, Cast, CastLike, PRelu, ThresholdedRelu, Identity, Constant, Shape, Reshape,
//! Flatten, Squeeze, Unsqueeze, Transpose, Concat, Slice, Gather, Expand, ConstantOfShape,
//! MatMul, Conv, BatchNormalization (inference), MaxPool, GlobalAveragePool, Softmax,
//! LayerNormalization, ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd.
//!
//! Element types: FLOAT, DOUBLE, INT32, INT64, BOOL (graphlift's f32, f64, i32, i64, bool).
//! Shapes are static: symbolic input dimensions take values from [`ImportOptions`]
//! ([`import_model_file_with`]). Anything else is an [`OnnxError`] that names the node (name and
//! `op_type`) or graph item and what was wrong; no input bytes make the importer panic.
//!
//! ```
//! use graphlift_onnx::proto::*;
//! use graphlift_onnx::{import_model_bytes, prost::Message};
//! let tensor = |name: &str| ValueInfoProto {
//!     name: name.into(),
//!     r#type: Some(TypeProto {
//!         tensor_type: Some(TypeProtoTensor {
//!             elem_type: data_type::FLOAT,
//!             shape: Some(TensorShapeProto {
//!                 dim: vec![TensorShapeDimension { dim_value: Some(3), ..Default::default() }],
//!             }),
//!         }),
//!         ..Default::default()
//!     }),
//!     ..Default::default()
//! };
//! let model = ModelProto {
//!     ir_version: 8,
//!     opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
//!     graph: Some(GraphProto {
//!         name: "g".into(),
//!         node: vec![NodeProto {
//!             op_type: "Softplus".into(),
//!             name: "sp".into(),
//!             input: vec!["x".into()],
//!             output: vec!["y".into()],
//!             ..Default::default()
//!         }],
//!         input: vec![tensor("x")],
//!         output: vec![tensor("y")],
//!         ..Default::default()
//!     }),
//!     ..Default::default()
//! };
//! let imported = import_model_bytes(&model.encode_to_vec()).unwrap();
//! assert_eq!(imported.inputs[0].name, "x");
//! let f = &imported.function;
//! assert!(f.nodes().any(|n| n.tags().contains("onnx:Softplus:sp")));
//! ```

#![warn(missing_docs)]

mod emit;
mod error;
mod import;
mod ops;
pub mod proto;
mod tensor;

pub use error::{NodeRef, OnnxError};
pub use import::{
    import_model, import_model_bytes, import_model_bytes_with, import_model_file,
    import_model_file_with, import_model_with, ImportOptions, ImportedModel, ModelValue,
};
pub use ops::SUPPORTED_OPS;
pub use tensor::{
    encode_tensor_proto, onnx_data_type, read_tensor_proto, tensor_to_proto, NamedTensor,
};

/// The protobuf runtime the [`proto`] messages derive from, re-exported so users encode and
/// decode them with the same version (`graphlift_onnx::prost::Message`).
pub use prost;

#[doc(no_inline)]
pub use graphlift_ir::Function;

#[cfg(test)]
mod tests;
