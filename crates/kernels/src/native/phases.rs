//! Rows split into their stride phases (column `i · S + p` into phase `p`, position `i`):
//! what a strided window reads contiguously once its input is split, shared by the strided
//! `MaxPool` and the padded images of strided convolutions. Whole chunks of `S` columns go
//! through one loop per `S` compiled for the host's SIMD extensions, which the vectoriser
//! turns into lane permutes: one pass over the row for all of its phases.

use std::ops::Range;

use multiversion::multiversion;

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_permutex2var_ps, _mm512_setr_epi32,
};

use super::lanes::FloatTiles;

/// `out[p · stride + i] = src[i · S + p]` for every `p < S` and every whole chunk `i` of `S`
/// elements in `src`, as far as `stride` and `out` allow: chunks from `stride` on, or whose
/// phase `S − 1` would lie past `out`'s end, are not written (none are for `out` of
/// `(S − 1) · stride + src.len() / S` elements or more and `stride ≥ src.len() / S`).
#[multiversion(targets = "simd")]
pub(super) fn deinterleave<T: Copy, const S: usize>(src: &[T], out: &mut [T], stride: usize) {
    let (chunks, _) = src.as_chunks::<S>();
    let room = out.len().saturating_sub((S - 1) * stride);
    let m = chunks.len().min(stride).min(room);
    if m == 0 {
        return;
    }
    // Each phase's `m` elements, disjoint as `m ≤ stride`.
    let mut rest = out;
    let mut lanes: [&mut [T]; S] = std::array::from_fn(|p| {
        let skip = if p == 0 { 0 } else { stride - m };
        let (lane, tail) = std::mem::take(&mut rest)[skip..].split_at_mut(m);
        rest = tail;
        lane
    });
    for (i, c) in chunks[..m].iter().enumerate() {
        for (lane, &v) in lanes.iter_mut().zip(c) {
            lane[i] = v;
        }
    }
}

/// How each row of an image `w` columns wide, padded by `left` columns, splits into its
/// `step` phases of `len` positions: image column `x` goes to phase `(x + left) mod step`
/// at position `(x + left) / step`, for every position below `len` (the columns past it
/// are dropped). Everything that depends on the geometry alone is worked out once here,
/// not per row.
pub(super) struct PhaseSplit {
    w: usize,
    left: usize,
    step: usize,
    len: usize,
    /// The columns before the first of phase 0 (`< step`), then whole chunks of `step`
    /// columns from there, the first chunk at position `first`.
    head: usize,
    first: usize,
    chunks: usize,
    /// Per phase, the positions that hold image columns.
    held: Vec<Range<usize>>,
}

impl PhaseSplit {
    /// The split of rows of `w` columns padded by `left` into `step` phases (at least one)
    /// of `len` positions.
    pub(super) fn new(w: usize, (left, step): (usize, usize), len: usize) -> PhaseSplit {
        let step = step.max(1);
        let head = ((step - left % step) % step).min(w);
        let first = (head + left) / step;
        let chunks = ((w - head) / step).min(len.saturating_sub(first));
        let held = (0..step)
            .map(|p| {
                let x0 = (p + step - left % step) % step;
                let start = ((x0 + left) / step).min(len);
                start..start + w.saturating_sub(x0).div_ceil(step).min(len - start)
            })
            .collect();
        PhaseSplit {
            w,
            left,
            step,
            len,
            head,
            first,
            chunks,
            held,
        }
    }

    /// The positions of phase `p` that hold image columns (every other one is padding).
    pub(super) fn held(&self, p: usize) -> Range<usize> {
        self.held.get(p).cloned().unwrap_or_default()
    }

    /// `row`'s columns into their phases, phase `p` at `out[p · stride..]` (`stride ≥
    /// len`); the padding positions are left as they were. Writes nothing past `(step − 1)
    /// · stride + len` elements of `out`, nor anything where `row` is not `w` long.
    pub(super) fn split<T: Copy>(&self, row: &[T], out: &mut [T], stride: usize) {
        self.split_with(row, out, stride, |body, out| match self.step {
            1 => {
                let n = body.len().min(out.len());
                out[..n].copy_from_slice(&body[..n]);
            }
            2 => deinterleave::<T, 2>(body, out, stride),
            3 => deinterleave::<T, 3>(body, out, stride),
            4 => deinterleave::<T, 4>(body, out, stride),
            _ => {
                for (i, chunk) in body.chunks_exact(self.step).enumerate() {
                    for (p, &v) in chunk.iter().enumerate() {
                        if let Some(o) = out.get_mut(p * stride + i) {
                            *o = v;
                        }
                    }
                }
            }
        });
    }

    /// [`PhaseSplit::split`] on `f32`, pairs split in AVX-512 lanes where the host has them
    /// (a row's tail under a mask rather than element by element).
    pub(super) fn split_f32(&self, row: &[f32], out: &mut [f32], stride: usize) {
        #[cfg(target_arch = "x86_64")]
        if self.step == 2 && FloatTiles::Avx512.runs() {
            return self.split_with(row, out, stride, |body, out| pairs(body, out, stride));
        }
        self.split(row, out, stride)
    }

