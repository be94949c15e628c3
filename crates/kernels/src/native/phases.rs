//! Rows split into their stride phases (column `i · S + p` into phase `p`, position `i`),
//! and put back together: what a strided window reads contiguously once its input is split,
//! shared by the strided `MaxPool`, the padded images of strided convolutions and depthwise
//! convolutions, and (the inverse, adding) the strided convolution backprop. Whole chunks
//! of `S` columns go through one loop per `S` compiled for the host's SIMD extensions, or
//! AVX-512 permutes for pairs: one pass over the row for all of its phases.

use std::ops::Range;

use multiversion::multiversion;

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_permutex2var_ps, _mm512_setr_epi32,
};

#[cfg(target_arch = "x86_64")]
use super::lanes::{lane_mask, FloatTiles};

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
/// `step` phases of `len` positions, phase `p` at `out[p · stride..]` of each row's output
/// (`stride ≥ len`): image column `x` goes to phase `(x + left) mod step` at position
/// `(x + left) / step`, for every position below `len` (the columns past it are dropped).
/// Everything that depends on the geometry alone is worked out once here, not per row.
pub(super) struct PhaseSplit {
    w: usize,
    step: usize,
    stride: usize,
    /// Whole chunks of `step` columns from column `head` on, the first at position
    /// `first`.
    head: usize,
    first: usize,
    chunks: usize,
    /// The columns outside the whole chunks that a phase holds, and where each goes.
    edges: Vec<(usize, usize)>,
    /// Per phase, the positions that hold image columns.
    held: Vec<Range<usize>>,
}

impl PhaseSplit {
    /// The split of rows of `w` columns padded by `left` into `step` phases (at least one)
    /// of `len` positions, `stride` apart (a `stride` below `len` is taken as `len`).
    pub(super) fn new(
        w: usize,
        (left, step): (usize, usize),
        (stride, len): (usize, usize),
    ) -> PhaseSplit {
        let (step, stride) = (step.max(1), stride.max(len));
        // The columns before the first of phase 0, then whole chunks as far as the phases
        // reach, then the rest.
        let head = ((step - left % step) % step).min(w);
        let first = (head + left) / step;
        let chunks = ((w - head) / step).min(len.saturating_sub(first));
        let edges = (0..head)
            .chain(head + chunks * step..w)
            .map(|x| (x, ((x + left) % step, (x + left) / step)))
            .filter(|&(_, (_, at))| at < len)
            .map(|(x, (phase, at))| (x, phase * stride + at))
            .collect();
        let held = (0..step)
            .map(|p| {
                let x0 = (p + step - left % step) % step;
                let start = ((x0 + left) / step).min(len);
                start..start + w.saturating_sub(x0).div_ceil(step).min(len - start)
            })
            .collect();
        PhaseSplit {
            w,
            step,
            stride,
            head,
            first,
            chunks,
            edges,
            held,
        }
    }

    /// The positions of phase `p` that hold image columns (every other one is padding).
    pub(super) fn held(&self, p: usize) -> Range<usize> {
        self.held.get(p).cloned().unwrap_or_default()
    }

