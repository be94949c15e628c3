//! HardSwish as PyTorch (before opset 14) and paddle2onnx write it, `(x · relu6(x + 3)) / 6`
//! with `relu6` a `Clip(·, 0, 6)`: regrouped into `x · (relu6(x + 3) / 6)`, Keras' spelling,
//! whose division the assembler does as an exact product (`relu6(x + 3)` is zero or at
//! least `2^-23`, `graphlift_codegen::magnitude`) where the product's quotient needs the
//! division for dividends near zero.

use graphlift_ir::{BinaryOp, Function, NodeId, Op, Output};

use super::is_splat;
use crate::PassError;

/// A HardSwish quotient found at a `Divide`: `x`, `relu6(x + 3)`, the divisor `6` and the
/// product the regrouping bypasses.
pub(super) struct HardSwish {
    pub x: Output,
    pub relu6: Output,
    pub six: Output,
    pub product: NodeId,
}

/// The HardSwish quotient rooted at `root`: `(x · r) / 6` or `(r · x) / 6` with `r` the
/// clip of `x + 3` (or `3 + x`) to `[0, 6]` (a `Maximum` with 0 then a `Minimum` with 6, or
/// the other way round), the product read by the division alone, nothing with control
/// dependencies.
pub(super) fn find(g: &Function, root: NodeId) -> Result<Option<HardSwish>, PassError> {
    let div = g.node(root)?;
    let [p, six] = div.inputs()[..] else {
        return Ok(None);
    };
    let product = g.node(p.node)?;
    let plain = product.other_deps().is_empty() && product.users(0).len() == 1;
    if !matches!(div.op(), Op::Binary(BinaryOp::Divide))
        || !matches!(product.op(), Op::Binary(BinaryOp::Multiply))
        || !plain
        || !is_splat(g, six, 6.0)?
    {
        return Ok(None);
    }
    let [a, b] = product.inputs()[..] else {
        return Ok(None);
    };
    for (x, relu6) in [(a, b), (b, a)] {
        if is_relu6_of_shifted(g, relu6, x)? {
            return Ok(Some(HardSwish {
                x,
                relu6,
                six,
                product: product.id(),
            }));
        }
    }
    Ok(None)
}

/// Whether `r` is `x + 3` clipped to `[0, 6]`, either bound first.
fn is_relu6_of_shifted(g: &Function, r: Output, x: Output) -> Result<bool, PassError> {
    let orders = [
        (BinaryOp::Minimum, 6.0, BinaryOp::Maximum, 0.0),
        (BinaryOp::Maximum, 0.0, BinaryOp::Minimum, 6.0),
    ];
    for (outer, outer_bound, inner, inner_bound) in orders {
        let Some(clipped) = operand_beside(g, r, outer, outer_bound)? else {
            continue;
        };
        let Some(shifted) = operand_beside(g, clipped, inner, inner_bound)? else {
            continue;
        };
        if operand_beside(g, shifted, BinaryOp::Add, 3.0)? == Some(x) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The other operand of `o` when `o` is a binary `op` (no control dependencies) of a splat
/// of `v` with it, either way round.
fn operand_beside(
    g: &Function,
    o: Output,
    op: BinaryOp,
    v: f64,
) -> Result<Option<Output>, PassError> {
    let n = g.node(o.node)?;
    if n.op() != &Op::Binary(op) || !n.other_deps().is_empty() {
        return Ok(None);
    }
    let [a, b] = n.inputs()[..] else {
        return Ok(None);
    };
    if is_splat(g, b, v)? {
        return Ok(Some(a));
    }
    Ok(is_splat(g, a, v)?.then_some(b))
}
