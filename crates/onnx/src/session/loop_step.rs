//! A `Loop` whose length is known only at run time (its `M` or `cond` computed in the
//! graph, or a body that computes its condition), run on the host as the dynamic step of
//! [`super::split`]: the body is a model of its own, compiled through a [`Session`] and
//! called once per iteration until `M` iterations have run or the condition is false (ONNX
//! `Loop`, opsets 11-21); the scan outputs of the iterations are stacked on a new first
//! axis. onnxruntime runs `Loop` the same way, with the body as a subgraph session.

use std::sync::OnceLock;

use graphlift_ir::{Shape, TensorData};
use graphlift_runtime::{reference, Tensor};

use super::split::{input_of, Parent};
use super::{Session, SessionError, SessionStats};
use crate::proto::{GraphProto, ModelProto, NodeProto};
use crate::tensor::element_type;
use crate::NodeRef;

/// One `Loop` node, run iteration by iteration.
pub(super) struct LoopStep {
    /// The body as a model: its graph inputs are the iteration number, the condition and the
    /// carried values; the outer-scope values it reads become graph inputs after them on
    /// the first call, typed by the values given.
    body_model: ModelProto,
    /// For each outer-scope value the body reads: its name and its position in the values
    /// the prefix gives.
    captured: Vec<(String, usize)>,
    /// How many values the prefix gives.
    reads: usize,
    /// Whether the node has `M` and `cond` (each may be left out).
    has_trip: bool,
    has_cond: bool,
    /// Carried values and scan outputs.
    carried: usize,
    scans: usize,
    /// The declared shapes of the body's iteration-number and condition inputs: `[1]` or
    /// scalar.
    counter_shape: Shape,
    cond_shape: Shape,
    body: OnceLock<Box<Session>>,
}

