//! The subset of `onnx.proto` (ONNX IR, proto2) that graphlift reads and writes, as
//! hand-written [`prost`] messages with the field numbers of the ONNX specification.

/// `TensorProto.DataType` codes (the `data_type` of a tensor, `elem_type` of a tensor type,
/// the `to` attribute of `Cast`).
pub mod data_type {
    /// Not set.
    pub const UNDEFINED: i32 = 0;
    /// IEEE 754 binary32.
    pub const FLOAT: i32 = 1;
    /// `uint8_t`.
    pub const UINT8: i32 = 2;
    /// `int8_t`.
    pub const INT8: i32 = 3;
    /// `uint16_t`.
    pub const UINT16: i32 = 4;
    /// `int16_t`.
    pub const INT16: i32 = 5;
    /// `int32_t`.
    pub const INT32: i32 = 6;
    /// `int64_t`.
    pub const INT64: i32 = 7;
    /// UTF-8 string.
    pub const STRING: i32 = 8;
    /// `bool`.
    pub const BOOL: i32 = 9;
    /// IEEE 754 binary16.
    pub const FLOAT16: i32 = 10;
    /// IEEE 754 binary64.
    pub const DOUBLE: i32 = 11;
    /// `uint32_t`.
    pub const UINT32: i32 = 12;
    /// `uint64_t`.
    pub const UINT64: i32 = 13;
    /// Two binary32.
    pub const COMPLEX64: i32 = 14;
    /// Two binary64.
    pub const COMPLEX128: i32 = 15;
    /// bfloat16.
    pub const BFLOAT16: i32 = 16;
    /// 8-bit float e4m3, finite only.
    pub const FLOAT8E4M3FN: i32 = 17;
    /// 8-bit float e4m3, finite only, no negative zero.
    pub const FLOAT8E4M3FNUZ: i32 = 18;
    /// 8-bit float e5m2.
    pub const FLOAT8E5M2: i32 = 19;
    /// 8-bit float e5m2, finite only, no negative zero.
    pub const FLOAT8E5M2FNUZ: i32 = 20;
    /// 4-bit unsigned integer.
    pub const UINT4: i32 = 21;
    /// 4-bit signed integer.
    pub const INT4: i32 = 22;
    /// 4-bit float e2m1.
    pub const FLOAT4E2M1: i32 = 23;
    /// 8-bit exponent-only float e8m0.
    pub const FLOAT8E8M0: i32 = 24;
    /// 2-bit unsigned integer.
    pub const UINT2: i32 = 25;
    /// 2-bit signed integer.
    pub const INT2: i32 = 26;

    /// The spec's name of a data type code (`FLOAT`, `UINT8`, ...), or `None` for a code the
    /// spec (as of onnx 1.22) does not define.
    pub fn name(code: i32) -> Option<&'static str> {
        Some(match code {
            UNDEFINED => "UNDEFINED",
            FLOAT => "FLOAT",
            UINT8 => "UINT8",
            INT8 => "INT8",
            UINT16 => "UINT16",
            INT16 => "INT16",
            INT32 => "INT32",
            INT64 => "INT64",
            STRING => "STRING",
            BOOL => "BOOL",
            FLOAT16 => "FLOAT16",
            DOUBLE => "DOUBLE",
            UINT32 => "UINT32",
            UINT64 => "UINT64",
            COMPLEX64 => "COMPLEX64",
            COMPLEX128 => "COMPLEX128",
            BFLOAT16 => "BFLOAT16",
            FLOAT8E4M3FN => "FLOAT8E4M3FN",
            FLOAT8E4M3FNUZ => "FLOAT8E4M3FNUZ",
            FLOAT8E5M2 => "FLOAT8E5M2",
            FLOAT8E5M2FNUZ => "FLOAT8E5M2FNUZ",
            UINT4 => "UINT4",
            INT4 => "INT4",
            FLOAT4E2M1 => "FLOAT4E2M1",
            FLOAT8E8M0 => "FLOAT8E8M0",
            UINT2 => "UINT2",
            INT2 => "INT2",
            _ => return None,
        })
    }

    /// The code of a data type name (the inverse of [`name`]); used by `Cast` in opsets
    /// 1–5, where `to` is a string.
    pub fn from_name(name: &str) -> Option<i32> {
        (0..=INT2).find(|&c| self::name(c) == Some(name))
    }
}

