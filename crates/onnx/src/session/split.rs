//! A model in stages around a node whose output shape depends on values
//! ([`OnnxError::DataDependentShape`](crate::OnnxError::DataDependentShape): `NonZero`,
//! `Compress`, `NonMaxSuppression`, a `Loop` whose length is known only at run time). graphlift compiles static shapes, so the
//! node runs on the host as a dynamic step between two compiled parts, and the part after it
//! is specialised by the shapes the step gave:
//!
//! - the *prefix*: the model cut before the node, its outputs the values the node reads
//!   (a `Loop`'s operands and the outer-scope values its body reads);
//! - the *step*: the node on those values ([`reference::non_zero`],
//!   [`reference::non_max_suppression`], or the loop's body
//!   called iteration by iteration: [`super::loop_step`]);
//! - the *suffix*: the model without the node, whose outputs become more graph inputs (the
//!   last ones), given the step's results.
//!
//! Prefix, suffix and a loop's body are [`Session`]s of their own: each caches its
//! specialisations, and each splits again at a later such node. The suffix and the body are
//! made on the first call, when the element types of the values they take are known.

use std::sync::{Arc, OnceLock};

use graphlift_ir::TensorData;
use graphlift_runtime::reference::{self, Suppression};
use graphlift_runtime::Tensor;

use super::loop_step::LoopStep;
use super::{Session, SessionError, SessionStats};
use crate::import::{free_names, node_ref};
use crate::proto::{GraphProto, ModelProto, TypeProto, TypeProtoTensor, ValueInfoProto};
use crate::tensor::onnx_data_type;

/// What runs between the stages.
enum Step {
    /// `NonZero` of the one value.
    NonZero,
    /// `Compress` of the first value by the second, along the axis (`None`: flattened; a
    /// negative one counts from the end).
    Compress { axis: Option<i64> },
    /// `NonMaxSuppression` with its `center_point_box`: for each of its five operands, the
    /// position of its value among the prefix's outputs (`None` for one left out).
    NonMaxSuppression {
        center_point_box: i64,
        slots: [Option<usize>; 5],
    },
    /// A `Loop`: the prefix gives its operands (the non-empty ones, in order) and then its
    /// body's outer-scope values.
    Loop(Box<LoopStep>),
}

/// The stages of a model split at one node.
pub(super) struct Stages {
    prefix: Box<Session>,
    step: Step,
    /// The model without the node, its non-empty outputs not yet graph inputs.
    suffix_model: ModelProto,
    /// The node's outputs, in order (`""` for one left out).
    outputs: Vec<String>,
    suffix: OnceLock<Box<Session>>,
    /// The enclosing session's name, backend, options and capacity, for the suffix.
    parent: Parent,
    /// The node, for messages (`NonZero node #3 ...`).
    node: String,
}

/// What a stage's session inherits from the session it splits.
#[derive(Clone)]
pub(super) struct Parent {
    pub name: String,
    pub backend: Arc<dyn graphlift_runtime::Backend>,
    pub options: crate::ImportOptions,
    pub capacity: usize,
}

impl Parent {
    /// A session over `model`, named after the parent and `what`.
    pub(super) fn session(&self, model: ModelProto, what: &str) -> Box<Session> {
        Box::new(Session::of_model(
            format!("{} ({what})", self.name),
            Arc::new(model),
            self.backend.clone(),
            self.options.clone(),
            self.capacity,
        ))
    }
}

/// A graph input `name` of element type `t` and unknown shape (each call gives the shape).
pub(super) fn input_of(name: &str, t: &Tensor) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: onnx_data_type(t.element_type()),
                shape: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The body attribute of a `Loop` node.
fn body_of(node: &crate::proto::NodeProto) -> Option<&GraphProto> {
    node.attribute
        .iter()
        .find(|a| a.name == "body")
        .and_then(|a| a.g.as_ref())
}

