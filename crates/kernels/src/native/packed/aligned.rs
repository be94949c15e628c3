//! A zeroed `f32` buffer whose first element sits on a 64-byte boundary (one cache line, one
//! AVX-512 vector): packed panels laid out in it start their rows on lines, so that no
//! vector load of a microkernel straddles two lines. (The allocator aligns a `Vec<f32>` to
//! 16 bytes at best; the packed weights of one model were found at every offset modulo 64.)
//!
//! On Linux a buffer of a huge page or more is an anonymous mapping that starts on a 2 MiB
//! boundary, its whole huge pages advised for transparent huge pages (`MADV_HUGEPAGE`):
//! a model's weights are read once per call from L3 or memory, and on 4 KiB pages each
//! panel crossed a page (a TLB miss, and a restart of the hardware prefetcher's stream)
//! every 4 KiB. [`AlignedF32::share`] moves the buffers of one executable, most of them
//! smaller than a huge page, into one such mapping, shared and read-only.

use std::ops::{Deref, DerefMut};
#[cfg(target_os = "linux")]
use std::sync::Arc;

/// `f32` elements per 64-byte line.
const LINE: usize = 64 / std::mem::size_of::<f32>();

/// Bytes of an x86-64 transparent huge page.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
const HUGE_PAGE: usize = 2 << 20;

/// `len` elements from a line boundary (a huge page's, for a mapping) of a buffer allocated
/// with room to align them.
#[derive(Debug)]
pub(super) struct AlignedF32 {
    storage: Storage,
    start: usize,
    len: usize,
}

/// Where an [`AlignedF32`]'s elements live.
#[derive(Debug)]
enum Storage {
    Heap(Vec<f32>),
    /// An anonymous mapping (zeroed by the kernel), its length a multiple of 4 bytes and
    /// its start page-aligned, so it reads as `f32`s.
    #[cfg(target_os = "linux")]
    Mapped(memmap2::MmapMut),
    /// Part of a read-only mapping that holds several buffers ([`AlignedF32::share`]),
    /// with the same properties as `Mapped`.
    #[cfg(target_os = "linux")]
    Shared(Arc<memmap2::Mmap>),
}

impl Default for AlignedF32 {
    fn default() -> AlignedF32 {
        AlignedF32 {
            storage: Storage::Heap(Vec::new()),
            start: 0,
            len: 0,
        }
    }
}

impl AlignedF32 {
    /// `len` zeros from a 64-byte boundary (a 2 MiB one on Linux from a huge page of data
    /// on, where the mapping can be made); `None` when the length overflows.
    pub(super) fn zeros(len: usize) -> Option<AlignedF32> {
        #[cfg(target_os = "linux")]
        if let Some(mapped) = AlignedF32::huge(len) {
            return Some(mapped);
        }
        let buf = vec![0f32; len.checked_add(LINE - 1)?];
        // The vector's first element, in elements past the line it lies in.
        let past = (buf.as_ptr() as usize / std::mem::size_of::<f32>()) % LINE;
        Some(AlignedF32 {
            storage: Storage::Heap(buf),
            start: (LINE - past) % LINE,
            len,
        })
    }

    /// `len` zeros in a mapping from its first 2 MiB boundary, the whole huge pages from
    /// there advised as such; `None` below a huge page or where the mapping fails (the
    /// heap then serves). The advice is a hint: without transparent huge pages the
    /// mapping keeps 4 KiB pages.
    #[cfg(target_os = "linux")]
    fn huge(len: usize) -> Option<AlignedF32> {
        const F32: usize = std::mem::size_of::<f32>();
        let bytes = len.checked_mul(F32)?;
        if bytes < HUGE_PAGE {
            return None;
        }
        let map = memmap2::MmapMut::map_anon(bytes.checked_add(HUGE_PAGE)?).ok()?;
        let offset = (HUGE_PAGE - map.as_ptr() as usize % HUGE_PAGE) % HUGE_PAGE;
        let whole = bytes / HUGE_PAGE * HUGE_PAGE;
        // Advice that fails (a kernel without transparent huge pages) changes nothing.
        let _ = map.advise_range(memmap2::Advice::HugePage, offset, whole);
        Some(AlignedF32 {
            storage: Storage::Mapped(map),
            start: offset / F32,
            len,
        })
    }

