//! Softmax and layer normalisation over the last axis, row by row: the reference's
//! arithmetic (`f64`, same order, one rounding at the end) without its whole-tensor `f64`
//! copies and index arithmetic, so results are bit-identical to it.

use graphlift_ir::{LayerNorm, Shape, TensorData};

/// An `f32` or `f64` element, widened and narrowed as the reference does.
trait Float: Copy {
    fn wide(self) -> f64;
    fn narrow(x: f64) -> Self;
}

impl Float for f32 {
    fn wide(self) -> f64 {
        f64::from(self)
    }
    fn narrow(x: f64) -> f32 {
        x as f32
    }
}

impl Float for f64 {
    fn wide(self) -> f64 {
        self
    }
    fn narrow(x: f64) -> f64 {
        x
    }
}

fn softmax_rows<T: Float>(x: &[T], len: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(x.len());
    let mut e = vec![0f64; len];
    for row in x.chunks(len) {
        let max = row
            .iter()
            .map(|v| v.wide())
            .fold(f64::NEG_INFINITY, f64::max);
        let mut sum = 0.0;
        for (e, v) in e.iter_mut().zip(row) {
            *e = (v.wide() - max).exp();
            sum += *e;
        }
        out.extend(e.iter().map(|&v| T::narrow(v / sum)));
    }
    out
}

fn layer_norm_rows<T: Float>(x: &[T], g: &[T], b: &[T], epsilon: f64) -> Vec<T> {
    let n = g.len();
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let mean = row.iter().map(|v| v.wide()).sum::<f64>() / n as f64;
        let var = row
            .iter()
            .map(|v| (v.wide() - mean) * (v.wide() - mean))
            .sum::<f64>()
            / n as f64;
        let inv = 1.0 / (var + epsilon).sqrt();
        out.extend(
            row.iter()
                .zip(g.iter().zip(b))
                .map(|(v, (g, b))| T::narrow((v.wide() - mean) * inv * g.wide() + b.wide())),
        );
    }
    out
}

/// Softmax along the last axis of `x` (shape `from`), or `None` for another axis or a
/// non-float tensor (the caller runs the reference).
pub(crate) fn softmax(x: &TensorData, from: &Shape, axis: usize) -> Option<TensorData> {
    let len = *from.dims().last()?;
    if axis + 1 != from.rank() || len == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    match x {
        TensorData::F32(v) => Some(TensorData::F32(softmax_rows(v, len))),
        TensorData::F64(v) => Some(TensorData::F64(softmax_rows(v, len))),
        _ => None,
    }
}

/// Layer normalisation over the last axis, or `None` for other axes or mismatched data.
pub(crate) fn layer_norm(
    x: &TensorData,
    from: &Shape,
    scale: &TensorData,
    bias: &TensorData,
    l: &LayerNorm,
) -> Option<TensorData> {
    let len = *from.dims().last()?;
    if l.axis + 1 != from.rank() || len == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    match (x, scale, bias) {
        (TensorData::F32(v), TensorData::F32(g), TensorData::F32(b))
            if g.len() == len && b.len() == len =>
        {
            Some(TensorData::F32(layer_norm_rows(v, g, b, l.epsilon)))
        }
        (TensorData::F64(v), TensorData::F64(g), TensorData::F64(b))
            if g.len() == len && b.len() == len =>
        {
            Some(TensorData::F64(layer_norm_rows(v, g, b, l.epsilon)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_runtime::reference;

    #[test]
    fn bit_identical_to_the_reference() {
        let s = Shape::new([3, 4, 10]);
        let x = TensorData::F32(
            (0..120)
                .map(|i| ((i * 53) % 37) as f32 / 3.0 - 6.0)
                .collect(),
        );
        assert_eq!(softmax(&x, &s, 2), reference::softmax(&x, &s, 2).ok());
        assert!(softmax(&x, &s, 1).is_none());
        let g = TensorData::F32((0..10).map(|i| i as f32 / 4.0).collect());
        let b = TensorData::F32((0..10).map(|i| 1.0 - i as f32).collect());
        let l = LayerNorm {
            axis: 2,
            epsilon: 1e-12,
        };
        assert_eq!(
            layer_norm(&x, &s, &g, &b, &l),
            reference::layer_norm(&x, &s, &g, &b, &l).ok()
        );
        let edge = TensorData::F32(vec![f32::NEG_INFINITY, 0.0, f32::NAN, 1.0]);
        let s2 = Shape::new([2, 2]);
        let (got, want) = (
            softmax(&edge, &s2, 1).unwrap(),
            reference::softmax(&edge, &s2, 1).unwrap(),
        );
        let bits = |d: &TensorData| match d {
            TensorData::F32(v) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        assert_eq!(bits(&got), bits(&want));
    }
}
