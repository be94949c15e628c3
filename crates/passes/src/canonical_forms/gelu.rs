//! GELU, erf form, in whatever order an exporter multiplies its three factors `x`, `0.5`
//! and `erf(x·c) + 1` (or `erf(x / c) + 1`): regrouped into the order of the library form
//! for that argument (`(x·0.5)·(erf(x·c) + 1)`, `(x·(erf(x / c) + 1))·0.5`).

use graphlift_ir::{BinaryOp, Function, NodeId, Op, Output, UnaryOp};

use super::is_splat;
use crate::rewrite::splat;
use crate::PassError;

/// A GELU-erf product found at a `Multiply`: its factors, which grouping the library form of
/// its argument wants, and the inner `Multiply` nodes the regrouping bypasses.
pub(super) struct GeluErf {
    pub x: Output,
    pub half: Output,
    /// `erf(..) + 1`.
    pub erf_plus_one: Output,
    /// `true`: `(x·half)·(erf(x·c) + 1)`; `false`: `(x·(erf(x / c) + 1))·half`.
    pub half_with_x: bool,
    pub bypassed: Vec<NodeId>,
}

/// The GELU-erf product rooted at `root`, when its factors are not yet grouped as the
/// library form wants.
pub(super) fn find(g: &Function, root: NodeId) -> Result<Option<GeluErf>, PassError> {
    let mut leaves = Vec::new();
    let mut inner = Vec::new();
    if !factors(g, root, true, &mut leaves, &mut inner)? || leaves.len() != 3 {
        return Ok(None);
    }
    let Some(h) = index_of(&leaves, |o| is_splat(g, o, 0.5))? else {
        return Ok(None);
    };
    for a in (0..3).filter(|&a| a != h) {
        let x = 3 - a - h;
        let Some(half_with_x) = erf_plus_one(g, leaves[a], leaves[x])? else {
            continue;
        };
        // Already grouped as the form wants: the inner product pairs the right two.
        let grouped = match inner.as_slice() {
            [m] => {
                let ins = g.node(*m)?.inputs();
                let pair = if half_with_x {
                    [leaves[x], leaves[h]]
                } else {
                    [leaves[x], leaves[a]]
                };
                pair.iter().all(|p| ins.contains(p))
            }
            _ => false,
        };
        if grouped {
            return Ok(None);
        }
        return Ok(Some(GeluErf {
            x: leaves[x],
            half: leaves[h],
            erf_plus_one: leaves[a],
            half_with_x,
            bypassed: inner,
        }));
    }
    Ok(None)
}

/// The leaves of the product tree at `id` (a `Multiply` whose inner `Multiply` operands
/// have no other user and no control dependencies); `false` when `id` is no product.
fn factors(
    g: &Function,
    id: NodeId,
    root: bool,
    leaves: &mut Vec<Output>,
    inner: &mut Vec<NodeId>,
) -> Result<bool, PassError> {
    let n = g.node(id)?;
    let is_product = matches!(n.op(), Op::Binary(BinaryOp::Multiply))
        && n.other_deps().is_empty()
        && (root || n.users(0).len() == 1);
    if !is_product || leaves.len() + inner.len() > 4 {
        return Ok(false);
    }
    if !root {
        inner.push(id);
    }
    for &o in n.inputs() {
        if !factors(g, o.node, false, leaves, inner)? {
            leaves.push(o);
        }
    }
    Ok(true)
}

fn index_of(
    leaves: &[Output],
    mut pred: impl FnMut(Output) -> Result<bool, PassError>,
) -> Result<Option<usize>, PassError> {
    for (i, &o) in leaves.iter().enumerate() {
        if pred(o)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Whether `a` is `erf(x·c) + 1` (`Some(true)`) or `erf(x / c) + 1` (`Some(false)`), `c` a
/// splat constant, either operand order of the `Add` and of the product.
fn erf_plus_one(g: &Function, a: Output, x: Output) -> Result<Option<bool>, PassError> {
    let add = g.node(a.node)?;
    if !matches!(add.op(), Op::Binary(BinaryOp::Add)) {
        return Ok(None);
    }
    for (e, one) in [(0, 1), (1, 0)] {
        let erf = g.node(add.inputs()[e].node)?;
        if !matches!(erf.op(), Op::Unary(UnaryOp::Erf)) || !is_splat(g, add.inputs()[one], 1.0)? {
            continue;
        }
        let arg = g.node(erf.inputs()[0].node)?;
        let ins = arg.inputs();
        let constant = |o: Output| Ok::<_, PassError>(splat(g, o)?.is_some());
        return Ok(match arg.op() {
            Op::Binary(BinaryOp::Multiply)
                if (ins[0] == x && constant(ins[1])?) || (ins[1] == x && constant(ins[0])?) =>
            {
                Some(true)
            }
            Op::Binary(BinaryOp::Divide) if ins[0] == x && constant(ins[1])? => Some(false),
            _ => None,
        });
    }
    Ok(None)
}