    /// Moves the elements of `buffers` into one mapping from a 2 MiB boundary, advised for
    /// transparent huge pages as [`AlignedF32::zeros`] advises one buffer's, each buffer
    /// from a line boundary: the packed weights of one executable, of which few fill a
    /// huge page alone. Each keeps its elements; the mapping is read-only, and a buffer
    /// written afterwards is first copied out of it. Nothing moves when the buffers hold
    /// less than a huge page together, when the mapping cannot be made, or off Linux.
    pub(super) fn share(buffers: &mut [&mut AlignedF32]) {
        #[cfg(target_os = "linux")]
        {
            let starts: Vec<usize> = buffers
                .iter()
                .scan(0usize, |at, b| {
                    let start = *at;
                    *at = at.checked_add(b.len.checked_next_multiple_of(LINE)?)?;
                    Some(start)
                })
                .collect();
            let total = match (buffers.last(), starts.last()) {
                (Some(b), Some(&at)) if starts.len() == buffers.len() => at + b.len,
                _ => return,
            };
            let Some(map) = AlignedF32::huge(total) else {
                return;
            };
            let AlignedF32 {
                storage: Storage::Mapped(mut map),
                start,
                ..
            } = map
            else {
                return;
            };
            let all: &mut [f32] = bytemuck::cast_slice_mut(&mut map);
            for (b, &at) in buffers.iter().zip(&starts) {
                all[start + at..start + at + b.len].copy_from_slice(b);
            }
            let Ok(map) = map.make_read_only() else {
                return;
            };
            let map = Arc::new(map);
            for (b, &at) in buffers.iter_mut().zip(&starts) {
                **b = AlignedF32 {
                    storage: Storage::Shared(Arc::clone(&map)),
                    start: start + at,
                    len: b.len,
                };
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = buffers;
    }
}

impl Deref for AlignedF32 {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        let all: &[f32] = match &self.storage {
            Storage::Heap(v) => v,
            // A page-aligned mapping of a multiple of 4 bytes (`huge`): the cast holds.
            #[cfg(target_os = "linux")]
            Storage::Mapped(m) => bytemuck::cast_slice(m),
            #[cfg(target_os = "linux")]
            Storage::Shared(m) => bytemuck::cast_slice(m),
        };
        &all[self.start..self.start + self.len]
    }
}

impl DerefMut for AlignedF32 {
    fn deref_mut(&mut self) -> &mut [f32] {
        #[cfg(target_os = "linux")]
        if let Storage::Shared(_) = self.storage {
            // Copied out of the shared mapping first (the packed weights are written only
            // before they are shared, so this does not happen on a call's path).
            let own = AlignedF32::zeros(self.len).map(|mut own| {
                own.copy_from_slice(self);
                own
            });
            *self = own.unwrap_or_default();
        }
        let all: &mut [f32] = match &mut self.storage {
            Storage::Heap(v) => v,
            #[cfg(target_os = "linux")]
            Storage::Mapped(m) => bytemuck::cast_slice_mut(m),
            // Copied out above.
            #[cfg(target_os = "linux")]
            Storage::Shared(_) => &mut [],
        };
        &mut all[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short buffers start on a line, those of a huge page or more (on Linux) on a huge
    /// page; all hold zeros and keep what is written.
    #[test]
    fn starts_on_a_line_and_holds_zeros() {
        let huge = HUGE_PAGE / std::mem::size_of::<f32>();
        for len in [0, 1, 15, 16, 17, 1000, 1 << 18, huge - 1, huge, huge + 1000] {
            let mut a = AlignedF32::zeros(len).unwrap();
            assert_eq!(a.len(), len);
            assert!(a.iter().all(|&v| v == 0.0));
            if len > 0 {
                assert_eq!(a.as_ptr() as usize % 64, 0, "{len}");
                a[len - 1] = 3.0;
                assert_eq!(a[len - 1], 3.0);
            }
            if cfg!(target_os = "linux") && len >= huge {
                assert_eq!(a.as_ptr() as usize % HUGE_PAGE, 0, "{len}");
            }
        }
        assert!(AlignedF32::zeros(usize::MAX).is_none());
    }

    /// Shared buffers keep their elements, each from a line, in one mapping from a huge
    /// page on Linux; one written afterwards is copied out and leaves the others as they
    /// were. Buffers smaller than a huge page together stay where they are.
    #[test]
    fn shared_buffers_keep_their_elements() {
        let filled = |len: usize, seed: f32| {
            let mut a = AlignedF32::zeros(len).unwrap();
            a.iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v = seed + i as f32);
            a
        };
        let lens = [1000, 17, 0, HUGE_PAGE / 4, 3];
        let mut bufs: Vec<AlignedF32> = lens
            .iter()
            .enumerate()
            .map(|(k, &len)| filled(len, k as f32 * 1e6))
            .collect();
        let want: Vec<Vec<f32>> = bufs.iter().map(|b| b.to_vec()).collect();
        AlignedF32::share(&mut bufs.iter_mut().collect::<Vec<_>>());
        for (b, w) in bufs.iter().zip(&want) {
            assert_eq!(&b[..], &w[..]);
            assert!(b.is_empty() || (b.as_ptr() as usize).is_multiple_of(64));
        }
        if cfg!(target_os = "linux") {
            assert_eq!(bufs[0].as_ptr() as usize % HUGE_PAGE, 0);
            assert_eq!(
                bufs[1].as_ptr() as usize - bufs[0].as_ptr() as usize,
                1008 * 4
            );
        }
        bufs[1][16] = -1.0;
        assert_eq!(bufs[1][16], -1.0);
        assert_eq!(&bufs[1][..16], &want[1][..16]);
        for (b, w) in bufs.iter().zip(&want).skip(2) {
            assert_eq!(&b[..], &w[..]);
        }
        // Too small together to move.
        let mut small = [filled(10, 0.0), filled(20, 1.0)];
        let at = small[0].as_ptr();
        AlignedF32::share(&mut small.iter_mut().collect::<Vec<_>>());
        assert_eq!(small[0].as_ptr(), at);
    }
}
