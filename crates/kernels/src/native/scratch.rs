//! Per-thread scratch buffers of the native kernels, reused from call to call: a fresh
//! multi-megabyte `Vec` on every call costs a zeroing pass (and, where the allocator returns
//! large blocks to the system, a page fault per 4 KiB) that a band of a convolution cannot
//! afford. What a thread keeps is bounded: [`KEPT`] buffers of at most [`KEPT_LEN`] elements
//! per element type.

use std::cell::RefCell;
use std::thread::LocalKey;

/// Buffers a thread keeps per element type (enough for the most a kernel holds at once:
/// an image's padded phases, a band's unrolled fields and its product).
const KEPT: usize = 3;

/// The longest buffer kept for reuse, in elements (8 MiB of `f32`); a longer one is freed
/// after use.
const KEPT_LEN: usize = 1 << 21;

/// An element type with per-thread scratch buffers.
pub(super) trait Scratch: Copy + Default + 'static {
    /// This thread's kept buffers of the type.
    fn kept() -> &'static LocalKey<RefCell<Vec<Vec<Self>>>>;
}

thread_local! {
    static F32: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
    static F64: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
    static I16: RefCell<Vec<Vec<i16>>> = const { RefCell::new(Vec::new()) };
}

impl Scratch for f32 {
    fn kept() -> &'static LocalKey<RefCell<Vec<Vec<f32>>>> {
        &F32
    }
}

impl Scratch for f64 {
    fn kept() -> &'static LocalKey<RefCell<Vec<Vec<f64>>>> {
        &F64
    }
}

impl Scratch for i16 {
    fn kept() -> &'static LocalKey<RefCell<Vec<Vec<i16>>>> {
        &I16
    }
}

/// Runs `f` on a buffer of `len` elements taken from this thread's kept buffers (or a new
/// one), and keeps it again afterwards. The elements are **not** cleared: they hold what
/// an earlier user left, so `f` must write every element it reads. Calls may nest (each
/// takes its own buffer).
pub(super) fn with_scratch<T: Scratch, R>(len: usize, f: impl FnOnce(&mut [T]) -> R) -> R {
    if len == 0 {
        // No buffer is taken: a nested call keeps the kept ones.
        return f(&mut []);
    }
    let taken = T::kept()
        .try_with(|k| k.try_borrow_mut().ok().and_then(|mut k| k.pop()))
        .ok()
        .flatten();
    let mut buffer = taken.unwrap_or_default();
    if buffer.len() < len {
        buffer.resize(len, T::default());
    }
    let result = f(&mut buffer[..len]);
    if buffer.len() <= KEPT_LEN {
        // A thread being torn down (or a kept list in use) just drops the buffer.
        let _ = T::kept().try_with(|k| {
            if let Ok(mut k) = k.try_borrow_mut() {
                if k.len() < KEPT {
                    k.push(buffer);
                }
            }
        });
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer is reused by the next call on the thread (its old contents visible, as
    /// documented); nested calls get distinct buffers; oversized buffers are not kept.
    #[test]
    fn reuses_bounded_buffers() {
        with_scratch::<f32, _>(8, |b| b.fill(3.0));
        with_scratch::<f32, _>(4, |b| assert_eq!(b, [3.0; 4]));
        with_scratch::<f32, _>(8, |outer| {
            with_scratch::<f32, _>(8, |inner| {
                inner.fill(1.0);
                outer.fill(2.0);
                assert_ne!(inner.as_ptr(), outer.as_ptr());
            })
        });
        with_scratch::<f64, _>(KEPT_LEN + 1, |b| b[0] = 1.0);
        let kept = F64.with(|k| k.borrow().iter().map(Vec::len).max().unwrap_or(0));
        assert!(kept <= KEPT_LEN);
    }
}
