//! The built-in `attention` pass: multi-head self-attention as exporters write it out
//! (PyTorch's BERT family, `/encoder/layer.0/attention/self/...`; TF/Keras BERT,
//! `bert/encoder/layer_0/attention/self/...`) becomes one `Op::Attention`:
//!
//! ```text
//! q_h = Transpose(Reshape(q, [B, Sq, H, D]), [0, 2, 1, 3])          (likewise v_h)
//! k_t = Transpose(Reshape(k, [B, Sk, H, D]), [0, 2, 3, 1])          (or two Transposes)
//! s   = MatMul(q_h [* c], k_t [* c]) [* c | / c]...   [+ mask]       (c scalar constants)
//! p   = Softmax(s, 3)   or Softmax written out (the `softmax` pass's check)
//! out = Reshape(Transpose(MatMul(p, v_h), [0, 2, 1, 3]), [B, Sq, H·Dv])
//! ```
//!
//! The scope is the one holding the three projections (sub-scopes of type `Projection`: one
//! `MatMul`, one `Add`) and the Softmax. The projections stay as they are (they run on the
//! GEMM with their bias fused) and so does anything else upstream of `q`, `k`, `v` and the
//! mask in the scope (TF computes the mask there); the fused op's inputs are the projected
//! `q`, `k`, `v` before the head split, and the mask before its broadcast. A scope that
//! hands out any inner value besides the output (a gradient graph's backward nodes read the
//! probabilities) is refused, so nothing is computed twice.

use graphlift_ir::{infer_output_types, Attention, BinaryOp, Op, Output};

use super::dataflow::{either, mismatch, Walk};
use super::softmax;
use crate::scope_fusion::{
    Count, FusedInput, FusionScopesResult, Scope, ScopeBasePass, ScopeFeature, ScopeFusionPatterns,
    ScopeGraph, ScopePattern, StructureMismatch,
};

type Res<T> = Result<T, StructureMismatch>;

/// The `attention` scope fusion pass (see the module documentation).
#[derive(Debug, Clone, Copy, Default)]
pub struct AttentionPass;

/// The permutation splitting `[B, S, H, D]` into heads `[B, H, S, D]` (and merging back).
const HEADS: [usize; 4] = [0, 2, 1, 3];
/// The permutation giving the keys transposed per head, `[B, H, D, S]`.
const KEYS_T: [usize; 4] = [0, 2, 3, 1];

/// One operand's head split: `source` `[B, S, H·D]` reshaped to `[B, S, H, D]`.
struct Split {
    source: Output,
    heads: usize,
}

impl ScopeBasePass for AttentionPass {
    fn pass_name(&self) -> &str {
        "attention"
    }

    fn define_patterns(&self) -> ScopeFusionPatterns {
        let projection = ScopePattern::new("Projection")
            .op_type("MatMul", Count::Exactly(1))
            .op_type("Add", Count::Exactly(1));
        let three = ScopeFeature::SubScopes {
            sub_type: "Projection".into(),
            count: Count::Exactly(3),
        };
        let base = ScopePattern::new("MultiHeadAttention").scope(three);
        vec![
            vec![projection],
            vec![
                base.clone().op_type("Softmax", Count::Exactly(1)),
                base.op_type("Exp", Count::Exactly(1))
                    .op_type("ReduceSum", Count::Exactly(1)),
            ],
        ]
    }

