//! The 2-D convolution shapes the native convolution kernels are tested on (forward and
//! both backprops): dense, grouped, depthwise, pointwise, strided, dilated, unevenly padded,
//! windows reading only padding, windows that tile the image, layers large enough to split
//! over threads, and fields unrolled in bands.

use graphlift_ir::{Convolution, Window};

/// (x, filter, groups, strides, dilations, pads begin, pads end)
pub(super) type Case = (
    [usize; 4],
    [usize; 4],
    usize,
    [usize; 2],
    [usize; 2],
    [usize; 2],
    [usize; 2],
);

pub(super) const CASES: &[Case] = &[
    // Windows that tile the image (stride = window, no padding): the transposed
    // convolution's col2im writes each position once; two wide and three wide.
    (
        [1, 3, 8, 6],
        [4, 3, 2, 2],
        1,
        [2, 2],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    (
        [2, 4, 9, 6],
        [6, 2, 3, 3],
        2,
        [3, 3],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    // A dilated window wider than the row's inside: its first tap reads only padding for
    // every output column (found by the packed convolution's property test).
    (
        [1, 1, 2, 2],
        [8, 1, 1, 3],
        1,
        [1, 1],
        [1, 2],
        [0, 2],
        [0, 1],
    ),
    (
        [1, 3, 8, 12],
        [4, 3, 3, 3],
        1,
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    (
        [2, 4, 9, 7],
        [8, 2, 3, 3],
        2,
        [2, 1],
        [1, 2],
        [1, 2],
        [0, 2],
    ),
    (
        [1, 6, 10, 10],
        [6, 1, 5, 5],
        6,
        [2, 2],
        [1, 1],
        [2, 2],
        [2, 2],
    ),
    (
        [1, 8, 6, 6],
        [16, 8, 1, 1],
        1,
        [1, 1],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    (
        [2, 4, 5, 7],
        [4, 2, 1, 1],
        2,
        [1, 1],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    (
        [1, 2, 7, 9],
        [3, 2, 3, 2],
        1,
        [3, 2],
        [2, 3],
        [2, 0],
        [1, 3],
    ),
    (
        [1, 1, 3, 3],
        [1, 1, 1, 1],
        1,
        [2, 2],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    (
        [2, 3, 7, 9],
        [6, 1, 3, 3],
        3,
        [1, 1],
        [2, 1],
        [2, 1],
        [1, 2],
    ),
    (
        [1, 4, 12, 21],
        [4, 1, 3, 3],
        4,
        [2, 2],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    // Dense at batch 1, large enough to split channels and filters over threads.
    (
        [1, 24, 12, 48],
        [40, 24, 3, 3],
        1,
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    (
        [2, 16, 10, 30],
        [48, 16, 1, 1],
        1,
        [1, 1],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    // A pointwise layer whose result outgrows the field budget (with an epilogue it runs
    // by bands of output rows).
    (
        [1, 8, 96, 96],
        [32, 8, 1, 1],
        1,
        [1, 1],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    // Dense at batch 1 over a small image (split by blocks of filters) and over one output
    // row (nothing to split by bands).
    (
        [1, 32, 6, 6],
        [64, 32, 3, 3],
        1,
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    (
        [1, 16, 3, 200],
        [24, 16, 3, 3],
        1,
        [1, 1],
        [1, 1],
        [0, 1],
        [0, 1],
    ),
    // A window over more input channels than one block of `k` holds, on rows of twenty
    // columns (each tile's vectors from several rows), dilated down the image as
    // plcmos_v2's layers are.
    (
        [1, 64, 11, 20],
        [24, 64, 3, 3],
        1,
        [1, 1],
        [2, 1],
        [1, 1],
        [1, 1],
    ),
    // Dense at batch 1, strided over a large image (unrolled fields split by bands).
    (
        [1, 8, 30, 40],
        [16, 8, 3, 3],
        1,
        [2, 2],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    // A first layer (three channels, stride 2) and stride, dilation and padding that differ
    // by axis: implicit fields over stride phases where the filters are packed.
    (
        [1, 3, 40, 64],
        [8, 3, 3, 3],
        1,
        [2, 2],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    (
        [1, 6, 21, 50],
        [12, 6, 3, 3],
        1,
        [2, 1],
        [2, 2],
        [1, 2],
        [2, 1],
    ),
    // Fields over the unrolling budget, multiplied band by band of output rows: few
    // filters (one task, serial), and many (each band split over threads).
    (
        [1, 8, 9, 64],
        [8, 8, 3, 39],
        1,
        [1, 1],
        [1, 1],
        [1, 19],
        [1, 19],
    ),
    (
        [1, 16, 20, 40],
        [40, 16, 5, 9],
        1,
        [1, 1],
        [1, 1],
        [2, 4],
        [2, 4],
    ),
    // Depthwise with a multiplier of 1 over 3 channels, strided and dilated.
    (
        [2, 3, 7, 9],
        [3, 1, 3, 3],
        3,
        [1, 1],
        [2, 1],
        [2, 1],
        [1, 2],
    ),
    (
        [1, 4, 6, 6],
        [4, 1, 3, 3],
        4,
        [1, 2],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    // Depthwise layers large enough to split over two threads (on row tiles; at stride 2
    // onto 7x7 planes, with the channels in the lanes on AVX-512, in blocks that cross
    // from one image to the next).
    (
        [1, 40, 9, 11],
        [40, 1, 3, 3],
        40,
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    (
        [2, 48, 14, 14],
        [48, 1, 3, 3],
        48,
        [2, 2],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    // Pointwise layers over planes that waste most of a panel of positions (7x7, 5x5): on
    // an AVX-512 host their output channels take the lanes and each (image, group) task
    // reads its channels of the image in place.
    (
        [2, 24, 7, 7],
        [96, 24, 1, 1],
        1,
        [1, 1],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    (
        [2, 32, 5, 5],
        [96, 16, 1, 1],
        2,
        [1, 1],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    // A pointwise layer over a batch of three images, split over more threads than images
    // (every image's filters in blocks).
    (
        [3, 40, 9, 11],
        [52, 40, 1, 1],
        1,
        [1, 1],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
];

/// The convolution attribute of a case.
pub(super) fn convolution_of(&(_, df, groups, strides, dilations, pb, pe): &Case) -> Convolution {
    Convolution {
        window: Window {
            shape: df[2..].to_vec(),
            strides: strides.to_vec(),
            dilations: dilations.to_vec(),
            pads_begin: pb.to_vec(),
            pads_end: pe.to_vec(),
        },
        groups,
    }
}
