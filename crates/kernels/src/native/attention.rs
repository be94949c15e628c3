//! Fused multi-head attention (`Op::Attention`) on `f32` and `f64`: for each batch and block
//! of query rows, head by head, the scores `q_h · k_hᵀ · scale` of those rows only (never
//! the whole `[B, H, Sq, Sk]` tensor), the mask added, a numerically stable softmax per
//! row, then `P · v_h` written straight into the heads-merged output (no head split or
//! merge copies). On an AVX-512 host the softmax stops at its numerators, the mask added
//! on the way, and each output row is scaled by the reciprocal of its sum instead: `Dv`
//! products a row rather than `Sk`, and two passes over the scores fewer. On `f32` both
//! products run on the packed product's microkernel, which loads its right operand's rows:
//! the scores from `q`'s head read in place and `scale · k_hᵀ` staged (`D × Sk`, a few KiB
//! a head: by the task that has a batch alone, else once for the tasks that share it),
//! `P · v_h` from `P` and `v`'s head in place. On `f64`, gemm reads all three heads in
//! place. Tasks run on the backend's pool.

use std::ops::{AddAssign, Mul};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use gemm::Parallelism;
use graphlift_ir::{Attention, Element, Shape, TensorData};
use graphlift_runtime::reference::{batch_offsets, Operand};
use multiversion::multiversion;

use super::gemm_call::{gemm_into, Strided};
use super::matmul::ROW_BLOCK_ALIGN;
use super::normalize::{softmax_row_f64, softmax_rows_f32};
use super::packed::{self, Lhs, Rhs};
use super::result_buffer;
use super::scratch::{with_scratch, Scratch};
use super::transpose::transpose_into;
use crate::parallel::{for_each, Parallel, Team};

/// Most score elements one task holds at a time (a block of query rows × `Sk`, for one
/// head; a second buffer of the same size holds the probabilities).
const SCORE_BLOCK: usize = 1 << 14;
/// Tasks per thread when the work is split: a few, so a thread whose core is taken by
/// another process leaves blocks for the others.
const TASKS_PER_THREAD: usize = 2;

/// The extents: `q` `[batch, sq, heads·d]`, `k` `[batch, sk, heads·d]`, `v`
/// `[batch, sk, heads·dv]`, output `[batch, sq, heads·dv]`.
#[derive(Debug, Clone, Copy)]
struct Dims {
    batch: usize,
    sq: usize,
    sk: usize,
    heads: usize,
    d: usize,
    dv: usize,
}

impl Dims {
    /// The extents of `q`, `k`, `v` with `heads` heads, or `None` when they do not fit.
    fn new(q: &Shape, k: &Shape, v: &Shape, heads: usize) -> Option<Dims> {
        let (&[b, sq, e], &[bk, sk, ek], &[bv, sv, ev]) = (q.dims(), k.dims(), v.dims()) else {
            return None;
        };
        let fits = heads > 0 && (bk, bv, sv, ek) == (b, b, sk, e);
        (fits && e % heads == 0 && ev % heads == 0).then_some(Dims {
            batch: b,
            sq,
            sk,
            heads,
            d: e / heads,
            dv: ev / heads,
        })
    }

    fn e(&self) -> usize {
        self.heads * self.d
    }

    fn ev(&self) -> usize {
        self.heads * self.dv
    }

    /// The index in `k` of head `h` of batch `b`'s first element.
    fn k_head(&self, (b, h): (usize, usize)) -> usize {
        b * self.sk * self.e() + h * self.d
    }
}

/// The additive mask as the kernel reads it: score row `(b, h, i)` (query row `i` of head
/// `h` of batch `b`) adds the values at `heads[b·H + h] + i · row_step` in `data`; `row_len`
/// is `Sk` (a row of values) or 1 (one value for the whole row).
struct Mask<'a, T> {
    data: &'a [T],
    heads: Vec<usize>,
    row_step: usize,
    row_len: usize,
}

