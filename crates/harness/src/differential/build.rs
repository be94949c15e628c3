//! A [`Case`] built into a Function: parameters broadcast to the target shape, the ops with
//! operands converted to the types they take, and the sinks and results chosen. The value
//! pool ([`Values`]) is shared with the stateful cases of [`super::state`].

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

/// The shape of an operand of the target shape `dims` (see [`ParamSpec`]): `drop` leading
/// axes dropped, and of the rest, the axes whose bit in `keep` (counted from the right) is
/// clear reduced to extent 1, so that it numpy-broadcasts to `dims`.
pub(super) fn operand_shape(dims: &[usize], keep: u8, drop: usize) -> Vec<usize> {
    let rank = dims.len().saturating_sub(drop.min(dims.len()));
    let offset = dims.len() - rank;
    (0..rank)
        .map(|a| {
            let from_right = rank - 1 - a;
            if keep >> (from_right % 8) & 1 == 1 {
                dims[offset + a]
            } else {
                1
            }
        })
        .collect()
}

/// Whether `v` is a variable, which an op reads where it uses it (a `Convert` to its own
/// type, for one, is the value itself).
fn is_variable(b: &FunctionBuilder, v: Value<'_>) -> bool {
    let variable = |o: graphlift_ir::Output| {
        b.with_function(|f| Ok(matches!(f.node(o.node)?.op(), Op::Variable(_))))
    };
    v.output().and_then(variable).unwrap_or(false)
}

/// A built value and, for an approximate sink, its op and the index of its input value.
struct Built<'b> {
    v: Value<'b>,
    sink: Option<Sink>,
}

/// The values built so far, in order: what an op's operands and the results pick from.
#[derive(Default)]
pub(super) struct Values<'b> {
    vals: Vec<Built<'b>>,
    /// The inputs of approximate sinks, which must be results.
    must_result: Vec<usize>,
}

impl<'b> Values<'b> {
    /// Adds `v` (a parameter, a constant, a variable, an assign's value).
    pub(super) fn push(&mut self, v: Value<'b>) {
        self.vals.push(Built { v, sink: None });
    }

    /// Adds the parameters `p0`, `p1`, ... that `params` describe for the target shape
    /// `dims`.
    pub(super) fn push_params(
        &mut self,
        b: &'b FunctionBuilder,
        dims: &[usize],
        params: &[ParamSpec],
    ) {
        for (k, p) in params.iter().enumerate() {
            let ty = ElementType::ALL[p.ty % ElementType::ALL.len()];
            let shape = operand_shape(dims, p.keep, p.drop);
            self.push(b.parameter(&format!("p{k}"), ty, shape));
        }
    }

    /// How many values there are.
    pub(super) fn len(&self) -> usize {
        self.vals.len()
    }

