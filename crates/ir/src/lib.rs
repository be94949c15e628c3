//! graphlift-ir: the graph IR, after Intel nGraph. A [`Function`] is a DAG of typed [`Node`]s
//! with static shapes, built through [`FunctionBuilder`] with shape and type inference; it
//! saves to exact JSON ([`json`]) and prints as text ([`text`]) or Graphviz DOT ([`dot`]).

#![warn(missing_docs)]

pub mod attrs;
mod builder;
pub mod control_flow;
pub mod dot;
mod element_type;
mod error;
mod function;
mod infer;
pub mod json;
mod node;
mod op;
mod provenance;
mod shape;
mod tensor_data;
pub mod text;

pub use attrs::{
    ArgOp, ArgReduction, Attention, Convolution, ConvolutionBackprop, CoordinateTransform,
    Distribution, LayerNorm, NearestMode, Pad, PadMode, RandomFill, ReduceOp, Reduction, Resize,
    ResizeMode, ScatterAdd, ScatterReduction, SliceAxis, TopK, Window,
};
pub use builder::{select, FunctionBuilder, Value};
pub use control_flow::ControlFlow;
pub use element_type::ElementType;
pub use error::{InferenceError, IrError, SerializationError, SerializationErrorKind};
pub use function::Function;
pub use half::{bf16, f16};
pub use infer::{infer_output_types, OutputTypes};
pub use json::{JSON_FORMAT, JSON_VERSION};
pub use node::{CreationSite, Node, NodeId, Output, TensorType};
pub use op::{BinaryOp, CompareOp, FusedKernel, Op, UnaryOp, Variable};
pub use provenance::ProvenanceTags;
pub use shape::Shape;
pub use tensor_data::{Element, TensorData};
