//! Canonical forms: the spellings exporters write for one function rewritten into one normal
//! form, so that every spelling runs the same code (the kernels' library knows one form of
//! each activation, and a `Power` by a constant is a general `pow` call otherwise).

use std::collections::BTreeSet;

use graphlift_ir::expansion::{softplus, ElementwiseEmitter};
use graphlift_ir::{
    BinaryOp, CompareOp, ElementType, Function, NodeId, Op, Output, Shape, TensorData, UnaryOp,
};

use crate::rewrite::{record_pass_once, replace_by_value, rewrite_on_copy, splat, Path};
use crate::{Pass, PassError};

mod gelu;
mod hard_swish;
#[cfg(test)]
mod tests;

/// Rewrites exporters' spellings of a function into one normal form, on `f32` and `f64`
/// values (TVM's and XLA's expansion of a power by a constant; the activation spellings of
/// issue 27):
///
/// | spelling | normal form | against the reference |
/// |---|---|---|
/// | `Pow(x, 1)` | `x` | exact |
/// | `Pow(x, 2)`, `Pow(x, -1)` | `x·x`, `1 / x` | exact: one rounding, as a correctly rounded `pow` |
/// | `Pow(x, 3)`, `Pow(x, 4)`, `Pow(x, -2)` | `(x·x)·x`, `(x·x)·(x·x)`, `1 / (x·x)` | two roundings: within about 1 ulp of `pow`'s |
/// | `Pow(x, 0.5)`, `Pow(x, -0.5)` | `√(x + 0)`, `1 / √(x + 0)`, with `x = -∞` selected to `+∞` (`+0`) | exact (IEEE `sqrt` is correctly rounded; `+ 0` makes `pow(-0, 0.5) = +0`, the select `pow(-∞, 0.5) = +∞`) |
/// | `x · Sigmoid(x)`, `Sigmoid(x) · x` (PyTorch's SiLU) | `x / (e^-x + 1)` (the library's SiLU form, the peers' E3) | a few ulp (`f32`: the form's roundings against the reference's one rounding of `sigmoid`) |
/// | `x · Sigmoid(x·β)`, with either product's operands either way round and `β` a constant (Swish; CLIP's QuickGELU, `β = 1.702`) | `x / (e^-(x·β) + 1)`, the product `x·β` kept (the library's Swish form) | as SiLU |
/// | GELU-erf: the product of `x`, `0.5` and `erf(x·c) + 1` or `erf(x / c) + 1` grouped in any order | `(x·0.5)·(erf(x·c) + 1)`, `(x·(erf(x / c) + 1))·0.5` (the library's two GELU-erf forms) | exact (scaling by 0.5 commutes with rounding) except where a product overflows or is subnormal |
/// | `ln(e^x + 1)`, `ln(1 + e^x)` (softplus written out) | `relu(x) + log1p(e^-|x|)` (`Softplus` as the ONNX importer expands it, [`graphlift_ir::expansion::softplus`]) | the function to a few ulp, which the spelled form is not: it differs by that form's rounding of `1 + e^x` (a few ulp for `x ≥ 0`, about 75 at `x = −5`; `e^x` against its `0` below `x ≈ −16.6`) and gives `x` where `e^x` overflows to `+∞` (`x > 88.7`) |
/// | HardSwish `(x · relu6(x + 3)) / 6`, `relu6` a clip to `[0, 6]`, the product either way round (PyTorch before opset 14, paddle2onnx) | `x · (relu6(x + 3) / 6)` (Keras' spelling; its division is exact as a product in assembled code) | two roundings either way: within 2 ulp (subnormal results: within the least subnormal); `x` instead of `+∞` where `x · 6` overflows |
///
/// The exponent must be a Constant (or Broadcasts of one) whose elements all equal one of
/// the values above; `(x·x)·x` is the tree the library's GELU-tanh form matches, so
/// `gelu_new`'s `Pow(x, 3)` becomes one library call. Integer powers are left alone (their
/// overflow is the host `pow`'s), and so are nodes with control dependencies.
///
/// Provenance: the normal form's last node takes the rewritten node's tags (nGraph's rule
/// through [`Function::replace_node_unpruned`]) and the bypassed nodes' (the exponent's
/// Constant and Broadcasts, the `Sigmoid`); every new node has [`CanonicalForms::NAME`] in its
/// pass history.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CanonicalForms;

