//! JSON text -> Function, the reading half of the JSON format: staged so that every error
//! says where it is, and nothing panics on any input.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::constant::{check_constant, decode_constant};
use super::dto::{DocumentDto, FunctionDto, NodeDto, OpDto, TypeDto};
use super::{JSON_FORMAT, JSON_VERSION};
use crate::attrs::{
    ArgOp, ArgReduction, Attention, Convolution, ConvolutionBackprop, Distribution, LayerNorm, Pad,
    QuantizedMatMul, RandomFill, ReduceOp, Reduction, ScatterAdd,
};
use crate::error::{SerializationError, SerializationErrorKind as Kind};
use crate::infer::infer_output_types;
use crate::{
    BinaryOp, CompareOp, CreationSite, ElementType, Function, FusedKernel, Node, NodeId, Op,
    Output, ProvenanceTags, Shape, TensorType, UnaryOp, Variable,
};

type Res<T> = Result<T, SerializationError>;

fn invalid(location: &str, message: impl Into<String>) -> SerializationError {
    SerializationError::new(Kind::Invalid, location, message)
}

fn from_serde(location: &str, e: &serde_json::Error) -> SerializationError {
    let kind = match e.classify() {
        serde_json::error::Category::Data => Kind::Schema,
        serde_json::error::Category::Io
        | serde_json::error::Category::Syntax
        | serde_json::error::Category::Eof => Kind::Syntax,
    };
    SerializationError::new(kind, location, e.to_string())
}

/// Reads a whole document.
///
/// Reading goes in stages, each with errors that say where they are: JSON syntax (line and
/// column), the format tag and version, the document's fields, then each node on its own
/// (node index and name), name resolution, and finally shape and type inference in
/// topological order and [`Function::validate`]. Nothing here panics on any input.
pub(super) fn read_document(text: &str) -> Res<Function> {
    let value: Value = serde_json::from_str(text).map_err(|e| from_serde("", &e))?;
    check_header(&value)?;
    let doc: DocumentDto<Value> =
        serde_json::from_value(value).map_err(|e| from_serde("document", &e))?;
    decode_function(doc.function, "")
}

/// Checks `format` and `version` before anything else, so that a document of another
/// version is reported as such rather than as a field mismatch.
fn check_header(value: &Value) -> Res<()> {
    let unsupported = |m: String| SerializationError::new(Kind::UnsupportedFormat, "", m);
    let Some(obj) = value.as_object() else {
        return Err(unsupported(format!(
            "the document is not a JSON object (expected {{\"format\": \"{JSON_FORMAT}\", ...}})"
        )));
    };
    match obj.get("format") {
        Some(Value::String(s)) if s == JSON_FORMAT => {}
        Some(other) => {
            return Err(unsupported(format!(
                "`format` is {other}, expected \"{JSON_FORMAT}\""
            )))
        }
        None => {
            return Err(unsupported(format!(
                "no `format` field (expected \"format\": \"{JSON_FORMAT}\")"
            )))
        }
    }
    match obj.get("version") {
        Some(v) if v.as_u64().is_some_and(|v| (1..=JSON_VERSION).contains(&v)) => Ok(()),
        Some(v) => Err(unsupported(format!(
            "version {v} is not supported: this build reads versions 1 to {JSON_VERSION}"
        ))),
        None => Err(unsupported(format!(
            "no `version` field (this build reads versions 1 to {JSON_VERSION})"
        ))),
    }
}

fn node_location(function: &str, index: usize, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{function} / node {index} `{n}`"),
        None => format!("{function} / node {index}"),
    }
}

