//! `RotaryEmbedding` (opset 23): rotary position embeddings (RoPE, Su et al.,
//! arXiv:2104.09864) as PyTorch's dynamo exporter writes them for language models,
//! composed from slices, products and concatenations as the specification's algorithm and
//! function body compose them.

use graphlift_ir::{BinaryOp, ElementType, Op, Output, Shape, SliceAxis};

use super::attention::head_count;
use super::layout::{dims, reshape_to, slice_range};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `RotaryEmbedding` (opset 23) of `X`: 4-D `[B, heads, S, head_size]`, or 3-D
/// `[B, S, num_heads · head_size]` with the `num_heads` attribute; a float type (the schema
/// lists FLOAT, FLOAT16 and BFLOAT16; DOUBLE computes alike), which `cos_cache` and
/// `sin_cache` share. The first `rotary_embedding_dim` elements of each head (all of it
/// for 0, the default; even, at most `head_size`) are rotated, the rest pass through:
///
/// ```text
/// x1, x2 = halves of the rotated part    (interleaved = 1: its even and odd elements)
/// real   = cos · x1 - sin · x2
/// imag   = sin · x1 + cos · x2
/// rotated = [real, imag]                 (interleaved = 1: real and imag interleaved)
/// ```
///
/// with `cos`, `sin` `[B, S, rotary_embedding_dim / 2]` per token: the caches themselves
/// without `position_ids`, or with `position_ids` (INT64 `[B, S]`) the rows of the 2-D
/// caches `[max_position + 1, rotary_embedding_dim / 2]` they index (a position out of
/// range is an error when the model runs). The batch and sequence extents of `cos`/`sin`
/// may be 1 (numpy broadcasting, as the reference's). `Y` has `X`'s shape and type.
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for a non-float `X`, caches of another type or
/// non-INT64 positions; [`OnnxError::BadAttribute`] for a 3-D `X` without a positive
/// `num_heads`, or an odd, negative or too large `rotary_embedding_dim`;
/// [`OnnxError::ShapeMismatch`] for an `X` of another rank, a hidden size that is not a
/// multiple of `num_heads`, an odd head size, or caches or positions of the wrong shape.
pub(super) fn rotary_embedding(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 3, 4)?;
    let x = e.input(ins, 0)?;
    e.require(x, ElementType::is_float, "a float `X`")?;
    let (cos, sin) = (e.input(ins, 1)?, e.input(ins, 2)?);
    e.same_type(&[x, cos, sin])?;
    let original = dims(e, x)?;
    // Heads layout: 4-D keeps [B, H, S, D] (token axes 0 and 2), 3-D becomes [B, S, H, D].
    let (x, token_axes) = match original[..] {
        [_, _, _, _] => (x, [0, 2]),
        [b, s, hidden] => {
            let heads = head_count(e, "num_heads")?.ok_or_else(|| {
                e.attribute_error("num_heads", "is required for a 3-D input".into())
            })?;
            if hidden % heads != 0 {
                return Err(e.shape_error(format!(
                    "the hidden size {hidden} is not a multiple of num_heads = {heads}"
                )));
            }
            (reshape_to(e, x, vec![b, s, heads, hidden / heads])?, [0, 1])
        }
        _ => return Err(e.shape_error(format!("X must be 3-D or 4-D, has shape {original:?}"))),
    };
    let head = dims(e, x)?[3];
    let rotary = rotary_dim(e, head)?;
    let half = rotary / 2;
    let [cos, sin] = [cos, sin].map(|c| per_token(e, ins, c, x, token_axes, half));
    let (cos, sin) = (cos?, sin?);
    let rotated = slice_range(e, x, 3, 0, rotary)?;
    let interleaved = match e.attr_i64("interleaved")?.unwrap_or(0) {
        0 => false,
        1 => true,
        other => {
            return Err(e.attribute_error("interleaved", format!("must be 0 or 1, is {other}")))
        }
    };
    let (x1, x2) = if interleaved {
        (
            every_other(e, rotated, 0, half)?,
            every_other(e, rotated, 1, half)?,
        )
    } else {
        (
            slice_range(e, rotated, 3, 0, half)?,
            slice_range(e, rotated, 3, half, half)?,
        )
    };
    let real = combine_products(e, [cos, x1], [sin, x2], BinaryOp::Subtract)?;
    let imag = combine_products(e, [sin, x1], [cos, x2], BinaryOp::Add)?;
    let mut y = if interleaved {
        let mut pairs = dims(e, real)?;
        pairs.push(1);
        let real = reshape_to(e, real, pairs.clone())?;
        let imag = reshape_to(e, imag, pairs)?;
        let joined = e.op(Op::Concat(4), &[real, imag])?;
        let mut whole = dims(e, rotated)?;
        whole[3] = rotary;
        reshape_to(e, joined, whole)?
    } else {
        e.op(Op::Concat(3), &[real, imag])?
    };
    if rotary < head {
        let pass = slice_range(e, x, 3, rotary, head - rotary)?;
        y = e.op(Op::Concat(3), &[y, pass])?;
    }
    reshape_to(e, y, original)
}