    fn generate_fusion_result(
        &self,
        scope: &Scope,
        graph: &ScopeGraph<'_>,
    ) -> Res<Vec<FusionScopesResult>> {
        let mut w = Walk::new(scope, graph);
        let out = w.output()?;
        let ctx = merged_heads(&mut w, out)?;
        let (p, v_h) = w.matmul(ctx, "the context")?;
        let v = head_split(&mut w, v_h, HEADS, "v")?;
        let masked = probabilities(&mut w, p)?;
        let ((scores, scale), mask) = match w.op_of(masked)? {
            Op::Binary(BinaryOp::Add) => {
                let (a, b) = w.binary(masked, BinaryOp::Add, "the masked scores")?;
                let (s, m) = either(&mut w, a, b, scaled)?;
                (s, Some(w.strip(m)?))
            }
            _ => (scaled(&mut w, masked)?, None),
        };
        let (q_h, k_t) = w.matmul(scores, "the scores")?;
        let (q_h, q_scale) = scaled(&mut w, q_h)?;
        let (k_t, k_scale) = scaled(&mut w, k_t)?;
        let q = head_split(&mut w, q_h, HEADS, "q")?;
        let k = head_split(&mut w, k_t, KEYS_T, "k")?;
        if q.heads != k.heads || q.heads != v.heads {
            return mismatch(format!(
                "q, k and v split into {}, {} and {} heads",
                q.heads, k.heads, v.heads
            ));
        }
        let op = Op::Attention(Attention {
            heads: q.heads,
            scale: scale * q_scale * k_scale,
        });
        let inputs: Vec<Output> = [q.source, k.source, v.source]
            .into_iter()
            .chain(mask)
            .collect();
        let description = check_types(&w, &op, &inputs, [out, scores, p, ctx])?;
        for &i in &inputs {
            w.keep(i);
        }
        let inner = w.finish("attention")?;
        Ok(vec![FusionScopesResult {
            name: scope.name().to_string(),
            op,
            inputs: inputs.into_iter().map(FusedInput::Value).collect(),
            outputs: vec![out],
            description,
            inner_nodes: inner,
        }])
    }
}

/// `x` through its chain of `Transpose`s (inside the scope): the value they permute and the
/// composed permutation (`x`'s axis `i` is that value's axis `perm[i]`).
fn transposes(w: &mut Walk<'_>, mut x: Output, what: &str) -> Res<(Output, Vec<usize>)> {
    let mut perm: Vec<usize> = (0..w.dims(x)?.len()).collect();
    while let Op::Transpose(_) = w.op_of(x)? {
        let (y, p) = w.transpose(x, what)?;
        perm = perm
            .iter()
            .map(|&a| p.get(a).copied().unwrap_or(a))
            .collect();
        x = y;
    }
    Ok((x, perm))
}

/// `x` as `Transpose(Reshape(source [B, S, H·D], [B, S, H, D]), want)` (the transpose may
/// be a chain): `what`'s head split.
fn head_split(w: &mut Walk<'_>, x: Output, want: [usize; 4], what: &str) -> Res<Split> {
    let (r, perm) = transposes(w, x, &format!("{what}'s head split"))?;
    if perm != want {
        return mismatch(format!(
            "{what}'s heads are permuted by {perm:?}, not {want:?}"
        ));
    }
    let (source, to) = w.reshape(r, &format!("{what}'s head split"))?;
    let from = w.dims(source)?;
    match (from, to) {
        (&[b, s, e], &[b2, s2, h, d]) if (b, s) == (b2, s2) && h * d == e && h > 0 => {
            Ok(Split { source, heads: h })
        }
        _ => mismatch(format!(
            "{what}'s head split reshapes {from:?} to {to:?}, not [B, S, H·D] to [B, S, H, D]"
        )),
    }
}

/// The per-head context `[B, H, Sq, Dv]` that `out` merges:
/// `Reshape(Transpose(ctx, [0, 2, 1, 3]), [B, Sq, H·Dv])`.
fn merged_heads(w: &mut Walk<'_>, out: Output) -> Res<Output> {
    let (t, to) = w.reshape(out, "the output")?;
    let (ctx, perm) = transposes(w, t, "the head merge")?;
    if perm != HEADS {
        return mismatch(format!(
            "the heads are merged by the permutation {perm:?}, not {HEADS:?}"
        ));
    }
    match (w.dims(ctx)?, to) {
        (&[b, h, s, dv], &[b2, s2, e]) if (b, s, h * dv) == (b2, s2, e) => Ok(ctx),
        (from, _) => mismatch(format!(
            "the head merge reshapes {from:?} (permuted) to {to:?}, not [B, Sq, H, Dv] to [B, Sq, H·Dv]"
        )),
    }
}

