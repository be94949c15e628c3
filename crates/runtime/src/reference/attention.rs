//! Fused multi-head attention (`Op::Attention`), the definition: plain loops over
//! (batch, head, query row), scores, softmax and the weighted sum of values accumulated in
//! `f64`, each output rounded once.

use graphlift_ir::{Attention, Shape, TensorData};

use super::broadcast::broadcast;
use super::widen::{float_operand, narrow};

/// A tensor operand: its data and shape.
pub type Operand<'a> = (&'a TensorData, &'a Shape);

/// `softmax(q_h · k_hᵀ · scale + mask[b, h]) · v_h` for every batch `b` and head `h` of
/// `q` `[B, Sq, H·D]`, `k` `[B, Sk, H·D]`, `v` `[B, Sk, H·Dv]` (the head's columns of the
/// last axis), with `mask` broadcast (numpy) to `[B, H, Sq, Sk]`, giving `[B, Sq, H·Dv]`
/// (see `Op::Attention`). Each score row is softmaxed as [`super::softmax`] does: minus its
/// maximum, so a row of all `-inf` gives NaN.
///
/// # Errors
/// A message when the operands are not float tensors of the shapes above, or the data do
/// not fill them.
pub fn attention(
    q: Operand<'_>,
    k: Operand<'_>,
    v: Operand<'_>,
    mask: Option<Operand<'_>>,
    a: &Attention,
) -> Result<TensorData, String> {
    let dims = |s: &Shape, what: &str| match s.dims() {
        &[b, s, e] => Ok([b, s, e]),
        _ => Err(format!("{what} must be [B, S, H·D], is {s}")),
    };
    let ([nb, sq, e], [_, sk, _], [_, _, ev]) = (dims(q.1, "q")?, dims(k.1, "k")?, dims(v.1, "v")?);
    let h = a.heads;
    if h == 0
        || e % h != 0
        || ev % h != 0
        || k.1.dims() != [nb, sk, e]
        || v.1.dims()[..2] != [nb, sk]
    {
        return Err(format!(
            "q {}, k {} and v {} do not fit {h} heads",
            q.1, k.1, v.1
        ));
    }
    let (d, dv) = (e / h, ev / h);
    let qs = float_operand(q.0, q.1, "q")?;
    let ks = float_operand(k.0, k.1, "k")?;
    let vs = float_operand(v.0, v.1, "v")?;
    let scores_shape = Shape::new([nb, h, sq, sk]);
    let m = match mask {
        Some((data, from)) => float_operand(
            &broadcast(data, from, &scores_shape)?,
            &scores_shape,
            "mask",
        )?,
        None => vec![0.0; nb * h * sq * sk],
    };
    let mut out = vec![0f64; nb * sq * ev];
    let mut p = vec![0f64; sk];
    for b in 0..nb {
        for hd in 0..h {
            for i in 0..sq {
                let qi = &qs[(b * sq + i) * e + hd * d..][..d];
                let row = &m[((b * h + hd) * sq + i) * sk..][..sk];
                for (j, p) in p.iter_mut().enumerate() {
                    let kj = &ks[(b * sk + j) * e + hd * d..][..d];
                    let dot: f64 = qi.iter().zip(kj).map(|(x, y)| x * y).sum();
                    *p = dot * a.scale + row[j];
                }
                let max = p.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                p.iter_mut().for_each(|x| *x = (*x - max).exp());
                let sum: f64 = p.iter().sum();
                let o = &mut out[(b * sq + i) * ev + hd * dv..][..dv];
                for (j, &pj) in p.iter().enumerate() {
                    let vj = &vs[(b * sk + j) * ev + hd * dv..][..dv];
                    for (o, &x) in o.iter_mut().zip(vj) {
                        *o += pj / sum * x;
                    }
                }
            }
        }
    }
    Ok(narrow(q.0.element_type(), out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{binary, matmul, softmax, transpose};
    use graphlift_ir::BinaryOp;

    fn data(n: usize, seed: usize) -> Vec<f64> {
        (0..n)
            .map(|i| (((i * 7919 + seed * 104_729) % 1000) as f64 / 500.0 - 1.0) * 1.5)
            .collect()
    }

    /// The exporters' written-out block, with the reference kernels of its ops: split heads
    /// (Reshape + Transpose), `Q·Kᵀ`, scale, mask, Softmax, `·V`, merge heads.
    fn written_out(
        [nb, sq, sk, h, d]: [usize; 5],
        q: &TensorData,
        k: &TensorData,
        v: &TensorData,
        mask: &TensorData,
        mask_shape: &Shape,
        scale: f64,
    ) -> TensorData {
        let split = |x: &TensorData, s: usize, perm: &[usize]| {
            transpose(x, &Shape::new([nb, s, h, d]), perm).unwrap()
        };
        let (qh, kt, vh) = (
            split(q, sq, &[0, 2, 1, 3]),
            split(k, sk, &[0, 2, 3, 1]),
            split(v, sk, &[0, 2, 1, 3]),
        );
        let scores_shape = Shape::new([nb, h, sq, sk]);
        let s = matmul(
            &qh,
            &Shape::new([nb, h, sq, d]),
            &kt,
            &Shape::new([nb, h, d, sk]),
        )
        .unwrap();
        let n = scores_shape.element_count().unwrap();
        let s = binary(BinaryOp::Multiply, &s, &TensorData::F64(vec![scale; n])).unwrap();
        let m = broadcast(mask, mask_shape, &scores_shape).unwrap();
        let s = binary(BinaryOp::Add, &s, &m).unwrap();
        let p = softmax(&s, &scores_shape, 3).unwrap();
        let c = matmul(&p, &scores_shape, &vh, &Shape::new([nb, h, sk, d])).unwrap();
        transpose(&c, &Shape::new([nb, h, sq, d]), &[0, 2, 1, 3]).unwrap()
    }

    #[test]
    fn is_the_written_out_block() {
        let ([nb, sq, sk, h, d], mask_dims) = ([2, 3, 5, 2, 4], [2, 1, 1, 5]);
        let e = h * d;
        let q = TensorData::F64(data(nb * sq * e, 1));
        let k = TensorData::F64(data(nb * sk * e, 2));
        let v = TensorData::F64(data(nb * sk * e, 3));
        let mask_shape = Shape::new(mask_dims);
        let mut md = data(nb * sk, 4);
        md[3] = -1e4;
        let mask = TensorData::F64(md);
        let a = Attention {
            heads: h,
            scale: 0.35,
        };
        let (sq_, sk_) = (Shape::new([nb, sq, e]), Shape::new([nb, sk, e]));
        let got = attention(
            (&q, &sq_),
            (&k, &sk_),
            (&v, &sk_),
            Some((&mask, &mask_shape)),
            &a,
        )
        .unwrap();
        let want = written_out([nb, sq, sk, h, d], &q, &k, &v, &mask, &mask_shape, 0.35);
        let (TensorData::F64(g), TensorData::F64(w)) = (&got, &want) else {
            panic!("f64")
        };
        assert_eq!(g.len(), w.len());
        for (x, y) in g.iter().zip(w) {
            assert!((x - y).abs() <= 1e-12, "{x} vs {y}");
        }
    }

    #[test]
    fn bad_operands_are_errors() {
        let a = Attention {
            heads: 3,
            scale: 1.0,
        };
        let x = TensorData::F32(vec![0.0; 8]);
        let s = Shape::new([1, 2, 4]);
        assert!(attention((&x, &s), (&x, &s), (&x, &s), None, &a)
            .unwrap_err()
            .contains("3 heads"));
        let i = TensorData::I32(vec![0; 8]);
        let two = Attention { heads: 2, ..a };
        assert!(attention((&i, &s), (&x, &s), (&x, &s), None, &two)
            .unwrap_err()
            .contains("not a float"));
        let ms = Shape::new([3]);
        assert!(attention((&x, &s), (&x, &s), (&x, &s), Some((&x, &ms)), &two).is_err());
    }
}
