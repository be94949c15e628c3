//! `Resize` in `Linear` and `Cubic` mode (every mode whose outputs weigh several inputs) as
//! the reference computes it: axis by axis from the last, each output position the sum of
//! its [`axis_taps`] in order, in `f64` as `Iterator::sum` adds them, rounded once to the
//! element type at the end, so the result is the reference's bit for bit. What the
//! reference does per element (its taps looked up per output, its operand indexed over
//! every axis, whole-tensor intermediates) is done here once: each axis's taps flattened
//! into index and weight arrays, and the work done block by block (a block being every axis
//! from the first resized one on: an image's plane for a 2-D resize) in this thread's
//! scratch buffers, the blocks split over threads.

use graphlift_ir::{Resize, ResizeMode, TensorData};
use graphlift_runtime::reference::{axis_taps, is_identity_axis, AxisTaps};
use graphlift_runtime::Tensor;

use multiversion::multiversion;

use super::result_buffer;
use super::scratch::with_scratch;
use crate::parallel::{for_each, Parallel, Team};

/// The fewest output elements per parallel task.
const MIN_TASK: usize = 1 << 14;

/// One resized axis's taps, flattened: output position `t` sums `weight[j] · x[index[j]]` for
/// `j` in `starts[t]..starts[t + 1]`, or is the extrapolation value when `outside[t]`.
struct Taps {
    starts: Vec<usize>,
    index: Vec<usize>,
    weight: Vec<f64>,
    outside: Vec<bool>,
}

impl Taps {
    fn new(taps: &[AxisTaps]) -> Taps {
        let mut t = Taps {
            starts: vec![0],
            index: Vec::new(),
            weight: Vec::new(),
            outside: Vec::new(),
        };
        for p in taps {
            match p {
                AxisTaps::Extrapolate => t.outside.push(true),
                AxisTaps::Taps(list) => {
                    t.outside.push(false);
                    t.index.extend(list.iter().map(|&(i, _)| i));
                    t.weight.extend(list.iter().map(|&(_, w)| w));
                }
            }
            t.starts.push(t.index.len());
        }
        t
    }

    fn len(&self) -> usize {
        self.outside.len()
    }
}

/// One axis pass over `x` (`[outer, d, inner]`, row-major) into `y` (`[outer, taps.len(),
/// inner]`): every output the sum over its taps, in their order, of `w · x` (as
/// `Iterator::sum` adds), or `extrapolation`.
#[multiversion(targets = "simd")]
fn resize_axis(
    x: &[f64],
    y: &mut [f64],
    (d, inner): (usize, usize),
    taps: &Taps,
    extrapolation: f64,
) {
    let out = taps.len() * inner;
    if out == 0 || inner == 0 {
        return;
    }
    // The value the reference's sum (`Iterator::sum`) starts from, so that a sum of
    // products of -0.0 keeps the reference's sign.
    let start: f64 = std::iter::empty::<f64>().sum();
    for (src, dst) in x.chunks_exact(d * inner).zip(y.chunks_exact_mut(out)) {
        for (t, row) in dst.chunks_exact_mut(inner).enumerate() {
            if taps.outside[t] {
                row.fill(extrapolation);
                continue;
            }
            let (from, to) = (taps.starts[t], taps.starts[t + 1]);
            let (index, weight) = (&taps.index[from..to], &taps.weight[from..to]);
            if inner == 1 {
                row[0] = index.iter().zip(weight).map(|(&i, &w)| w * src[i]).sum();
                continue;
            }
            // Each tap adds its scaled input row, so every element sums its taps in order
            // from `start`, as the reference's sum does.
            row.fill(start);
            for (&i, &w) in index.iter().zip(weight) {
                let line = &src[i * inner..(i + 1) * inner];
                row.iter_mut().zip(line).for_each(|(y, &v)| *y += w * v);
            }
        }
    }
}

