//! The additive bias of `Attention`'s scores (`attention.rs`), the sum of up to three terms
//! as the ONNX function body builds it, each `0` where a query may attend to a key and `-inf`
//! where it may not (or the mask's own values), of `Q`'s element type:
//!
//! - `attn_mask` (input 3): BOOL (`True` attends) or additive of any numeric type
//!   (converted); it broadcasts (numpy) to the scores `[B, q_heads, Sq, total]`; from
//!   opset 24 a last axis shorter than `total` is padded with `-inf` (opset 23 broadcasts a
//!   last axis of 1);
//! - `is_causal = 1`: query `i` attends to keys `j <= i + past` (the upper-left aligned
//!   triangle shifted by the past length, ONNX's causal offset with a KV cache);
//! - `nonpad_kv_seqlen` (input 6, opset 24): batch `b` attends to keys `j < nonpad[b]`.

use graphlift_ir::{BinaryOp, CompareOp, ElementType, Op, Output, Shape, TensorData};

use super::layout::{dims, reshape_to};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// The extents of the scores the bias is added to.
pub(super) struct Scores {
    pub(super) batch: usize,
    pub(super) heads: usize,
    pub(super) q_len: usize,
    /// Keys: the past and the new ones.
    pub(super) total: usize,
    /// Keys of the KV cache (`past_key`'s length; 0 without one).
    pub(super) past: usize,
}

impl Scores {
    fn shape(&self) -> Shape {
        Shape::new([self.batch, self.heads, self.q_len, self.total])
    }
}

/// The bias of the node's scores in `t`: the sum of its terms (see the module
/// documentation), `None` when it has none.
///
/// # Errors
/// [`OnnxError::BadAttribute`] for `is_causal` other than 0 or 1;
/// [`OnnxError::ShapeMismatch`] for a mask of rank above 4 or one that does not broadcast
/// to the scores, or a `nonpad_kv_seqlen` not of shape `[B]`; [`OnnxError::TypeMismatch`]
/// for a mask of a non-numeric type other than BOOL or a `nonpad_kv_seqlen` not INT64.
pub(super) fn bias(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    t: ElementType,
    s: &Scores,
) -> Result<Option<Output>, OnnxError> {
    let causal = match e.attr_i64("is_causal")?.unwrap_or(0) {
        0 => false,
        1 => true,
        other => return Err(e.attribute_error("is_causal", format!("must be 0 or 1, is {other}"))),
    };
    let empty = s.shape().dims().contains(&0);
    if !empty && s.shape().element_count().is_err() {
        return Err(e.shape_error(format!(
            "the scores {} have more elements than fit in memory",
            s.shape()
        )));
    }
    let mut terms = Vec::new();
    if let Some(m) = e.optional_input(ins, 3) {
        terms.push(mask(e, m, t, s)?);
    }
    // No scores, nothing to mask: an empty batch or head may come with long sequences,
    // whose position constants would be built for nothing.
    let lengths = e.optional_input(ins, 6);
    if empty {
        if let Some(n) = lengths {
            check_lengths(e, n, s)?;
        }
        return Ok(terms.pop());
    }
    if causal {
        terms.push(causal_bias(e, t, s)?);
    }
    if let Some(n) = lengths {
        terms.push(padding(e, n, t, s)?);
    }
    let mut sum: Option<Output> = None;
    for term in terms {
        sum = Some(match sum {
            None => term,
            Some(acc) => e.binary(BinaryOp::Add, acc, term)?,
        });
    }
    Ok(sum)
}

/// `attn_mask` as an additive bias in `t`.
fn mask(
    e: &mut NodeEmitter<'_>,
    m: Output,
    t: ElementType,
    s: &Scores,
) -> Result<Output, OnnxError> {
    let d = dims(e, m)?;
    let scores = s.shape();
    if d.len() > 4 {
        return Err(e.shape_error(format!(
            "attn_mask has rank {}; it must broadcast to the scores {scores}",
            d.len()
        )));
    }
    let mt = e.et(m)?;
    let additive = if mt == ElementType::Bool {
        attend_or_not(e, m, t)?
    } else if mt.is_numeric() {
        e.convert(m, t)?
    } else {
        return Err(e.type_error(format!("attn_mask is {mt}; it must be BOOL or numeric")));
    };
    let padded = match d.last() {
        Some(&last) if e.opset() >= 24 && last < s.total => {
            let mut fill = d.clone();
            let axis = fill.len() - 1;
            fill[axis] = s.total - last;
            let never = e.scalar(t, f64::NEG_INFINITY)?;
            let never = e.broadcast_to(never, &Shape::new(fill))?;
            e.op(Op::Concat(axis), &[additive, never])?
        }
        _ => additive,
    };
    let shape = e.ty(padded)?.shape;
    if !shape.broadcasts_to(&scores) {
        return Err(e.shape_error(format!(
            "attn_mask {shape} does not broadcast to the scores {scores} \
             ([batch, q_heads, q_len, past + kv_len])"
        )));
    }
    Ok(padded)
}

/// `0` where BOOL `allowed` is true, `-inf` where it is false, in `t`.
fn attend_or_not(
    e: &mut NodeEmitter<'_>,
    allowed: Output,
    t: ElementType,
) -> Result<Output, OnnxError> {
    let zero = e.scalar(t, 0.0)?;
    let never = e.scalar(t, f64::NEG_INFINITY)?;
    e.select(allowed, zero, never)
}

/// The INT64 key positions `0..total`, as `[1, total]`.
fn key_positions(e: &mut NodeEmitter<'_>, total: usize) -> Result<Output, OnnxError> {
    let positions = (0..total as i64).collect();
    e.constant(TensorData::I64(positions), Shape::new([1, total]))
}

/// `[Sq, total]`: `-inf` where key `j` comes after query `i`'s position `i + past`.
fn causal_bias(e: &mut NodeEmitter<'_>, t: ElementType, s: &Scores) -> Result<Output, OnnxError> {
    let rows = (0..s.q_len).map(|i| (i + s.past) as i64).collect();
    let rows = e.constant(TensorData::I64(rows), Shape::new([s.q_len, 1]))?;
    let keys = key_positions(e, s.total)?;
    let seen = e.compare(CompareOp::LessEq, keys, rows)?;
    attend_or_not(e, seen, t)
}

/// `[B, 1, 1, total]`: `-inf` at the keys `j >= nonpad_kv_seqlen[b]` of batch `b`.
fn padding(
    e: &mut NodeEmitter<'_>,
    lengths: Output,
    t: ElementType,
    s: &Scores,
) -> Result<Output, OnnxError> {
    check_lengths(e, lengths, s)?;
    let lengths = reshape_to(e, lengths, vec![s.batch, 1])?;
    let keys = key_positions(e, s.total)?;
    let valid = e.compare(CompareOp::Less, keys, lengths)?;
    let b = attend_or_not(e, valid, t)?;
    reshape_to(e, b, vec![s.batch, 1, 1, s.total])
}

/// Checks that `nonpad_kv_seqlen` is INT64 `[B]`.
fn check_lengths(e: &NodeEmitter<'_>, lengths: Output, s: &Scores) -> Result<(), OnnxError> {
    let lt = e.et(lengths)?;
    if lt != ElementType::I64 {
        return Err(e.type_error(format!("nonpad_kv_seqlen is {lt}; it must be INT64")));
    }
    let d = dims(e, lengths)?;
    if d != [s.batch] {
        return Err(e.shape_error(format!(
            "nonpad_kv_seqlen has shape {d:?}; it must be [{}] (one length per batch)",
            s.batch
        )));
    }
    Ok(())
}
