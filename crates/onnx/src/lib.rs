//! graphlift-onnx: ONNX import, `ModelProto` -> [`Function`] (default domain, opsets 1 to 25,
//! the operators of [`SUPPORTED_OPS`]), so exported models run on graphlift's backends; input
//! it cannot import is an [`OnnxError`] naming the node or graph item, never a panic.

#![warn(missing_docs)]

mod emit;
mod error;
mod import;
mod ops;
mod packing;
pub mod proto;
mod session;
mod tensor;

pub use error::{NodeRef, OnnxError};
pub use import::{
    graph_input_names, import_model, import_model_bytes, import_model_bytes_with,
    import_model_file, import_model_file_binding, import_model_file_with, import_model_with,
    ImportOptions, ImportedModel, ModelValue,
};
pub use ops::{MICROSOFT_DOMAIN, SUPPORTED_CONTRIB_OPS, SUPPORTED_OPS};
pub use session::{Session, SessionError, SessionStats, Specialization};
pub use tensor::{
    encode_tensor_proto, onnx_data_type, read_tensor_proto, tensor_to_proto, NamedTensor,
};

/// The protobuf runtime the [`proto`] messages derive from, re-exported so users encode and
/// decode them with the same version (`graphlift_onnx::prost::Message`).
pub use prost;

#[doc(no_inline)]
pub use graphlift_ir::Function;

#[cfg(test)]
mod malformed_control_flow_tests;
#[cfg(test)]
mod malformed_tests;
#[cfg(test)]
mod tests;
