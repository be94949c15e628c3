//! A model in stages around a node whose output shape depends on values (ONNX `NonZero`:
//! [`OnnxError::DataDependentShape`](crate::OnnxError::DataDependentShape)). graphlift
//! compiles static shapes, so the node runs on the host as a dynamic step between two
//! compiled parts, and the part after it is specialised by the shape the step gave:
//!
//! - the *prefix*: the model cut before the node, its one output the node's operand;
//! - the *step*: the node on that value ([`reference::non_zero`]);
//! - the *suffix*: the model without the node, whose output becomes one more graph input
//!   (the last), given the step's result.
//!
//! Prefix and suffix are [`Session`]s of their own: each caches its specialisations, and
//! each splits again at a later such node.

use std::sync::Arc;

use graphlift_runtime::{reference, Tensor};

use super::{Session, SessionError, SessionStats};
use crate::import::node_ref;
use crate::proto::{data_type, TypeProto, TypeProtoTensor, ValueInfoProto};

/// The stages of a model split at one node.
pub(super) struct Stages {
    prefix: Box<Session>,
    suffix: Box<Session>,
    /// The node, for messages (`NonZero node #3 ...`).
    node: String,
}

impl Stages {
    /// The stages of `session`'s model around the node that produces `output` (a
    /// `NonZero`); `None` when no node of the graph produces it or the node is not a
    /// `NonZero` with an operand.
    pub(super) fn new(session: &Session, output: &str) -> Option<Stages> {
        let graph = session.model.graph.as_ref()?;
        let at = graph
            .node
            .iter()
            .position(|n| n.output.iter().any(|o| o == output))?;
        let node = &graph.node[at];
        let operand = node.input.first().filter(|_| node.op_type == "NonZero")?;
        // ONNX lists nodes in topological order: what the operand needs comes before `at`.
        let mut prefix = (*session.model).clone();
        let g = prefix.graph.as_mut()?;
        g.node.truncate(at);
        g.output = vec![ValueInfoProto {
            name: operand.clone(),
            ..Default::default()
        }];
        let mut suffix = (*session.model).clone();
        let g = suffix.graph.as_mut()?;
        g.node.remove(at);
        // INT64 of unknown shape: each call gives the step's shape.
        g.input.push(ValueInfoProto {
            name: output.to_string(),
            r#type: Some(TypeProto {
                tensor_type: Some(TypeProtoTensor {
                    elem_type: data_type::INT64,
                    shape: None,
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        let stage = |model, what: String| {
            Box::new(Session::of_model(
                format!("{} ({what})", session.name),
                Arc::new(model),
                session.backend.clone(),
                session.options.clone(),
                session.capacity,
            ))
        };
        Some(Stages {
            prefix: stage(prefix, format!("up to `{operand}`")),
            suffix: stage(suffix, format!("from `{output}`")),
            node: node_ref(at, node).to_string(),
        })
    }

    /// Runs the prefix on `inputs`, the step on its output, and the suffix on `inputs` and
    /// the step's result.
    ///
    /// # Errors
    /// The stages' errors; [`SessionError::DynamicStep`] naming the node when the step
    /// fails on its operand.
    pub(super) fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, SessionError> {
        let step_error = |message: String| SessionError::DynamicStep {
            model: self.prefix.name.clone(),
            message: format!("{}: {message}", self.node),
        };
        let operand = self.prefix.run(inputs)?;
        let [value] = operand.as_slice() else {
            return Err(step_error(format!("{} operands", operand.len())));
        };
        let (data, shape) = reference::non_zero(value.data(), value.shape()).map_err(step_error)?;
        let indices = Tensor::from_data(data, shape).map_err(|e| step_error(e.to_string()))?;
        let mut call = inputs.to_vec();
        call.push(indices);
        self.suffix.run(&call)
    }

    /// `own` (the session's counters before the split) plus both stages' counters.
    pub(super) fn stats(&self, own: SessionStats) -> SessionStats {
        [self.prefix.stats(), self.suffix.stats()]
            .iter()
            .fold(own, |a, b| SessionStats {
                compiles: a.compiles + b.compiles,
                entries: a.entries + b.entries,
                evictions: a.evictions + b.evictions,
                capacity: a.capacity + b.capacity,
            })
    }
}