    /// Value `i`.
    pub(super) fn get(&self, i: usize) -> Value<'b> {
        self.vals[i].v
    }

    /// The indices of the values a later op or assign may use: every value but the
    /// approximate sinks.
    pub(super) fn live(&self) -> Vec<usize> {
        (0..self.vals.len())
            .filter(|&i| self.vals[i].sink.is_none())
            .collect()
    }

    /// Builds `op` over the live values (there must be one) and adds its value. An
    /// approximate op (a vector math function, or `Power`, on floats) becomes a sink, and
    /// its input is added before it and must be a result; with `exact_only` an approximate
    /// op is left out and nothing is added.
    pub(super) fn push_op(&mut self, b: &'b FunctionBuilder, op: &OpSpec, exact_only: bool) {
        let live = self.live();
        let pick = |k: usize| live[op.operands[k] % live.len()];
        let (a, bb, cc) = (self.get(pick(0)), self.get(pick(1)), self.get(pick(2)));
        let (v, sink) = match op.kind % 8 {
            0 | 4 => {
                let u = UnaryOp::ALL[op.sub % UnaryOp::ALL.len()];
                // The vector math ops take floats (below), so this is whether it is one.
                let approximate = vmath::max_ulp(u, ElementType::F32).is_some();
                if approximate && exact_only {
                    return;
                }
                // An approximate op's input is a result: a variable is read here, where
                // the op reads it, not at the end of the call.
                let a = if approximate && is_variable(b, a) {
                    b.op(Op::ReadVariable, &[a])
                } else {
                    a
                };
                let x = match u {
                    UnaryOp::Not => to(a, ElementType::Bool),
                    // The float-only ops (the math functions, trigonometric and
                    // hyperbolic ones included) take an integer operand converted.
                    _ if !u.accepts(ElementType::I32) => {
                        if ty_of(&a).is_float() {
                            a
                        } else {
                            to(a, [ElementType::F32, ElementType::F64][op.ty % 2])
                        }
                    }
                    // Bool and the storage-only types (float8, INT4, ...) accept no
                    // arithmetic: a numeric type instead.
                    _ if !ty_of(&a).is_numeric() => to(a, numeric(op.ty)),
                    _ => a,
                };
                if approximate {
                    self.push(x);
                    self.must_result.push(self.vals.len() - 1);
                    let sink = Sink::Unary(u, self.vals.len() - 1);
                    (b.op(Op::Unary(u), &[x]), Some(sink))
                } else {
                    (b.op(Op::Unary(u), &[x]), None)
                }
            }
            1 => {
                let op_b = BinaryOp::ALL[op.sub % BinaryOp::ALL.len()];
                let logical = matches!(op_b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
                let t = if logical {
                    ElementType::Bool
                } else if !ty_of(&a).is_numeric() {
                    numeric(op.ty)
                } else {
                    ty_of(&a)
                };
                let approximate = op_b == BinaryOp::Power && t.is_float();
                if approximate && exact_only {
                    return;
                }
                let y = b.broadcasting_op(Op::Binary(op_b), &[to(a, t), to(bb, t)]);
                (y, approximate.then_some(Sink::Power))
            }
            2 => {
                let cmp = CompareOp::ALL[op.sub % CompareOp::ALL.len()];
                // The storage-only types (and strings, for an ordering) are compared through
                // a numeric type.
                let a = if !cmp.accepts(ty_of(&a)) {
                    to(a, numeric(op.ty))
                } else {
                    a
                };
                let y = b.broadcasting_op(Op::Compare(cmp), &[a, to(bb, ty_of(&a))]);
                (y, None)
            }
            5..=7 => {
                let y = graphlift_ir::select(to(cc, ElementType::Bool), a, to(bb, ty_of(&a)));
                (y, None)
            }
            _ => (
                to(a, ElementType::ALL[op.ty % ElementType::ALL.len()]),
                None,
            ),
        };
        self.vals.push(Built { v, sink });
    }

    /// The results: every sink, every sink's input, and value `i` where bit `i % 64` of
    /// `bits` is set (the last value if that chooses none); and per result its [`Sink`],
    /// with a sink's input as an index into the results.
    pub(super) fn results(&self, bits: u64) -> (Vec<Value<'b>>, Sinks) {
        let vals = &self.vals;
        let mut chosen: Vec<usize> = (0..vals.len())
            .filter(|&i| {
                vals[i].sink.is_some() || self.must_result.contains(&i) || bits >> (i % 64) & 1 == 1
            })
            .collect();
        if chosen.is_empty() {
            chosen.extend(vals.len().checked_sub(1));
        }
        let results = chosen.iter().map(|&i| vals[i].v).collect();
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
        (results, sinks)
    }
}

/// Builds the case's Function and says which results are approximate sinks; `None` if the
/// builder rejects the graph (a case can describe an ill-typed graph, which is no test).
pub fn build(c: &Case) -> Option<(Function, Sinks)> {
    if c.params.is_empty() {
        return None;
    }
    let b = FunctionBuilder::new("differential");
    let mut vals = Values::default();
    vals.push_params(&b, &c.dims, &c.params);
    for op in &c.ops {
        vals.push_op(&b, op, false);
    }
    let (results, sinks) = vals.results(c.results);
    let f = b.finish(&results).ok()?;
    Some((f, sinks))
}
