//! graphlift-ir: the graph IR of graphlift.
//!
//! A [`Function`] is a DAG of typed [`Node`]s with ordered parameters and results, after
//! Intel nGraph. Element types ([`ElementType`]) are f32, f64, i32, i64 and bool; shapes
//! ([`Shape`]) are static, 0-d and zero-size included. Every node has a unique name, a
//! metadata map, provenance tags ([`ProvenanceTags`]), its creation site and control
//! dependencies (`other_deps`). Shape and type inference run when a node is built and fail
//! with an [`IrError`] naming the op, the operands and the creation site.
//!
//! The builder ([`FunctionBuilder`]) adds operator overloading and numpy broadcasting, which
//! it makes explicit with `Broadcast` nodes.
//!
//! A function saves to and loads from a versioned JSON document ([`Function::to_json`],
//! [`Function::from_json`], format in [`json`]) that round-trips exactly, constants bit for
//! bit; [`Function::to_dot`] draws it for Graphviz, fused kernels as clusters ([`dot`]).
//! [`Function::to_text`] (also `Display`) prints a function one node a line, for dumps
//! after each pass; the format is described in [`text`].

#![warn(missing_docs)]

pub mod attrs;
mod builder;
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

pub use attrs::{Convolution, LayerNorm, ReduceOp, Reduction, SliceAxis, Window};
pub use builder::{select, FunctionBuilder, Value};
pub use element_type::ElementType;
pub use error::{InferenceError, IrError, SerializationError, SerializationErrorKind};
pub use function::Function;
pub use infer::{infer_output_types, OutputTypes};
pub use json::{JSON_FORMAT, JSON_VERSION};
pub use node::{CreationSite, Node, NodeId, Output, TensorType};
pub use op::{BinaryOp, CompareOp, FusedKernel, Op, UnaryOp};
pub use provenance::ProvenanceTags;
pub use shape::Shape;
pub use tensor_data::{Element, TensorData};