impl<'a, T> Mask<'a, T> {
    /// The mask `data` of shape `shape` broadcast (numpy) to the scores `[B, H, Sq, Sk]`, or
    /// `None` when it does not broadcast or the data do not fill it.
    fn new(data: &'a [T], shape: &Shape, n: &Dims) -> Option<Mask<'a, T>> {
        let scores = [n.batch, n.heads, n.sq, n.sk];
        if shape.rank() > 4 || !shape.broadcasts_to(&Shape::new(scores)) {
            return None;
        }
        let mut dims = vec![1; 4 - shape.rank()];
        dims.extend_from_slice(shape.dims());
        if data.len() != dims.iter().product::<usize>() {
            return None;
        }
        Some(Mask {
            data,
            heads: batch_offsets(&dims[..2], &scores[..2], dims[2] * dims[3]),
            row_step: if dims[2] == 1 { 0 } else { dims[3] },
            row_len: dims[3],
        })
    }

    /// The mask of score rows `i0..` of head `h` of batch `b` as
    /// [`Float::softmax_numerators`] adds it: its values from row `i0`'s on and the step
    /// between rows; `None` for a mask of one value a row, which is added beforehand.
    fn rows(&self, (b, h, i0): (usize, usize, usize), n: &Dims) -> Option<(&'a [T], usize)> {
        let at = self.heads[b * n.heads + h] + i0 * self.row_step;
        (self.row_len == n.sk)
            .then(|| self.data.get(at..))
            .flatten()
            .map(|values| (values, self.row_step))
    }
}

impl<T: Float> Mask<'_, T> {
    /// Adds the mask to the score rows `i0..` of head `h` of batch `b` (`scores`, rows of
    /// `Sk`).
    fn add_to(&self, (b, h, i0): (usize, usize, usize), scores: &mut [T], n: &Dims) {
        let head = self.heads[b * n.heads + h];
        for (i, row) in scores.chunks_mut(n.sk.max(1)).enumerate() {
            let at = head + (i0 + i) * self.row_step;
            T::add_mask(row, &self.data[at..at + self.row_len]);
        }
    }
}

/// The element types the kernel runs on.
trait Float: Element + AddAssign + Mul<Output = Self> + Scratch + Send + Sync {
    const ONE: Self;
    /// Whether [`Float::packed_product`] runs (else it declines every product).
    const PACKED: bool;
    fn from_f64(x: f64) -> Self;
    /// Adds `mask` to `row`: element by element, or its one value to every element.
    fn add_mask(row: &mut [Self], mask: &[Self]);
    /// A numerically stable softmax of each row of `len` elements of `x` into `out`.
    fn softmax_rows(x: &[Self], out: &mut [Self], len: usize);
    /// The softmax numerators of each row of `len` elements of `x` in place, `mask`'s rows
    /// added first, and their sums into `sums` ([`crate::veclib::softmax_numerators`]);
    /// `false`, writing nothing, where that does not run (by default; the caller then adds
    /// the mask and runs [`Float::softmax_rows`]).
    fn softmax_numerators(
        _x: &mut [Self],
        _len: usize,
        _mask: Option<(&[Self], usize)>,
        _sums: &mut [f64],
    ) -> bool {
        false
    }
    /// `row · by`, element by element.
    fn scale_row(row: &mut [Self], by: Self) {
        row.iter_mut().for_each(|v| *v = *v * by)
    }
    /// `c = a · b` for `a` `m × k` and `b` `k × n` (rows `lda`, `ldb` apart, unit column
    /// strides) into `c`'s rows `ldc` apart, on the packed product's microkernel reading
    /// both operands in place; `false`, writing nothing, where that does not run (the
    /// caller then uses gemm).
    fn packed_product(
        c: (&mut [Self], usize),
        a: (&[Self], usize),
        b: (&[Self], usize),
        mkn: (usize, usize, usize),
    ) -> bool;
}

impl Float for f32 {
    const ONE: f32 = 1.0;
    const PACKED: bool = true;
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn add_mask(row: &mut [f32], mask: &[f32]) {
        add_mask_f32(row, mask)
    }
    fn softmax_rows(x: &[f32], out: &mut [f32], len: usize) {
        softmax_rows_f32(x, out, len)
    }
    fn softmax_numerators(
        x: &mut [f32],
        len: usize,
        mask: Option<(&[f32], usize)>,
        sums: &mut [f64],
    ) -> bool {
        crate::veclib::softmax_numerators(x, len, mask, sums)
    }
    fn scale_row(row: &mut [f32], by: f32) {
        scale_row_f32(row, by)
    }
    fn packed_product(
        c: (&mut [f32], usize),
        (a, lda): (&[f32], usize),
        (b, ldb): (&[f32], usize),
        mkn: (usize, usize, usize),
    ) -> bool {
        let a = Lhs::Strided {
            data: a,
            rs: lda,
            ks: 1,
        };
        packed::product(c, a, Rhs::Strided { data: b, ks: ldb }, mkn, false)
    }
}

