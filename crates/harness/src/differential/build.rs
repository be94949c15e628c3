//! A [`Case`] built into a Function: parameters broadcast to the target shape, the ops with
//! operands converted to the types they take, and the sinks and results chosen.

use graphlift_ir::{
    BinaryOp, CompareOp, ElementType, Function, FunctionBuilder, Op, UnaryOp, Value,
};
use graphlift_jit::vmath;

use super::*;

pub(super) fn ty_of(v: &Value<'_>) -> ElementType {
    v.tensor_type().map(|t| t.0).unwrap_or(ElementType::F32)
}

pub(super) fn to<'b>(v: Value<'b>, t: ElementType) -> Value<'b> {
    if ty_of(&v) == t {
        v
    } else {
        v.convert(t)
    }
}

pub(super) fn numeric(t: usize) -> ElementType {
    [
        ElementType::F32,
        ElementType::F64,
        ElementType::I32,
        ElementType::I64,
    ][t % 4]
}

/// A built value and, for an approximate sink, its op and the index of its input value.
pub(super) struct Built<'b> {
    v: Value<'b>,
    sink: Option<Sink>,
}

/// Builds the case's Function and says which results are approximate sinks; `None` if the
/// builder rejects the graph (a case can describe an ill-typed graph, which is no test).
pub fn build(c: &Case) -> Option<(Function, Sinks)> {
    if c.params.is_empty() {
        return None;
    }
    let b = FunctionBuilder::new("differential");
    let mut vals: Vec<Built<'_>> = Vec::new();
    for (k, p) in c.params.iter().enumerate() {
        let rank = c.dims.len().saturating_sub(p.drop.min(c.dims.len()));
        let offset = c.dims.len() - rank;
        let shape: Vec<usize> = (0..rank)
            .map(|a| {
                let from_right = rank - 1 - a;
                if p.keep >> (from_right % 8) & 1 == 1 {
                    c.dims[offset + a]
                } else {
                    1
                }
            })
            .collect();
        let ty = ElementType::ALL[p.ty % ElementType::ALL.len()];
        let v = b.parameter(&format!("p{k}"), ty, shape);
        vals.push(Built { v, sink: None });
    }
    let mut must_result: Vec<usize> = Vec::new();
    for op in &c.ops {
        let live: Vec<usize> = (0..vals.len())
            .filter(|&i| vals[i].sink.is_none())
            .collect();
        let pick = |k: usize| live[op.operands[k] % live.len()];
        let (a, bb, cc) = (vals[pick(0)].v, vals[pick(1)].v, vals[pick(2)].v);
        let built = match op.kind % 8 {
            0 | 4 => {
                let u = UnaryOp::ALL[op.sub % UnaryOp::ALL.len()];
                let x = match u {
                    UnaryOp::Not => to(a, ElementType::Bool),
                    UnaryOp::Exp
                    | UnaryOp::Log
                    | UnaryOp::Sqrt
                    | UnaryOp::Tanh
                    | UnaryOp::Sigmoid
                    | UnaryOp::Erf
                    | UnaryOp::Expm1
                    | UnaryOp::Log1p => {
                        if ty_of(&a).is_float() {
                            a
                        } else {
                            to(a, [ElementType::F32, ElementType::F64][op.ty % 2])
                        }
                    }
                    _ if ty_of(&a) == ElementType::Bool => to(a, numeric(op.ty)),
                    _ => a,
                };
                let y = b.op(Op::Unary(u), &[x]);
                if vmath::max_ulp(u, ty_of(&x)).is_some() {
                    vals.push(Built { v: x, sink: None });
                    must_result.push(vals.len() - 1);
                    Built {
                        v: y,
                        sink: Some(Sink::Unary(u, vals.len() - 1)),
                    }
                } else {
                    Built { v: y, sink: None }
                }
            }
            1 => {
                let op_b = BinaryOp::ALL[op.sub % BinaryOp::ALL.len()];
                let logical = matches!(op_b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
                let t = if logical {
                    ElementType::Bool
                } else if ty_of(&a) == ElementType::Bool {
                    numeric(op.ty)
                } else {
                    ty_of(&a)
                };
                let y = b.broadcasting_op(Op::Binary(op_b), &[to(a, t), to(bb, t)]);
                let sink = (op_b == BinaryOp::Power && t.is_float()).then_some(Sink::Power);
                Built { v: y, sink }
            }
            2 => {
                let cmp = CompareOp::ALL[op.sub % CompareOp::ALL.len()];
                let y = b.broadcasting_op(Op::Compare(cmp), &[a, to(bb, ty_of(&a))]);
                Built { v: y, sink: None }
            }
            5..=7 => {
                let y = graphlift_ir::select(to(cc, ElementType::Bool), a, to(bb, ty_of(&a)));
                Built { v: y, sink: None }
            }
            _ => Built {
                v: to(a, ElementType::ALL[op.ty % ElementType::ALL.len()]),
                sink: None,
            },
        };
        vals.push(built);
    }
    let mut chosen: Vec<usize> = (0..vals.len())
        .filter(|&i| {
            vals[i].sink.is_some() || must_result.contains(&i) || c.results >> (i % 64) & 1 == 1
        })
        .collect();
    if chosen.is_empty() {
        chosen.push(vals.len() - 1);
    }
    let results: Vec<Value<'_>> = chosen.iter().map(|&i| vals[i].v).collect();
    let sinks = chosen
        .iter()
        .map(|&i| {
            vals[i].sink.map(|sink| match sink {
                Sink::Unary(u, input) => {
                    let at = chosen.iter().position(|&j| j == input);
                    Sink::Unary(u, at.unwrap_or(usize::MAX))
                }
                Sink::Power => Sink::Power,
            })
        })
        .collect();
    let f = b.finish(&results).ok()?;
    Some((f, sinks))
}