/// The declared shape of a body input that ONNX says is a scalar: `[1]` where the body
/// declares rank 1 (some exporters do), else a scalar.
fn scalar_shape(body: &GraphProto, k: usize) -> Shape {
    let rank = body
        .input
        .get(k)
        .and_then(|v| v.r#type.as_ref())
        .and_then(|t| t.tensor_type.as_ref())
        .and_then(|t| t.shape.as_ref())
        .map_or(0, |s| s.dim.len());
    if rank == 1 {
        Shape::new([1])
    } else {
        Shape::scalar()
    }
}

impl LoopStep {
    /// The step of `node` (body `body`) in `model`, whose prefix gives `reads`: the node's
    /// non-empty operands, then the outer-scope values the body reads. `None` for a node
    /// that does not fit ONNX `Loop`'s layout.
    pub(super) fn new(
        node: &NodeProto,
        body: &GraphProto,
        model: &ModelProto,
        reads: &[String],
    ) -> Option<LoopStep> {
        let carried = node.input.len().checked_sub(2)?;
        let scans = body.output.len().checked_sub(1 + carried)?;
        if body.input.len() != 2 + carried {
            return None;
        }
        let operands = node.input.iter().filter(|i| !i.is_empty()).count();
        let captured = reads[operands..]
            .iter()
            .map(|name| Some((name.clone(), reads.iter().position(|r| r == name)?)))
            .collect::<Option<Vec<_>>>()?;
        let body_model = ModelProto {
            graph: Some(body.clone()),
            ..model.clone()
        };
        Some(LoopStep {
            body_model,
            captured,
            reads: reads.len(),
            has_trip: !node.input[0].is_empty(),
            has_cond: !node.input[1].is_empty(),
            carried,
            scans,
            counter_shape: scalar_shape(body, 0),
            cond_shape: scalar_shape(body, 1),
            body: OnceLock::new(),
        })
    }

    /// Runs the loop on `read` (the prefix's values) and returns the node's outputs: the
    /// final carried values, then the scan outputs stacked.
    ///
    /// # Errors
    /// The body's session errors; [`SessionError::DynamicStep`] for another number of values
    /// than the loop reads, a trip count or condition that is not one element, a body whose condition
    /// result is not one, or scan outputs whose shapes differ between iterations.
    pub(super) fn run(
        &self,
        read: &[Tensor],
        parent: &Parent,
    ) -> Result<Vec<Tensor>, SessionError> {
        let fail = |message: String| SessionError::DynamicStep {
            model: parent.name.clone(),
            message,
        };
        let one = |t: &Tensor, what: &str| match t.data().len() {
            1 => Ok(t.data().get_f64(0).unwrap_or(0.0)),
            n => Err(fail(format!("{what} has {n} elements, needs 1"))),
        };
        if read.len() != self.reads {
            return Err(fail(format!(
                "the stage before the loop gave {} values, the loop reads {}",
                read.len(),
                self.reads
            )));
        }
        let mut at = 0;
        let trip = if self.has_trip {
            at += 1;
            let m = &read[0];
            match m.data() {
                TensorData::I64(d) if d.len() == 1 => d[0],
                _ => one(m, "the trip count M")? as i64,
            }
        } else {
            i64::MAX
        };
        let mut cond = true;
        if self.has_cond {
            cond = one(&read[at], "the condition cond")? != 0.0;
            at += 1;
        }
        let mut carried: Vec<Tensor> = read[at..at + self.carried].to_vec();
        let captured: Vec<Tensor> = self
            .captured
            .iter()
            .map(|(_, k)| read[*k].clone())
            .collect();
        let body = self.body.get_or_init(|| {
            let mut model = self.body_model.clone();
            if let Some(g) = model.graph.as_mut() {
                for ((name, _), t) in self.captured.iter().zip(&captured) {
                    g.input.push(input_of(name, t));
                }
            }
            parent.session(model, "loop body")
        });
        let mut scans: Vec<Vec<Tensor>> = vec![Vec::new(); self.scans];
        let mut i: i64 = 0;
        while i < trip && cond {
            let counter = Tensor::from_data(TensorData::I64(vec![i]), self.counter_shape.clone())
                .map_err(|e| fail(e.to_string()))?;
            let c = Tensor::from_data(TensorData::Bool(vec![cond]), self.cond_shape.clone())
                .map_err(|e| fail(e.to_string()))?;
            let mut call = vec![counter, c];
            call.extend(carried.iter().cloned());
            call.extend(captured.iter().cloned());
            let mut out = body.run(&call)?.into_iter();
            let next = out
                .next()
                .ok_or_else(|| fail("the body gave no condition".into()))?;
            cond = one(&next, "the body's condition")? != 0.0;
            carried = out.by_ref().take(self.carried).collect();
            for (scan, t) in scans.iter_mut().zip(out) {
                scan.push(t);
            }
            i += 1;
        }
        let mut outputs = carried;
        for (k, parts) in scans.iter().enumerate() {
            outputs.push(self.stack(k, parts).map_err(fail)?);
        }
        Ok(outputs)
    }

    /// Scan output `k`'s per-iteration values stacked on a new first axis; with no
    /// iteration, an empty tensor of the body's declared element type (`[0]`).
    fn stack(&self, k: usize, parts: &[Tensor]) -> Result<Tensor, String> {
        let Some(first) = parts.first() else {
            let body = self.body_model.graph.as_ref();
            let declared = body
                .and_then(|g| g.output.get(1 + self.carried + k))
                .and_then(|o| o.r#type.as_ref())
                .and_then(|t| t.tensor_type.as_ref())
                .map_or(0, |t| t.elem_type);
            let at = NodeRef::item("loop body output", "");
            let t = element_type(declared, &at).map_err(|e| e.to_string())?;
            return Tensor::from_data(TensorData::from_f64(t, &[]), Shape::new([0]))
                .map_err(|e| e.to_string());
        };
        let each = first.shape().dims();
        let one = Shape::new([&[1usize][..], each].concat());
        let mut pieces = Vec::with_capacity(parts.len());
        for (j, p) in parts.iter().enumerate() {
            if p.shape().dims() != each || p.element_type() != first.element_type() {
                return Err(format!(
                    "scan output {k}: iteration {j} gives {}, iteration 0 gave {}",
                    p.tensor_type(),
                    first.tensor_type()
                ));
            }
            pieces.push((p.data(), &one));
        }
        let data = reference::concat(&pieces, 0)?;
        let shape = Shape::new([&[parts.len()][..], each].concat());
        Tensor::from_data(data, shape).map_err(|e| e.to_string())
    }

    /// The body's counters, once it has been made.
    pub(super) fn stats(&self) -> Option<SessionStats> {
        self.body.get().map(|b| b.stats())
    }
}
