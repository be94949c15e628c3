//! Row-wise helpers of the native kernels: interleaved partial sums (so sums vectorize and
//! are not bound by the latency of one chain of additions) and a map over rows that runs on
//! the backend's pool when the tensor is large enough.

use crate::parallel::{for_each, Parallel};

/// Partial results kept side by side, so that loops over them vectorize.
pub(super) const W: usize = 8;

/// The sum of `f(v)` over `row`, in `W` interleaved `f64` partial sums. Inlined, so that
/// it runs at the width its caller was compiled for (a multiversioned row function's).
#[inline(always)]
pub(super) fn sum_wide<T: Copy>(row: &[T], f: impl Fn(T) -> f64) -> f64 {
    let mut s = [0f64; W];
    let chunks = row.chunks_exact(W);
    let rest = chunks.remainder();
    for c in chunks {
        for (s, &v) in s.iter_mut().zip(c) {
            *s += f(v);
        }
    }
    s.iter().sum::<f64>() + rest.iter().map(|&v| f(v)).sum::<f64>()
}

/// `f(x_row, out_row)` for every row of `len` elements of `x`, into `out` when it holds as
/// many elements as `x` (a recycled buffer: `f` must write every element of its row), else
/// into a new buffer; rows in parallel on `parallel`'s pool, each thread getting at least
/// `per_thread` elements (fewer would cost more in forking than the rows).
pub(super) fn map_rows<T: Copy + Default + Send + Sync>(
    x: &[T],
    len: usize,
    parallel: &Parallel,
    po: (usize, Option<Vec<T>>),
    f: impl Fn(&[T], &mut [T]) + Sync,
) -> Vec<T> {
    map_row_blocks(x, len, parallel, po, |x, out| {
        out.chunks_mut(len)
            .zip(x.chunks(len))
            .for_each(|(o, x)| f(x, o))
    })
}

/// As [`map_rows`], with `f(x_rows, out_rows)` called on blocks of whole rows (each
/// thread's share, or all of `x`), for row functions that interleave several rows.
pub(super) fn map_row_blocks<T: Copy + Default + Send + Sync>(
    x: &[T],
    len: usize,
    parallel: &Parallel,
    (per_thread, out): (usize, Option<Vec<T>>),
    f: impl Fn(&[T], &mut [T]) + Sync,
) -> Vec<T> {
    let mut out = match out {
        Some(out) if out.len() == x.len() => out,
        _ => vec![T::default(); x.len()],
    };
    let rows = x.len() / len;
    match parallel.team_of(x.len(), per_thread).filter(|_| rows > 1) {
        Some(team) => {
            let per_task = rows.div_ceil(team.threads()) * len;
            let tasks = out.chunks_mut(per_task).zip(x.chunks(per_task));
            for_each(team, tasks, |(o, x)| f(x, o));
        }
        None => f(x, &mut out),
    }
    out
}
