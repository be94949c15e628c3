//! ModelProto -> [`Function`]: graph inputs, initializers, nodes and outputs.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use graphlift_ir::control_flow::DEFAULT_SPECIALIZATION_CAPACITY;
use graphlift_ir::{Function, TensorType};
use graphlift_runtime::Tensor;
use prost::Message;

use crate::error::{NodeRef, OnnxError};
use crate::proto::{GraphProto, ModelProto, NodeProto};

mod binding;
mod control_flow;
mod importer;
mod value_info;

pub use binding::{graph_input_names, import_model_file_binding};
pub(crate) use binding::{import_binding, input_names_of};
pub(crate) use control_flow::free_names;
pub(crate) use importer::unique_name;
use importer::Importer;
use value_info::{bind_dim_params, check_declared_type, value_type};

/// A graph input or output of an imported model: its ONNX value name and its type.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelValue {
    /// The ONNX value name (also the name of the Parameter or Result node).
    pub name: String,
    /// Element type and static shape.
    pub tensor_type: TensorType,
}

/// How to import a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportOptions {
    /// Static shapes for graph inputs, by input name. An input whose declared shape has a
    /// symbolic (`dim_param`) or unknown extent needs one, unless each such extent is a
    /// `dim_param` that another input's given shape binds (`input_ids` `[1, 128]` binds
    /// `batch_size` and `sequence_length` for `attention_mask` too). A given shape must
    /// have the declared rank and agree with every fixed extent.
    pub input_shapes: HashMap<String, Vec<usize>>,
    /// Static shapes for the graph inputs that are not initializers, in graph order (the
    /// order of the Function's parameters), as a caller holding the input tensors has them;
    /// an entry in `input_shapes` wins over one here.
    pub ordered_input_shapes: Vec<Vec<usize>>,
    /// Values of graph inputs known at import, by input name: the shape-like operands
    /// (`Reshape` shapes, `Resize` scales, `Pad` pads, `Tile` repeats) that a model takes as
    /// inputs ([`OnnxError::RunTimeOperand`] names them). Each such input becomes a Constant
    /// of its value, so the subgraphs over it fold, and is not a parameter of the Function:
    /// the caller leaves it out of the call. A value must have the input's declared element
    /// type and fit its declared shape.
    pub input_values: HashMap<String, Tensor>,
    /// The most specialisations a `Loop` body specialised per iteration keeps, in entries
    /// (least recently used evicted first; `0` keeps none, so each iteration imports and
    /// compiles its body anew); each backend keeps as many compilations of them
    /// ([`graphlift_ir::control_flow::Specialized::with_capacity`]). Default:
    /// [`DEFAULT_SPECIALIZATION_CAPACITY`], 1,024.
    pub specialization_capacity: usize,
}

impl Default for ImportOptions {
    /// No shapes or values given; [`DEFAULT_SPECIALIZATION_CAPACITY`] specialisations.
    fn default() -> ImportOptions {
        ImportOptions {
            input_shapes: HashMap::new(),
            ordered_input_shapes: Vec::new(),
            input_values: HashMap::new(),
            specialization_capacity: DEFAULT_SPECIALIZATION_CAPACITY,
        }
    }
}

/// An ONNX model imported as a graphlift [`Function`].
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedModel {
    /// The computation. Its parameters are the graph inputs that are not initializers, in
    /// graph order, named as in the graph; its results are the graph outputs in order,
    /// Result nodes named as the graph outputs.
    pub function: Function,
    /// The parameters, in call order (one per Function parameter).
    pub inputs: Vec<ModelValue>,
    /// The results, in call order (one per Function result).
    pub outputs: Vec<ModelValue>,
    /// The version of the default (`ai.onnx`) operator set the model imports.
    pub opset: i64,
    /// `producer_name` and, if set, `producer_version` of the model (`pytorch 2.3`).
    pub producer: String,
}

/// Reads and imports an ONNX model file (a serialized `ModelProto`), mapping it into memory
/// with `memmap2`.
///
/// # Errors
/// [`OnnxError::Io`] if the file cannot be opened or mapped; otherwise as
/// [`import_model_bytes`], with a [`OnnxError::Protobuf`] naming the file (e.g. one that was
/// cut short).
pub fn import_model_file(path: &Path) -> Result<ImportedModel, OnnxError> {
    import_model_file_with(path, &ImportOptions::default())
}

/// [`import_model_file`] with [`ImportOptions`] (shapes for symbolic input dimensions).
///
/// # Errors
/// As [`import_model_file`]; [`OnnxError::ShapeMismatch`] naming the input for a given
/// shape that does not fit its declaration.
pub fn import_model_file_with(
    path: &Path,
    options: &ImportOptions,
) -> Result<ImportedModel, OnnxError> {
    let model = read_model_file(path)?;
    import_with_source(&model, &path.display().to_string(), options)
}