/// `AttributeProto.AttributeType` codes (the `type` field of an attribute).
pub mod attribute_type {
    /// Not set (IR version 1 models).
    pub const UNDEFINED: i32 = 0;
    /// `f`.
    pub const FLOAT: i32 = 1;
    /// `i`.
    pub const INT: i32 = 2;
    /// `s`.
    pub const STRING: i32 = 3;
    /// `t`.
    pub const TENSOR: i32 = 4;
    /// `g`.
    pub const GRAPH: i32 = 5;
    /// `floats`.
    pub const FLOATS: i32 = 6;
    /// `ints`.
    pub const INTS: i32 = 7;
    /// `strings`.
    pub const STRINGS: i32 = 8;
    /// `tensors`.
    pub const TENSORS: i32 = 9;
    /// `graphs`.
    pub const GRAPHS: i32 = 10;
    /// `sparse_tensor`.
    pub const SPARSE_TENSOR: i32 = 11;
    /// `sparse_tensors`.
    pub const SPARSE_TENSORS: i32 = 12;
    /// `tp`.
    pub const TYPE_PROTO: i32 = 13;
    /// `type_protos`.
    pub const TYPE_PROTOS: i32 = 14;

    /// The spec's name of an attribute type code (`FLOAT`, `INTS`, ...).
    pub fn name(code: i32) -> &'static str {
        match code {
            UNDEFINED => "UNDEFINED",
            FLOAT => "FLOAT",
            INT => "INT",
            STRING => "STRING",
            TENSOR => "TENSOR",
            GRAPH => "GRAPH",
            FLOATS => "FLOATS",
            INTS => "INTS",
            STRINGS => "STRINGS",
            TENSORS => "TENSORS",
            GRAPHS => "GRAPHS",
            SPARSE_TENSOR => "SPARSE_TENSOR",
            SPARSE_TENSORS => "SPARSE_TENSORS",
            TYPE_PROTO => "TYPE_PROTO",
            TYPE_PROTOS => "TYPE_PROTOS",
            _ => "unknown",
        }
    }
}

/// `TensorProto.DataLocation`: where a tensor's data lives.
pub mod data_location {
    /// In the TensorProto itself.
    pub const DEFAULT: i32 = 0;
    /// In an external file (`external_data`); graphlift does not read those.
    pub const EXTERNAL: i32 = 1;
}

/// A message whose content graphlift ignores; it only records that the field is present
/// (unknown fields inside it are skipped by the decoder).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Opaque {}

/// `ModelProto`: the top-level ONNX file.
///
/// Field numbers, here and in every message of this module, are those of the ONNX
/// specification (`onnx/onnx.proto`, checked against the message descriptors of onnx
/// 1.22.0). Fields graphlift does not use are left out: prost skips unknown fields when it
/// decodes, so a full model decodes into these structs. Repeated scalars that proto2
/// declares unpacked (`dims`, `floats`, `ints`) are written unpacked; the decoder accepts
/// both encodings, as protobuf requires.
///
/// A model built in code, encoded and imported:
///
/// ```
/// use graphlift_onnx::proto::*;
/// use graphlift_onnx::{import_model_bytes, prost::Message};
/// let tensor = |name: &str| ValueInfoProto {
///     name: name.into(),
///     r#type: Some(TypeProto {
///         tensor_type: Some(TypeProtoTensor {
///             elem_type: data_type::FLOAT,
///             shape: Some(TensorShapeProto {
///                 dim: vec![TensorShapeDimension { dim_value: Some(3), ..Default::default() }],
///             }),
///         }),
///         ..Default::default()
///     }),
///     ..Default::default()
/// };
/// let model = ModelProto {
///     ir_version: 8,
///     opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
///     graph: Some(GraphProto {
///         name: "g".into(),
///         node: vec![NodeProto {
///             op_type: "Softplus".into(),
///             name: "sp".into(),
///             input: vec!["x".into()],
///             output: vec!["y".into()],
///             ..Default::default()
///         }],
///         input: vec![tensor("x")],
///         output: vec![tensor("y")],
///         ..Default::default()
///     }),
///     ..Default::default()
/// };
/// let imported = import_model_bytes(&model.encode_to_vec()).unwrap();
/// assert_eq!(imported.inputs[0].name, "x");
/// let f = &imported.function;
/// assert!(f.nodes().any(|n| n.tags().contains("onnx:Softplus:sp")));
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// IR version of the file format.
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// Operator sets the graph uses (one per domain).
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// Name of the tool that wrote the model.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// Version of that tool.
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// Reverse-DNS name of the model's namespace.
    #[prost(string, tag = "4")]
    pub domain: String,
    /// Version of the model.
    #[prost(int64, tag = "5")]
    pub model_version: i64,
    /// Documentation.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// The computation.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// Model-local functions; present only to be reported (graphlift does not inline them).
    #[prost(message, repeated, tag = "25")]
    pub functions: Vec<Opaque>,
}

