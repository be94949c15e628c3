//! Algebraic simplification: identities that hold exactly, in the element type's arithmetic.

use std::collections::BTreeSet;

use graphlift_ir::{BinaryOp, Function, NodeId, Op, Output, Shape, TensorData, UnaryOp};

use crate::rewrite::{record_pass_once, replace_by_value, rewrite_on_copy, splat, Path};
use crate::{Pass, PassError};

#[cfg(test)]
mod tests;

/// Removes operations that do nothing (nGraph's and TVM's `AlgebraicSimplification`),
/// only where the identity is exact, bit for bit, for every input value.
///
/// "1" and "0" below are a Constant whose elements are all that value, or such a Constant
/// seen through `Broadcast`s (exporters emit `Mul` by a broadcast scalar 1.0).
///
/// | rule | element types | exact because |
/// |---|---|---|
/// | `x * 1 -> x`, `1 * x -> x` | numeric | IEEE: `x * 1 = x` for every x, ±0, ±inf and NaN included; integers trivially |
/// | `x / 1 -> x` | numeric | IEEE `x / 1 = x`; integers: `x / 1 = x`, `MIN / 1 = MIN` |
/// | `x + 0 -> x`, `0 + x -> x` | integers | two's complement |
/// | `x + (-0.0) -> x`, `(-0.0) + x -> x` | floats | `-0 + -0 = -0` and `+0 + -0 = +0` |
/// | `x - 0 -> x` | integers | two's complement |
/// | `x - (+0.0) -> x` | floats | `x - +0 = x + -0` |
/// | `x - x -> 0` | integers | wrapping subtraction; the 0 is a scalar Constant broadcast to x's shape |
/// | `-(-x) -> x` | numeric | negation flips the sign bit (floats) or wraps (`-(-MIN) = MIN`) |
/// | `Max(x, x) -> x`, `Min(x, x) -> x` | numeric | either operand is `x` (a NaN `x` gives NaN, `-0` gives `-0`) |
/// | `Abs(Abs(x)) -> Abs(x)` | numeric | the sign is already clear (integers: `Abs(MIN) = MIN` either way) |
/// | `Not(Not(x)) -> x` | bool | |
///
/// Deliberately **not** rewritten: `x + (+0.0)` on floats (`-0 + +0 = +0`, not `-0`),
/// `x - (-0.0)` on floats (`x + +0`), and `x - x` on floats (`inf - inf` and `NaN - NaN` are
/// NaN, not 0). `0 - x -> -x` and `1 / x` are not rewritten either.
///
/// State: no rule matches a `Variable`, `ReadVariable` or `Assign`; `x * 1 -> x` and the
/// like may make a read or an assign the value that users take, which changes nothing
/// (the node still runs, in its order). `x - x -> 0` is not applied when an `Assign` that
/// is not a sink ([`Function::sinks`]) is upstream of `x`: the zero would leave that assign
/// (made inside `saved_user_deps`, run only because a result needs it) dead, and its write
/// would be lost.
///
/// A node with control dependencies is left alone, and so is a pattern whose bypassed nodes
/// (the inner Negative or Not, the Constant and its Broadcasts) have any: dropping them
/// from the path would drop an ordering. NaN payloads are the hardware's (a signalling NaN
/// multiplied by 1 comes out quiet), which no op of graphlift observes.
///
/// Provenance: the node that takes the rewritten node's place (`x`, or the new zero) takes
/// its tags by nGraph's rule ([`Function::replace_node_unpruned`]), then the tags of the
/// nodes the rewrite bypasses (the `1` or `0` and its Broadcasts, the inner negation: the
/// rest of nGraph's removed subgraph), and has [`AlgebraicSimplification::NAME`] appended to
/// its pass history; the new Constant and Broadcast of `x - x` take the Subtract's tags and
/// the pass's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlgebraicSimplification;