/// The rotated part's length: `rotary_embedding_dim`, or `head` for 0; even.
fn rotary_dim(e: &NodeEmitter<'_>, head: usize) -> Result<usize, OnnxError> {
    let raw = e.attr_i64("rotary_embedding_dim")?.unwrap_or(0);
    let dim = match usize::try_from(raw) {
        Ok(0) => head,
        Ok(d) if d <= head && d % 2 == 0 => d,
        _ => {
            return Err(e.attribute_error(
                "rotary_embedding_dim",
                format!("must be 0 or even and at most the head size {head}, is {raw}"),
            ))
        }
    };
    if dim % 2 != 0 {
        return Err(e.shape_error(format!("the head size {head} is odd; it must be even")));
    }
    Ok(dim)
}

/// A cache's values per token (gathered at `position_ids` when the node has them), shaped to
/// broadcast against the heads layout of `x` (its batch and sequence at `token_axes`, a 1 at
/// the other of the first three axes, `half` last).
fn per_token(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    cache: Output,
    x: Output,
    token_axes: [usize; 2],
    half: usize,
) -> Result<Output, OnnxError> {
    let xd = dims(e, x)?;
    let cd = dims(e, cache)?;
    let values = match e.optional_input(ins, 3) {
        Some(positions) => {
            let pt = e.et(positions)?;
            if pt != ElementType::I64 {
                return Err(e.type_error(format!("position_ids is {pt}; it must be INT64")));
            }
            if cd.len() != 2 || dims(e, positions)?.len() != 2 {
                return Err(e.shape_error(format!(
                    "with position_ids [B, S] the caches must be 2-D [positions, {half}], are {cd:?}"
                )));
            }
            e.op(Op::Gather(0), &[cache, positions])?
        }
        None => cache,
    };
    let vd = dims(e, values)?;
    let want = Shape::new([xd[token_axes[0]], xd[token_axes[1]], half]);
    if vd.len() != 3 || vd[2] != half || !Shape::new(&vd[..]).broadcasts_to(&want) {
        return Err(e.shape_error(format!(
            "the cos/sin values per token are {vd:?}; they must be {want} (rotary_embedding_dim / 2 = {half} last)"
        )));
    }
    let mut shape = vec![1; 4];
    shape[token_axes[0]] = vd[0];
    shape[token_axes[1]] = vd[1];
    shape[3] = half;
    reshape_to(e, values, shape)
}

/// `half` elements of the last axis of `x` from `start` in steps of 2.
fn every_other(
    e: &mut NodeEmitter<'_>,
    x: Output,
    start: usize,
    half: usize,
) -> Result<Output, OnnxError> {
    let mut spec: Vec<SliceAxis> = dims(e, x)?.into_iter().map(SliceAxis::full).collect();
    spec[3] = SliceAxis {
        start: if half == 0 { 0 } else { start },
        step: 2,
        len: half,
    };
    e.op(Op::Slice(spec), &[x])
}

/// `a0 · a1 (op) b0 · b1`.
fn combine_products(
    e: &mut NodeEmitter<'_>,
    [a0, a1]: [Output; 2],
    [b0, b1]: [Output; 2],
    op: BinaryOp,
) -> Result<Output, OnnxError> {
    let a = e.binary(BinaryOp::Multiply, a0, a1)?;
    let b = e.binary(BinaryOp::Multiply, b0, b1)?;
    e.binary(op, a, b)
}
