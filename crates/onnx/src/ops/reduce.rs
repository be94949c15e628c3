//! The `Reduce*` family: `ReduceSum`, `ReduceMean`, `ReduceMax`, `ReduceMin`, `ReduceProd`
//! as one [`Op::Reduce`] each, and `ReduceL1`, `ReduceL2`, `ReduceSumSquare`,
//! `ReduceLogSum`, `ReduceLogSumExp` composed of a reduction and elementwise ops the way
//! their ONNX function bodies (opset 18) define them. One reading of the axes serves all
//! ten ([`reduced_axes`]).

use graphlift_ir::{BinaryOp, CompareOp, ElementType, Op, Output, ReduceOp, Reduction, UnaryOp};

use super::layout::{axes, axes_operand, dims, reshape_to as reshape};
use super::{in_float, In};
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// Which `Reduce*` operator a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reducer {
    /// `ReduceSum`, `ReduceMean`, `ReduceMax`, `ReduceMin`, `ReduceProd`: the IR's own.
    Plain(ReduceOp),
    /// `ReduceL1`: `sum(|x|)`.
    L1,
    /// `ReduceL2`: `sqrt(sum(x²))`.
    L2,
    /// `ReduceSumSquare`: `sum(x²)`.
    SumSquare,
    /// `ReduceLogSum`: `log(sum(x))`.
    LogSum,
    /// `ReduceLogSumExp`: `log(sum(exp(x)))`.
    LogSumExp,
}

/// A `Reduce*` node (opsets 1 to 20): `data` of any rank reduced over `axes` — an INTS
/// attribute up to opset 12 (`ReduceSum`) or 17 (the others), an optional constant INT64
/// input from opsets 13 (`ReduceSum`) and 18 (the others); negative axes count from the end,
/// none given means every axis, or with `noop_with_empty_axes` = 1 (the input's opsets) none.
/// `keepdims` (default 1) keeps the reduced axes as extent 1.
///
/// The IR's reductions (`Sum`, `Mean`, `Max`, `Min`, `Prod`) take their element types:
/// every numeric type (`Mean`: floats), and for `ReduceMax`/`ReduceMin` BOOL (opset 20: any,
/// all). The composed ones (every numeric type; ONNX lists UINT32, UINT64, INT32, INT64 and
/// the floats) follow the opset-18 function bodies, reduction over no axes included
/// (`ReduceL1` with `noop_with_empty_axes` = 1 is `|x|`):
/// - `ReduceL1`: `ReduceSum(Abs(x))`; `ReduceSumSquare`: `ReduceSum(x · x)`, in `x`'s type.
/// - `ReduceL2`: `Sqrt(ReduceSum(x · x))`; `ReduceLogSum`: `Log(ReduceSum(x))`. An integer
///   sum's root or logarithm is computed in DOUBLE and converted back (truncated toward 0,
///   the body's `CastLike`); the body's `Cast` to FLOAT would round sums above 2^24.
/// - `ReduceLogSumExp`: max-shifted, `log(sum(exp(x - m))) + m` with `m` the maximum of the
///   finite elements, or 0 when there is none: no overflow, an empty or all-`-inf` reduction
///   gives `-inf`, a `+inf` element `+inf`, a NaN NaN. Integers are computed in DOUBLE (the
///   body's `Cast` to DOUBLE) and converted back.
///
/// # Errors
/// [`OnnxError::BadAttribute`] for an axis out of `[-rank, rank)`, a repeated axis or a
/// mistyped attribute; [`OnnxError::UnsupportedFeature`] or [`OnnxError::RunTimeOperand`]
/// for an `axes` input computed at run time; [`OnnxError::TypeMismatch`] for a BOOL input
/// of a composed reduction, [`OnnxError::Ir`] for an element type an IR reduction does not
/// take (BOOL of `ReduceSum`).
pub(super) fn reduce(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    r: Reducer,
) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 2)?;
    let x = e.input(ins, 0)?;
    if !matches!(r, Reducer::Plain(_)) {
        e.require(x, ElementType::is_numeric, "a numeric")?;
    }
    let since = if r == Reducer::Plain(ReduceOp::Sum) {
        13
    } else {
        18
    };
    let axes = reduced_axes(e, ins, x, since)?;
    let keep_dims = e.attr_i64("keepdims")?.unwrap_or(1) != 0;
    reduce_of(e, x, r, &axes, keep_dims)
}