impl Float for f64 {
    const ONE: f64 = 1.0;
    const PACKED: bool = false;
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn add_mask(row: &mut [f64], mask: &[f64]) {
        add_mask_row(row, mask)
    }
    fn softmax_rows(x: &[f64], out: &mut [f64], len: usize) {
        for (x, out) in x.chunks(len.max(1)).zip(out.chunks_mut(len.max(1))) {
            softmax_row_f64(x, out);
        }
    }
    fn packed_product(
        _: (&mut [f64], usize),
        _: (&[f64], usize),
        _: (&[f64], usize),
        _: (usize, usize, usize),
    ) -> bool {
        false
    }
}

/// Adds `mask` to `row`: element by element, or its one value to every element.
#[inline(always)]
fn add_mask_row<T: Copy + AddAssign>(row: &mut [T], mask: &[T]) {
    match mask {
        &[m] => row.iter_mut().for_each(|x| *x += m),
        _ => row.iter_mut().zip(mask).for_each(|(x, &m)| *x += m),
    }
}

/// [`add_mask_row`] on `f32`, compiled for the host's SIMD extensions.
#[multiversion(targets = "simd")]
fn add_mask_f32(row: &mut [f32], mask: &[f32]) {
    add_mask_row(row, mask)
}

/// `row · by` on `f32`, compiled for the host's SIMD extensions.
#[multiversion(targets = "simd")]
fn scale_row_f32(row: &mut [f32], by: f32) {
    row.iter_mut().for_each(|v| *v *= by)
}

/// `Op::Attention` `a` of `q`, `k`, `v` and the optional `mask` (see the op), written into
/// `out` when it is a buffer of the result's type and size, else into a new one; `None`
/// when the kernel does not apply (element types other than one of `f32`/`f64` throughout,
/// shapes the IR would not accept: the caller then runs the reference, which names the
/// problem).
///
/// Results differ from the reference (`f64` throughout, one rounding) by the rounding of
/// the two products in the element type (dot products of length `D` and `Sk`), of the
/// scale (of each product on `f64`, of each element of `k` on `f32`) and mask additions,
/// and of the `f32` softmax: on an AVX-512 host its numerators `e` unrounded by a division
/// (see [`crate::veclib::softmax_numerators`]) and each context row `(Σ e · v) · (1 / Σ e)`,
/// the reciprocal rounded once; elsewhere the probabilities of
/// [`super::normalize::softmax`].
pub fn attention(
    q: Operand<'_>,
    k: Operand<'_>,
    v: Operand<'_>,
    mask: Option<Operand<'_>>,
    a: &Attention,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let n = Dims::new(q.1, k.1, v.1, a.heads)?;
    let et = q.0.element_type();
    let len = n.batch * n.sq * n.ev();
    let mut o = result_buffer(out, et, len);
    let ran = match et {
        graphlift_ir::ElementType::F32 => typed::<f32>(q, k, v, mask, a, &mut o, parallel, n),
        graphlift_ir::ElementType::F64 => typed::<f64>(q, k, v, mask, a, &mut o, parallel, n),
        _ => None,
    };
    ran.map(|()| o)
}

/// [`attention`] once the element type `T` is known; `None` when an operand is not `T` or
/// does not fill its shape.
#[allow(clippy::too_many_arguments)]
fn typed<T: Float>(
    q: Operand<'_>,
    k: Operand<'_>,
    v: Operand<'_>,
    mask: Option<Operand<'_>>,
    a: &Attention,
    out: &mut TensorData,
    parallel: &Parallel,
    n: Dims,
) -> Option<()> {
    let (q, k, v) = (filled(q)?, filled(k)?, filled(v)?);
    let mask = match mask {
        Some((d, s)) => Some(Mask::new(d.as_slice::<T>()?, s, &n)?),
        None => None,
    };
    let out = out.as_mut_slice::<T>()?;
    let scale = T::from_f64(a.scale);
    run(Inputs { q, k, v, mask }, out, scale, n, parallel);
    Some(())
}

/// The elements of `x` as `T`, when they are and fill its shape.
fn filled<T: Float>((data, shape): Operand<'_>) -> Option<&[T]> {
    let x = data.as_slice::<T>()?;
    (Some(x.len()) == shape.element_count().ok()).then_some(x)
}

/// The operands, checked against [`Dims`].
struct Inputs<'a, T> {
    q: &'a [T],
    k: &'a [T],
    v: &'a [T],
    mask: Option<Mask<'a, T>>,
}