/// `OperatorSetIdProto`: one imported operator set.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// The domain; empty or `ai.onnx` for the default ONNX operator set.
    #[prost(string, tag = "1")]
    pub domain: String,
    /// The operator set version.
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// `GraphProto`: nodes in topological order, initializers, inputs and outputs.
///
/// The importer ([`crate::import_model_bytes`]) builds a graphlift Function from it:
///
/// - graph inputs that are not initializers become Parameters, in graph order, named as in
///   the graph; graph outputs become Results, in order, named as the graph outputs;
/// - initializers and `Constant` nodes become Constants;
/// - every other node becomes one or more IR ops: elementwise ops, layout ops (Reshape,
///   Transpose, Slice, Concat, Gather), reductions, MatMul, Softmax, LayerNorm, Convolution,
///   BatchNormInference, MaxPool; composite operators are decomposed (e.g.
///   `Softplus = relu(x) + log1p(exp(-|x|))`), and ONNX's multidirectional broadcasting
///   becomes explicit `Broadcast` nodes;
/// - a node whose inputs are all constants is evaluated at import with the reference kernels
///   and becomes a Constant, so shape computations (`Shape -> Gather -> Unsqueeze -> Concat
///   -> Reshape`) fold into the static attributes the IR needs;
/// - each IR node created for an ONNX node carries the provenance tag
///   `onnx:<op_type>:<node name>` (the first output's name for an unnamed node).
///
/// Element types FLOAT, DOUBLE, INT32, INT64 and BOOL map to graphlift's f32, f64, i32,
/// i64 and bool. Shapes are static: symbolic input dimensions take their values from
/// [`crate::ImportOptions`] ([`crate::import_model_file_with`]).
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    /// Nodes, topologically sorted.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// The graph's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Constant tensors, named; a graph input of the same name is not a parameter.
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Sparse initializers; present only to be reported (graphlift does not read them).
    #[prost(message, repeated, tag = "15")]
    pub sparse_initializer: Vec<Opaque>,
    /// Documentation.
    #[prost(string, tag = "10")]
    pub doc_string: String,
    /// Graph inputs.
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// Graph outputs.
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    /// Types of intermediate values (optional).
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// `NodeProto`: one operator application.
///
/// Messages are built in code and encoded with [`prost::Message::encode_to_vec`]
/// (re-exported as [`crate::prost`]):
///
/// ```
/// use graphlift_onnx::prost::Message;
/// use graphlift_onnx::proto::{NodeProto, OperatorSetIdProto};
/// let node = NodeProto {
///     op_type: "Relu".into(),
///     input: vec!["x".into()],
///     output: vec!["y".into()],
///     ..Default::default()
/// };
/// let bytes = node.encode_to_vec();
/// assert_eq!(NodeProto::decode(bytes.as_slice()).unwrap(), node);
/// # let _ = OperatorSetIdProto::default();
/// ```
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    /// Input value names; an empty name is an omitted optional input.
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Output value names.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// The node's name (optional).
    #[prost(string, tag = "3")]
    pub name: String,
    /// The operator (`Add`, `Relu`, ...).
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// The operator's domain; empty for the default ONNX domain.
    #[prost(string, tag = "7")]
    pub domain: String,
    /// Attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// Documentation.
    #[prost(string, tag = "6")]
    pub doc_string: String,
}

