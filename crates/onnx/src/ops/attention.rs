//! `Attention` (opsets 23 and 24): the scaled dot-product attention that PyTorch's dynamo
//! exporter writes for `scaled_dot_product_attention`, composed from IR ops as the ONNX
//! function body of the operator composes it (`onnx/defs/nn/defs.cc`, onnx 1.22):
//!
//! ```text
//! Q·√scale ─┐
//!           MatMul ─ softcap ─ + bias ─ Softmax ─ MatMul ─ Y
//! (K·√scale)ᵀ ┘                                  V ┘
//! ```
//!
//! on `[B, heads, S, head_size]` operands (3-D ones are split into heads and merged back),
//! with the KV cache (`past_*` concatenated before `K`, `V`: the `present_*` outputs),
//! grouped-query attention (query head `h` reads key/value head `h / (q_heads / kv_heads)`),
//! and the bias of `attention_bias.rs` (mask, `is_causal`, `nonpad_kv_seqlen`).
//!
//! The fused [`graphlift_ir::Op::Attention`] is not used: it multiplies `Q·Kᵀ` by `scale`
//! where ONNX scales each operand by `√scale` (against overflow; the roundings differ), and
//! it has no softcap, grouped heads, KV cache, score outputs or half types.

use graphlift_ir::{BinaryOp, ElementType, Op, Output, UnaryOp};

use super::attention_bias::{bias, Scores};
use super::layout::{dims, reshape_to};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// Head axis and sequence axis of the 4-D layout swapped: `[B, S, H, D]` <-> `[B, H, S, D]`.
const SWAP_HEADS: [usize; 4] = [0, 2, 1, 3];