/// Where the tasks find each head's `scale · k_hᵀ` (`D × Sk`), the packed product's right
/// operand.
#[derive(Clone, Copy)]
enum Keys<'a, T> {
    /// Staged for every (batch, head), in that order, before the tasks ([`stage_keys`]):
    /// several tasks share each batch.
    Staged(&'a [T]),
    /// Staged by each task head by head into a buffer of its own, which stays in L1: a task
    /// that has its batch's query rows alone stages each head once anyway (staging all of
    /// a large batch first left them in L3).
    PerHead,
    /// None: gemm reads `k`'s heads in place (no packed product for the type, or a head
    /// outside `k`).
    Gemm,
}

/// `scale · k_hᵀ` of head `h` of batch `b` into `out` (`D × Sk`); `false` where the head
/// does not lie in `k` or `out` is shorter.
fn stage_head<T: Float>(
    k: &[T],
    (b, h): (usize, usize),
    scale: T,
    n: &Dims,
    out: &mut [T],
) -> bool {
    let staged = k
        .get(n.k_head((b, h))..)
        .is_some_and(|k| transpose_into(k, (n.sk, n.d, n.e()), out));
    if staged {
        out[..n.d * n.sk].iter_mut().for_each(|v| *v = scale * *v);
    }
    staged
}

/// [`stage_head`] of every (batch, head) into `k_t` (of that length, in that order), over
/// the team; `false` where one does not stage.
fn stage_keys<T: Float>(
    k: &[T],
    scale: T,
    n: &Dims,
    team: Option<Team<'_>>,
    k_t: &mut [T],
) -> bool {
    let head = n.d * n.sk;
    if head == 0 || k_t.len() != n.batch * n.heads * head {
        return false;
    }
    let staged = AtomicBool::new(true);
    let stage = |(i, out): (usize, &mut [T])| {
        if !stage_head(k, (i / n.heads, i % n.heads), scale, n, out) {
            staged.store(false, Relaxed);
        }
    };
    let heads = k_t.chunks_mut(head).enumerate();
    match team {
        Some(team) => for_each(team, heads, stage),
        None => heads.for_each(stage),
    }
    staged.into_inner()
}

/// Every (batch, block of query rows) task, in parallel when there is work enough.
fn run<T: Float>(x: Inputs<'_, T>, out: &mut [T], scale: T, n: Dims, parallel: &Parallel) {
    if out.is_empty() {
        return;
    }
    let team = parallel.team(n.batch * n.heads * n.sq * n.sk * (n.d + n.dv));
    // Rows per task: few enough that each task's scores stay small, and enough tasks to
    // keep every thread busy.
    let cap = (SCORE_BLOCK / n.sk.max(1)).max(ROW_BLOCK_ALIGN);
    let want = match team {
        Some(team) => {
            n.sq.div_ceil((team.threads() * TASKS_PER_THREAD).div_ceil(n.batch))
        }
        None => n.sq,
    };
    let rows = want
        .next_multiple_of(ROW_BLOCK_ALIGN)
        .min(cap)
        .min(n.sq)
        .max(1);
    let tasks = out
        .chunks_mut(n.sq * n.ev())
        .enumerate()
        .flat_map(|(b, o)| {
            o.chunks_mut(rows * n.ev())
                .enumerate()
                .map(move |(blk, o)| (b, blk * rows, o))
        });
    // Several tasks to a batch: its keys staged once for all of them.
    let shared = T::PACKED && rows < n.sq;
    let staged = if shared {
        n.batch * n.heads * n.d * n.sk
    } else {
        0
    };
    with_scratch(staged, |k_t: &mut [T]| {
        let keys = if !T::PACKED {
            Keys::Gemm
        } else if !shared {
            Keys::PerHead
        } else if stage_keys(x.k, scale, &n, team, k_t) {
            Keys::Staged(k_t)
        } else {
            Keys::Gemm
        };
        let task = |(b, r0, o): (usize, usize, &mut [T])| block(&x, keys, (b, r0), o, scale, n);
        match team {
            Some(team) => for_each(team, tasks, task),
            None => tasks.for_each(task),
        }
    })
}

/// Output rows `r0..` of batch `b` (`out` holds them, all heads), head by head.
fn block<T: Float>(
    x: &Inputs<'_, T>,
    keys: Keys<'_, T>,
    (b, r0): (usize, usize),
    out: &mut [T],
    scale: T,
    n: Dims,
) {
    let m = out.len() / n.ev();
    let own = match keys {
        Keys::PerHead => n.d * n.sk,
        _ => 0,
    };
    with_scratch(2 * m * n.sk + own, |buffers: &mut [T]| {
        let (scores, rest) = buffers.split_at_mut(m * n.sk);
        let (probs, k_t) = rest.split_at_mut(m * n.sk);
        with_scratch(m, |sums: &mut [f64]| {
            let buffers = Buffers {
                scores,
                probs,
                sums,
            };
            heads(x, (keys, k_t), (b, r0), out, buffers, scale, n)
        })
    })
}

