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
pub mod expansion;
mod function;
mod infer;
pub mod json;
mod lru;
pub mod minifloat;
mod node;
mod op;
mod provenance;
mod shape;
mod storage_type;
mod tensor_data;
pub mod text;
pub mod unroll;

pub use attrs::{
    ArgOp, ArgReduction, Attention, Convolution, ConvolutionBackprop, CoordinateTransform, CumSum,
    Distribution, GridMode, GridPadding, GridSample, LayerNorm, NearestMode, Pad, PadMode,
    QuantizedMatMul, RandomFill, RecurrentActivation, RecurrentCell, RecurrentDirection,
    RecurrentSequence, ReduceOp, Reduction, Resize, ResizeMode, ScatterAdd, ScatterReduction,
    SliceAxis, TopK, Window,
};
pub use builder::{select, FunctionBuilder, Value};
pub use control_flow::ControlFlow;
pub use element_type::ElementType;
pub use error::{InferenceError, IrError, SerializationError, SerializationErrorKind};
pub use function::Function;
pub use half::{bf16, f16};
pub use infer::{infer_output_types, OutputTypes};
pub use json::{JSON_FORMAT, JSON_VERSION};
pub use lru::Lru;
pub use node::{CreationSite, Node, NodeId, Output, TensorType};
pub use op::{BinaryOp, CompareOp, FusedKernel, Op, UnaryOp, Variable};
pub use provenance::ProvenanceTags;
pub use shape::Shape;
pub use storage_type::{
    is_storage_integer, storage_bit_width, storage_bits, storage_from_bits, storage_from_f64,
    storage_from_int, StorageElement, F4E2M1, F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0, I2,
    I4, U2, U4,
};
pub use tensor_data::{float_text, Element, TensorData};