/// Decodes one function (the top level or a fused kernel body); `outer` locates it.
fn decode_function(dto: FunctionDto<Value>, outer: &str) -> Res<Function> {
    let here = if outer.is_empty() {
        format!("function `{}`", dto.name)
    } else {
        format!("{outer} / body function `{}`", dto.name)
    };
    let mut nodes = Vec::with_capacity(dto.nodes.len());
    for (i, v) in dto.nodes.into_iter().enumerate() {
        let name = v.get("name").and_then(Value::as_str).map(str::to_owned);
        let loc = node_location(&here, i, name.as_deref());
        let n: NodeDto<Value> = serde_json::from_value(v).map_err(|e| from_serde(&loc, &e))?;
        nodes.push(n);
    }
    let mut index: HashMap<String, usize> = HashMap::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        if let Some(j) = index.insert(n.name.clone(), i) {
            return Err(invalid(
                &node_location(&here, i, Some(&n.name)),
                format!("the name is already used by node {j}"),
            ));
        }
    }
    let resolver = Resolver {
        function: &here,
        index: &index,
    };
    let mut built = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.into_iter().enumerate() {
        let loc = node_location(&here, i, Some(&n.name));
        built.push(decode_node(n, &resolver, &loc)?);
    }
    let parameters = resolver.listed(&dto.parameters, "parameters", &built)?;
    let results = resolver.listed(&dto.results, "results", &built)?;
    check_listed(&built, &parameters, &results, &here)?;
    let sinks = dto
        .sinks
        .iter()
        .enumerate()
        .map(|(k, s)| resolver.id(s, &here, &format!("sink {k}")))
        .collect::<Res<Vec<_>>>()?;
    let mut f = Function::from_parts(dto.name, built, parameters, results)
        .map_err(|e| invalid(&here, e.to_string()))?;
    for s in sinks {
        f.add_sink(s).map_err(|e| invalid(&here, e.to_string()))?;
    }
    check_types(&f, &here)?;
    f.validate().map_err(|e| invalid(&here, e.to_string()))?;
    Ok(f)
}

/// Resolves names of one function to node ids.
struct Resolver<'a> {
    function: &'a str,
    index: &'a HashMap<String, usize>,
}

impl Resolver<'_> {
    fn id(&self, name: &str, loc: &str, what: &str) -> Res<NodeId> {
        let i = self.index.get(name).ok_or_else(|| {
            invalid(
                loc,
                format!("{what} refers to `{name}`, which is not a node of this function"),
            )
        })?;
        u32::try_from(*i)
            .map(NodeId)
            .map_err(|_| invalid(loc, "more than 2^32 nodes"))
    }

    /// Resolves the `parameters` or `results` list, checking each node's op.
    fn listed(&self, names: &[String], field: &str, nodes: &[Node]) -> Res<Vec<NodeId>> {
        let want_param = field == "parameters";
        let mut seen = HashSet::new();
        let mut ids = Vec::with_capacity(names.len());
        for (k, name) in names.iter().enumerate() {
            let id = self.id(name, self.function, &format!("`{field}` entry {k}"))?;
            let op = &nodes[id.index()].op;
            let ok = if want_param {
                matches!(op, Op::Parameter)
            } else {
                matches!(op, Op::Result)
            };
            if !ok {
                return Err(invalid(
                    self.function,
                    format!("`{field}` entry {k} names `{name}`, which is a {op} node"),
                ));
            }
            if !seen.insert(id) {
                return Err(invalid(
                    self.function,
                    format!("`{field}` lists `{name}` twice"),
                ));
            }
            ids.push(id);
        }
        Ok(ids)
    }
}

/// Every Parameter and Result node must be listed (a function never has unlisted ones).
fn check_listed(nodes: &[Node], parameters: &[NodeId], results: &[NodeId], here: &str) -> Res<()> {
    let listed: HashSet<usize> = parameters
        .iter()
        .chain(results)
        .map(|id| id.index())
        .collect();
    for (i, n) in nodes.iter().enumerate() {
        if matches!(n.op, Op::Parameter | Op::Result) && !listed.contains(&i) {
            return Err(invalid(
                &node_location(here, i, Some(&n.name)),
                format!(
                    "a {} node that is missing from `{}`",
                    n.op,
                    if matches!(n.op, Op::Parameter) {
                        "parameters"
                    } else {
                        "results"
                    }
                ),
            ));
        }
    }
    Ok(())
}

