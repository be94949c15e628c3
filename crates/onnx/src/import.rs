//! ModelProto -> [`Function`]: graph inputs, initializers, nodes and outputs.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use graphlift_ir::{CreationSite, Function, NodeId, Output, Shape, TensorType};
use prost::Message;

use crate::emit::NodeEmitter;
use crate::error::{NodeRef, OnnxError};
use crate::proto::{GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto};
use crate::tensor::{data_type_name, element_type, shape_from_dims, tensor_from_proto};

/// A graph input or output of an imported model: its ONNX value name and its type.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelValue {
    /// The ONNX value name (also the name of the Parameter or Result node).
    pub name: String,
    /// Element type and static shape.
    pub tensor_type: TensorType,
}

/// How to import a model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    let io = |e: std::io::Error| OnnxError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    let source = path.display().to_string();
    if len == 0 {
        return import_bytes_from(&[], Some(&source), options);
    }
    // SAFETY: the mapping is private and read-only, and lives only for this call. The bytes
    // are only read, by the protobuf decoder, which copies everything it keeps into owned
    // messages; no reference into the mapping outlives it. Another process truncating the
    // file while it is mapped would fault (SIGBUS) rather than give wrong data; that is the
    // documented risk of mapping a file, accepted here for large models.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    import_bytes_from(&map, Some(&source), options)
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
    let model = ModelProto::decode(bytes).map_err(|e| OnnxError::Protobuf {
        path: path.map(str::to_string),
        message_type: "ModelProto",
        message: e.to_string(),
    })?;
    import_with_source(&model, path.unwrap_or("onnx"), options)
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

struct Importer<'m> {
    graph: &'m GraphProto,
    function: Function,
    /// ONNX value name -> the IR value holding it.
    values: HashMap<String, Output>,
    /// Initializers not yet turned into Constants (made on first use).
    initializers: HashMap<&'m str, &'m TensorProto>,
    /// Graph output names: kept free for the Result nodes.
    reserved: HashSet<String>,
    parameters: Vec<ModelValue>,
    opset: i64,
    opsets: HashMap<String, i64>,
    source: std::sync::Arc<str>,
}

