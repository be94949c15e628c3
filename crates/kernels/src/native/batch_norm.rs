//! `BatchNormInference` that no convolution absorbed (`passes::BatchNormFolding` folds the
//! others into their filters): per channel `(x − mean) · (1 / √(variance + ε)) · scale +
//! bias`, each element in `f64` in the reference's order of operations and rounded once,
//! so the result is the reference's bit for bit; blocks of channels split over threads.
//! The reference widens the whole tensor to `f64` and back, which cost more than the
//! arithmetic.

use graphlift_ir::TensorData;
use graphlift_runtime::Tensor;
use multiversion::multiversion;

use super::normalize::Float;
use super::result_buffer;
use crate::parallel::{for_each, Parallel};

/// The fewest elements per parallel task.
const MIN_TASK: usize = 1 << 15;

/// One channel's block: `y = (x − mean) · inv · scale + bias` per element.
#[multiversion(targets = "simd")]
fn channel<T: Float>(x: &[T], y: &mut [T], (mean, inv, scale, bias): (f64, f64, f64, f64)) {
    for (y, &v) in y.iter_mut().zip(x) {
        *y = T::narrow((v.wide() - mean) * inv * scale + bias);
    }
}

/// The per-channel parameters `(mean, 1 / √(variance + ε), scale, bias)`, or `None` when a
/// statistic is not a float tensor of `c` elements.
fn parameters(params: [&Tensor; 4], c: usize, epsilon: f64) -> Option<Vec<(f64, f64, f64, f64)>> {
    let values = |t: &Tensor| -> Option<Vec<f64>> {
        let d = t.data();
        let float = matches!(
            d,
            TensorData::F32(_) | TensorData::F64(_) | TensorData::F16(_) | TensorData::BF16(_)
        );
        (float && d.len() == c)
            .then(|| (0..c).map(|i| d.get_f64(i)).collect::<Option<Vec<_>>>())
            .flatten()
    };
    let [scale, bias, mean, var] = params.map(values);
    let (scale, bias, mean, var) = (scale?, bias?, mean?, var?);
    Some(
        (0..c)
            .map(|k| {
                let inv = 1.0 / (var[k] + epsilon).sqrt();
                (mean[k], inv, scale[k], bias[k])
            })
            .collect(),
    )
}

/// Batch normalisation in inference mode of `x` (`[N, C, ...]`, `f32` or `f64`) with
/// `params` = `[scale, bias, mean, variance]` (each `[C]`), into `out` when it is a buffer
/// of `x`'s type and length; `None` (the caller runs the reference) for another type or
/// shape.
pub fn batch_norm(
    x: &Tensor,
    params: [&Tensor; 4],
    epsilon: f64,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let dims = x.shape().dims();
    let (&c, rest) = dims.get(1..)?.split_first()?;
    let inner: usize = rest.iter().product();
    if inner == 0 || c == 0 {
        return None;
    }
    let p = parameters(params, c, epsilon)?;
    let len = x.data().len();
    let mut y = result_buffer(out, x.element_type(), len);
    let per_task = MIN_TASK.div_ceil(inner);
    let team = parallel.team_of(len, MIN_TASK);
    fn run<T: Float + Send + Sync>(
        x: &[T],
        y: &mut [T],
        (inner, per_task): (usize, usize),
        p: &[(f64, f64, f64, f64)],
        team: Option<crate::parallel::Team<'_>>,
    ) {
        let c = p.len();
        let task = |(k, part): (usize, &mut [T])| {
            for (i, yb) in part.chunks_mut(inner).enumerate() {
                let block = k * per_task + i;
                channel(&x[block * inner..(block + 1) * inner], yb, p[block % c]);
            }
        };
        let chunks = y.chunks_mut(per_task * inner).enumerate();
        match team {
            Some(team) => for_each(team, chunks, task),
            None => chunks.for_each(task),
        }
    }
    match (x.data(), &mut y) {
        (TensorData::F32(x), TensorData::F32(y)) => run(x, y, (inner, per_task), &p, team),
        (TensorData::F64(x), TensorData::F64(y)) => run(x, y, (inner, per_task), &p, team),
        _ => return None,
    }
    Some(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_ir::Shape;

    /// `f32` and `f64` inputs of rank 2 to 4 with specials (NaN, ±inf, -0.0), on one and two
    /// threads, give the reference's bits.
    #[test]
    fn agrees_with_the_reference_bit_for_bit() {
        for dims in [vec![3, 5], vec![2, 3, 7], vec![2, 4, 33, 65]] {
            let c = dims[1];
            let n: usize = dims.iter().product();
            let mut xs: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.731).sin() * 5.0).collect();
            for (k, v) in [
                (0, f64::NAN),
                (1, f64::INFINITY),
                (2, -0.0),
                (4, f64::NEG_INFINITY),
            ] {
                xs[k] = v;
            }
            let stat = |f: fn(usize) -> f64| (0..c).map(|k| f(k) as f32).collect::<Vec<f32>>();
            let params: Vec<Tensor> = [
                stat(|k| 0.5 + k as f64 * 0.25),
                stat(|k| k as f64 - 1.0),
                stat(|k| (k as f64 * 0.3).cos()),
                stat(|k| 0.1 + k as f64),
            ]
            .into_iter()
            .map(|v| Tensor::from_vec(v, [c]).unwrap())
            .collect();
            let refs = [&params[0], &params[1], &params[2], &params[3]];
            let data = [
                TensorData::F32(xs.iter().map(|&v| v as f32).collect()),
                TensorData::F64(xs.clone()),
            ];
            for d in data {
                let shape = Shape::new(dims.clone());
                let p = refs.map(Tensor::data);
                let want = graphlift_runtime::reference::batch_norm(&d, &shape, p, 1e-5).unwrap();
                let x = Tensor::from_data(d, shape).unwrap();
                for threads in [1, 2] {
                    let parallel = Parallel::new(ThreadConfig::with_threads(threads));
                    let got = batch_norm(&x, refs, 1e-5, None, &parallel).expect("applies");
                    for i in 0..got.len() {
                        let (g, w) = (got.get_f64(i).unwrap(), want.get_f64(i).unwrap());
                        let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                        assert!(same, "{dims:?}, {threads} threads, element {i}: {g} vs {w}");
                    }
                }
            }
        }
    }
}
