//! Export of a trace to the Chrome trace-event format, so it opens in Perfetto and
//! `chrome://tracing`.

use std::path::Path;

use serde_json::{json, Value};

use super::file::write_atomically;
use graphlift_ir::Op;

use super::record::{CallTrace, OpRecord, Trace, ValueSource};
use crate::RuntimeError;

/// µs from ns, as the format wants.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn args(r: &OpRecord, estimated: bool) -> Value {
    let types = |ts: &mut dyn Iterator<Item = String>| ts.collect::<Vec<_>>();
    let mut a = json!({
        "op": r.op.to_string(),
        "kind": r.kind.name(),
        "inputs": types(&mut r.inputs.iter().map(|i| i.tensor_type.to_string())),
        "outputs": types(&mut r.outputs.iter().map(ToString::to_string)),
        "provenance": r.tags,
        "pass_history": r.pass_history,
    });
    if estimated {
        a["estimated"] = Value::Bool(true);
    }
    a
}

/// The variable a `ReadVariable` or `Assign` record of call `c` reads or writes.
fn variable_of<'c>(c: &'c CallTrace, r: &OpRecord) -> Option<&'c str> {
    match r.inputs.first()?.source {
        ValueSource::Variable(k) => c.variables.get(k).map(|v| v.name.as_str()),
        _ => None,
    }
}

fn event(name: &str, cat: &str, start_ns: u64, dur_ns: u64, tid: usize, args: Value) -> Value {
    json!({
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": us(start_ns),
        "dur": us(dur_ns),
        "pid": 1,
        "tid": tid,
        "args": args,
    })
}

/// The estimated work of a nested record, in element operations: a `MatMul` `K` per
/// output element, a reduction one per input element, a `Softmax` four per element (max,
/// exp, sum, divide), a `Reshape`, `Broadcast` or `Constant` none (views, stride-0 loads),
/// any other op one per output element.
fn work(r: &OpRecord) -> u128 {
    let count = |t: &graphlift_ir::TensorType| t.shape.dims().iter().map(|&d| d as u128).product();
    let out: u128 = r.outputs.iter().map(count).sum();
    match &r.op {
        Op::Reshape(_) | Op::Broadcast(_) | Op::Constant(_) => 0,
        Op::MatMul => {
            let k = r
                .inputs
                .first()
                .and_then(|i| i.tensor_type.shape.dims().last().copied())
                .unwrap_or(1);
            out * k as u128
        }
        Op::Reduce(_) => r.inputs.first().map_or(out, |i| count(&i.tensor_type)),
        Op::Softmax(_) => out * 4,
        _ => out,
    }
}

/// The `(from, to)` ns offsets of each nested record inside its parent's `duration_ns`:
/// shares in proportion to [`work`] (evenly when none has any), in integer ns, so the last
/// ends exactly where its parent does.
fn shares(children: &[OpRecord], duration_ns: u64) -> Vec<(u64, u64)> {
    let mut weights: Vec<u128> = children.iter().map(work).collect();
    if weights.iter().all(|&w| w == 0) {
        weights.iter_mut().for_each(|w| *w = 1);
    }
    let total: u128 = weights.iter().sum();
    let at = |acc: u128| {
        u64::try_from(u128::from(duration_ns) * acc / total.max(1)).unwrap_or(duration_ns)
    };
    let mut acc = 0;
    weights
        .iter()
        .map(|&w| {
            let from = at(acc);
            acc += w;
            (from, at(acc))
        })
        .collect()
}

impl Trace {
    /// The trace as Chrome trace-event JSON (an object with `traceEvents`).
    ///
    /// One complete event (`"ph": "X"`, `ts`/`dur` in µs) per call, one per step inside it,
    /// and one per nested record (an op fused into a kernel, an inner step of a fused native
    /// op) inside its parent's slice. Nested records are not timed on their own: they
    /// subdivide the parent's measured time in proportion to their estimated work
    /// (element operations: a `MatMul` counts `K` per output element, a view none) and
    /// carry `"estimated": true` in their args. Times count from the start of the trace's first call. Args give the op,
    /// input and output types, provenance tags and pass history; a `ReadVariable` or
    /// `Assign` step also names its `variable`, and a call lists its `variables` (name and
    /// type).
    pub fn to_chrome_json(&self) -> String {
        let base = self
            .calls
            .iter()
            .map(|c| c.timing.start_ns)
            .min()
            .unwrap_or(0);
        let rel = |ns: u64| ns.saturating_sub(base);
        let mut events = Vec::new();
        for c in &self.calls {
            let tid = 1;
            events.push(event(
                &c.function,
                "call",
                rel(c.timing.start_ns),
                c.timing.duration_ns,
                tid,
                json!({
                    "backend": c.backend,
                    "steps": c.records.len(),
                    "variables": c
                        .variables
                        .iter()
                        .map(|v| format!("{}: {}", v.name, v.value.tensor_type()))
                        .collect::<Vec<_>>(),
                }),
            ));
            for r in &c.records {
                let Some(t) = r.timing else { continue };
                let start = rel(t.start_ns);
                let mut step_args = args(r, false);
                if let Some(v) = variable_of(c, r) {
                    step_args["variable"] = json!(v);
                }
                events.push(event(
                    &r.name,
                    r.kind.name(),
                    start,
                    t.duration_ns,
                    tid,
                    step_args,
                ));
                let bounds = shares(&r.children, t.duration_ns);
                for (child, (from, to)) in r.children.iter().zip(bounds) {
                    let (from, to) = (start + from, start + to);
                    events.push(event(
                        &child.name,
                        child.kind.name(),
                        from,
                        to - from,
                        tid,
                        args(child, true),
                    ));
                }
            }
        }
        let doc = json!({
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": { "producer": "graphlift" },
        });
        doc.to_string()
    }

    /// Writes [`Trace::to_chrome_json`] to `path`, complete or not at all (through a
    /// temporary file that is renamed).
    ///
    /// # Errors
    /// [`RuntimeError::Trace`] naming the path if it cannot be written.
    pub fn save_chrome(&self, path: impl AsRef<Path>) -> Result<(), RuntimeError> {
        write_atomically(path.as_ref(), self.to_chrome_json().as_bytes())
    }
}
