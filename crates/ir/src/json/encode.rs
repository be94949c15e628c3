//! Function -> DTOs (the writing half of the JSON format).

use serde_json::Value;

use super::dto::{FunctionDto, InputDto, NodeDto, OpDto, SiteDto, TypeDto, WrittenNode};
use crate::{Distribution, Function, Node, NodeId, Op, PadMode, TensorData, TensorType};

/// The DTO of `f`: live nodes in id order (arena holes are dropped), references by name.
pub(super) fn function_dto(f: &Function) -> FunctionDto<WrittenNode> {
    FunctionDto {
        name: f.name().to_string(),
        parameters: f.parameters().iter().map(|&id| name_of(f, id)).collect(),
        results: f.results().iter().map(|&id| name_of(f, id)).collect(),
        sinks: f.sinks().iter().map(|&id| name_of(f, id)).collect(),
        nodes: f.nodes().map(|n| WrittenNode(node_dto(f, n))).collect(),
    }
}

/// The name of node `id`; a placeholder that no loader resolves if `f` is not valid.
fn name_of(f: &Function, id: NodeId) -> String {
    f.get(id)
        .map_or_else(|| format!("<missing node {id}>"), |n| n.name().to_string())
}

fn node_dto(f: &Function, n: &Node) -> NodeDto<WrittenNode> {
    NodeDto {
        name: n.name().to_string(),
        op: op_dto(n.op()),
        inputs: n
            .inputs()
            .iter()
            .map(|o| InputDto {
                node: name_of(f, o.node),
                output: o.index,
            })
            .collect(),
        outputs: n.outputs().iter().map(type_dto).collect(),
        metadata: n.metadata().clone(),
        tags: n.tags().iter().map(str::to_string).collect(),
        pass_history: n.pass_history().to_vec(),
        site: SiteDto {
            file: n.creation_site().file.to_string(),
            line: n.creation_site().line,
            column: n.creation_site().column,
        },
        other_deps: n.other_deps().iter().map(|&d| name_of(f, d)).collect(),
    }
}

fn type_dto(t: &TensorType) -> TypeDto {
    TypeDto {
        element_type: t.element_type.name().to_string(),
        shape: t.shape.dims().to_vec(),
    }
}