impl AlgebraicSimplification {
    /// The pass's name, recorded in the pass history of every node it creates or rewrites.
    pub const NAME: &'static str = "algebraic_simplification";
}

impl Pass for AlgebraicSimplification {
    fn name(&self) -> &'static str {
        AlgebraicSimplification::NAME
    }

    /// Applies every rule until none applies; `true` when anything changed.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` does not validate. `f` is then unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        rewrite_on_copy(f, AlgebraicSimplification::NAME, any_rule, simplify)
    }
}

/// What a node simplifies to.
enum Rewrite {
    /// An existing value; the nodes the rewrite bypasses besides the node itself (whose tags
    /// the value takes too).
    Value(Output, Path),
    /// Zeros of the node's type.
    Zeros,
}

fn simplify(g: &mut Function) -> Result<bool, PassError> {
    let mut touched = BTreeSet::new();
    let mut replaced = BTreeSet::new();
    loop {
        let mut changed = false;
        for id in g.topological_order()? {
            if replaced.contains(&id) {
                continue;
            }
            let Some(rewrite) = rule(g, id)? else {
                continue;
            };
            let (value, bypassed) = match rewrite {
                Rewrite::Value(v, bypassed) => (v, bypassed),
                Rewrite::Zeros => {
                    let (c, z) = zeros_like(g, id)?;
                    touched.insert(c);
                    (z, Path::new())
                }
            };
            replace_by_value(g, id, value, &bypassed, AlgebraicSimplification::NAME)?;
            touched.insert(value.node);
            replaced.insert(id);
            changed = true;
        }
        if !changed {
            break;
        }
    }
    record_pass_once(g, &touched, AlgebraicSimplification::NAME)?;
    Ok(!replaced.is_empty())
}

/// Whether a rule applies to some node.
fn any_rule(g: &Function) -> Result<bool, PassError> {
    for node in g.nodes() {
        if rule(g, node.id())?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The rule that applies to `id`, if any.
fn rule(g: &Function, id: NodeId) -> Result<Option<Rewrite>, PassError> {
    let node = g.node(id)?;
    if !node.other_deps().is_empty() || node.outputs().len() != 1 {
        return Ok(None);
    }
    let t = node.output_type().element_type;
    let ins = node.inputs();
    // `Some(path)` when `o` is a splat of `want` (path: its Broadcasts and Constant).
    let is = |o: Output, want: Splat| -> Result<Option<Path>, PassError> {
        Ok(splat(g, o)?.and_then(|(d, path)| want.matches(d).then_some(path)))
    };
    // `a op splat -> a`, or `splat op a -> a` when `commutes`.
    let identity = |want: Splat, commutes: bool| -> Result<Option<Rewrite>, PassError> {
        if let Some(path) = is(ins[1], want)? {
            return Ok(Some(Rewrite::Value(ins[0], path)));
        }
        if commutes {
            if let Some(path) = is(ins[0], want)? {
                return Ok(Some(Rewrite::Value(ins[1], path)));
            }
        }
        Ok(None)
    };
    let zero = if t.is_float() {
        // x + (-0) = x and x - (+0) = x; the other signs are not identities.
        match node.op() {
            Op::Binary(BinaryOp::Add) => Splat::NegativeZero,
            _ => Splat::PositiveZero,
        }
    } else {
        Splat::Zero
    };
    Ok(match node.op() {
        Op::Binary(BinaryOp::Multiply) => identity(Splat::One, true)?,
        Op::Binary(BinaryOp::Divide) => identity(Splat::One, false)?,
        Op::Binary(BinaryOp::Add) => identity(zero, true)?,
        Op::Binary(BinaryOp::Subtract) => match identity(zero, false)? {
            Some(r) => Some(r),
            None if t.is_integer() && ins[0] == ins[1] && !behind_guarded_assign(g, ins[0])? => {
                Some(Rewrite::Zeros)
            }
            None => None,
        },
        Op::Binary(BinaryOp::Maximum | BinaryOp::Minimum)
            if ins[0] == ins[1] && (t.is_float() || t.is_integer()) =>
        {
            Some(Rewrite::Value(ins[0], Path::new()))
        }
        Op::Unary(UnaryOp::Abs) => {
            let inner = g.node(ins[0].node)?;
            let abs = matches!(inner.op(), Op::Unary(UnaryOp::Abs));
            (abs && inner.outputs().len() == 1).then(|| Rewrite::Value(ins[0], Path::new()))
        }
        Op::Unary(u @ (UnaryOp::Negative | UnaryOp::Not)) => {
            let inner = g.node(ins[0].node)?;
            match inner.op() {
                Op::Unary(v) if v == u && inner.other_deps().is_empty() => Some(Rewrite::Value(
                    inner.inputs()[0],
                    smallvec::smallvec![inner.id()],
                )),
                _ => None,
            }
        }
        _ => None,
    })
}

/// Whether an `Assign` that is not a sink is upstream of `o` (its producer included),
/// through inputs and control dependencies: dropping `o` could leave that assign dead.
fn behind_guarded_assign(g: &Function, o: Output) -> Result<bool, PassError> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![o.node];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let n = g.node(id)?;
        if matches!(n.op(), Op::Assign) && !g.sinks().contains(&id) {
            return Ok(true);
        }
        stack.extend(n.inputs().iter().map(|i| i.node));
        stack.extend(n.other_deps());
    }
    Ok(false)
}

