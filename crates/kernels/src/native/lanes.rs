//! The AVX-512 lane masks of a row's vectors of sixteen 32-bit lanes: the one definition
//! every native tile with a masked tail (the packed microkernel, the depthwise and integer
//! tiles) takes its masks from.

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