fn op_dto(op: &Op) -> OpDto<WrittenNode> {
    let mut dto = OpDto::plain(op.type_name());
    match op {
        Op::Convert(t) => dto.to = Some(t.name().to_string()),
        Op::Broadcast(s) => dto.shape = Some(s.dims().to_vec()),
        Op::Constant(d) => {
            dto.element_type = Some(d.element_type().name().to_string());
            dto.values = Some(constant_values(d));
        }
        Op::FusedKernel(k) => dto.body = Some(Box::new(function_dto(&k.body))),
        // Control flow is written by name only (its bodies are not part of the format):
        // reading it back is an error that says so (`decode.rs`).
        Op::ControlFlow(_) => {}
        Op::Variable(v) => dto.initializer = Some(Box::new(function_dto(&v.initializer))),
        Op::Random(r) => {
            dto.element_type = Some(r.element_type.name().to_string());
            dto.shape = Some(r.shape.dims().to_vec());
            dto.seed = Some(r.seed);
            match r.distribution {
                Distribution::Uniform { low, high } => {
                    (dto.low, dto.high) = (Some(low), Some(high))
                }
                Distribution::Normal { mean, scale } => {
                    (dto.mean, dto.scale) = (Some(mean), Some(scale))
                }
            }
        }
        Op::Reshape(s) => dto.shape = Some(s.dims().to_vec()),
        Op::Transpose(p) => dto.perm = Some(p.clone()),
        Op::Slice(axes) => dto.slice = Some(axes.clone()),
        Op::Pad(p) => {
            dto.low_pads = Some(p.low.clone());
            dto.high_pads = Some(p.high.clone());
            dto.interior = Some(p.interior.clone());
            if p.mode != PadMode::Constant {
                dto.pad_mode = Some(p.mode);
            }
        }
        Op::ArgReduce(r) => {
            dto.axis = Some(r.axis);
            dto.keep_dims = Some(r.keep_dims);
            dto.select_last_index = Some(r.select_last_index);
        }
        Op::Resize(r) => dto.resize = Some(r.clone()),
        Op::TopK(t) => dto.top_k = Some(*t),
        Op::CumSum(c) => dto.cum_sum = Some(*c),
        Op::GridSample(g) => dto.grid_sample = Some(*g),
        Op::ScatterNd(r) => dto.reduction = Some(*r),
        Op::Concat(axis) | Op::Gather(axis) | Op::Softmax(axis) => dto.axis = Some(*axis),
        Op::ScatterAdd(s) => {
            dto.axis = Some(s.axis);
            dto.shape = Some(s.shape.dims().to_vec());
        }
        Op::Reduce(r) => {
            dto.axes = Some(r.axes.clone());
            dto.keep_dims = Some(r.keep_dims);
        }
        Op::LayerNorm(l) => {
            dto.axis = Some(l.axis);
            dto.epsilon = Some(l.epsilon);
        }
        Op::Attention(a) => {
            dto.heads = Some(a.heads);
            dto.scale = Some(a.scale);
        }
        Op::QuantizedMatMul(q) => {
            dto.scale = Some(f64::from(q.x_scale));
            dto.zero_point = Some(q.x_zero_point);
        }
        Op::Recurrent(r) => dto.recurrent = Some((**r).clone()),
        Op::BatchNormInference(eps) => dto.epsilon = Some(*eps),
        Op::Convolution(c) | Op::ConvolutionInteger(c) => {
            dto.window = Some(c.window.clone());
            dto.groups = Some(c.groups);
        }
        Op::ConvolutionBackpropData(b) | Op::ConvolutionBackpropFilters(b) => {
            dto.window = Some(b.convolution.window.clone());
            dto.groups = Some(b.convolution.groups);
            dto.shape = Some(b.shape.dims().to_vec());
        }
        Op::MaxPool(w) | Op::MaxPoolBackprop(w) | Op::MaxPoolIndices(w) => {
            dto.window = Some(w.clone())
        }
        Op::Parameter
        | Op::Result
        | Op::Unary(_)
        | Op::Binary(_)
        | Op::Compare(_)
        | Op::Select
        | Op::MatMul
        | Op::ReadVariable
        | Op::Assign => {}
    }
    dto
}

/// Constant elements in the format's encoding: floats as hex bit patterns (4 digits for
/// `f16`/`bf16`), 64-bit integers as decimal strings, narrower integers as JSON numbers,
/// `bool` as JSON booleans, strings as JSON strings.
fn constant_values(d: &TensorData) -> Vec<Value> {
    fn hex(bits: u64, digits: usize) -> Value {
        Value::String(format!("0x{bits:0digits$x}"))
    }
    fn numbers<T: Copy + Into<Value>>(v: &[T]) -> Vec<Value> {
        v.iter().map(|&x| x.into()).collect()
    }
    match d {
        TensorData::F32(v) => v.iter().map(|x| hex(x.to_bits().into(), 8)).collect(),
        TensorData::F64(v) => v.iter().map(|x| hex(x.to_bits(), 16)).collect(),
        TensorData::F16(v) => v.iter().map(|x| hex(x.to_bits().into(), 4)).collect(),
        TensorData::BF16(v) => v.iter().map(|x| hex(x.to_bits().into(), 4)).collect(),
        TensorData::I64(v) => v.iter().map(|x| Value::String(x.to_string())).collect(),
        TensorData::U64(v) => v.iter().map(|x| Value::String(x.to_string())).collect(),
        TensorData::I32(v) => numbers(v),
        TensorData::I8(v) => numbers(v),
        TensorData::U8(v) => numbers(v),
        TensorData::I16(v) => numbers(v),
        TensorData::U16(v) => numbers(v),
        TensorData::U32(v) => numbers(v),
        TensorData::Bool(v) => numbers(v),
        TensorData::String(v) => v.iter().map(|s| Value::String(s.clone())).collect(),
        // The storage-only types: their bit patterns as JSON integers.
        other => crate::storage_bits(other)
            .unwrap_or_default()
            .into_iter()
            .map(Value::from)
            .collect(),
    }
}