/// The scores that `p` is the last-axis softmax of: `Softmax(s, last)` or written out.
fn probabilities(w: &mut Walk<'_>, p: Output) -> Res<Output> {
    let rank = w.dims(p)?.len();
    let (s, axis) = match w.op_of(p)? {
        Op::Softmax(_) => {
            let n = w.compute(p, "the probabilities")?;
            match n.op() {
                Op::Softmax(a) => (n.inputs()[0], *a),
                _ => return Walk::wrong(n, "the probabilities", "Softmax"),
            }
        }
        _ => softmax::written_out(w, p)?,
    };
    if axis + 1 != rank {
        return mismatch(format!(
            "the softmax is along axis {axis}, not the last of {rank}"
        ));
    }
    Ok(s)
}

/// `x` as `y` multiplied and divided by scalar constants (any number of times, none
/// included): `y` and the factor.
fn scaled(w: &mut Walk<'_>, mut x: Output) -> Res<(Output, f64)> {
    let mut factor = 1.0;
    loop {
        match w.op_of(x)? {
            Op::Binary(BinaryOp::Multiply) => {
                let (a, b) = w.binary(x, BinaryOp::Multiply, "the scaling")?;
                let scalar = |w: &mut Walk<'_>, o: Output| w.scalar(o, "the scale");
                let (c, y) = either(w, b, a, scalar)?;
                factor *= c;
                x = y;
            }
            Op::Binary(BinaryOp::Divide) => {
                let (y, b) = w.binary(x, BinaryOp::Divide, "the scaling")?;
                factor /= w.scalar(b, "the divisor")?;
                x = y;
            }
            _ => return Ok((x, factor)),
        }
    }
}

/// Checks that `op` accepts `inputs` and gives `out`'s type, and that the scores,
/// probabilities and context (`[out, scores, p, ctx]`) have the shapes the op implies (so no
/// broadcast hides in the chain); returns the description.
fn check_types(w: &Walk<'_>, op: &Op, inputs: &[Output], values: [Output; 4]) -> Res<String> {
    let f = w.function();
    let types = inputs
        .iter()
        .map(|&i| f.output_type(i).cloned())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| StructureMismatch::new(e.to_string()))?;
    let got = infer_output_types(op, &types)
        .map_err(|e| StructureMismatch::new(format!("{op} does not fit: {e}")))?;
    let [out, scores, p, ctx] = values;
    let want_out = f
        .output_type(out)
        .map_err(|e| StructureMismatch::new(e.to_string()))?;
    if got.as_slice() != std::slice::from_ref(want_out) {
        return mismatch(format!("{op} gives {}, the scope {want_out}", got[0]));
    }
    let (Op::Attention(a), [q, k, v, ..]) = (op, types.as_slice()) else {
        return mismatch("not an attention".into());
    };
    let (b, sq, sk, h) = (
        q.shape.dims()[0],
        q.shape.dims()[1],
        k.shape.dims()[1],
        a.heads,
    );
    let dv = v.shape.dims()[2] / h;
    for (what, x, want) in [
        ("the scores", scores, [b, h, sq, sk]),
        ("the probabilities", p, [b, h, sq, sk]),
        ("the context", ctx, [b, h, sq, dv]),
    ] {
        if w.dims(x)? != want {
            return mismatch(format!("{what} are {:?}, not {want:?}", w.dims(x)?));
        }
    }
    Ok(format!(
        "Attention of {} heads, scale {:e}, q {}, k {}, v {}{}",
        h,
        a.scale,
        q,
        k,
        v,
        types
            .get(3)
            .map_or(String::new(), |m| format!(", mask {m}"))
    ))
}