fn decode_node(n: NodeDto<Value>, r: &Resolver<'_>, loc: &str) -> Res<Node> {
    let outputs = n
        .outputs
        .iter()
        .enumerate()
        .map(|(k, t)| decode_type(t, loc, &format!("output {k}")))
        .collect::<Res<Vec<_>>>()?;
    let inputs = n
        .inputs
        .iter()
        .enumerate()
        .map(|(k, i)| {
            r.id(&i.node, loc, &format!("input {k}"))
                .map(|id| Output::new(id, i.output))
        })
        .collect::<Res<Vec<_>>>()?;
    let other_deps = n
        .other_deps
        .iter()
        .enumerate()
        .map(|(k, d)| r.id(d, loc, &format!("control dependency {k}")))
        .collect::<Res<Vec<_>>>()?;
    let mut tags = ProvenanceTags::new();
    for t in n.tags {
        if !tags.insert(t.as_str()) {
            return Err(invalid(
                loc,
                format!("provenance tag `{t}` is listed twice"),
            ));
        }
    }
    let op = decode_op(n.op, loc)?;
    Ok(Node {
        id: NodeId(0),
        name: n.name.into(),
        op,
        inputs: inputs.into(),
        outputs: outputs.into(),
        metadata: n.metadata,
        tags,
        pass_history: n.pass_history,
        site: CreationSite {
            file: n.site.file.into(),
            line: n.site.line,
            column: n.site.column,
        },
        other_deps,
        users: Default::default(),
    })
}

fn element_type(name: &str, loc: &str, what: &str) -> Res<ElementType> {
    ElementType::from_name(name).ok_or_else(|| {
        invalid(
            loc,
            format!("{what}: unknown element type `{name}` (expected f32, f64, i32, i64 or bool)"),
        )
    })
}

fn decode_type(t: &TypeDto, loc: &str, what: &str) -> Res<TensorType> {
    let et = element_type(&t.element_type, loc, what)?;
    let shape = Shape::new(t.shape.clone());
    shape
        .element_count()
        .map_err(|e| invalid(loc, format!("{what}: {e}")))?;
    Ok(TensorType::new(et, shape))
}

