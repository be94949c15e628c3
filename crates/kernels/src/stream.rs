//! Non-temporal stores for kernels whose traffic does not fit in the last-level cache: they
//! write whole lines without reading them first (no write-allocate), so each output byte
//! crosses the memory bus once instead of twice.

use std::sync::OnceLock;

/// The last-level cache size assumed when the system does not tell it.
const DEFAULT_LLC_BYTES: usize = 32 << 20;

/// The size of the host's largest cache in bytes, from Linux's sysfs (the largest
/// `cache/index*/size` of CPU 0), or 32 MiB where that cannot be read.
pub fn last_level_cache_bytes() -> usize {
    static LLC: OnceLock<usize> = OnceLock::new();
    *LLC.get_or_init(|| {
        let sizes = (0..8).filter_map(|i| {
            let path = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
            parse_size(std::fs::read_to_string(path).ok()?.trim())
        });
        sizes.max().unwrap_or(DEFAULT_LLC_BYTES)
    })
}

/// `"32768K"`, `"32M"` or `"4096"` (bytes) as bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, scale) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

/// Whether a kernel call that reads and writes `traffic` bytes should write its outputs
/// with non-temporal stores: more than twice what the last-level cache holds
/// (`cache_bytes`, [`crate::target::Target::last_level_cache_bytes`]), when its
/// output would not stay in cache anyway. (At about the cache's size, repeated calls still
/// find much of their data in the cache, and plain stores measured faster: `BENCHMARKS.md`.)
///
/// A plain store to a line that is not in cache first reads the line (write-allocate), so a
/// kernel that writes an output much larger than the cache moves each output byte twice. A
/// non-temporal store (`movntps`) writes whole lines to memory through write-combining
/// buffers without reading them: E1 `relu((a+b)·c)+d` moves 20 bytes per element instead
/// of 24. Decided per call site; kernels that run as the epilogue of a `MatMul` or
/// `Convolution` never stream (their blocks are small and in cache).
pub fn streams(traffic: usize, cache_bytes: usize) -> bool {
    traffic / 2 > cache_bytes
}

/// Copies `n` 4-byte elements from `src` to `dst`, the 16-byte-aligned part of `dst` with
/// non-temporal stores, and issues no fence ([`store_fence`] does, once per kernel call).
///
/// Cranelift 0.135 has no non-temporal store, so a streaming kernel is strip-mined
/// (`codegen::strip`): its last stage writes each `f32`/`i32` output into a strip buffer,
/// this function copies the strip out (an output that a call of the vector math library
/// computes is written by the library's streaming entry directly: `crate::veclib`), and the
/// kernel calls [`store_fence`] before it returns.
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `n` elements of 4 bytes, both
/// 4-byte aligned, without overlap.
pub unsafe extern "C" fn stream_strip(src: *const f32, dst: *mut f32, n: usize) {
    // SAFETY: only streaming JIT kernels call this (`codegen::strip`), with `src` a strip
    // buffer of the kernel's own frame and `dst` the `n ≤ strip` elements of a kernel output
    // from the strip's first element on, which the runtime checked to hold the whole
    // iteration space and which overlaps no input and no strip buffer.
    let (src, dst) = unsafe {
        (
            std::slice::from_raw_parts(src, n),
            std::slice::from_raw_parts_mut(dst, n),
        )
    };
    copy_streaming(src, dst);
}

#[cfg(target_arch = "x86_64")]
fn copy_streaming(src: &[f32], dst: &mut [f32]) {
    if crate::target::CpuFeatures::host().avx512f {
        // SAFETY: the host has AVX-512F.
        unsafe { copy_streaming_avx512(src, dst) }
    } else {
        copy_streaming_sse(src, dst)
    }
}

/// Copies `src` to `dst` in chunks of `N` elements that start on `4·N`-byte boundaries of
/// `dst`, each written by `store(chunk of dst, chunk of src)`; plain stores before the first
/// boundary and after the last whole chunk.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn copy_aligned_chunks<const N: usize>(
    src: &[f32],
    dst: &mut [f32],
    store: impl Fn(&mut [f32], &[f32]),
) {
    let head = dst.as_ptr().align_offset(4 * N).min(dst.len());
    let (dst_head, dst) = dst.split_at_mut(head);
    let (src_head, src) = src.split_at(head);
    // Strips of aligned outputs have neither a head nor a tail: skip the `memcpy` calls.
    if head > 0 {
        dst_head.copy_from_slice(src_head);
    }
    let mut d = dst.chunks_exact_mut(N);
    let mut s = src.chunks_exact(N);
    for (d, s) in (&mut d).zip(&mut s) {
        store(d, s);
    }
    let tail = d.into_remainder();
    if !tail.is_empty() {
        tail.copy_from_slice(s.remainder());
    }
}

/// Whole 64-byte lines with one non-temporal store each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn copy_streaming_avx512(src: &[f32], dst: &mut [f32]) {
    use std::arch::x86_64::{_mm512_loadu_ps, _mm512_stream_ps};
    copy_aligned_chunks::<16>(src, dst, |d, s| {
        // SAFETY: `s` and `d` are sixteen elements each, `d` on a 64-byte boundary, as
        // `_mm512_stream_ps` requires; the host has AVX-512F (this function's feature).
        unsafe { _mm512_stream_ps(d.as_mut_ptr(), _mm512_loadu_ps(s.as_ptr())) }
    });
}

#[cfg(target_arch = "x86_64")]
fn copy_streaming_sse(src: &[f32], dst: &mut [f32]) {
    use std::arch::x86_64::{_mm_loadu_ps, _mm_stream_ps};
    copy_aligned_chunks::<4>(src, dst, |d, s| {
        // SAFETY: `s` and `d` are four elements each, `d` on a 16-byte boundary, as
        // `_mm_stream_ps` requires; SSE is part of x86-64.
        unsafe { _mm_stream_ps(d.as_mut_ptr(), _mm_loadu_ps(s.as_ptr())) }
    });
}

#[cfg(not(target_arch = "x86_64"))]
fn copy_streaming(src: &[f32], dst: &mut [f32]) {
    dst.copy_from_slice(src);
}

/// Orders every earlier non-temporal store before every later store (`sfence`).
///
/// A streaming kernel calls it once before it returns, so every store is globally visible
/// before the runtime hands the output on: non-temporal stores are weakly ordered, and
/// `sfence` orders them before every later store, including the ones that tell other
/// threads a chunk is done. Once per call, not per strip: a fence after each strip measured
/// about twice as slow (`BENCHMARKS.md`).
pub extern "C" fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no operands and no preconditions; SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("32768K"), Some(32 << 20));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        assert!(last_level_cache_bytes() >= 1 << 10);
    }

    #[test]
    fn streaming_copies_at_every_alignment_and_length() {
        let src: Vec<f32> = (0..300).map(|i| i as f32 * 0.5 - 7.0).collect();
        for offset in 0..4 {
            for n in [0, 1, 3, 4, 5, 16, 17, 128, 131, 290] {
                let mut dst = vec![f32::NAN; 300];
                let out = &mut dst[offset..offset + n];
                // SAFETY: both ranges hold `n` elements and do not overlap.
                unsafe { stream_strip(src.as_ptr(), out.as_mut_ptr(), n) };
                store_fence();
                assert_eq!(
                    &dst[offset..offset + n],
                    &src[..n],
                    "offset {offset}, n {n}"
                );
                assert!(dst[..offset].iter().all(|x| x.is_nan()));
                assert!(dst[offset + n..].iter().all(|x| x.is_nan()));
            }
        }
    }
}