    /// The head and tail columns one by one, the whole chunks by `body` (given them and
    /// `out` from the first chunk's position on).
    fn split_with<T: Copy>(
        &self,
        row: &[T],
        out: &mut [T],
        stride: usize,
        body: impl FnOnce(&[T], &mut [T]),
    ) {
        if stride < self.len || row.len() != self.w {
            return;
        }
        let place = |out: &mut [T], x: usize| {
            let (phase, at) = ((x + self.left) % self.step, (x + self.left) / self.step);
            if let (true, Some(o)) = (at < self.len, out.get_mut(phase * stride + at)) {
                *o = row[x];
            }
        };
        let end = self.head + self.chunks * self.step;
        (0..self.head).for_each(|x| place(out, x));
        if let Some(out) = out.get_mut(self.first..) {
            body(&row[self.head..end], out);
        }
        (end..row.len()).for_each(|x| place(out, x));
    }
}

/// [`deinterleave`] for `S = 2` on `f32` in AVX-512 lanes (the host has AVX-512F: the
/// caller checks): sixteen pairs a step, the last step masked.
#[cfg(target_arch = "x86_64")]
fn pairs(src: &[f32], out: &mut [f32], stride: usize) {
    let m = (src.len() / 2).min(stride);
    if m == 0 || out.len() < stride + m {
        return;
    }
    let (even, odd) = out.split_at_mut(stride);
    // SAFETY: AVX-512F is checked by the caller ([`PhaseSplit::split_f32`]); `src` holds
    // `2 · m` elements and `even` and `odd` (disjoint) at least `m` each, as checked above.
    unsafe { pairs_avx512(src.as_ptr(), (even.as_mut_ptr(), odd.as_mut_ptr()), m) };
}

/// `even[i] = src[2i]`, `odd[i] = src[2i + 1]` for `i < m`.
///
/// # Safety
/// AVX-512F; `src` readable for `2 · m` elements, `even` and `odd` writable for `m` each
/// and not otherwise borrowed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn pairs_avx512(src: *const f32, (even, odd): (*mut f32, *mut f32), m: usize) {
    let lanes = |n: usize| -> u16 { ((1u32 << n.min(16)) - 1) as u16 };
    let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    let mut i = 0;
    while i < m {
        let n = (m - i).min(16);
        // SAFETY: elements `2i..2i + 2n` of `src` and `i..i + n` of `even` and `odd`, all
        // within the caller's bounds; the masks enable no lane past them.
        unsafe {
            let lo = _mm512_maskz_loadu_ps(lanes(2 * n), src.add(2 * i));
            let high = src.wrapping_add(2 * i + 16);
            let hi = _mm512_maskz_loadu_ps(lanes((2 * n).saturating_sub(16)), high);
            let mask = lanes(n);
            _mm512_mask_storeu_ps(even.add(i), mask, _mm512_permutex2var_ps(lo, evens, hi));
            _mm512_mask_storeu_ps(odd.add(i), mask, _mm512_permutex2var_ps(lo, odds, hi));
        }
        i += n;
    }
}

#[cfg(test)]
mod tests {
    use super::{deinterleave, PhaseSplit};

    #[test]
    fn deinterleave_writes_each_phase_at_its_stride() {
        let src: Vec<u32> = (0..10).collect();
        let mut out = vec![99; 3 + 3 + 3];
        deinterleave::<u32, 3>(&src, &mut out, 3);
        assert_eq!(out, [0, 3, 6, 1, 4, 7, 2, 5, 8]);
        // Room for two chunks of the last phase only: two chunks.
        let mut out = vec![99; 2 * 4 + 2];
        deinterleave::<u32, 3>(&src, &mut out, 4);
        assert_eq!(out, [0, 3, 99, 99, 1, 4, 99, 99, 2, 5]);
    }

    /// Every column lands where the padded row's phases hold it and every other element
    /// is untouched (`held` naming the written positions), for each step, padding, row
    /// length and phase length; on `f32` the AVX-512 pairs write the same.
    #[test]
    fn split_places_every_column_of_the_padded_row() {
        for step in 1usize..=5 {
            for left in 0usize..6 {
                for w in [0usize, 1, 2, 5, 17, 33, 40, 67] {
                    for len in [0, 1, 3, (w + left).div_ceil(step), w + left + 2] {
                        let stride = len + 2;
                        let split = PhaseSplit::new(w, (left, step), len);
                        let row: Vec<f32> = (1..=w).map(|x| x as f32).collect();
                        let mut want = vec![-1.0; step * stride];
                        for (x, &v) in row.iter().enumerate() {
                            let (p, at) = ((x + left) % step, (x + left) / step);
                            if at < len {
                                want[p * stride + at] = v;
                            }
                        }
                        for p in 0..step {
                            let lane = &want[p * stride..p * stride + len];
                            let held = split.held(p);
                            for (at, &v) in lane.iter().enumerate() {
                                assert_eq!(held.contains(&at), v >= 0.0, "{step} {left} {w} {p}");
                            }
                        }
                        let mut out = vec![-1.0; step * stride];
                        split.split(&row, &mut out, stride);
                        assert_eq!(out, want, "step {step} left {left} w {w} len {len}");
                        let mut out = vec![-1.0; step * stride];
                        split.split_f32(&row, &mut out, stride);
                        assert_eq!(out, want, "f32: step {step} left {left} w {w} len {len}");
                    }
                }
            }
        }
    }
}