/// `r` of `x` over `axes` (sorted and distinct; none: only the elementwise steps), kept as
/// extent 1 with `keep_dims`, as [`reduce`] defines each (`LpNormalization` takes its norms
/// from here).
pub(super) fn reduce_of(
    e: &mut NodeEmitter<'_>,
    x: Output,
    r: Reducer,
    axes: &[usize],
    keep_dims: bool,
) -> Result<Output, OnnxError> {
    let over = |op| Reduction {
        op,
        axes: axes.to_vec(),
        keep_dims,
    };
    match r {
        Reducer::Plain(op) => plain(e, x, over(op)),
        Reducer::L1 => {
            let a = e.unary(UnaryOp::Abs, x)?;
            plain(e, a, over(ReduceOp::Sum))
        }
        Reducer::SumSquare => {
            let sq = e.binary(BinaryOp::Multiply, x, x)?;
            plain(e, sq, over(ReduceOp::Sum))
        }
        Reducer::L2 => {
            let sq = e.binary(BinaryOp::Multiply, x, x)?;
            let sum = plain(e, sq, over(ReduceOp::Sum))?;
            in_float(e, sum, |e, v| e.unary(UnaryOp::Sqrt, v))
        }
        Reducer::LogSum => {
            let sum = plain(e, x, over(ReduceOp::Sum))?;
            in_float(e, sum, |e, v| e.unary(UnaryOp::Log, v))
        }
        Reducer::LogSumExp => in_float(e, x, |e, v| log_sum_exp(e, v, &over(ReduceOp::Sum))),
    }
}

/// The axes a `Reduce*` node reduces, sorted: its `axes` (attribute before opset `since`,
/// input from it), or when it gives none every axis, or none with `noop_with_empty_axes`.
fn reduced_axes(
    e: &NodeEmitter<'_>,
    ins: In<'_>,
    x: Output,
    since: i64,
) -> Result<Vec<usize>, OnnxError> {
    let rank = dims(e, x)?.len();
    let list = axes_operand(e, ins, since)?.unwrap_or_default();
    if !list.is_empty() {
        return axes(e, &list, rank, "axes");
    }
    if e.attr_i64("noop_with_empty_axes")?.unwrap_or(0) != 0 {
        return Ok(Vec::new());
    }
    Ok((0..rank).collect())
}

/// `r` of `x` (`x` itself over no axes). `ReduceMax` and `ReduceMin` of BOOL (opset 20) are
/// any and all, reduced over 0/1 integers: `> 0` maps the empty reduction's MIN to false
/// and MAX to true.
fn plain(e: &mut NodeEmitter<'_>, x: Output, r: Reduction) -> Result<Output, OnnxError> {
    if r.axes.is_empty() {
        return Ok(x);
    }
    if e.et(x)? == ElementType::Bool && matches!(r.op, ReduceOp::Max | ReduceOp::Min) {
        let ints = e.convert(x, ElementType::I32)?;
        let y = e.op(Op::Reduce(r), &[ints])?;
        let zero = e.scalar(ElementType::I32, 0.0)?;
        return e.compare(CompareOp::Greater, y, zero);
    }
    e.op(Op::Reduce(r), &[x])
}

/// `log(sum(exp(x - m))) + m` over `sum`'s axes, `m` the maximum of the finite elements of
/// `x` (infinities count as `-inf`) or 0 where there is none (see [`reduce`]).
fn log_sum_exp(e: &mut NodeEmitter<'_>, x: Output, sum: &Reduction) -> Result<Output, OnnxError> {
    let minus_inf = e.scalar_like(x, f64::NEG_INFINITY)?;
    let inf = e.scalar_like(x, f64::INFINITY)?;
    let magnitude = e.unary(UnaryOp::Abs, x)?;
    let infinite = e.compare(CompareOp::Equal, magnitude, inf)?;
    let finite = e.select(infinite, minus_inf, x)?;
    let kept = Reduction {
        op: ReduceOp::Max,
        keep_dims: true,
        ..sum.clone()
    };
    let max = plain(e, finite, kept)?;
    let none = e.compare(CompareOp::Equal, max, minus_inf)?;
    let zero = e.scalar_like(x, 0.0)?;
    let shift = e.select(none, zero, max)?;
    let shifted = e.binary(BinaryOp::Subtract, x, shift)?;
    let exp = e.unary(UnaryOp::Exp, shifted)?;
    let total = plain(e, exp, sum.clone())?;
    let log = e.unary(UnaryOp::Log, total)?;
    let out = dims(e, log)?;
    let shift = reshape(e, shift, out)?;
    e.binary(BinaryOp::Add, log, shift)
}
