//! Loop-invariant code motion for `Loop` bodies, at import: the body's nodes that read only
//! values that do not change from one iteration to the next run once, before the loop, in
//! the enclosing graph.
//!
//! Two kinds of loop-carried value qualify besides outer-scope values:
//! - **Passed through.** The body's output is its input, or a chain of nodes that keep it
//!   (`Identity`, `Reshape`, `Squeeze`, `Unsqueeze`, `Flatten` back to the same type, and
//!   integer `+ 0`, `− 0`, `· 1`, `/ 1`): the value is the initial one in every iteration,
//!   so it is captured instead of carried.
//! - **Settling.** The chain also does float arithmetic by a neutral element (Paddle2ONNX
//!   writes every carried value as `Squeeze(Unsqueeze(x) + 0)`): `x + 0` turns `−0` into
//!   `+0`, and any of them quiets a signalling NaN, so iteration 0 reads `x₀` and every
//!   later one `h(x₀)` (`h` is idempotent). A node that reads such a value runs twice before
//!   the loop, on `x₀` and on `h(x₀)`, and the body selects between the two results with
//!   `Where(iteration = 0, first, settled)`: bit for bit what the loop computed, and a select
//!   a step instead of the node (SLANet's decoder multiplies its image features by a
//!   weight matrix in every step).

use std::collections::{HashMap, HashSet};

use graphlift_ir::{ElementType, Output, Shape, TensorData};

use super::{constant_of, free_names, Importer};
use crate::error::{NodeRef, OnnxError};
use crate::proto::{GraphProto, NodeProto};

/// How a loop-carried value changes from one iteration to the next.
pub(super) enum Carried {
    /// It keeps its initial value.
    Same,
    /// Iteration 0 reads the initial value, every later one `settled`; `chain` are the body
    /// nodes between the body's input and output.
    Settles { settled: Output, chain: Vec<usize> },
    /// Anything else.
    Changes,
}

/// A settling value for [`Importer::hoist`]: its body input's name, its two values, and
/// the body nodes of its chain.
pub(super) struct Settling {
    pub name: String,
    pub first: Output,
    pub settled: Output,
    pub chain: Vec<usize>,
}

/// One value-preserving node of a chain: its index in the body and, for arithmetic, the
/// name of its constant operand with the element it must hold throughout.
struct Link {
    node: usize,
    constant: Option<(String, f64)>,
}

/// Ops that keep their data operand's elements in order, reading only constants besides.
const SHAPE_ONLY: [&str; 5] = ["Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten"];

/// Where each value of a loop body comes from, worked out once per body for the
/// [`BodyIndex::chain`] of each of its carried values.
pub(super) struct BodyIndex<'b> {
    body: &'b GraphProto,
    /// The node that makes each value.
    producer: HashMap<&'b str, usize>,
    /// The body's own values: its inputs, initializers and node outputs (any other name is
    /// an outer-scope value).
    local: HashSet<&'b str>,
}