impl CanonicalForms {
    /// The pass's name, recorded in the pass history of every node it creates.
    pub const NAME: &'static str = "canonical_forms";
}

impl Pass for CanonicalForms {
    fn name(&self) -> &'static str {
        CanonicalForms::NAME
    }

    /// Rewrites every spelling of the table; `true` when anything changed.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` does not validate. `f` is then unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        rewrite_on_copy(f, CanonicalForms::NAME, any_rule, canonicalize)
    }
}

/// The exponents rewritten.
const EXPONENTS: [f64; 8] = [1.0, 2.0, 3.0, 4.0, -1.0, -2.0, 0.5, -0.5];

/// A spelling found at a node.
enum Form {
    /// `Pow(x, exponent)`; the exponent's Broadcasts and Constant.
    Power(Output, f64, Path),
    /// Swish `x · Sigmoid(z)`, `z` being `x` (SiLU) or `x·β`: `x`, `z` and the `Sigmoid`.
    Swish(Output, Output, NodeId),
    /// A GELU-erf product to regroup.
    GeluErf(gelu::GeluErf),
    /// A HardSwish quotient to regroup.
    HardSwish(hard_swish::HardSwish),
    /// `ln(e^x + 1)` written out: `x`, and the `Exp` and `Add` it bypasses.
    Softplus(Output, [NodeId; 2]),
}

