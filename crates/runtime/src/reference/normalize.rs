//! Softmax, layer normalisation and batch normalisation (inference), computed in `f64` and
//! rounded once.

use graphlift_ir::{LayerNorm, Shape, TensorData};

use super::widen::{float_operand, narrow};

/// Softmax of `data` (shape `from`) along `axis`: `exp(x - max) / Σ exp(x - max)` over each
/// line of the axis. A line of all `-inf` gives NaN (`-inf - -inf`), as onnxruntime does.
///
/// # Errors
/// A message when the data is not a float tensor filling `from` or the axis is out of range.
pub fn softmax(data: &TensorData, from: &Shape, axis: usize) -> Result<TensorData, String> {
    let mut x = float_operand(data, from, "x")?;
    if axis >= from.rank() {
        return Err(format!("axis {axis} is out of range for {from}"));
    }
    let d = from.dims()[axis];
    let inner: usize = from.dims()[axis + 1..].iter().product();
    let outer: usize = from.dims()[..axis].iter().product();
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * d + j) * inner + i;
            let max = (0..d).map(|j| x[at(j)]).fold(f64::NEG_INFINITY, f64::max);
            let mut sum = 0.0;
            for j in 0..d {
                let e = (x[at(j)] - max).exp();
                x[at(j)] = e;
                sum += e;
            }
            (0..d).for_each(|j| x[at(j)] /= sum);
        }
    }
    Ok(narrow(data.element_type(), x))
}

/// Layer normalisation of `data` (shape `from`) over the axes `l.axis..`:
/// `(x - mean) / sqrt(var + epsilon) * scale + bias` with the biased variance; `scale` and
/// `bias` have the shape of the normalised axes.
///
/// # Errors
/// A message when a tensor is not a float tensor of the expected size or the axis is out of
/// range.
pub fn layer_norm(
    data: &TensorData,
    from: &Shape,
    scale: &TensorData,
    bias: &TensorData,
    l: &LayerNorm,
) -> Result<TensorData, String> {
    let mut x = float_operand(data, from, "x")?;
    if l.axis >= from.rank() {
        return Err(format!("axis {} is out of range for {from}", l.axis));
    }
    let norm = Shape::new(&from.dims()[l.axis..]);
    let (g, b) = (
        float_operand(scale, &norm, "scale")?,
        float_operand(bias, &norm, "bias")?,
    );
    let n = g.len();
    if n == 0 {
        return Ok(narrow(data.element_type(), x));
    }
    for row in x.chunks_mut(n) {
        let mean = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let inv = 1.0 / (var + l.epsilon).sqrt();
        for (j, v) in row.iter_mut().enumerate() {
            *v = (*v - mean) * inv * g[j] + b[j];
        }
    }
    Ok(narrow(data.element_type(), x))
}

/// Batch normalisation in inference mode of `data` (shape `[N, C, ...]`) with per-channel
/// `params` = `[scale, bias, mean, variance]` (each `[C]`):
/// `(x - mean) / sqrt(variance + epsilon) * scale + bias`.
///
/// # Errors
/// A message when a tensor is not a float tensor of the expected size.
pub fn batch_norm(
    data: &TensorData,
    from: &Shape,
    params: [&TensorData; 4],
    epsilon: f64,
) -> Result<TensorData, String> {
    let mut x = float_operand(data, from, "x")?;
    if from.rank() < 2 {
        return Err(format!("x must be [N, C, ...], is {from}"));
    }
    let c = from.dims()[1];
    let per_channel = Shape::new([c]);
    let names = ["scale", "bias", "mean", "variance"];
    let p: Vec<Vec<f64>> = params
        .iter()
        .zip(names)
        .map(|(t, name)| float_operand(t, &per_channel, name))
        .collect::<Result<_, _>>()?;
    let inner: usize = from.dims()[2..].iter().product();
    if inner == 0 || c == 0 {
        return Ok(narrow(data.element_type(), x));
    }
    for (k, block) in x.chunks_mut(inner).enumerate() {
        let ch = k % c;
        let inv = 1.0 / (p[3][ch] + epsilon).sqrt();
        for v in block {
            *v = (*v - p[2][ch]) * inv * p[0][ch] + p[1][ch];
        }
    }
    Ok(narrow(data.element_type(), x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_rows_sum_to_one() {
        let x = TensorData::F32(vec![1.0, 2.0, 3.0, 1000.0, 1000.0, f32::NEG_INFINITY]);
        let TensorData::F32(y) = softmax(&x, &Shape::new([2, 3]), 1).unwrap() else {
            panic!()
        };
        assert!((y[0] + y[1] + y[2] - 1.0).abs() < 1e-6);
        assert!((y[2] - 0.665_240_94).abs() < 1e-7);
        assert_eq!(y[3..], [0.5, 0.5, 0.0]);
        // Along axis 0 of [2, 3]: columns.
        let TensorData::F32(c) = softmax(&x, &Shape::new([2, 3]), 0).unwrap() else {
            panic!()
        };
        assert_eq!(c[0], 0.0);
        assert_eq!(c[5], 0.0);
    }

    #[test]
    fn layer_and_batch_norm() {
        let x = TensorData::F64(vec![1.0, 3.0, 10.0, 30.0]);
        let g = TensorData::F64(vec![1.0, 2.0]);
        let b = TensorData::F64(vec![0.0, 1.0]);
        let l = LayerNorm {
            axis: 1,
            epsilon: 0.0,
        };
        let y = layer_norm(&x, &Shape::new([2, 2]), &g, &b, &l).unwrap();
        assert_eq!(y, TensorData::F64(vec![-1.0, 3.0, -1.0, 3.0]));
        let one = TensorData::F32(vec![1.0, 1.0]);
        let zero = TensorData::F32(vec![0.0, 0.0]);
        let var = TensorData::F32(vec![4.0, 0.25]);
        let x = TensorData::F32(vec![2.0, 4.0, 1.0, 3.0]);
        let y = batch_norm(&x, &Shape::new([1, 2, 2]), [&one, &zero, &zero, &var], 0.0).unwrap();
        assert_eq!(y, TensorData::F32(vec![1.0, 2.0, 2.0, 6.0]));
    }
}