/// Reads and decodes the model file at `path`, mapping it into memory with `memmap2`.
///
/// # Errors
/// [`OnnxError::Io`] if the file cannot be opened or mapped; [`OnnxError::Protobuf`]
/// naming the file for bytes that are not a `ModelProto`.
pub(crate) fn read_model_file(path: &Path) -> Result<ModelProto, OnnxError> {
    let io = |e: std::io::Error| OnnxError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let source = path.display().to_string();
    if len == 0 {
        return decode(&[], Some(&source));
    }
    // SAFETY: the mapping is private and read-only, and lives only for this call. The bytes
    // are only read, by the protobuf decoder, which copies everything it keeps into owned
    // messages; no reference into the mapping outlives it. Another process truncating the
    // file while it is mapped would fault (SIGBUS) rather than give wrong data; that is the
    // documented risk of mapping a file, accepted here for large models.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    decode(&map, Some(&source))
}

/// Imports a serialized ONNX `ModelProto`.
///
/// Supports the default ONNX domain's operators of [`crate::SUPPORTED_OPS`] (see the crate
/// docs), element types FLOAT, DOUBLE, INT32, INT64 and BOOL, and static shapes (symbolic
/// input dimensions need [`import_model_bytes_with`]).
///
/// # Errors
/// [`OnnxError::Protobuf`] for bytes that are not a `ModelProto` (truncated, corrupt);
/// otherwise as [`import_model`].
pub fn import_model_bytes(bytes: &[u8]) -> Result<ImportedModel, OnnxError> {
    import_bytes_from(bytes, None, &ImportOptions::default())
}

/// [`import_model_bytes`] with [`ImportOptions`].
///
/// # Errors
/// As [`import_model_bytes`] and [`import_model_file_with`].
pub fn import_model_bytes_with(
    bytes: &[u8],
    options: &ImportOptions,
) -> Result<ImportedModel, OnnxError> {
    import_bytes_from(bytes, None, options)
}

/// Decodes and imports `bytes`, read from the file `path` if given.
fn import_bytes_from(
    bytes: &[u8],
    path: Option<&str>,
    options: &ImportOptions,
) -> Result<ImportedModel, OnnxError> {
    import_with_source(&decode(bytes, path)?, path.unwrap_or("onnx"), options)
}

/// Decodes `bytes`, read from the file `path` if given, as a `ModelProto`.
fn decode(bytes: &[u8], path: Option<&str>) -> Result<ModelProto, OnnxError> {
    ModelProto::decode(bytes).map_err(|e| OnnxError::Protobuf {
        path: path.map(str::to_string),
        message_type: "ModelProto",
        message: e.to_string(),
    })
}

/// Imports a decoded `ModelProto` (e.g. one built in code with [`crate::proto`]).
///
/// Each IR node created for an ONNX node carries the provenance tag
/// `onnx:<op_type>:<node name>` (the first output's name for an unnamed node) and a
/// creation site `<source>:<node index + 1>:1`. The node producing an ONNX value is named
/// after the value (or, when that name is a graph output's, which its Result takes, after the
/// ONNX node); helper nodes of a decomposition are named `<node name>/<IR op>`.
///
/// # Errors
/// [`OnnxError::InvalidModel`] (no graph, no default-domain opset, duplicate value names,
/// bad initializer data), [`OnnxError::UnsupportedOp`], [`OnnxError::UnsupportedElementType`],
/// [`OnnxError::UnsupportedType`] (non-tensor or dynamic-shape inputs),
/// [`OnnxError::BadAttribute`], [`OnnxError::MissingInput`], [`OnnxError::ShapeMismatch`],
/// [`OnnxError::TypeMismatch`], [`OnnxError::Arity`]: each names the node (name and
/// `op_type`) or graph item it is about.
pub fn import_model(model: &ModelProto) -> Result<ImportedModel, OnnxError> {
    import_with_source(model, "onnx", &ImportOptions::default())
}

/// [`import_model`] with [`ImportOptions`].
///
/// # Errors
/// As [`import_model`] and [`import_model_file_with`].
pub fn import_model_with(
    model: &ModelProto,
    options: &ImportOptions,
) -> Result<ImportedModel, OnnxError> {
    import_with_source(model, "onnx", options)
}