fn any_rule(g: &Function) -> Result<bool, PassError> {
    for node in g.nodes() {
        if rule(g, node.id())?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The spelling at `id`, if any.
fn rule(g: &Function, id: NodeId) -> Result<Option<Form>, PassError> {
    let node = g.node(id)?;
    if !node.other_deps().is_empty()
        || node.outputs().len() != 1
        || !node.output_type().element_type.is_float()
    {
        return Ok(None);
    }
    let ins = node.inputs();
    Ok(match node.op() {
        Op::Binary(BinaryOp::Power) => match splat(g, ins[1])? {
            Some((d, path)) => uniform(d)
                .filter(|c| EXPONENTS.contains(c))
                .map(|c| Form::Power(ins[0], c, path)),
            None => None,
        },
        Op::Binary(BinaryOp::Divide) => hard_swish::find(g, id)?.map(Form::HardSwish),
        Op::Unary(UnaryOp::Log) => softplus_spelled(g, ins[0])?,
        Op::Binary(BinaryOp::Multiply) => {
            if let Some(m) = gelu::find(g, id)? {
                return Ok(Some(Form::GeluErf(m)));
            }
            for (x, s) in [(ins[0], ins[1]), (ins[1], ins[0])] {
                let n = g.node(s.node)?;
                if matches!(n.op(), Op::Unary(UnaryOp::Sigmoid))
                    && n.other_deps().is_empty()
                    && (n.inputs()[0] == x || scales(g, n.inputs()[0], x)?)
                {
                    return Ok(Some(Form::Swish(x, n.inputs()[0], n.id())));
                }
            }
            None
        }
        _ => None,
    })
}

/// `ln(e^x + 1)` at a `Log` of `sum`: `sum` is `e^x + 1` or `1 + e^x`, read by the `Log`
/// alone, its `Exp` by the sum alone, neither with control dependencies.
fn softplus_spelled(g: &Function, sum: Output) -> Result<Option<Form>, PassError> {
    let add = g.node(sum.node)?;
    let sole = |n: &graphlift_ir::Node| n.other_deps().is_empty() && n.users(0).len() == 1;
    if add.op() != &Op::Binary(BinaryOp::Add) || !sole(add) {
        return Ok(None);
    }
    let ins = add.inputs();
    for (e, one) in [(ins[0], ins[1]), (ins[1], ins[0])] {
        let exp = g.node(e.node)?;
        if exp.op() == &Op::Unary(UnaryOp::Exp) && sole(exp) && is_splat(g, one, 1.0)? {
            return Ok(Some(Form::Softplus(exp.inputs()[0], [exp.id(), add.id()])));
        }
    }
    Ok(None)
}

/// Whether `z` is `x·β` or `β·x` for a constant `β` (one value in every element), with no
/// control dependencies.
fn scales(g: &Function, z: Output, x: Output) -> Result<bool, PassError> {
    let n = g.node(z.node)?;
    if !matches!(n.op(), Op::Binary(BinaryOp::Multiply)) || !n.other_deps().is_empty() {
        return Ok(false);
    }
    let ins = n.inputs();
    for (a, b) in [(ins[0], ins[1]), (ins[1], ins[0])] {
        if a == x {
            if let Some((d, _)) = splat(g, b)? {
                return Ok(uniform(d).is_some());
            }
        }
    }
    Ok(false)
}

/// Whether `o` is a float splat constant (a Constant, or Broadcasts of one) every element
/// of which is `v`.
fn is_splat(g: &Function, o: Output, v: f64) -> Result<bool, PassError> {
    Ok(splat(g, o)?.is_some_and(|(d, _)| uniform(d) == Some(v)))
}

/// The one value every element of `d` has (floats), if any.
fn uniform(d: &TensorData) -> Option<f64> {
    let first = d.get_f64(0)?;
    let same = (1..d.len()).all(|i| d.get_f64(i) == Some(first));
    (matches!(d, TensorData::F32(_) | TensorData::F64(_)) && same).then_some(first)
}

fn canonicalize(g: &mut Function) -> Result<bool, PassError> {
    let mut created = BTreeSet::new();
    let mut replaced = false;
    for id in g.topological_order()? {
        let Some(form) = rule(g, id)? else { continue };
        let mut e = Emitter::new(g, id)?;
        let (value, bypassed) = match form {
            Form::Power(x, c, path) => (e.power(x, c)?, path),
            Form::Swish(x, z, sigmoid) => (e.swish(x, z)?, std::iter::once(sigmoid).collect()),
            Form::GeluErf(m) => {
                let (first, second) = if m.half_with_x {
                    (m.half, m.erf_plus_one)
                } else {
                    (m.erf_plus_one, m.half)
                };
                let t = e.binary(BinaryOp::Multiply, m.x, first)?;
                let root = e.binary(BinaryOp::Multiply, t, second)?;
                (root, m.bypassed.into_iter().collect())
            }
            Form::Softplus(x, bypassed) => (softplus(&mut e, x)?, bypassed.into_iter().collect()),
            Form::HardSwish(h) => {
                let sigmoid = e.binary(BinaryOp::Divide, h.relu6, h.six)?;
                let root = e.binary(BinaryOp::Multiply, h.x, sigmoid)?;
                (root, std::iter::once(h.product).collect())
            }
        };
        created.extend(e.created);
        replace_by_value(g, id, value, &bypassed, CanonicalForms::NAME)?;
        replaced = true;
    }
    record_pass_once(g, &created, CanonicalForms::NAME)?;
    Ok(replaced)
}

/// Adds the nodes of a normal form in place of node `id` (its type, its creation site).
struct Emitter<'g> {
    g: &'g mut Function,
    site: graphlift_ir::CreationSite,
    element_type: ElementType,
    shape: Shape,
    created: Vec<NodeId>,
}

impl ElementwiseEmitter for Emitter<'_> {
    type Error = PassError;
    fn unary(&mut self, op: UnaryOp, x: Output) -> Result<Output, PassError> {
        Emitter::unary(self, op, x)
    }
    fn binary(&mut self, op: BinaryOp, a: Output, b: Output) -> Result<Output, PassError> {
        Emitter::binary(self, op, a, b)
    }
}

