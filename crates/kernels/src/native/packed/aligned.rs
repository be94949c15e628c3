//! A zeroed `f32` buffer whose first element sits on a 64-byte boundary (one cache line, one
//! AVX-512 vector): packed panels laid out in it start their rows on lines, so that no
//! vector load of a microkernel straddles two lines. (The allocator aligns a `Vec<f32>` to
//! 16 bytes at best; the packed weights of one model were found at every offset modulo 64.)

use std::ops::{Deref, DerefMut};

/// `f32` elements per 64-byte line.
const LINE: usize = 64 / std::mem::size_of::<f32>();

/// `len` elements from a line boundary of a vector allocated with room to align them.
#[derive(Debug, Default)]
pub(super) struct AlignedF32 {
    buf: Vec<f32>,
    start: usize,
    len: usize,
}

impl AlignedF32 {
    /// `len` zeros from a 64-byte boundary; `None` when the length overflows.
    pub(super) fn zeros(len: usize) -> Option<AlignedF32> {
        let buf = vec![0f32; len.checked_add(LINE - 1)?];
        // The vector's first element, in elements past the line it lies in.
        let past = (buf.as_ptr() as usize / std::mem::size_of::<f32>()) % LINE;
        Some(AlignedF32 {
            buf,
            start: (LINE - past) % LINE,
            len,
        })
    }
}

impl Deref for AlignedF32 {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl DerefMut for AlignedF32 {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_line_and_holds_zeros() {
        for len in [0, 1, 15, 16, 17, 1000, 1 << 18] {
            let a = AlignedF32::zeros(len).unwrap();
            assert_eq!(a.len(), len);
            assert!(a.iter().all(|&v| v == 0.0));
            if len > 0 {
                assert_eq!(a.as_ptr() as usize % 64, 0, "{len}");
            }
        }
        assert!(AlignedF32::zeros(usize::MAX).is_none());
    }
}
