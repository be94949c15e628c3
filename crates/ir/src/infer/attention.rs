//! Inference for [`crate::Op::Attention`]: fused multi-head attention on `q` `[B, Sq, H·D]`,
//! `k` `[B, Sk, H·D]`, `v` `[B, Sk, H·Dv]` and an optional additive mask broadcasting to
//! `[B, H, Sq, Sk]`, giving `[B, Sq, H·Dv]`.

use smallvec::smallvec;

use super::OutputTypes;
use crate::attrs::Attention;
use crate::{Shape, TensorType};

pub(super) fn attention(a: &Attention, inputs: &[TensorType]) -> Result<OutputTypes, String> {
    let [q, k, v, mask @ ..] = inputs else {
        return Err(format!(
            "expects q, k, v and an optional mask (3 or 4 operands), got {}",
            inputs.len()
        ));
    };
    if mask.len() > 1 {
        return Err(format!(
            "expects q, k, v and an optional mask (3 or 4 operands), got {}",
            inputs.len()
        ));
    }
    if !q.element_type.is_float() {
        return Err(format!("q must be f32 or f64, is {}", q.element_type));
    }
    if a.heads == 0 {
        return Err("heads must be at least 1".to_string());
    }
    if !a.scale.is_finite() {
        return Err(format!("scale {} must be finite", a.scale));
    }
    for (what, t) in [("k", k), ("v", v)]
        .into_iter()
        .chain(mask.iter().map(|m| ("mask", m)))
    {
        if t.element_type != q.element_type {
            return Err(format!(
                "{what} must be {} as q is, is {}",
                q.element_type, t.element_type
            ));
        }
    }
    let [bq, sq, eq] = dims3("q", q)?;
    let [bk, sk, ek] = dims3("k", k)?;
    let [bv, sv, ev] = dims3("v", v)?;
    if bk != bq || bv != bq {
        return Err(format!(
            "q, k and v must have one batch extent, have {bq}, {bk} and {bv}"
        ));
    }
    if sv != sk {
        return Err(format!(
            "k and v must have one sequence length, have {sk} and {sv}"
        ));
    }
    if ek != eq {
        return Err(format!("k's width {ek} must equal q's {eq}"));
    }
    for (what, e) in [("q and k", eq), ("v", ev)] {
        if e % a.heads != 0 {
            return Err(format!(
                "the width {e} of {what} is not a multiple of {} heads",
                a.heads
            ));
        }
    }
    if let Some(m) = mask.first() {
        let scores = Shape::new([bq, a.heads, sq, sk]);
        if m.shape.rank() > 4 || !m.shape.broadcasts_to(&scores) {
            return Err(format!(
                "the mask {} does not broadcast to the scores {scores} (numpy rules)",
                m.shape
            ));
        }
    }
    Ok(smallvec![TensorType::new(
        q.element_type,
        Shape::new([bq, sq, ev]),
    )])
}

/// The extents of `t`, which must be `[B, S, E]`.
fn dims3(what: &str, t: &TensorType) -> Result<[usize; 3], String> {
    match t.shape.dims() {
        &[b, s, e] => Ok([b, s, e]),
        _ => Err(format!("{what} must be [B, S, H·D], is {}", t.shape)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ElementType::{F32, F64, I32};

    fn t(e: crate::ElementType, dims: &[usize]) -> TensorType {
        TensorType::new(e, Shape::new(dims))
    }

    const A: Attention = Attention {
        heads: 4,
        scale: 0.5,
    };

    #[test]
    fn merges_heads_and_takes_an_optional_broadcast_mask() {
        let (q, k, v) = (t(F32, &[2, 5, 8]), t(F32, &[2, 7, 8]), t(F32, &[2, 7, 12]));
        let out = attention(&A, &[q.clone(), k.clone(), v.clone()]).unwrap();
        assert_eq!(out[0], t(F32, &[2, 5, 12]));
        for m in [&[7][..], &[2, 1, 1, 7], &[5, 7], &[1, 4, 5, 1], &[]] {
            let with = [q.clone(), k.clone(), v.clone(), t(F32, m)];
            assert_eq!(
                attention(&A, &with).unwrap()[0],
                t(F32, &[2, 5, 12]),
                "{m:?}"
            );
        }
    }

    #[test]
    fn bad_operands_are_clear_errors() {
        let (q, k, v) = (t(F32, &[2, 5, 8]), t(F32, &[2, 7, 8]), t(F32, &[2, 7, 8]));
        let err = |op: &Attention, ins: &[TensorType]| attention(op, ins).unwrap_err();
        assert!(err(&A, &[q.clone(), k.clone()]).contains("3 or 4"));
        assert!(err(&A, &[t(I32, &[2, 5, 8]), k.clone(), v.clone()]).contains("f32 or f64"));
        assert!(err(&A, &[q.clone(), t(F64, &[2, 7, 8]), v.clone()]).contains("k must be f32"));
        assert!(err(&A, &[t(F32, &[2, 5, 8, 1]), k.clone(), v.clone()]).contains("[B, S, H·D]"));
        assert!(err(&A, &[q.clone(), k.clone(), t(F32, &[2, 6, 8])]).contains("sequence"));
        assert!(err(&A, &[q.clone(), t(F32, &[2, 7, 4]), v.clone()]).contains("width"));
        assert!(err(&A, &[q.clone(), k.clone(), t(F32, &[3, 7, 8])]).contains("batch"));
        let three = Attention { heads: 3, ..A };
        assert!(err(&three, &[q.clone(), k.clone(), v.clone()]).contains("multiple of 3"));
        let zero = Attention { heads: 0, ..A };
        assert!(err(&zero, &[q.clone(), k.clone(), v.clone()]).contains("at least 1"));
        let nan = Attention {
            scale: f64::NAN,
            ..A
        };
        assert!(err(&nan, &[q.clone(), k.clone(), v.clone()]).contains("finite"));
        let m = |d: &[usize]| [q.clone(), k.clone(), v.clone(), t(F32, d)];
        assert!(err(&A, &m(&[2, 4, 5, 6])).contains("broadcast"));
        assert!(err(&A, &m(&[1, 2, 4, 5, 7])).contains("broadcast"));
    }
}