impl<'b> BodyIndex<'b> {
    /// The index of `body`.
    pub(super) fn of(body: &'b GraphProto) -> BodyIndex<'b> {
        let producer: HashMap<&str, usize> = body
            .node
            .iter()
            .enumerate()
            .flat_map(|(k, n)| n.output.iter().map(move |o| (o.as_str(), k)))
            .collect();
        let local = body
            .input
            .iter()
            .map(|v| v.name.as_str())
            .chain(body.initializer.iter().map(|t| t.name.as_str()))
            .chain(producer.keys().copied())
            .collect();
        BodyIndex {
            body,
            producer,
            local,
        }
    }

    /// The nodes of the body that compute `to` from `from` through value-preserving nodes,
    /// last first, when they do (every other operand a `Constant` node of the body or an
    /// outer-scope value); `None` otherwise. Whether the constants hold neutral elements
    /// and the chain ends in `from`'s type is checked once they are imported
    /// ([`Importer::carried`]).
    fn chain(&self, from: &str, to: &str) -> Option<Vec<Link>> {
        let (body, producer, local) = (self.body, &self.producer, &self.local);
        let constant = |name: &str| {
            name.is_empty()
                || !local.contains(name)
                || producer.get(name).is_some_and(|&k| {
                    let n = &body.node[k];
                    n.op_type == "Constant" && n.input.is_empty()
                })
        };
        let mut links = Vec::new();
        let mut at = to;
        while at != from {
            if links.len() > body.node.len() {
                return None;
            }
            let k = *producer.get(at)?;
            let n = &body.node[k];
            if !super::super::is_default_domain(&n.domain) || n.output.len() != 1 {
                return None;
            }
            let ins: Vec<&str> = n.input.iter().map(String::as_str).collect();
            let neutral = if matches!(n.op_type.as_str(), "Add" | "Sub") {
                0.0
            } else {
                1.0
            };
            let (data, operand) = match (n.op_type.as_str(), ins.as_slice()) {
                (op, [x, rest @ ..])
                    if SHAPE_ONLY.contains(&op) && rest.iter().all(|r| constant(r)) =>
                {
                    (*x, None)
                }
                ("Add" | "Mul", &[a, b]) => match (constant(a), constant(b)) {
                    (false, true) => (a, Some((b.to_string(), neutral))),
                    (true, false) => (b, Some((a.to_string(), neutral))),
                    _ => return None,
                },
                ("Sub" | "Div", &[a, b]) if !constant(a) && constant(b) => {
                    (a, Some((b.to_string(), neutral)))
                }
                _ => return None,
            };
            links.push(Link {
                node: k,
                constant: operand,
            });
            at = data;
        }
        Some(links)
    }
}

impl<'m> Importer<'m> {
    /// How carried value `from` (initial value `initial`) becomes `to` in the body `index`
    /// describes: imports
    /// the chain of value-preserving nodes between them, if any, on the initial value into
    /// this graph (the names are released afterwards) and checks its constants and its
    /// result type. A chain of shape-only nodes (or integer arithmetic) keeps the value;
    /// `f32` arithmetic by a neutral element settles it (`x + 0` turns `−0` into `+0`, and
    /// any of them quiets a signalling NaN).
    pub(super) fn carried(
        &mut self,
        index: &BodyIndex<'m>,
        (from, to): (&str, &str),
        initial: Output,
    ) -> Carried {
        if from == to {
            return Carried::Same;
        }
        let body = index.body;
        let Some(links) = index.chain(from, to) else {
            return Carried::Changes;
        };
        let defined = |imp: &Self, k: &usize| {
            body.node[*k]
                .output
                .iter()
                .any(|o| imp.values.contains_key(o))
        };
        if self.values.contains_key(from) {
            return Carried::Changes;
        }
        // The chain and the Constant nodes it reads, in body order.
        let in_chain: HashSet<usize> = links.iter().map(|l| l.node).collect();
        let mut nodes: Vec<usize> = in_chain.iter().copied().collect();
        for l in &links {
            for name in &body.node[l.node].input {
                let made = index.producer.get(name.as_str()).copied();
                nodes.extend(made.filter(|k| !in_chain.contains(k)));
            }
        }
        nodes.sort_unstable();
        nodes.dedup();
        if nodes.iter().any(|k| defined(self, k)) {
            return Carried::Changes;
        }
        self.values.insert(from.to_string(), initial);
        let imported = nodes
            .iter()
            .try_for_each(|&k| self.node(k, &body.node[k]))
            .is_ok();
        let verdict = imported
            .then(|| self.verdict(&links, initial, to))
            .flatten();
        // Release the body's names (outer initializers read on the way stay made).
        self.values.remove(from);
        for &k in &nodes {
            for o in &body.node[k].output {
                self.values.remove(o);
            }
        }
        match verdict {
            Some((false, _)) => Carried::Same,
            Some((true, settled)) => Carried::Settles {
                settled,
                chain: links.iter().map(|l| l.node).collect(),
            },
            None => Carried::Changes,
        }
    }

    /// For a chain imported on `initial`: whether it settles, and `to`'s value, when every
    /// link's constant holds its neutral element and `to` has `initial`'s type.
    fn verdict(&self, links: &[Link], initial: Output, to: &str) -> Option<(bool, Output)> {
        let mut settling = false;
        for (name, neutral) in links.iter().filter_map(|l| l.constant.as_ref()) {
            let c = constant_of(&self.function, *self.values.get(name)?)?;
            let c = c.data();
            if (0..c.len()).any(|i| c.get_f64(i) != Some(*neutral)) {
                return None;
            }
            settling |= matches!(
                c.element_type(),
                ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64
            );
        }
        let out = *self.values.get(to)?;
        let same =
            self.function.output_type(out).ok()? == self.function.output_type(initial).ok()?;
        same.then_some((settling, out))
    }