/// Decodes an op, checking it has exactly the attributes its type takes.
fn decode_op(op: OpDto<Value>, loc: &str) -> Res<Op> {
    let kind = op.kind.as_str();
    let mut present: Vec<&str> = Vec::new();
    for (field, is_set) in [
        ("to", op.to.is_some()),
        ("shape", op.shape.is_some()),
        ("element_type", op.element_type.is_some()),
        ("values", op.values.is_some()),
        ("body", op.body.is_some()),
        ("initializer", op.initializer.is_some()),
        ("seed", op.seed.is_some()),
        ("low", op.low.is_some()),
        ("high", op.high.is_some()),
        ("mean", op.mean.is_some()),
        ("scale", op.scale.is_some()),
        ("perm", op.perm.is_some()),
        ("slice", op.slice.is_some()),
        ("low_pads", op.low_pads.is_some()),
        ("high_pads", op.high_pads.is_some()),
        ("interior", op.interior.is_some()),
        ("pad_mode", op.pad_mode.is_some()),
        ("select_last_index", op.select_last_index.is_some()),
        ("resize", op.resize.is_some()),
        ("recurrent", op.recurrent.is_some()),
        ("top_k", op.top_k.is_some()),
        ("cum_sum", op.cum_sum.is_some()),
        ("grid_sample", op.grid_sample.is_some()),
        ("reduction", op.reduction.is_some()),
        ("axis", op.axis.is_some()),
        ("axes", op.axes.is_some()),
        ("keep_dims", op.keep_dims.is_some()),
        ("epsilon", op.epsilon.is_some()),
        ("window", op.window.is_some()),
        ("groups", op.groups.is_some()),
        ("heads", op.heads.is_some()),
        ("zero_point", op.zero_point.is_some()),
    ] {
        if is_set {
            present.push(field);
        }
    }
    let takes: &[&str] = match kind {
        "Convert" => &["to"],
        "Broadcast" => &["shape"],
        "Constant" => &["element_type", "values"],
        "FusedKernel" => &["body"],
        "Variable" => &["initializer"],
        "RandomUniform" => &["element_type", "shape", "seed", "low", "high"],
        "RandomNormal" => &["element_type", "shape", "seed", "mean", "scale"],
        "Reshape" => &["shape"],
        "Transpose" => &["perm"],
        "Slice" => &["slice"],
        "Concat" | "Gather" | "Softmax" => &["axis"],
        "ScatterAdd" => &["axis", "shape"],
        "Pad" => &["low_pads", "high_pads", "interior"],
        "ArgMax" | "ArgMin" => &["axis", "keep_dims", "select_last_index"],
        "Resize" => &["resize"],
        "TopK" => &["top_k"],
        "CumSum" => &["cum_sum"],
        "GridSample" => &["grid_sample"],
        "ScatterNd" => &["reduction"],
        "LayerNorm" => &["axis", "epsilon"],
        "Attention" => &["heads", "scale"],
        "QuantizedMatMul" => &["scale", "zero_point"],
        "RNNSequence" | "GRUSequence" | "LSTMSequence" => &["recurrent"],
        "BatchNormInference" => &["epsilon"],
        "Convolution" | "ConvolutionInteger" => &["window", "groups"],
        "ConvolutionBackpropData" | "ConvolutionBackpropFilters" => &["window", "groups", "shape"],
        "MaxPool" | "MaxPoolBackprop" | "MaxPoolIndices" => &["window"],
        k if k.starts_with("Reduce") => &["axes", "keep_dims"],
        _ => &[],
    };
    // Attributes an op may leave out (their absence is the default).
    let optional: &[&str] = match kind {
        "Pad" => &["pad_mode"],
        _ => &[],
    };
    if let Some(extra) = present
        .iter()
        .find(|f| !takes.contains(f) && !optional.contains(f))
    {
        return Err(invalid(
            loc,
            format!("op `{kind}` takes no attribute `{extra}`"),
        ));
    }
    if let Some(missing) = takes.iter().find(|f| !present.contains(f)) {
        return Err(invalid(
            loc,
            format!("op `{kind}` needs the attribute `{missing}`"),
        ));
    }
    let decoded = match kind {
        "Parameter" => Op::Parameter,
        "Result" => Op::Result,
        "Select" => Op::Select,
        "Convert" => Op::Convert(element_type(
            op.to.as_deref().unwrap_or_default(),
            loc,
            "Convert `to`",
        )?),
        "Broadcast" => Op::Broadcast(Shape::new(op.shape.unwrap_or_default())),
        "Constant" => Op::Constant(Arc::new(decode_constant(
            element_type(
                op.element_type.as_deref().unwrap_or_default(),
                loc,
                "Constant `element_type`",
            )?,
            op.values.unwrap_or_default(),
            loc,
        )?)),
        "If" | "Loop" | "Scan" => {
            return Err(invalid(
                loc,
                format!(
                    "op `{}` is control flow, whose sub-Function bodies graphlift's JSON \
                     format does not hold: a Function with control flow cannot be loaded \
                     from JSON (import it from its ONNX model instead)",
                    op.kind
                ),
            ));
        }
        "FusedKernel" => {
            let Some(body) = op.body else {
                return Err(invalid(loc, "op `FusedKernel` needs the attribute `body`"));
            };
            Op::FusedKernel(Arc::new(FusedKernel {
                body: decode_function(*body, loc)?,
            }))
        }
        "Variable" => {
            let Some(init) = op.initializer else {
                return Err(invalid(
                    loc,
                    "op `Variable` needs the attribute `initializer`",
                ));
            };
            Op::Variable(Arc::new(Variable {
                initializer: decode_function(*init, loc)?,
            }))
        }
        "RandomUniform" | "RandomNormal" => {
            let distribution = if kind == "RandomUniform" {
                Distribution::Uniform {
                    low: op.low.unwrap_or_default(),
                    high: op.high.unwrap_or_default(),
                }
            } else {
                Distribution::Normal {
                    mean: op.mean.unwrap_or_default(),
                    scale: op.scale.unwrap_or_default(),
                }
            };
            Op::Random(Arc::new(RandomFill {
                distribution,
                element_type: element_type(
                    op.element_type.as_deref().unwrap_or_default(),
                    loc,
                    "Random `element_type`",
                )?,
                shape: Shape::new(op.shape.unwrap_or_default()),
                seed: op.seed.unwrap_or_default(),
            }))
        }
        "ReadVariable" => Op::ReadVariable,
        "Assign" => Op::Assign,
        "Reshape" => Op::Reshape(Shape::new(op.shape.unwrap_or_default())),
        "Transpose" => Op::Transpose(op.perm.unwrap_or_default()),
        "Slice" => Op::Slice(op.slice.unwrap_or_default()),
        "Pad" => Op::Pad(Pad {
            low: op.low_pads.unwrap_or_default(),
            high: op.high_pads.unwrap_or_default(),
            interior: op.interior.unwrap_or_default(),
            mode: op.pad_mode.unwrap_or_default(),
        }),
        "ArgMax" | "ArgMin" => Op::ArgReduce(ArgReduction {
            op: if kind == "ArgMax" {
                ArgOp::Max
            } else {
                ArgOp::Min
            },
            axis: op.axis.unwrap_or_default(),
            keep_dims: op.keep_dims.unwrap_or_default(),
            select_last_index: op.select_last_index.unwrap_or_default(),
        }),
        "Resize" => match op.resize {
            Some(r) => Op::Resize(r),
            None => return Err(invalid(loc, "op `Resize` needs the attribute `resize`")),
        },
        "TopK" => match op.top_k {
            Some(t) => Op::TopK(t),
            None => return Err(invalid(loc, "op `TopK` needs the attribute `top_k`")),
        },
        "CumSum" => match op.cum_sum {
            Some(c) => Op::CumSum(c),
            None => return Err(invalid(loc, "op `CumSum` needs the attribute `cum_sum`")),
        },
        "GridSample" => match op.grid_sample {
            Some(g) => Op::GridSample(g),
            None => {
                return Err(invalid(
                    loc,
                    "op `GridSample` needs the attribute `grid_sample`",
                ))
            }
        },
        "ScatterNd" => Op::ScatterNd(op.reduction.unwrap_or_default()),
        "Concat" => Op::Concat(op.axis.unwrap_or_default()),
        "Gather" => Op::Gather(op.axis.unwrap_or_default()),
        "ScatterAdd" => Op::ScatterAdd(ScatterAdd {
            axis: op.axis.unwrap_or_default(),
            shape: Shape::new(op.shape.unwrap_or_default()),
        }),
        "Softmax" => Op::Softmax(op.axis.unwrap_or_default()),
        "MatMul" => Op::MatMul,
        "QuantizedMatMul" => Op::QuantizedMatMul(QuantizedMatMul {
            // An f32 scale was written as its exact f64 value.
            x_scale: op.scale.unwrap_or_default() as f32,
            x_zero_point: op.zero_point.unwrap_or_default(),
        }),
        "LayerNorm" => Op::LayerNorm(LayerNorm {
            axis: op.axis.unwrap_or_default(),
            epsilon: op.epsilon.unwrap_or_default(),
        }),
        "Attention" => Op::Attention(Attention {
            heads: op.heads.unwrap_or_default(),
            scale: op.scale.unwrap_or_default(),
        }),
        "RNNSequence" | "GRUSequence" | "LSTMSequence" => match op.recurrent {
            Some(r) if r.type_name() == kind => Op::Recurrent(Arc::new(r)),
            Some(r) => {
                return Err(invalid(
                    loc,
                    format!("op `{kind}` has the attributes of a {}", r.type_name()),
                ))
            }
            None => {
                return Err(invalid(
                    loc,
                    format!("op `{kind}` needs the attribute `recurrent`"),
                ))
            }
        },
        "BatchNormInference" => Op::BatchNormInference(op.epsilon.unwrap_or_default()),
        "Convolution" => Op::Convolution(Convolution {
            window: op.window.unwrap_or_default(),
            groups: op.groups.unwrap_or_default(),
        }),
        "ConvolutionInteger" => Op::ConvolutionInteger(Convolution {
            window: op.window.unwrap_or_default(),
            groups: op.groups.unwrap_or_default(),
        }),
        "ConvolutionBackpropData" | "ConvolutionBackpropFilters" => {
            let b = ConvolutionBackprop {
                convolution: Convolution {
                    window: op.window.unwrap_or_default(),
                    groups: op.groups.unwrap_or_default(),
                },
                shape: Shape::new(op.shape.unwrap_or_default()),
            };
            if kind == "ConvolutionBackpropData" {
                Op::ConvolutionBackpropData(b)
            } else {
                Op::ConvolutionBackpropFilters(b)
            }
        }
        "MaxPool" => Op::MaxPool(op.window.unwrap_or_default()),
        "MaxPoolBackprop" => Op::MaxPoolBackprop(op.window.unwrap_or_default()),
        "MaxPoolIndices" => Op::MaxPoolIndices(op.window.unwrap_or_default()),
        other => {
            if let Some(r) = other.strip_prefix("Reduce").and_then(ReduceOp::from_name) {
                Op::Reduce(Reduction {
                    op: r,
                    axes: op.axes.unwrap_or_default(),
                    keep_dims: op.keep_dims.unwrap_or_default(),
                })
            } else if let Some(u) = UnaryOp::ALL.into_iter().find(|u| u.name() == other) {
                Op::Unary(u)
            } else if let Some(b) = BinaryOp::ALL.into_iter().find(|b| b.name() == other) {
                Op::Binary(b)
            } else if let Some(c) = CompareOp::ALL.into_iter().find(|c| c.name() == other) {
                Op::Compare(c)
            } else {
                return Err(invalid(loc, format!("unknown op type `{other}`")));
            }
        }
    };
    Ok(decoded)
}