impl<'m> Importer<'m> {
    fn new(
        graph: &'m GraphProto,
        opset: i64,
        opsets: HashMap<String, i64>,
        source: &str,
    ) -> Result<Importer<'m>, OnnxError> {
        let name = if graph.name.is_empty() {
            "onnx_model"
        } else {
            graph.name.as_str()
        };
        let mut initializers = HashMap::new();
        for t in &graph.initializer {
            if t.name.is_empty() {
                return Err(OnnxError::InvalidModel {
                    at: NodeRef::item("initializer", ""),
                    message: "an initializer has no name".into(),
                });
            }
            if initializers.insert(t.name.as_str(), t).is_some() {
                return Err(OnnxError::InvalidModel {
                    at: NodeRef::item("initializer", &t.name),
                    message: "two initializers have this name".into(),
                });
            }
        }
        if !graph.sparse_initializer.is_empty() {
            return Err(OnnxError::UnsupportedType {
                at: NodeRef::item("graph", &graph.name),
                message: "sparse initializers".into(),
            });
        }
        let mut reserved = HashSet::new();
        for o in &graph.output {
            if !reserved.insert(o.name.clone()) {
                return Err(OnnxError::InvalidModel {
                    at: NodeRef::item("graph output", &o.name),
                    message: "two graph outputs have this name".into(),
                });
            }
        }
        Ok(Importer {
            graph,
            function: Function::new(name),
            values: HashMap::new(),
            initializers,
            reserved,
            parameters: Vec::new(),
            opset,
            opsets,
            source: source.into(),
        })
    }

    /// Parameters for the graph inputs that are not initializers.
    fn inputs(&mut self, graph: &GraphProto, options: &ImportOptions) -> Result<(), OnnxError> {
        let mut given: HashMap<String, Vec<usize>> = graph
            .input
            .iter()
            .filter(|vi| !self.initializers.contains_key(vi.name.as_str()))
            .zip(&options.ordered_input_shapes)
            .map(|(vi, s)| (vi.name.clone(), s.clone()))
            .collect();
        given.extend(options.input_shapes.clone());
        let bindings = bind_dim_params(graph, &given)?;
        if let Some(name) = given
            .keys()
            .find(|n| !graph.input.iter().any(|vi| &vi.name == *n))
        {
            return Err(OnnxError::InvalidModel {
                at: NodeRef::item("graph input", name),
                message: "a shape is given for an input the graph does not have".into(),
            });
        }
        for vi in &graph.input {
            if self.initializers.contains_key(vi.name.as_str()) {
                continue;
            }
            let at = NodeRef::item("graph input", &vi.name);
            if vi.name.is_empty() {
                return Err(OnnxError::InvalidModel {
                    at,
                    message: "a graph input has no name".into(),
                });
            }
            if self.values.contains_key(&vi.name) {
                return Err(OnnxError::InvalidModel {
                    at,
                    message: "two graph inputs have this name".into(),
                });
            }
            let shape = given.get(&vi.name).map(Vec::as_slice);
            let t = value_type(vi, &at, shape, &bindings)?;
            let ir = |e| OnnxError::Ir {
                at: at.clone(),
                source: Box::new(e),
            };
            let id = self
                .function
                .add_parameter(vi.name.clone(), t.element_type, t.shape.clone())
                .map_err(ir)?;
            self.function
                .add_tag(id, format!("onnx:graph_input:{}", vi.name))
                .map_err(ir)?;
            self.values.insert(vi.name.clone(), Output::from(id));
            self.parameters.push(ModelValue {
                name: vi.name.clone(),
                tensor_type: t,
            });
        }
        Ok(())
    }

    /// The IR value of an ONNX value name, making the Constant of an initializer on first
    /// use.
    fn value(&mut self, name: &str, at: &NodeRef, index: usize) -> Result<Output, OnnxError> {
        if let Some(&o) = self.values.get(name) {
            return Ok(o);
        }
        let Some(t) = self.initializers.remove(name) else {
            return Err(OnnxError::MissingInput {
                at: at.clone(),
                index,
                input: name.to_string(),
            });
        };
        let init_at = NodeRef::item("initializer", name);
        let (data, shape) = tensor_from_proto(t, &init_at)?;
        let ir = |e| OnnxError::Ir {
            at: init_at.clone(),
            source: Box::new(e),
        };
        let id = self.function.add_constant(data, shape).map_err(ir)?;
        let node_name = unique_name(&self.function, &self.reserved, name);
        self.function.set_name(id, node_name).map_err(ir)?;
        self.function
            .add_tag(id, format!("onnx:initializer:{name}"))
            .map_err(ir)?;
        let o = Output::from(id);
        self.values.insert(name.to_string(), o);
        Ok(o)
    }

    fn node(&mut self, index: usize, node: &NodeProto) -> Result<(), OnnxError> {
        let at = node_ref(index, node);
        if !is_default_domain(&node.domain) {
            return Err(OnnxError::UnsupportedOp {
                at,
                op_type: node.op_type.clone(),
                domain: node.domain.clone(),
                opset: self.opsets.get(&node.domain).copied().unwrap_or(0),
            });
        }
        let inputs = node
            .input
            .iter()
            .enumerate()
            .map(|(i, name)| {
                if name.is_empty() {
                    Ok(None)
                } else {
                    self.value(name, &at, i).map(Some)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let site = CreationSite {
            file: self.source.clone(),
            line: u32::try_from(index + 1).unwrap_or(u32::MAX),
            column: 1,
        };
        let mut emitter = NodeEmitter::new(
            &mut self.function,
            node,
            at.clone(),
            self.opset,
            site,
            &self.reserved,
        );
        let outputs = crate::ops::convert(&mut emitter, &inputs)?;
        let created: HashSet<NodeId> = emitter.created().iter().copied().collect();
        let wanted = node.output.iter().filter(|o| !o.is_empty()).count();
        if node.output.len() > outputs.len() && wanted > 0 {
            return Err(OnnxError::Arity {
                at,
                message: format!(
                    "has {} outputs; graphlift's {} produces {}",
                    node.output.len(),
                    node.op_type,
                    outputs.len()
                ),
            });
        }
        for (name, &out) in node.output.iter().zip(&outputs) {
            if name.is_empty() {
                continue;
            }
            if self.values.contains_key(name) || self.initializers.contains_key(name.as_str()) {
                return Err(OnnxError::InvalidModel {
                    message: format!(
                        "output `{name}` is already {} (ONNX graphs are SSA: one producer \
                         per value)",
                        self.definition(name, index)
                    ),
                    at,
                });
            }
            if created.contains(&out.node) {
                self.name_producer(out.node, name, node, &at)?;
            }
            self.values.insert(name.clone(), out);
        }
        Ok(())
    }

    /// What first defined the value `name`, which node `index` defines again: an earlier
    /// node, a graph input, an initializer, or an earlier output of node `index` itself.
    fn definition(&self, name: &str, index: usize) -> String {
        let nodes = &self.graph.node;
        if let Some(k) = (0..index).find(|&k| nodes[k].output.iter().any(|o| o == name)) {
            format!("produced by {}", node_ref(k, &nodes[k]))
        } else if self.graph.input.iter().any(|vi| vi.name == name) {
            "a graph input".to_string()
        } else if self.graph.initializer.iter().any(|t| t.name == name) {
            "an initializer".to_string()
        } else {
            "an earlier output of this node".to_string()
        }
    }

    /// Names the node that produces ONNX value `value`: the value's name, else the ONNX
    /// node's name, else it keeps its helper name.
    fn name_producer(
        &mut self,
        id: NodeId,
        value: &str,
        node: &NodeProto,
        at: &NodeRef,
    ) -> Result<(), OnnxError> {
        let free = |f: &Function, n: &str| {
            !n.is_empty() && !self.reserved.contains(n) && f.node_by_name(n).is_none()
        };
        let name = if free(&self.function, value) {
            value.to_string()
        } else if free(&self.function, &node.name) {
            node.name.clone()
        } else {
            return Ok(());
        };
        self.function.set_name(id, name).map_err(|e| OnnxError::Ir {
            at: at.clone(),
            source: Box::new(e),
        })
    }

    /// Results for the graph outputs, checking their declared types.
    fn outputs(&mut self, graph: &GraphProto) -> Result<Vec<ModelValue>, OnnxError> {
        let mut outputs = Vec::new();
        for (i, vi) in graph.output.iter().enumerate() {
            let at = NodeRef::item("graph output", &vi.name);
            let value = self.value(&vi.name, &at, i)?;
            let t = self
                .function
                .output_type(value)
                .map_err(|e| OnnxError::Ir {
                    at: at.clone(),
                    source: Box::new(e),
                })?
                .clone();
            check_declared_type(vi, &t, &at)?;
            // The Result takes the output's name; only a graph input passed straight through
            // under its own name can hold it already.
            let name = unique_name(&self.function, &HashSet::new(), &vi.name);
            let id = self
                .function
                .add_result(value, Some(name))
                .map_err(|e| OnnxError::Ir {
                    at: at.clone(),
                    source: Box::new(e),
                })?;
            self.function
                .add_tag(id, format!("onnx:graph_output:{}", vi.name))
                .map_err(|e| OnnxError::Ir {
                    at: at.clone(),
                    source: Box::new(e),
                })?;
            outputs.push(ModelValue {
                name: vi.name.clone(),
                tensor_type: t,
            });
        }
        Ok(outputs)
    }
}

/// `base` if no node has it and it is not reserved, else `base_1`, `base_2`, ...
pub(crate) fn unique_name(f: &Function, reserved: &HashSet<String>, base: &str) -> String {
    let taken = |n: &str| reserved.contains(n) || f.node_by_name(n).is_some();
    if !taken(base) {
        return base.to_string();
    }
    let mut k = 1usize;
    loop {
        let n = format!("{base}_{k}");
        if !taken(&n) {
            return n;
        }
        k += 1;
    }
}

/// The declared extents of a graph input: `Some(n)` for a fixed one, `Err(name)` for a
/// `dim_param`, `Ok(None)` for an unknown one (no value, a negative value as some exporters
/// write for "dynamic", or the anonymous `dim_param` `?`).
fn declared_dims(vi: &ValueInfoProto) -> Option<Vec<Result<Option<usize>, String>>> {
    let shape = vi.r#type.as_ref()?.tensor_type.as_ref()?.shape.as_ref()?;
    Some(
        shape
            .dim
            .iter()
            .map(|d| match (d.dim_value, &d.dim_param) {
                (Some(v), _) if v >= 0 => Ok(Some(v as usize)),
                // `?` is the exporters' anonymous placeholder, not a shared name.
                (_, Some(p)) if !p.is_empty() && p != "?" => Err(p.clone()),
                _ => Ok(None),
            })
            .collect(),
    )
}

/// The values of `dim_param`s fixed by the `given` input shapes.
fn bind_dim_params(
    graph: &GraphProto,
    given: &HashMap<String, Vec<usize>>,
) -> Result<HashMap<String, usize>, OnnxError> {
    let mut bindings: HashMap<String, (usize, String)> = HashMap::new();
    for vi in &graph.input {
        let (Some(given), Some(declared)) = (given.get(&vi.name), declared_dims(vi)) else {
            continue;
        };
        for (d, &n) in declared.iter().zip(given) {
            if let Err(p) = d {
                match bindings.get(p) {
                    Some((m, other)) if *m != n => {
                        return Err(OnnxError::ShapeMismatch {
                            at: NodeRef::item("graph input", &vi.name),
                            message: format!(
                                "dimension `{p}` is {n} here but {m} in input `{other}`"
                            ),
                        })
                    }
                    _ => {
                        bindings.insert(p.clone(), (n, vi.name.clone()));
                    }
                }
            }
        }
    }
    Ok(bindings.into_iter().map(|(p, (n, _))| (p, n)).collect())
}

/// The static tensor type of a graph input: its declared shape, with symbolic extents taken
/// from `given` (the shape the caller gave for this input) or `bindings`.
fn value_type(
    vi: &ValueInfoProto,
    at: &NodeRef,
    given: Option<&[usize]>,
    bindings: &HashMap<String, usize>,
) -> Result<TensorType, OnnxError> {
    let unsupported = |message: &str| OnnxError::UnsupportedType {
        at: at.clone(),
        message: message.to_string(),
    };
    let Some(tp) = &vi.r#type else {
        return Err(unsupported("no type is declared"));
    };
    let Some(tt) = &tp.tensor_type else {
        let kind = if tp.sequence_type.is_some() {
            "sequence"
        } else if tp.map_type.is_some() {
            "map"
        } else if tp.optional_type.is_some() {
            "optional"
        } else if tp.sparse_tensor_type.is_some() {
            "sparse tensor"
        } else if tp.opaque_type.is_some() {
            "opaque"
        } else {
            "no type is declared"
        };
        return Err(unsupported(kind));
    };
    let et = element_type(tt.elem_type, at)?;
    let Some(declared) = declared_dims(vi) else {
        return match given {
            Some(g) => Ok(TensorType::new(et, Shape::new(g))),
            None => Err(unsupported(
                "unknown rank (no shape); give the input's shape (graphlift needs static shapes)",
            )),
        };
    };
    if let Some(g) = given {
        let fits = g.len() == declared.len()
            && declared
                .iter()
                .zip(g)
                .all(|(d, &n)| !matches!(d, Ok(Some(m)) if *m != n));
        if !fits {
            let text: Vec<String> = declared
                .iter()
                .map(|d| match d {
                    Ok(Some(n)) => n.to_string(),
                    Ok(None) => "?".into(),
                    Err(p) => p.clone(),
                })
                .collect();
            return Err(OnnxError::ShapeMismatch {
                at: at.clone(),
                message: format!(
                    "the given shape {g:?} does not fit the declared [{}]",
                    text.join(", ")
                ),
            });
        }
        return Ok(TensorType::new(et, Shape::new(g)));
    }
    let dims = declared
        .iter()
        .enumerate()
        .map(|(axis, d)| match d {
            Ok(Some(n)) => Ok(*n as i64),
            Err(p) => bindings.get(p).map(|&n| n as i64).ok_or_else(|| {
                unsupported(&format!(
                    "symbolic dimension `{p}` on axis {axis}; give the input's shape \
                     (`--shape {}=...`): graphlift needs static shapes",
                    vi.name
                ))
            }),
            Ok(None) => Err(unsupported(&format!(
                "unknown dimension on axis {axis}; give the input's shape (`--shape {}=...`): \
                 graphlift needs static shapes",
                vi.name
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TensorType::new(et, shape_from_dims(&dims, at)?))
}

/// Checks a graph output's declared type (where declared) against the inferred one.
fn check_declared_type(vi: &ValueInfoProto, t: &TensorType, at: &NodeRef) -> Result<(), OnnxError> {
    let Some(tp) = &vi.r#type else { return Ok(()) };
    if tp.tensor_type.is_none()
        && (tp.sequence_type.is_some() || tp.map_type.is_some() || tp.optional_type.is_some())
    {
        return Err(OnnxError::UnsupportedType {
            at: at.clone(),
            message: "a graph output that is not a tensor".into(),
        });
    }
    let Some(tt) = &tp.tensor_type else {
        return Ok(());
    };
    if tt.elem_type != 0 {
        let declared = element_type(tt.elem_type, at)?;
        if declared != t.element_type {
            return Err(OnnxError::TypeMismatch {
                at: at.clone(),
                message: format!(
                    "declared {}, computed {}",
                    data_type_name(tt.elem_type),
                    t.element_type
                ),
            });
        }
    }
    if let Some(shape) = &tt.shape {
        let dims = t.shape.dims();
        let rank_ok = shape.dim.len() == dims.len();
        let dims_ok = rank_ok
            && shape.dim.iter().zip(dims).all(|(d, &n)| match d.dim_value {
                // A negative extent is some exporters' way of saying "dynamic".
                Some(v) if v >= 0 => usize::try_from(v) == Ok(n),
                _ => true,
            });
        if !dims_ok {
            let declared: Vec<String> = shape
                .dim
                .iter()
                .map(|d| match (d.dim_value, &d.dim_param) {
                    (Some(v), _) => v.to_string(),
                    (None, Some(p)) => p.clone(),
                    (None, None) => "?".into(),
                })
                .collect();
            return Err(OnnxError::ShapeMismatch {
                at: at.clone(),
                message: format!("declared [{}], computed {}", declared.join(", "), t.shape),
            });
        }
    }
    Ok(())
}