impl<'g> Emitter<'g> {
    fn new(g: &'g mut Function, id: NodeId) -> Result<Emitter<'g>, PassError> {
        let n = g.node(id)?;
        let (site, t) = (n.creation_site().clone(), n.output_type().clone());
        Ok(Emitter {
            g,
            site,
            element_type: t.element_type,
            shape: t.shape,
            created: Vec::new(),
        })
    }

    fn node(&mut self, op: Op, inputs: &[Output]) -> Result<Output, PassError> {
        let id = self.g.add_node_at(op, inputs, self.site.clone())?;
        self.created.push(id);
        Ok(id.into())
    }

    fn binary(&mut self, op: BinaryOp, a: Output, b: Output) -> Result<Output, PassError> {
        self.node(Op::Binary(op), &[a, b])
    }

    fn unary(&mut self, op: UnaryOp, a: Output) -> Result<Output, PassError> {
        self.node(Op::Unary(op), &[a])
    }

    /// `v` in the node's element type, broadcast to its shape.
    fn splat(&mut self, v: f64) -> Result<Output, PassError> {
        let data = match self.element_type {
            ElementType::F32 => TensorData::F32(vec![v as f32]),
            _ => TensorData::F64(vec![v]),
        };
        let c = self
            .g
            .add_constant_at(data, Shape::scalar(), self.site.clone())?;
        self.created.push(c);
        if self.shape.rank() == 0 {
            return Ok(c.into());
        }
        self.node(Op::Broadcast(self.shape.clone()), &[c.into()])
    }

    fn power(&mut self, x: Output, c: f64) -> Result<Output, PassError> {
        use BinaryOp::{Divide, Multiply};
        let square = |e: &mut Self| e.binary(Multiply, x, x);
        Ok(match c {
            1.0 => x,
            2.0 => square(self)?,
            3.0 => {
                let s = square(self)?;
                self.binary(Multiply, s, x)?
            }
            4.0 => {
                let s = square(self)?;
                self.binary(Multiply, s, s)?
            }
            -1.0 => {
                let one = self.splat(1.0)?;
                self.binary(Divide, one, x)?
            }
            -2.0 => {
                let (one, s) = (self.splat(1.0)?, square(self)?);
                self.binary(Divide, one, s)?
            }
            0.5 => self.root(x)?,
            _ => {
                let (one, r) = (self.splat(1.0)?, self.root(x)?);
                self.binary(Divide, one, r)?
            }
        })
    }

    /// `pow(x, 0.5)` exactly: `√(x + 0)` (so `-0` gives `+0`), and `+∞` where `x = -∞`.
    fn root(&mut self, x: Output) -> Result<Output, PassError> {
        let zero = self.splat(0.0)?;
        let shifted = self.binary(BinaryOp::Add, x, zero)?;
        let root = self.unary(UnaryOp::Sqrt, shifted)?;
        let (minus_inf, inf) = (self.splat(f64::NEG_INFINITY)?, self.splat(f64::INFINITY)?);
        let at_minus_inf = self.node(Op::Compare(CompareOp::Equal), &[x, minus_inf])?;
        self.node(Op::Select, &[at_minus_inf, inf, root])
    }

    /// `x · sigmoid(z)` as the library's form `x / (e^-z + 1)` (SiLU for `z = x`, Swish for
    /// `z = x·β`).
    fn swish(&mut self, x: Output, z: Output) -> Result<Output, PassError> {
        let minus = self.unary(UnaryOp::Negative, z)?;
        let e = self.unary(UnaryOp::Exp, minus)?;
        let one = self.splat(1.0)?;
        let denominator = self.binary(BinaryOp::Add, e, one)?;
        self.binary(BinaryOp::Divide, x, denominator)
    }
}
