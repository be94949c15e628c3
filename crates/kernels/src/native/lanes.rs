//! The vector widths of the native `f32` tiles: [`FloatTiles`], the one choice between
//! the 16-lane AVX-512 and 8-lane AVX2 tiles (the packed product's microkernel and gemv,
//! the depthwise tiles), and the AVX-512 lane masks of a row's vectors of sixteen 32-bit
//! lanes, the one definition every native tile with a masked tail takes its masks from.

use crate::target::CpuFeatures;

/// Which `f32` tiles the native kernels run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum FloatTiles {
    /// AVX-512F: sixteen lanes, masked tails.
    Avx512,
    /// AVX2 and FMA: eight lanes.
    Avx2,
}

impl FloatTiles {
    /// The widest tiles the host runs, `None` without AVX2 and FMA (or off x86-64).
    pub(super) fn host() -> Option<FloatTiles> {
        [FloatTiles::Avx512, FloatTiles::Avx2]
            .into_iter()
            .find(|t| t.runs())
    }

    /// Every kind of tiles the host runs, widest first.
    #[cfg(test)]
    pub(super) fn on_host() -> Vec<FloatTiles> {
        [FloatTiles::Avx512, FloatTiles::Avx2]
            .into_iter()
            .filter(|t| t.runs())
            .collect()
    }

    /// Whether the host runs these tiles.
    pub(super) fn runs(self) -> bool {
        let f = CpuFeatures::host();
        cfg!(target_arch = "x86_64")
            && match self {
                FloatTiles::Avx512 => f.avx512f,
                FloatTiles::Avx2 => f.avx2 && f.fma,
            }
    }
}

/// Lanes of a 512-bit vector of 32-bit elements (`f32`, `i32`).
const LANES: usize = 16;

/// The mask (`__mmask16`'s bits) of vector `v` of a row of `len` elements: its lanes that
/// hold elements `< len`, so none past the row's end and all sixteen inside it.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) fn lane_mask(len: usize, v: usize) -> u16 {
    let live = len.saturating_sub(v * LANES).min(LANES);
    ((1u32 << live) - 1) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_cover_the_lanes_inside_the_row() {
        assert_eq!(lane_mask(0, 0), 0);
        assert_eq!(lane_mask(5, 0), 0b1_1111);
        assert_eq!(lane_mask(16, 0), 0xffff);
        assert_eq!(lane_mask(16, 1), 0);
        assert_eq!(lane_mask(40, 1), 0xffff);
        assert_eq!(lane_mask(40, 2), 0xff);
        assert_eq!(lane_mask(40, 3), 0);
    }
}