/// A value every element of a splat constant must have.
#[derive(Debug, Clone, Copy)]
enum Splat {
    /// 1 (`1.0` for floats).
    One,
    /// 0 of an integer type.
    Zero,
    /// `+0.0` (sign bit clear).
    PositiveZero,
    /// `-0.0` (sign bit set).
    NegativeZero,
}

impl Splat {
    /// Whether every element of `d` is this value, exactly (by bits for floats). An empty
    /// constant matches vacuously: the rewrite then replaces an empty tensor by another.
    fn matches(self, d: &TensorData) -> bool {
        match (self, d) {
            (Splat::One, TensorData::F32(v)) => v.iter().all(|&x| x == 1.0),
            (Splat::One, TensorData::F64(v)) => v.iter().all(|&x| x == 1.0),
            (Splat::One, TensorData::I32(v)) => v.iter().all(|&x| x == 1),
            (Splat::One, TensorData::I64(v)) => v.iter().all(|&x| x == 1),
            (Splat::Zero, TensorData::I32(v)) => v.iter().all(|&x| x == 0),
            (Splat::Zero, TensorData::I64(v)) => v.iter().all(|&x| x == 0),
            (Splat::PositiveZero, TensorData::F32(v)) => v.iter().all(|x| x.to_bits() == 0),
            (Splat::PositiveZero, TensorData::F64(v)) => v.iter().all(|x| x.to_bits() == 0),
            (Splat::NegativeZero, TensorData::F32(v)) => {
                v.iter().all(|x| x.to_bits() == (-0.0f32).to_bits())
            }
            (Splat::NegativeZero, TensorData::F64(v)) => {
                v.iter().all(|x| x.to_bits() == (-0.0f64).to_bits())
            }
            _ => false,
        }
    }
}

/// Adds zeros of the type of `id`: a scalar Constant 0, broadcast to the shape unless it is
/// 0-d. Returns (the Constant, the value to use).
fn zeros_like(g: &mut Function, id: NodeId) -> Result<(NodeId, Output), PassError> {
    let node = g.node(id)?;
    let t = node.output_type().clone();
    let site = node.creation_site().clone();
    let c = g.add_constant_at(
        TensorData::zeros(t.element_type, 1),
        Shape::scalar(),
        site.clone(),
    )?;
    if t.shape.rank() == 0 {
        return Ok((c, c.into()));
    }
    let b = g.add_node_at(Op::Broadcast(t.shape), &[c.into()], site)?;
    Ok((c, b.into()))
}
