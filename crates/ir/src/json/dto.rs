//! The on-disk JSON format as serde data-transfer structs, kept apart from the core types so
//! that the IR can change without silently changing what files mean.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::attrs::{
    CumSum, GridSample, PadMode, RecurrentSequence, Resize, ScatterReduction, SliceAxis, TopK,
    Window,
};

/// The whole document: a format tag, a version and one function.
///
/// These structs are the format: a field added, renamed or retyped here is a new format
/// version ([`super::JSON_VERSION`]). Every struct rejects unknown fields, so a misspelt
/// field in a hand-edited file is an error, not a silent default.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DocumentDto<N> {
    /// Always [`super::JSON_FORMAT`].
    pub format: String,
    /// Always [`super::JSON_VERSION`] for documents this build writes.
    pub version: u64,
    /// The function.
    pub function: FunctionDto<N>,
}

/// A function: its name, parameter and result names in call order, and its nodes in arena
/// order. Fused kernel bodies use the same struct.
///
/// `N` is how the nodes are represented: [`WrittenNode`] when writing, and
/// `serde_json::Value` when reading, so that each node (and each node of a fused kernel
/// body) is decoded on its own and an error names the node it is in.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FunctionDto<N> {
    pub name: String,
    pub parameters: Vec<String>,
    pub results: Vec<String>,
    /// Nodes run on every call though no result reads them (version 2; left out when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sinks: Vec<String>,
    pub nodes: Vec<N>,
}

/// A node as written: kernel bodies inside it are written the same way.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub(super) struct WrittenNode(pub NodeDto<WrittenNode>);

/// One node. Inputs and control dependencies refer to other nodes of the same function by
/// name (names are unique within a function).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NodeDto<N> {
    pub name: String,
    pub op: OpDto<N>,
    pub inputs: Vec<InputDto>,
    pub outputs: Vec<TypeDto>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_history: Vec<String>,
    pub site: SiteDto,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_deps: Vec<String>,
}

/// An op: its nGraph type name and the attributes that op has (and no others).
///
/// Missing optional attributes read as `None` (serde's rule for `Option` fields).
///
/// `to` for `Convert`; `shape` for `Broadcast` and `Reshape`; `element_type` and `values`
/// for `Constant`; `body` for `FusedKernel`; `perm` for `Transpose`; `slice` for `Slice`;
/// `low_pads`, `high_pads` and `interior` for `Pad`, which may take `pad_mode` (absent:
/// constant); `axis`, `keep_dims` and `select_last_index` for `ArgMax` and `ArgMin`;
/// `resize` for `Resize`; `top_k` for `TopK`; `cum_sum` for `CumSum`; `grid_sample` for `GridSample`; `reduction` for `ScatterNd`;
/// `axis` for `Concat`, `Gather`, `Softmax` and `LayerNorm`; `axes` and `keep_dims` for the
/// `Reduce*` ops; `epsilon` for `LayerNorm` and `BatchNormInference`; `window` for `MaxPool`, `MaxPoolIndices`
/// and `Convolution`, which also takes `groups`; `heads` and `scale` for `Attention`; `recurrent`
/// for `RNNSequence`, `GRUSequence` and `LSTMSequence`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OpDto<N> {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub element_type: Option<String>,
    /// Constant elements, row-major: see [`super`] for the encoding of each element type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Box<FunctionDto<N>>>,
    /// A `Variable`'s initializer (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initializer: Option<Box<FunctionDto<N>>>,
    /// The seed of `RandomUniform` / `RandomNormal` (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `RandomUniform`'s bounds and `RandomNormal`'s mean and scale (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perm: Option<Vec<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice: Option<Vec<SliceAxis>>,
    /// `Pad`'s `low`, `high` and `interior` (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_pads: Option<Vec<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_pads: Option<Vec<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interior: Option<Vec<usize>>,
    /// `Pad`'s mode other than constant (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pad_mode: Option<PadMode>,
    /// `ArgMax`'s and `ArgMin`'s tie rule (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub select_last_index: Option<bool>,
    /// `Resize`'s attribute (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resize: Option<Resize>,
    /// The attributes of `RNNSequence`, `GRUSequence` and `LSTMSequence` (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurrent: Option<RecurrentSequence>,
    /// `TopK`'s attribute (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<TopK>,
    /// `CumSum`'s attribute (version 2: builds older than the op reject it as an unknown op
    /// type).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cum_sum: Option<CumSum>,
    /// `GridSample`'s attribute (version 2, as `cum_sum`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid_sample: Option<GridSample>,
    /// `ScatterNd`'s reduction (version 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduction: Option<ScatterReduction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub axis: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub axes: Option<Vec<usize>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep_dims: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epsilon: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<usize>,
    /// `Attention`'s heads (its `scale` is the field above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<usize>,
    /// `QuantizedMatMul`'s activation zero point (its `x_scale` is `scale`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_point: Option<u8>,
}

impl<N> OpDto<N> {
    /// An op with no attributes.
    pub fn plain(kind: &str) -> OpDto<N> {
        OpDto {
            kind: kind.to_string(),
            to: None,
            shape: None,
            element_type: None,
            values: None,
            body: None,
            initializer: None,
            seed: None,
            low: None,
            high: None,
            mean: None,
            scale: None,
            perm: None,
            slice: None,
            low_pads: None,
            high_pads: None,
            interior: None,
            pad_mode: None,
            select_last_index: None,
            resize: None,
            recurrent: None,
            top_k: None,
            cum_sum: None,
            grid_sample: None,
            reduction: None,
            axis: None,
            axes: None,
            keep_dims: None,
            epsilon: None,
            window: None,
            groups: None,
            heads: None,
            zero_point: None,
        }
    }
}

/// One input: output `output` of the node named `node`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct InputDto {
    pub node: String,
    pub output: usize,
}

/// A tensor type: element type name (`f32`, `f64`, `i32`, `i64`, `bool`) and shape.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TypeDto {
    pub element_type: String,
    pub shape: Vec<usize>,
}

/// A creation site.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SiteDto {
    pub file: String,
    pub line: u32,
    pub column: u32,
}