/// `AttributeProto`: a named attribute; `type` says which value field is in use.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Set only inside function bodies: the name of the caller's attribute it refers to.
    #[prost(string, tag = "21")]
    pub ref_attr_name: String,
    /// Documentation.
    #[prost(string, tag = "13")]
    pub doc_string: String,
    /// An [`attribute_type`] code.
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    /// `FLOAT` value.
    #[prost(float, tag = "2")]
    pub f: f32,
    /// `INT` value.
    #[prost(int64, tag = "3")]
    pub i: i64,
    /// `STRING` value (bytes, UTF-8 by convention).
    #[prost(bytes = "vec", tag = "4")]
    pub s: Vec<u8>,
    /// `TENSOR` value.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// `GRAPH` value: a subgraph (`If` branches, `Loop` and `Scan` bodies).
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    /// `GRAPHS` value.
    #[prost(message, repeated, tag = "11")]
    pub graphs: Vec<GraphProto>,
    /// `SPARSE_TENSOR` value; only its presence is recorded.
    #[prost(message, optional, tag = "22")]
    pub sparse_tensor: Option<Opaque>,
    /// `FLOATS` value.
    #[prost(float, repeated, packed = "false", tag = "7")]
    pub floats: Vec<f32>,
    /// `INTS` value.
    #[prost(int64, repeated, packed = "false", tag = "8")]
    pub ints: Vec<i64>,
    /// `STRINGS` value.
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    /// `TENSORS` value.
    #[prost(message, repeated, tag = "10")]
    pub tensors: Vec<TensorProto>,
}

/// `TensorProto`: a serialized dense tensor (an initializer, a `Constant` value, a test
/// input or output `.pb` file).
///
/// Data is in `raw_data` (little-endian, packed; `BOOL` one byte per element) or in the
/// typed field for the data type: `float_data` (FLOAT), `double_data` (DOUBLE),
/// `int64_data` (INT64), `int32_data` (INT32, BOOL and the narrow integer types),
/// `uint64_data` (UINT32, UINT64).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// Extents, outermost first.
    #[prost(int64, repeated, packed = "false", tag = "1")]
    pub dims: Vec<i64>,
    /// A [`data_type`] code.
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// Chunked tensors; only its presence is recorded (graphlift rejects them).
    #[prost(message, optional, tag = "3")]
    pub segment: Option<Opaque>,
    /// FLOAT (and COMPLEX64) data.
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// INT32, BOOL, INT8, UINT8, INT16, UINT16, FLOAT16, BFLOAT16 data.
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// STRING data.
    #[prost(bytes = "vec", repeated, tag = "6")]
    pub string_data: Vec<Vec<u8>>,
    /// INT64 data.
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// The tensor's name (the value name of an initializer).
    #[prost(string, tag = "8")]
    pub name: String,
    /// Documentation.
    #[prost(string, tag = "12")]
    pub doc_string: String,
    /// Packed little-endian data, for any fixed-size data type.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    /// Location of external data; only its presence is recorded (graphlift rejects it).
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<Opaque>,
    /// A [`data_location`] code.
    #[prost(int32, tag = "14")]
    pub data_location: i32,
    /// DOUBLE (and COMPLEX128) data.
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// UINT32 and UINT64 data.
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
}

/// `ValueInfoProto`: a named value and its type (graph inputs and outputs).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    /// The value's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its type.
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
    /// Documentation.
    #[prost(string, tag = "3")]
    pub doc_string: String,
}

/// `TypeProto`: the type of a value. Exactly one field is set (a proto `oneof`); graphlift
/// imports tensors only and records the presence of the others to report them.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// A dense tensor.
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TypeProtoTensor>,
    /// A sequence.
    #[prost(message, optional, tag = "4")]
    pub sequence_type: Option<Opaque>,
    /// A map.
    #[prost(message, optional, tag = "5")]
    pub map_type: Option<Opaque>,
    /// An opaque type.
    #[prost(message, optional, tag = "7")]
    pub opaque_type: Option<Opaque>,
    /// A sparse tensor.
    #[prost(message, optional, tag = "8")]
    pub sparse_tensor_type: Option<Opaque>,
    /// An optional value.
    #[prost(message, optional, tag = "9")]
    pub optional_type: Option<Opaque>,
    /// Denotation.
    #[prost(string, tag = "6")]
    pub denotation: String,
}

/// `TypeProto.Tensor`: element type and (optional) shape of a dense tensor.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProtoTensor {
    /// A [`data_type`] code.
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// The shape; absent means unknown rank.
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// `TensorShapeProto`: one dimension per axis.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// Dimensions, outermost first.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<TensorShapeDimension>,
}

/// `TensorShapeProto.Dimension`: a known extent (`dim_value`), a symbolic one (`dim_param`),
/// or neither (unknown). A proto `oneof`: at most one is set.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeDimension {
    /// A known extent.
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    /// A symbolic extent (`N`, `batch`).
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
    /// Denotation.
    #[prost(string, tag = "3")]
    pub denotation: String,
}