/// `Resize` of an `f32`/`f64` `x` in a mode whose outputs weigh several inputs (`Linear`,
/// `Cubic`), into `out` when it is a buffer of the result's type and length, or `None` when
/// this kernel does not apply (`Nearest`, another type, a scalar, an attribute that does not
/// fit `x`); the caller then runs the reference.
pub fn resize_taps(
    x: &Tensor,
    r: &Resize,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    if matches!(r.mode, ResizeMode::Nearest(_)) {
        return None;
    }
    let in_dims = x.shape().dims();
    let float = matches!(x.data(), TensorData::F32(_) | TensorData::F64(_));
    if !float || in_dims.is_empty() || r.check(in_dims).is_err() {
        return None;
    }
    let taps = in_dims
        .iter()
        .enumerate()
        .map(|(axis, &d)| axis_taps(r, axis, d).ok())
        .collect::<Option<Vec<_>>>()?;
    let out_dims: Vec<usize> = taps.iter().map(Vec::len).collect();
    let len: usize = out_dims.iter().product();
    // The resized axes, from the last; the block is every axis from the first of them on.
    let resized: Vec<usize> = (0..in_dims.len())
        .rev()
        .filter(|&a| !is_identity_axis(&taps[a], in_dims[a]))
        .collect();
    let first = resized.last().copied().unwrap_or(in_dims.len());
    let block_in: usize = in_dims[first..].iter().product();
    let block_out: usize = out_dims[first..].iter().product();
    // Each resized axis's pass over a block, its extents worked out once for all blocks.
    let mut dims = in_dims[first..].to_vec();
    let passes: Vec<Pass> = resized
        .iter()
        .map(|&axis| {
            let a = axis - first;
            let (d, inner) = (dims[a], dims[a + 1..].iter().product::<usize>());
            let outer: usize = dims[..a].iter().product();
            dims[a] = taps[axis].len();
            Pass {
                taps: Taps::new(&taps[axis]),
                d,
                inner,
                out: outer * dims[a] * inner,
            }
        })
        .collect();
    // The largest intermediate of a block: its input or a pass's output.
    let most = passes.iter().map(|p| p.out).fold(block_in, usize::max);
    let ev = r.extrapolation_value;
    // Block `b` of `x` resized, handed to `y` (block_out elements), through two scratch
    // buffers.
    let one_block = |b: usize, y: &mut dyn FnMut(&[f64])| {
        with_scratch::<f64, _>(2 * most, |buf| {
            let (mut cur, mut next) = buf.split_at_mut(most);
            let src = &mut cur[..block_in];
            match x.data() {
                TensorData::F32(v) => {
                    let v = &v[b * block_in..(b + 1) * block_in];
                    src.iter_mut().zip(v).for_each(|(s, &e)| *s = f64::from(e));
                }
                TensorData::F64(v) => src.copy_from_slice(&v[b * block_in..(b + 1) * block_in]),
                _ => {}
            }
            let mut size = block_in;
            for p in &passes {
                resize_axis(
                    &cur[..size],
                    &mut next[..p.out],
                    (p.d, p.inner),
                    &p.taps,
                    ev,
                );
                std::mem::swap(&mut cur, &mut next);
                size = p.out;
            }
            y(&cur[..size]);
        })
    };
    let mut y = result_buffer(out, x.element_type(), len);
    let team = parallel.team_of(len, MIN_TASK);
    match (&mut y, x.data()) {
        _ if len == 0 || block_out == 0 => {}
        (TensorData::F32(y), TensorData::F32(_)) => {
            narrow_blocks(y, block_out, team, &one_block, |e| e as f32)
        }
        (TensorData::F64(y), TensorData::F64(_)) => {
            narrow_blocks(y, block_out, team, &one_block, |e| e)
        }
        _ => return None,
    }
    Some(y)
}

/// One resized axis's pass over a block: its taps, the axis's input extent `d`, the
/// elements `inner` of the axes after it, and the pass's output elements per block.
struct Pass {
    taps: Taps,
    d: usize,
    inner: usize,
    out: usize,
}