    /// `row`'s columns into their phases in `out`; the padding positions are left as they
    /// were. Writes nothing past `(step − 1) · stride + len` elements of `out`, nor anything
    /// where `row` is not `w` long.
    pub(super) fn split<T: Copy>(&self, row: &[T], out: &mut [T]) {
        let (step, stride) = (self.step, self.stride);
        self.split_with(row, out, |body, out| match step {
            1 => {
                let n = body.len().min(out.len());
                out[..n].copy_from_slice(&body[..n]);
            }
            2 => deinterleave::<T, 2>(body, out, stride),
            3 => deinterleave::<T, 3>(body, out, stride),
            4 => deinterleave::<T, 4>(body, out, stride),
            _ => {
                for (i, chunk) in body.chunks_exact(step).enumerate() {
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
    pub(super) fn split_f32(&self, row: &[f32], out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if self.step == 2 && FloatTiles::Avx512.runs() {
            return self.split_with(row, out, |body, out| pairs(body, out, self.stride));
        }
        self.split(row, out)
    }

    /// The edge columns one by one, the whole chunks by `body` (given them and `out` from
    /// the first chunk's position on).
    fn split_with<T: Copy>(&self, row: &[T], out: &mut [T], body: impl FnOnce(&[T], &mut [T])) {
        if row.len() != self.w {
            return;
        }
        for &(x, at) in &self.edges {
            if let Some(o) = out.get_mut(at) {
                *o = row[x];
            }
        }
        if let Some(out) = out.get_mut(self.first..) {
            body(&row[self.head..self.head + self.chunks * self.step], out);
        }
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
    let evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    let mut i = 0;
    while i < m {
        let n = (m - i).min(16);
        // SAFETY: elements `2i..2i + 2n` of `src` and `i..i + n` of `even` and `odd`, all
        // within the caller's bounds; the masks enable no lane past them.
        unsafe {
            let lo = _mm512_maskz_loadu_ps(lane_mask(2 * n, 0), src.add(2 * i));
            let high = src.wrapping_add(2 * i + 16);
            let hi = _mm512_maskz_loadu_ps(lane_mask(2 * n, 1), high);
            let mask = lane_mask(n, 0);
            _mm512_mask_storeu_ps(even.add(i), mask, _mm512_permutex2var_ps(lo, evens, hi));
            _mm512_mask_storeu_ps(odd.add(i), mask, _mm512_permutex2var_ps(lo, odds, hi));
        }
        i += n;
    }
}

/// `row[j · step + p] += phases[p · phase_len + j]` for every phase `p < step` and every `j`
/// both hold: a row put back together from its column phases (the inverse of
/// [`PhaseSplit::split`] with no padding, adding). A step of 2 runs over whole pairs, which
/// vectorizes as an interleave.
pub(super) fn add_phases<T>(phases: &[T], (step, phase_len): (usize, usize), row: &mut [T])
where
    T: Copy + std::ops::Add<Output = T>,
{
    if step == 2 && phases.len() >= 2 * phase_len {
        let (even, odd) = phases[..2 * phase_len].split_at(phase_len);
        let done = row.len() / 2;
        let mut pairs = row.chunks_exact_mut(2);
        for (pair, (&a, &b)) in (&mut pairs).zip(even.iter().zip(odd)) {
            pair[0] = pair[0] + a;
            pair[1] = pair[1] + b;
        }
        if let (Some(last), Some(&a)) = (pairs.into_remainder().first_mut(), even.get(done)) {
            *last = *last + a;
        }
        return;
    }
    for p in 0..step.min(row.len()) {
        let phase = phases
            .get(p * phase_len..(p + 1) * phase_len)
            .unwrap_or_default();
        for (d, &v) in row[p..].iter_mut().step_by(step).zip(phase) {
            *d = *d + v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{add_phases, deinterleave, PhaseSplit};

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
                        let split = PhaseSplit::new(w, (left, step), (stride, len));
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
                        split.split(&row, &mut out);
                        assert_eq!(out, want, "step {step} left {left} w {w} len {len}");
                        let mut out = vec![-1.0; step * stride];
                        split.split_f32(&row, &mut out);
                        assert_eq!(out, want, "f32: step {step} left {left} w {w} len {len}");
                    }
                }
            }
        }
    }

    /// A row split into its phases and added back doubles it, for every step and odd and
    /// even lengths.
    #[test]
    fn add_phases_inverts_the_split() {
        for step in 1..5 {
            for len in [1usize, 7, 10, 13] {
                let row: Vec<i64> = (0..len as i64).map(|i| i * 3 + 1).collect();
                let phase_len = len.div_ceil(step);
                let mut phases = vec![0; step * phase_len];
                PhaseSplit::new(len, (0, step), (phase_len, phase_len)).split(&row, &mut phases);
                let mut twice = row.clone();
                add_phases(&phases, (step, phase_len), &mut twice);
                let want: Vec<i64> = row.iter().map(|v| 2 * v).collect();
                assert_eq!(twice, want, "step {step}, len {len}");
            }
        }
    }
}