/// `Attention` (opsets 23, 24) of `Q`, `K`, `V` (one float type of FLOAT16, FLOAT, DOUBLE,
/// BFLOAT16), all 4-D `[B, heads, S, head_size]` (`V`'s head size `Dv` may differ), or all
/// 3-D `[B, S, heads · head_size]` with the `q_num_heads` and `kv_num_heads` attributes.
/// Optional inputs: `attn_mask` (3; BOOL, `True` = attend, or additive of a numeric type,
/// converted to `Q`'s), `past_key` (4) and `past_value` (5) `[B, kv_heads, P, D | Dv]`,
/// given together, and from opset 24 `nonpad_kv_seqlen` (6; INT64 `[B]`).
///
/// Attributes: `scale` (default `1 / √head_size`; `Q` and `K` are each multiplied by
/// `√scale`), `softcap` (`softcap · tanh(s / softcap)` of the scores when positive),
/// `is_causal`, `softmax_precision` (the float type the Softmax runs in; `Q`'s by default)
/// and `qk_matmul_output_mode` (what the 4th output holds: 0 the scores `Q·Kᵀ`, 1 after the
/// softcap, 2 after the bias, 3 after the Softmax).
///
/// Outputs: `Y` `[B, q_heads, Sq, Dv]` (3-D: `[B, Sq, q_heads · Dv]`), `present_key` and
/// `present_value` (the past and the new keys and values, `[B, kv_heads, P + Skv, D | Dv]`)
/// and `qk_matmul_output` `[B, q_heads, Sq, P + Skv]`, all of `Q`'s type. A query row whose
/// every key is masked is NaN (the Softmax of `-inf` everywhere, as ONNX's reference gives).
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for non-float or differing operand types, a non-INT64
/// `nonpad_kv_seqlen` or an unusable mask type; [`OnnxError::ShapeMismatch`] for ranks
/// other than 3 or 4, inconsistent extents or head counts (`q_heads` not a multiple of
/// `kv_heads`), a past of the wrong shape or without its partner, or a mask that does not
/// broadcast to the scores; [`OnnxError::BadAttribute`] for a missing or non-positive head
/// count of 3-D inputs, one that contradicts 4-D inputs, a negative or non-finite `scale`
/// or `softcap`, `is_causal` other than 0/1, a mode outside 0..=3, or a non-float
/// `softmax_precision`.
pub(super) fn attention(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Vec<Output>, OnnxError> {
    e.arity(ins, 3, if e.opset() >= 24 { 7 } else { 6 })?;
    let t = operand_type(e, ins)?;
    let split = to_heads(e, ins)?;
    let (k, v, past) = with_past(e, ins, &split)?;
    let q = split.q;
    let [batch, q_heads, q_len, head] = four(e, q)?;
    let [_, kv_heads, total, _] = four(e, k)?;
    let scale = match e.attr_f32_opt("scale")? {
        Some(s) if s.is_finite() && s >= 0.0 => f64::from(s),
        Some(s) => {
            return Err(e.attribute_error(
                "scale",
                format!("must be finite and not negative (Q and K are scaled by its root), is {s}"),
            ))
        }
        None => 1.0 / (head as f64).sqrt(),
    };
    let softcap = e.attr_f32("softcap", 0.0)?;
    if !(softcap.is_finite() && softcap >= 0.0) {
        return Err(e.attribute_error(
            "softcap",
            format!("must be finite and not negative, is {softcap}"),
        ));
    }
    let mode = e.attr_i64("qk_matmul_output_mode")?.unwrap_or(0);
    if !(0..=3).contains(&mode) {
        return Err(e.attribute_error(
            "qk_matmul_output_mode",
            format!("must be 0, 1, 2 or 3, is {mode}"),
        ));
    }
    let precision = e.attr_float_type("softmax_precision")?.unwrap_or(t);

    let root = scale.sqrt();
    let q_scaled = scaled(e, q, root)?;
    let k_scaled = scaled(e, k, root)?;
    let k_t = e.op(Op::Transpose(vec![0, 1, 3, 2]), &[k_scaled])?;
    let scores = grouped_matmul(e, q_scaled, k_t, kv_heads)?;
    let capped = if softcap > 0.0 {
        let c = e.scalar(t, f64::from(softcap))?;
        let ratio = e.binary(BinaryOp::Divide, scores, c)?;
        let tanh = e.unary(UnaryOp::Tanh, ratio)?;
        e.binary(BinaryOp::Multiply, tanh, c)?
    } else {
        scores
    };
    let geometry = Scores {
        batch,
        heads: q_heads,
        q_len,
        total,
        past,
    };
    let biased = match bias(e, ins, t, &geometry)? {
        Some(b) => e.binary(BinaryOp::Add, capped, b)?,
        None => capped,
    };
    let wide = e.convert(biased, precision)?;
    let softmax = e.op(Op::Softmax(3), &[wide])?;
    let probs = e.convert(softmax, t)?;
    let y = grouped_matmul(e, probs, v, kv_heads)?;
    let y = if split.three_d {
        let [_, _, _, dv] = four(e, y)?;
        let merged = e.op(Op::Transpose(SWAP_HEADS.to_vec()), &[y])?;
        reshape_to(e, merged, vec![batch, q_len, product(e, q_heads, dv)?])?
    } else {
        y
    };
    let wanted = e.node().output.len().clamp(1, 4);
    let mut outputs = vec![y, k, v];
    if wanted == 4 {
        outputs.push(match mode {
            1 => capped,
            2 => biased,
            3 => probs,
            _ => scores,
        });
    }
    outputs.truncate(wanted);
    Ok(outputs)
}

/// The element type of `Q`, which `K` and `V` share: a float type.
fn operand_type(e: &NodeEmitter<'_>, ins: In<'_>) -> Result<ElementType, OnnxError> {
    let q = e.input(ins, 0)?;
    let t = e.require(q, ElementType::is_float, "a float `Q`")?;
    for (i, what) in [(1, "K"), (2, "V")] {
        let other = e.et(e.input(ins, i)?)?;
        if other != t {
            return Err(e.type_error(format!(
                "{what} is {other} and Q is {t}; Attention needs one float type"
            )));
        }
    }
    Ok(t)
}

/// `Q`, `K`, `V` in the 4-D layout `[B, heads, S, head_size]`.
struct Split {
    q: Output,
    k: Output,
    v: Output,
    /// Whether the inputs were 3-D (so `Y` merges its heads back).
    three_d: bool,
}

/// The extents of a 4-D value.
fn four(e: &NodeEmitter<'_>, v: Output) -> Result<[usize; 4], OnnxError> {
    let d = dims(e, v)?;
    d.try_into()
        .map_err(|d: Vec<usize>| e.shape_error(format!("expected a 4-D value, got {d:?}")))
}

/// A head-count attribute (`q_num_heads`, `kv_num_heads`, `RotaryEmbedding`'s
/// `num_heads`): `None` when absent.
///
/// # Errors
/// [`OnnxError::BadAttribute`] for a value below 1 or a mistyped attribute.
pub(super) fn head_count(e: &NodeEmitter<'_>, name: &str) -> Result<Option<usize>, OnnxError> {
    match e.attr_i64(name)? {
        None => Ok(None),
        Some(n) if n > 0 => Ok(usize::try_from(n).ok()),
        Some(n) => Err(e.attribute_error(name, format!("must be positive, is {n}"))),
    }
}

/// The operands split into heads (3-D) or checked (4-D), with their extents consistent:
/// one batch, `K` and `V` of one head count and length, `Q` and `K` of one head size,
/// `q_heads` a multiple of `kv_heads`.
fn to_heads(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Split, OnnxError> {
    let (q, k, v) = (e.input(ins, 0)?, e.input(ins, 1)?, e.input(ins, 2)?);
    let ranks = [dims(e, q)?.len(), dims(e, k)?.len(), dims(e, v)?.len()];
    let (q_attr, kv_attr) = (
        head_count(e, "q_num_heads")?,
        head_count(e, "kv_num_heads")?,
    );
    let split = match ranks {
        [3, 3, 3] => {
            let missing = |name| e.attribute_error(name, "is required for 3-D inputs".into());
            let q_heads = q_attr.ok_or_else(|| missing("q_num_heads"))?;
            let kv_heads = kv_attr.ok_or_else(|| missing("kv_num_heads"))?;
            Split {
                q: split_heads(e, q, q_heads, "Q", "q_num_heads")?,
                k: split_heads(e, k, kv_heads, "K", "kv_num_heads")?,
                v: split_heads(e, v, kv_heads, "V", "kv_num_heads")?,
                three_d: true,
            }
        }
        [4, 4, 4] => {
            for (name, given, x) in [("q_num_heads", q_attr, q), ("kv_num_heads", kv_attr, k)] {
                let have = dims(e, x)?[1];
                if given.is_some_and(|n| n != have) {
                    return Err(e.attribute_error(
                        name,
                        format!(
                            "is {} but the 4-D operand has {have} heads",
                            given.unwrap_or(0)
                        ),
                    ));
                }
            }
            Split {
                q,
                k,
                v,
                three_d: false,
            }
        }
        _ => {
            return Err(e.shape_error(format!(
                "Q, K and V must all be 3-D or all 4-D, have ranks {ranks:?}"
            )))
        }
    };
    let ([b, hq, _, d], [bk, hk, sk, dk], [bv, hv, sv, _]) =
        (four(e, split.q)?, four(e, split.k)?, four(e, split.v)?);
    if bk != b || bv != b {
        return Err(e.shape_error(format!("Q, K and V have batch extents {b}, {bk} and {bv}")));
    }
    if hv != hk || sv != sk {
        return Err(e.shape_error(format!(
            "K has {hk} heads of length {sk}, V {hv} heads of length {sv}"
        )));
    }
    if dk != d {
        return Err(e.shape_error(format!("Q's head size is {d}, K's {dk}")));
    }
    if hk == 0 || hq % hk != 0 {
        return Err(e.shape_error(format!(
            "{hq} query heads are not a multiple of {hk} key/value heads"
        )));
    }
    Ok(split)
}

/// `x` `[B, S, heads · D]` as `[B, heads, S, D]`.
fn split_heads(
    e: &mut NodeEmitter<'_>,
    x: Output,
    heads: usize,
    what: &str,
    attribute: &str,
) -> Result<Output, OnnxError> {
    let d = dims(e, x)?;
    let (b, s, width) = (d[0], d[1], d[2]);
    if width % heads != 0 {
        return Err(e.shape_error(format!(
            "{what}'s hidden size {width} is not a multiple of {attribute} = {heads}"
        )));
    }
    let x = reshape_to(e, x, vec![b, s, heads, width / heads])?;
    e.op(Op::Transpose(SWAP_HEADS.to_vec()), &[x])
}

/// `K` and `V` after the KV cache: `past_key` / `past_value` (both or neither, `[B, kv_heads,
/// P, D | Dv]`) concatenated before them along the sequence; and `P` (0 without a past).
fn with_past(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    split: &Split,
) -> Result<(Output, Output, usize), OnnxError> {
    let (past_k, past_v) = match (e.optional_input(ins, 4), e.optional_input(ins, 5)) {
        (None, None) => return Ok((split.k, split.v, 0)),
        (Some(pk), Some(pv)) => (pk, pv),
        _ => {
            return Err(e.shape_error(
                "past_key and past_value go together; the node gives only one".into(),
            ))
        }
    };
    let mut length = None;
    let mut joined = Vec::with_capacity(2);
    for (past, new, what) in [
        (past_k, split.k, "past_key"),
        (past_v, split.v, "past_value"),
    ] {
        let (p, n) = (dims(e, past)?, four(e, new)?);
        let fits = p.len() == 4 && p[0] == n[0] && p[1] == n[1] && p[3] == n[3];
        if !fits || length.is_some_and(|l| l != p[2]) {
            return Err(e.shape_error(format!(
                "{what} has shape {p:?}; it must be [{}, {}, P, {}] with P as the other past's",
                n[0], n[1], n[3]
            )));
        }
        length = Some(p[2]);
        e.same_type(&[past, new])?;
        joined.push(e.op(Op::Concat(2), &[past, new])?);
    }
    Ok((joined[0], joined[1], length.unwrap_or(0)))
}

/// `x · c` (no node for `c = 1`).
fn scaled(e: &mut NodeEmitter<'_>, x: Output, c: f64) -> Result<Output, OnnxError> {
    if c == 1.0 {
        return Ok(x);
    }
    e.mul_scalar(x, c)
}

/// `a` `[B, H, M, K]` times `b` `[B, G, K, N]` where head `h` of `a` pairs with head
/// `h / (H / G)` of `b` (grouped-query attention; `G = H` is plain batched MatMul): `a` is
/// viewed as `[B, G, (H / G) · M, K]` so that no head of `b` is repeated, giving
/// `[B, H, M, N]`.
fn grouped_matmul(
    e: &mut NodeEmitter<'_>,
    a: Output,
    b: Output,
    groups: usize,
) -> Result<Output, OnnxError> {
    let [batch, heads, m, k] = four(e, a)?;
    let n = four(e, b)?[3];
    let per_group = heads / groups;
    let a = reshape_to(e, a, vec![batch, groups, product(e, per_group, m)?, k])?;
    let y = e.op(Op::MatMul, &[a, b])?;
    reshape_to(e, y, vec![batch, heads, m, n])
}

/// `a · b`, an extent (an empty tensor's other extents can be as large as `usize` holds).
fn product(e: &NodeEmitter<'_>, a: usize, b: usize) -> Result<usize, OnnxError> {
    a.checked_mul(b)
        .ok_or_else(|| e.shape_error(format!("the extent {a} x {b} does not fit in usize")))
}
