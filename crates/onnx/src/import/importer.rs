//! The importer's walk over one graph: inputs and initializers, each node through the
//! op emitters, and the outputs, with the names and types they are declared with.

use std::collections::{HashMap, HashSet};

use graphlift_ir::{CreationSite, Function, NodeId, Output};

use crate::emit::NodeEmitter;
use crate::error::{NodeRef, OnnxError};
use crate::proto::{GraphProto, NodeProto, TensorProto};
use crate::tensor::tensor_from_proto;

use super::*;

pub(super) struct Importer<'m> {
    pub(super) graph: &'m GraphProto,
    pub(super) function: Function,
    /// ONNX value name -> the IR value holding it.
    pub(super) values: HashMap<String, Output>,
    /// Initializers not yet turned into Constants (made on first use).
    pub(super) initializers: HashMap<&'m str, &'m TensorProto>,
    /// Graph output names: kept free for the Result nodes.
    pub(super) reserved: HashSet<String>,
    pub(super) parameters: Vec<ModelValue>,
    pub(super) opset: i64,
    pub(super) opsets: HashMap<String, i64>,
    pub(super) source: std::sync::Arc<str>,
    /// [`super::ImportOptions::specialization_capacity`], for the loop bodies.
    pub(super) specialization_capacity: usize,
}

impl<'m> Importer<'m> {
    pub(super) fn new(
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
            specialization_capacity: graphlift_ir::control_flow::DEFAULT_SPECIALIZATION_CAPACITY,
        })
    }

    /// Parameters for the graph inputs that are not initializers.
    pub(super) fn inputs(
        &mut self,
        graph: &GraphProto,
        options: &ImportOptions,
    ) -> Result<(), OnnxError> {
        let mut given: HashMap<String, Vec<usize>> = graph
            .input
            .iter()
            .filter(|vi| !self.initializers.contains_key(vi.name.as_str()))
            .zip(&options.ordered_input_shapes)
            .map(|(vi, s)| (vi.name.clone(), s.clone()))
            .collect();
        given.extend(options.input_shapes.clone());
        for (name, v) in &options.input_values {
            given.insert(name.clone(), v.shape().dims().to_vec());
        }
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
            let known = options.input_values.get(&vi.name);
            let shape = given.get(&vi.name).map(Vec::as_slice);
            let t = value_type(vi, &at, shape, &bindings)?;
            let ir = |e| OnnxError::Ir {
                at: at.clone(),
                source: Box::new(e),
            };
            if let Some(v) = known {
                if v.element_type() != t.element_type {
                    return Err(OnnxError::TypeMismatch {
                        at,
                        message: format!(
                            "the value given is {}, the input is declared {}",
                            v.element_type(),
                            t.element_type
                        ),
                    });
                }
                let id = self
                    .function
                    .add_constant(v.data().clone(), v.shape().clone())
                    .map_err(ir)?;
                let node_name = unique_name(&self.function, &self.reserved, &vi.name);
                self.function.set_name(id, node_name).map_err(ir)?;
                self.function
                    .add_tag(id, format!("onnx:graph_input:{}", vi.name))
                    .map_err(ir)?;
                self.values.insert(vi.name.clone(), Output::from(id));
                continue;
            }
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
    pub(super) fn value(
        &mut self,
        name: &str,
        at: &NodeRef,
        index: usize,
    ) -> Result<Output, OnnxError> {
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

    pub(super) fn node(&mut self, index: usize, node: &'m NodeProto) -> Result<(), OnnxError> {
        let at = node_ref(index, node);
        let contrib = node.domain == crate::ops::MICROSOFT_DOMAIN
            && crate::ops::SUPPORTED_CONTRIB_OPS.contains(&node.op_type.as_str());
        if !is_default_domain(&node.domain) && !contrib {
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
        let (outputs, created) = if matches!(node.op_type.as_str(), "If" | "Loop" | "Scan") {
            // Subgraphs: `import/control_flow.rs` (it names its nodes itself).
            (self.control_flow(index, node, &inputs)?, HashSet::new())
        } else {
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
            (outputs, created)
        };
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
    pub(super) fn definition(&self, name: &str, index: usize) -> String {
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
    pub(super) fn name_producer(
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
    pub(super) fn outputs(&mut self, graph: &GraphProto) -> Result<Vec<ModelValue>, OnnxError> {
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