fn import_with_source(
    model: &ModelProto,
    source: &str,
    options: &ImportOptions,
) -> Result<ImportedModel, OnnxError> {
    let graph_ref = |message: String| OnnxError::InvalidModel {
        at: NodeRef::item("model", ""),
        message,
    };
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| graph_ref("the model has no graph".into()))?;
    let opset = model
        .opset_import
        .iter()
        .filter(|o| is_default_domain(&o.domain))
        .map(|o| o.version)
        .max()
        .ok_or_else(|| {
            graph_ref("the model imports no opset of the default (ai.onnx) domain".into())
        })?;
    let opsets: HashMap<String, i64> = model
        .opset_import
        .iter()
        .map(|o| (o.domain.clone(), o.version))
        .collect();
    let producer = if model.producer_version.is_empty() {
        model.producer_name.clone()
    } else {
        format!("{} {}", model.producer_name, model.producer_version)
    };
    let mut importer = Importer::new(graph, opset, opsets, source)?;
    importer.specialization_capacity = options.specialization_capacity;
    importer.inputs(graph, options)?;
    for (index, node) in graph.node.iter().enumerate() {
        importer
            .node(index, node)
            .map_err(|e| explain_order(e, graph, index))?;
    }
    let outputs = importer.outputs(graph)?;
    let inputs = importer.parameters;
    let mut function = importer.function;
    function.remove_dead_nodes();
    function.validate().map_err(|e| OnnxError::Ir {
        at: NodeRef::item("graph", &graph.name),
        source: Box::new(e),
    })?;
    Ok(ImportedModel {
        function,
        inputs,
        outputs,
        opset,
        producer,
    })
}

/// Explains a [`OnnxError::MissingInput`] of node `index` whose value node `index` itself or
/// a later node produces. ONNX lists nodes in topological order, so this is a cycle (the
/// producer depends on node `index`), named node by node, or nodes out of order. Other errors
/// pass through.
fn explain_order(e: OnnxError, graph: &GraphProto, index: usize) -> OnnxError {
    let OnnxError::MissingInput {
        at,
        index: slot,
        input,
    } = &e
    else {
        return e;
    };
    let produces = |n: &NodeProto| n.output.iter().any(|o| o == input);
    let Some(p) = (index..graph.node.len()).find(|&k| produces(&graph.node[k])) else {
        return e;
    };
    let what = |k: usize| node_ref(k, &graph.node[k]).to_string();
    let message = match dependency_path(graph, index, p) {
        Some(path) => {
            let cycle: Vec<String> = path.iter().chain([&index]).map(|&k| what(k)).collect();
            format!(
                "input {slot} `{input}` is produced by {}, which depends on this node: \
                 cycle {}",
                what(p),
                cycle.join(" -> ")
            )
        }
        None => format!(
            "input {slot} `{input}` is produced by {}, which comes later (node {p}); ONNX \
             nodes must be listed in topological order",
            what(p)
        ),
    };
    OnnxError::InvalidModel {
        at: at.clone(),
        message,
    }
}

/// The nodes on a path of data dependencies from node `from` to node `to` (both included,
/// `[from]` when they are the same), found by a breadth-first search back from `to` over the
/// producers of its inputs; `None` when `to` does not depend on `from`.
fn dependency_path(graph: &GraphProto, from: usize, to: usize) -> Option<Vec<usize>> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (k, n) in graph.node.iter().enumerate() {
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            producer.entry(o.as_str()).or_insert(k);
        }
    }
    // consumer[v] = the node through which the search reached v (v feeds it).
    let mut consumer: HashMap<usize, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([to]);
    let mut seen = HashSet::from([to]);
    while let Some(u) = queue.pop_front() {
        if u == from {
            let mut path = vec![from];
            let mut cur = from;
            while let Some(&next) = consumer.get(&cur) {
                path.push(next);
                cur = next;
            }
            return Some(path);
        }
        for name in &graph.node[u].input {
            if let Some(&v) = producer.get(name.as_str()) {
                if seen.insert(v) {
                    consumer.insert(v, u);
                    queue.push_back(v);
                }
            }
        }
    }
    None
}

/// `true` for the default ONNX domain (`""` or `ai.onnx`).
pub(crate) fn is_default_domain(domain: &str) -> bool {
    domain.is_empty() || domain == "ai.onnx"
}

/// The location of node `index` for error messages.
/// The base of the IR names of a node's nodes: its name, else its first non-empty output's,
/// else its `op_type`.
pub(crate) fn node_base_name(node: &NodeProto) -> String {
    if !node.name.is_empty() {
        return node.name.clone();
    }
    node.output
        .iter()
        .find(|o| !o.is_empty())
        .cloned()
        .unwrap_or_else(|| node.op_type.clone())
}

pub(crate) fn node_ref(index: usize, node: &NodeProto) -> NodeRef {
    let name = if !node.name.is_empty() {
        node.name.clone()
    } else {
        match node.output.iter().find(|o| !o.is_empty()) {
            Some(o) => format!("#{index} (output `{o}`)"),
            None => format!("#{index}"),
        }
    };
    NodeRef {
        name,
        op_type: node.op_type.clone(),
    }
}