impl Stages {
    /// The stages of `session`'s model around the node that produces `output` (a `NonZero`
    /// or a `Loop` of the top-level graph); `None` when no such node produces it.
    pub(super) fn new(session: &Session, output: &str) -> Option<Stages> {
        let graph = session.model.graph.as_ref()?;
        let at = graph
            .node
            .iter()
            .position(|n| n.output.iter().any(|o| o == output))?;
        let node = &graph.node[at];
        let (step, reads) = match node.op_type.as_str() {
            "NonZero" => (Step::NonZero, vec![node.input.first()?.clone()]),
            "Compress" => {
                let axis = node
                    .attribute
                    .iter()
                    .find(|a| a.name == "axis")
                    .map(|a| a.i);
                let reads = vec![node.input.first()?.clone(), node.input.get(1)?.clone()];
                (Step::Compress { axis }, reads)
            }
            "NonMaxSuppression" => {
                let mut reads: Vec<String> = Vec::new();
                let mut slots = [None; 5];
                for (slot, name) in slots.iter_mut().zip(&node.input) {
                    if name.is_empty() {
                        continue;
                    }
                    *slot = Some(reads.iter().position(|r| r == name).unwrap_or_else(|| {
                        reads.push(name.clone());
                        reads.len() - 1
                    }));
                }
                let center_point_box = node
                    .attribute
                    .iter()
                    .find(|a| a.name == "center_point_box")
                    .map_or(0, |a| a.i);
                let step = Step::NonMaxSuppression {
                    center_point_box,
                    slots,
                };
                (step, reads)
            }
            "Loop" => {
                let body = body_of(node)?;
                let operands: Vec<String> = node
                    .input
                    .iter()
                    .filter(|i| !i.is_empty())
                    .cloned()
                    .collect();
                let mut reads = operands.clone();
                for name in free_names(body) {
                    if !reads.contains(&name) {
                        reads.push(name);
                    }
                }
                let step = LoopStep::new(node, body, &session.model, &reads)?;
                (Step::Loop(Box::new(step)), reads)
            }
            _ => return None,
        };
        // ONNX lists nodes in topological order: what the node reads comes before `at`.
        let mut prefix = (*session.model).clone();
        let g = prefix.graph.as_mut()?;
        g.node.truncate(at);
        g.output = reads
            .iter()
            .map(|name| ValueInfoProto {
                name: name.clone(),
                ..Default::default()
            })
            .collect();
        let mut suffix_model = (*session.model).clone();
        suffix_model.graph.as_mut()?.node.remove(at);
        let parent = session.parent();
        Some(Stages {
            prefix: parent.session(prefix, &format!("up to `{}`", node.name)),
            step,
            suffix_model,
            outputs: node.output.clone(),
            suffix: OnceLock::new(),
            parent,
            node: node_ref(at, node).to_string(),
        })
    }

    /// Runs the prefix on `inputs`, the step on its outputs, and the suffix on `inputs` and
    /// the step's results.
    ///
    /// # Errors
    /// The stages' errors; [`SessionError::DynamicStep`] naming the node when the step
    /// fails.
    pub(super) fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, SessionError> {
        let step_error = |message: String| SessionError::DynamicStep {
            model: self.parent.name.clone(),
            message: format!("{}: {message}", self.node),
        };
        let read = self.prefix.run(inputs)?;
        let results = match &self.step {
            Step::NonZero => {
                let [value] = read.as_slice() else {
                    return Err(step_error(format!("{} operands", read.len())));
                };
                let (data, shape) =
                    reference::non_zero(value.data(), value.shape()).map_err(step_error)?;
                vec![Tensor::from_data(data, shape).map_err(|e| step_error(e.to_string()))?]
            }
            Step::Compress { axis } => {
                let [data, condition] = read.as_slice() else {
                    return Err(step_error(format!("{} operands", read.len())));
                };
                let rank = data.shape().rank() as i64;
                let axis = match axis {
                    Some(a) if (-rank..rank).contains(a) => Some(a.rem_euclid(rank) as usize),
                    Some(a) => return Err(step_error(format!("axis {a} of rank {rank}"))),
                    None => None,
                };
                let (y, shape) =
                    reference::compress(data.data(), data.shape(), condition.data(), axis)
                        .map_err(step_error)?;
                vec![Tensor::from_data(y, shape).map_err(|e| step_error(e.to_string()))?]
            }
            Step::NonMaxSuppression {
                center_point_box,
                slots,
            } => {
                let operand = |k: usize| slots[k].and_then(|i| read.get(i));
                let (Some(boxes), Some(scores)) = (operand(0), operand(1)) else {
                    return Err(step_error("boxes or scores missing".into()));
                };
                let data = |k: usize| operand(k).map(Tensor::data);
                let s = Suppression::from_operands(data(2), data(3), data(4), *center_point_box)
                    .map_err(step_error)?;
                let (TensorData::F32(b), TensorData::F32(sc)) = (boxes.data(), scores.data())
                else {
                    return Err(step_error("boxes and scores must be FLOAT".into()));
                };
                let (data, shape) =
                    reference::non_max_suppression((b, boxes.shape()), (sc, scores.shape()), &s)
                        .map_err(step_error)?;
                vec![Tensor::from_data(data, shape).map_err(|e| step_error(e.to_string()))?]
            }
            Step::Loop(l) => l.run(&read, &self.parent).map_err(|e| match e {
                SessionError::DynamicStep { message, .. } => step_error(message),
                other => other,
            })?,
        };
        let mut call = inputs.to_vec();
        let mut added = Vec::new();
        for (name, value) in self.outputs.iter().zip(results) {
            if !name.is_empty() {
                added.push(input_of(name, &value));
                call.push(value);
            }
        }
        let suffix = self.suffix.get_or_init(|| {
            let mut model = self.suffix_model.clone();
            if let Some(g) = model.graph.as_mut() {
                g.input.extend(added);
            }
            self.parent
                .session(model, &format!("after `{}`", self.outputs.join("`, `")))
        });
        suffix.run(&call)
    }

    /// `own` (the session's counters before the split) plus every stage's counters.
    pub(super) fn stats(&self, own: SessionStats) -> SessionStats {
        let mut all = vec![self.prefix.stats()];
        all.extend(self.suffix.get().map(|s| s.stats()));
        if let Step::Loop(l) = &self.step {
            all.extend(l.stats());
        }
        all.iter().fold(own, |a, b| SessionStats {
            compiles: a.compiles + b.compiles,
            entries: a.entries + b.entries,
            evictions: a.evictions + b.evictions,
            capacity: a.capacity + b.capacity,
        })
    }
}