    /// Hoists the nodes of `body` that read only outer-scope values, the `invariant` body
    /// inputs (bound to their values) and the `settling` ones into this graph, and returns
    /// the body without them, the selects of the settling values' results first; `None`
    /// when nothing moves (or a body input would shadow an outer-scope name). `iteration`
    /// names the body's iteration-number input.
    pub(super) fn hoist(
        &mut self,
        body: &'m GraphProto,
        invariant: &[(String, Output)],
        settling: &[Settling],
        iteration: &str,
    ) -> Result<Option<GraphProto>, OnnxError> {
        let shadows = invariant
            .iter()
            .map(|(n, _)| n)
            .chain(settling.iter().map(|s| &s.name));
        if shadows.clone().any(|name| self.values.contains_key(name)) {
            return Ok(None);
        }
        let mut hoisted = hoistable(body, shadows.map(String::as_str));
        let dual = reading(body, &hoisted, settling.iter().map(|s| s.name.as_str()));
        // Settling values that only their own chains read stay carried as they are.
        let chains_only = dual
            .iter()
            .all(|k| settling.iter().any(|s| s.chain.contains(k)));
        let settling = if chains_only {
            hoisted = hoistable(body, invariant.iter().map(|(n, _)| n.as_str()));
            &[]
        } else {
            settling
        };
        let dual = reading(body, &hoisted, settling.iter().map(|s| s.name.as_str()));
        if hoisted.is_empty() {
            return Ok(None);
        }
        let bound: Vec<(&str, Output)> = invariant
            .iter()
            .map(|(n, v)| (n.as_str(), *v))
            .chain(settling.iter().map(|s| (s.name.as_str(), s.first)))
            .collect();
        for &(name, v) in &bound {
            self.values.insert(name.to_string(), v);
        }
        let is_first = self.fresh(body, "iteration/is_first");
        let imported = self.import_hoisted(body, (&hoisted, &dual), settling, &is_first);
        for &(name, _) in &bound {
            self.values.remove(name);
        }
        let selects = imported?;
        let mut b = body.clone();
        b.node = body
            .node
            .iter()
            .enumerate()
            .filter(|(k, _)| !hoisted.contains(k))
            .map(|(_, n)| n.clone())
            .collect();
        let read: HashSet<String> = b
            .node
            .iter()
            .flat_map(|n| {
                let subgraphs = n.attribute.iter().flat_map(|a| a.g.iter().chain(&a.graphs));
                n.input
                    .iter()
                    .cloned()
                    .chain(subgraphs.flat_map(free_names))
            })
            .chain(b.output.iter().map(|o| o.name.clone()))
            .collect();
        let selects: Vec<NodeProto> = selects
            .into_iter()
            .filter(|s| read.contains(&s.output[0]))
            .collect();
        if !selects.is_empty() {
            // is_first = Reshape(iteration == 0, []): a scalar whatever the iteration
            // number's declared shape (`[]` or `[1]`), so the selects keep their shapes.
            let zero =
                self.outer_constant(body, "iteration/zero", TensorData::I64(vec![0]), &[])?;
            let scalar =
                self.outer_constant(body, "iteration/scalar", TensorData::I64(vec![]), &[0])?;
            let equal = self.fresh(body, "iteration/equals_zero");
            let test = [
                plain("Equal", &[iteration, &zero], &equal),
                plain("Reshape", &[&equal, &scalar], &is_first),
            ];
            b.node.splice(0..0, test.into_iter().chain(selects));
        }
        Ok(Some(b))
    }

    /// Imports the `hoisted` nodes of `body` (the invariant and settling names bound), the
    /// `dual` ones among them (reading a settling value) once more on the settled values;
    /// returns the selects `Where(is_first, first, settled)` of each dual result, its two
    /// values under fresh names of this graph.
    fn import_hoisted(
        &mut self,
        body: &'m GraphProto,
        (hoisted, dual): (&[usize], &[usize]),
        settling: &[Settling],
        is_first: &str,
    ) -> Result<Vec<NodeProto>, OnnxError> {
        for &h in hoisted {
            self.node(h, &body.node[h])?;
        }
        let outputs: Vec<&String> = dual
            .iter()
            .flat_map(|&k| body.node[k].output.iter().filter(|o| !o.is_empty()))
            .collect();
        let rename = |imp: &mut Importer<'m>, what: &str| -> Vec<String> {
            outputs
                .iter()
                .map(|&name| {
                    let fresh = imp.fresh(body, &format!("{name}/{what}"));
                    if let Some(v) = imp.values.remove(name) {
                        imp.values.insert(fresh.clone(), v);
                    }
                    fresh
                })
                .collect()
        };
        let firsts = rename(self, "first_iteration");
        for s in settling {
            self.values.insert(s.name.clone(), s.settled);
        }
        for &h in dual {
            self.node(h, &body.node[h])?;
        }
        let settled = rename(self, "settled");
        Ok(outputs
            .iter()
            .zip(firsts.iter().zip(&settled))
            .map(|(&name, (f, s))| plain("Where", &[is_first, f, s], name))
            .collect())
    }