/// Re-runs shape and type inference in topological order and compares with the types the
/// file records, so an edited shape is reported at the first node it breaks.
fn check_types(f: &Function, here: &str) -> Res<()> {
    let order = f
        .topological_order()
        .map_err(|e| invalid(here, e.to_string()))?;
    for id in order {
        let node = f.node(id).map_err(|e| invalid(here, e.to_string()))?;
        let loc = node_location(here, id.index(), Some(&node.name));
        let in_types: Vec<TensorType> = node
            .inputs
            .iter()
            .map(|&o| f.output_type(o).cloned())
            .collect::<Result<_, _>>()
            .map_err(|e| invalid(&loc, e.to_string()))?;
        let expected = match &node.op {
            Op::Parameter | Op::Constant(_) => {
                if !node.inputs.is_empty() {
                    return Err(invalid(&loc, format!("a {} takes no inputs", node.op)));
                }
                if node.outputs.len() != 1 {
                    return Err(invalid(
                        &loc,
                        format!(
                            "a {} has one output, the file records {}",
                            node.op,
                            node.outputs.len()
                        ),
                    ));
                }
                if let Op::Constant(d) = &node.op {
                    check_constant(d, &node.outputs[0], &loc)?;
                }
                node.outputs.clone()
            }
            op => infer_output_types(op, &in_types).map_err(|m| {
                invalid(
                    &loc,
                    format!("{op}: {m}; operands: {}", join_types(&in_types)),
                )
            })?,
        };
        if expected.as_slice() != node.outputs.as_slice() {
            return Err(invalid(
                &loc,
                format!(
                    "{}: the file records output type(s) {} but inference gives {}",
                    node.op,
                    join_types(&node.outputs),
                    join_types(&expected)
                ),
            ));
        }
    }
    Ok(())
}

fn join_types(ts: &[TensorType]) -> String {
    if ts.is_empty() {
        return "(none)".to_string();
    }
    ts.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