/// The blocks of `y` (`block_out` elements each), each from `one_block(b, …)` narrowed to
/// `T` by `narrow`; tasks of at least [`MIN_TASK`] outputs over `team`.
fn narrow_blocks<T: Send, B>(
    y: &mut [T],
    block_out: usize,
    team: Option<Team<'_>>,
    one_block: &B,
    narrow: fn(f64) -> T,
) where
    B: Fn(usize, &mut dyn FnMut(&[f64])) + Sync,
{
    let per_task = MIN_TASK.div_ceil(block_out);
    let task = |(k, part): (usize, &mut [T])| {
        for (i, yb) in part.chunks_mut(block_out).enumerate() {
            one_block(k * per_task + i, &mut |v: &[f64]| {
                yb.iter_mut().zip(v).for_each(|(y, &e)| *y = narrow(e));
            });
        }
    };
    let chunks = y.chunks_mut(per_task * block_out).enumerate();
    match team {
        Some(team) => for_each(team, chunks, task),
        None => chunks.for_each(task),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::resize::test_resize;
    use crate::parallel::ThreadConfig;
    use graphlift_ir::{CoordinateTransform, Shape};

    /// Linear and cubic resizes, up and down, of every coordinate transformation the models
    /// use, `f32` and `f64`, on one and two threads (planes split), give the reference's
    /// bits, signs of zero included.
    #[test]
    fn agrees_with_the_reference_bit_for_bit() {
        let dims = [2, 3, 9, 13];
        let n: usize = dims.iter().product();
        let mut x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        x[5] = -0.0;
        // A plane of -0.0: its sums of products keep the reference's sign of zero.
        x[..9 * 13].fill(-0.0);
        let cases = [
            (
                ResizeMode::Linear,
                CoordinateTransform::HalfPixel,
                [1.0, 1.0, 2.0, 2.0],
            ),
            (
                ResizeMode::Linear,
                CoordinateTransform::AlignCorners,
                [1.0, 1.0, 2.0, 1.5],
            ),
            (
                ResizeMode::Linear,
                CoordinateTransform::Asymmetric,
                [1.0, 1.0, 0.5, 1.0],
            ),
            (
                ResizeMode::Linear,
                CoordinateTransform::PytorchHalfPixel,
                [1.0, 2.0, 1.0, 0.75],
            ),
            (
                ResizeMode::Cubic(-0.75),
                CoordinateTransform::HalfPixel,
                [1.0, 1.0, 1.5, 2.0],
            ),
            (
                ResizeMode::Cubic(-0.5),
                CoordinateTransform::AlignCorners,
                [1.0, 1.0, 0.75, 0.5],
            ),
        ];
        for (mode, t, scales) in cases {
            let r = test_resize(mode, t, &dims, &scales);
            for data in [
                TensorData::F32(x.clone()),
                TensorData::F64(x.iter().map(|&v| f64::from(v)).collect()),
            ] {
                let want =
                    graphlift_runtime::reference::resize(&data, &Shape::new(dims), &r).unwrap();
                let xt = Tensor::from_data(data, Shape::new(dims)).unwrap();
                for threads in [1, 2] {
                    let parallel = Parallel::new(ThreadConfig::with_threads(threads));
                    let got = resize_taps(&xt, &r, None, &parallel).expect("applies");
                    assert_eq!(got.len(), want.len(), "{r:?}");
                    for i in 0..got.len() {
                        let (g, w) = (got.get_f64(i).unwrap(), want.get_f64(i).unwrap());
                        assert_eq!(
                            g.to_bits(),
                            w.to_bits(),
                            "{r:?}, {threads} threads, output {i}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn leaves_nearest_and_other_types_to_others() {
        let r = test_resize(
            ResizeMode::Nearest(graphlift_ir::NearestMode::Floor),
            CoordinateTransform::Asymmetric,
            &[2],
            &[2.0],
        );
        let x = Tensor::from_vec(vec![1.0f32, 2.0], [2]).unwrap();
        let parallel = Parallel::new(ThreadConfig::with_threads(1));
        assert!(resize_taps(&x, &r, None, &parallel).is_none());
        let linear = Resize {
            mode: ResizeMode::Linear,
            ..r
        };
        let ints = Tensor::from_vec(vec![1i32, 2], [2]).unwrap();
        assert!(resize_taps(&ints, &linear, None, &parallel).is_none());
        assert!(resize_taps(&x, &linear, None, &parallel).is_some());
    }
}