    /// A Constant of this graph under a fresh name ([`Importer::fresh`]) from `base`.
    fn outer_constant(
        &mut self,
        body: &GraphProto,
        base: &str,
        data: TensorData,
        dims: &[usize],
    ) -> Result<String, OnnxError> {
        let name = self.fresh(body, base);
        let c = self
            .function
            .add_constant(data, Shape::new(dims))
            .map_err(|e| OnnxError::Ir {
                at: NodeRef::item("subgraph", &body.name),
                source: Box::new(e),
            })?;
        self.values.insert(name.clone(), Output::from(c));
        Ok(name)
    }

    /// `base`, or `base_1`, `base_2`, ...: the first that names no value of this graph
    /// (made so far or still to come) or of `body`.
    fn fresh(&self, body: &GraphProto, base: &str) -> String {
        let names = |g: &GraphProto, n: &str| {
            g.input.iter().any(|v| v.name == n)
                || g.node.iter().any(|nd| nd.output.iter().any(|o| o == n))
        };
        let taken = |n: &str| {
            self.values.contains_key(n)
                || self.initializers.contains_key(n)
                || self.reserved.contains(n)
                || names(self.graph, n)
                || names(body, n)
        };
        let mut name = base.to_string();
        let mut k = 0;
        while taken(&name) {
            k += 1;
            name = format!("{base}_{k}");
        }
        name
    }
}

/// A default-domain node without attributes.
fn plain(op_type: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|i| i.to_string()).collect(),
        output: vec![output.to_string()],
        op_type: op_type.to_string(),
        ..NodeProto::default()
    }
}

/// The nodes among `hoisted` that read one of `names`, directly or through another such
/// node.
fn reading<'a>(
    body: &GraphProto,
    hoisted: &[usize],
    names: impl Iterator<Item = &'a str>,
) -> Vec<usize> {
    let mut tainted: HashSet<&str> = names.collect();
    let mut out = Vec::new();
    for &k in hoisted {
        let n = &body.node[k];
        if n.input.iter().any(|i| tainted.contains(i.as_str())) {
            tainted.extend(n.output.iter().map(String::as_str));
            out.push(k);
        }
    }
    out
}

/// The nodes of a loop body that read only loop-invariant values (outer-scope values, the
/// `invariant` body inputs, and the outputs of such nodes), in order: deterministic
/// default-domain nodes without subgraphs, and the `Constant`s they read. Hoisting them
/// out of the loop computes them once per run instead of once per iteration (SLANet's
/// decoder transposes two weight matrices in its body).
fn hoistable<'a>(body: &GraphProto, invariant: impl Iterator<Item = &'a str>) -> Vec<usize> {
    const IMPURE: [&str; 9] = [
        "If",
        "Loop",
        "Scan",
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Bernoulli",
        "Multinomial",
    ];
    let mut local: HashSet<&str> = body.input.iter().map(|v| v.name.as_str()).collect();
    local.extend(body.initializer.iter().map(|t| t.name.as_str()));
    for nd in &body.node {
        local.extend(nd.output.iter().map(String::as_str));
    }
    let mut available: HashSet<&str> = invariant.collect();
    let mut candidates = Vec::new();
    for (k, nd) in body.node.iter().enumerate() {
        let pure = super::super::is_default_domain(&nd.domain)
            && !IMPURE.contains(&nd.op_type.as_str())
            && nd
                .attribute
                .iter()
                .all(|a| a.g.is_none() && a.graphs.is_empty());
        let ready = nd
            .input
            .iter()
            .all(|i| i.is_empty() || available.contains(i.as_str()) || !local.contains(i.as_str()));
        if pure && ready {
            available.extend(nd.output.iter().map(String::as_str));
            candidates.push(k);
        }
    }
    // Constants move only with a node that reads them.
    let moving: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&k| body.node[k].op_type != "Constant")
        .collect();
    let read: HashSet<&str> = moving
        .iter()
        .flat_map(|&k| body.node[k].input.iter().map(String::as_str))
        .collect();
    candidates
        .into_iter()
        .filter(|&k| {
            let nd = &body.node[k];
            nd.op_type != "Constant" || nd.output.iter().any(|o| read.contains(o.as_str()))
        })
        .collect()
}