/// A task's buffers for one head at a time: `m` rows of scores and of probabilities (`m ·
/// Sk` each) and the rows' sums of softmax numerators, every element written before it is
/// read.
struct Buffers<'a, T> {
    scores: &'a mut [T],
    probs: &'a mut [T],
    sums: &'a mut [f64],
}

/// [`block`] with its [`Buffers`] and, for [`Keys::PerHead`], a buffer for a head's keys.
fn heads<T: Float>(
    x: &Inputs<'_, T>,
    (keys, own): (Keys<'_, T>, &mut [T]),
    (b, r0): (usize, usize),
    out: &mut [T],
    buffers: Buffers<'_, T>,
    scale: T,
    n: Dims,
) {
    let Buffers {
        scores,
        probs,
        sums,
    } = buffers;
    let (e, ev) = (n.e(), n.ev());
    let m = out.len() / ev;
    let block_view = Strided::row_major(m, n.sk);
    let none = Parallelism::None;
    for h in 0..n.heads {
        let q_at = (b * n.sq + r0) * e + h * n.d;
        let (Some(q), Some(k)) = (x.q.get(q_at..), x.k.get(n.k_head((b, h))..)) else {
            return;
        };
        // scores = q[b, r0.., h·D..] · (scale · k[b, :, h·D..]ᵀ) on the microkernel, or
        // scale · (q_h · k_hᵀ) through gemm reading k's head transposed.
        let k_t = match keys {
            Keys::Staged(all) => all.get((b * n.heads + h) * n.d * n.sk..),
            Keys::PerHead => stage_head(x.k, (b, h), scale, &n, own).then_some(&*own),
            Keys::Gemm => None,
        };
        let packed = k_t.is_some_and(|k_t| {
            T::packed_product((&mut *scores, n.sk), (q, e), (k_t, n.sk), (m, n.d, n.sk))
        });
        if !packed {
            let q_h = Strided {
                rows: m,
                cols: n.d,
                row_stride: e,
                col_stride: 1,
            };
            let k_h = Strided {
                rows: n.d,
                cols: n.sk,
                row_stride: 1,
                col_stride: e,
            };
            if !gemm_into(
                (&mut *scores, block_view),
                (q, q_h),
                (k, k_h),
                scale,
                None,
                none,
            ) {
                return;
            }
        }
        // The softmax's numerators in place, the mask added on the way, and the context rows
        // divided by their sums below; where that does not run, the mask added and the
        // probabilities written to `probs`.
        let mask_rows = match &x.mask {
            Some(mask) => mask.rows((b, h, r0), &n).map(Some),
            None => Some(None),
        };
        let numerators =
            mask_rows.is_some_and(|rows| T::softmax_numerators(scores, n.sk, rows, sums));
        if !numerators {
            if let Some(mask) = &x.mask {
                mask.add_to((b, h, r0), scores, &n);
            }
            T::softmax_rows(scores, probs, n.sk);
        }
        let probs = if numerators { &*scores } else { &*probs };
        // out[b, r0.., h·Dv..] = P · v[b, :, h·Dv..], written in place among the heads.
        let v_h = Strided {
            rows: n.sk,
            cols: n.dv,
            row_stride: ev,
            col_stride: 1,
        };
        let o_h = Strided {
            rows: m,
            cols: n.dv,
            row_stride: ev,
            col_stride: 1,
        };
        let Some(v) = x.v.get(b * n.sk * ev + h * n.dv..) else {
            return;
        };
        let Some(o) = out.get_mut(h * n.dv..) else {
            return;
        };
        let pv = (m, n.sk, n.dv);
        if !T::packed_product((&mut *o, ev), (probs, n.sk), (v, ev), pv) {
            gemm_into(
                (&mut *o, o_h),
                (probs, block_view),
                (v, v_h),
                T::ONE,
                None,
                none,
            );
        }
        if numerators {
            for (row, &sum) in o.chunks_mut(ev).zip(&*sums) {
                T::scale_row(&mut row[..n.dv], T::from_f64(1.0 / sum));
            }
        }
    }
}

#[cfg(test)]
mod tests;
