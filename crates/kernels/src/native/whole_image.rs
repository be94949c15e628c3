//! Convolutions whose windows cover each whole unpadded image in one group
//! ([`Geometry::covers_images`]: a 1x1 convolution on 1x1 planes, as a squeeze-and-excitation
//! block applies after its global pooling, or a window the size of the image). Each output
//! is the dot product of a filter with an image, so the convolution is one product of the
//! images `[N, C · kH · kW]` with the filters transposed, written straight into the output
//! `[N, M]`: the filters are the loaded operand (packed for the right side by
//! `packed::prepare`), the few images the broadcast one. As one product of a single column
//! per image, the packed path would pad each column to a whole panel of 48.

use super::conv_dense::Float;
use super::conv_geometry::Geometry;
use super::gemm_call::{gemm_into, Strided};
use super::packed::{self, Lhs, PackedWeights, Rhs, Side};

/// `y[b, m] = f[m] · x[b]` for every image `b` of `x` (`[N, D]`, `D = C · kH · kW`) and
/// filter `m` of `f` (`[M, D]`), `y` being `[N, M]`, on one thread: on the packed path with
/// `packed` (the filters transposed, packed for the right side), else through gemm.
/// Returns `false`, writing nothing, when the slices disagree with `g`'s extents.
pub(super) fn convolve<T: Float>(
    (x, f): (&[T], &[T]),
    g: &Geometry,
    packed: Option<&PackedWeights>,
    y: &mut [T],
) -> bool {
    let (n, m, depth) = (g.n, g.m, g.c * g.h * g.w);
    if x.len() != n * depth || f.len() != m * depth || y.len() != n * m {
        return false;
    }
    let packed = packed.filter(|w| w.side() == Side::Right && w.extents() == (1, depth, m));
    if let (Some(w), Some(xs), Some(ys)) = (packed, T::as_f32(x), T::as_f32_mut(y)) {
        let lhs = Lhs::Strided {
            data: xs,
            rs: depth,
            ks: 1,
        };
        let rhs = Rhs::Packed { w, matrix: 0 };
        if packed::product((ys, m), lhs, rhs, (n, depth, m), false) {
            return true;
        }
    }
    let filters_transposed = Strided {
        rows: depth,
        cols: m,
        row_stride: 1,
        col_stride: depth,
    };
    gemm_into(
        (y, Strided::row_major(n, m)),
        (x, Strided::row_major(n, depth)),
        (f, filters_transposed),
        T::from(1.0),
        None,
        gemm::Parallelism::None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::{Convolution, Shape, Window};

    /// Every filter against every image, against sums in `f64`, with the filters packed as
    /// `prepare` packs them and through gemm: 1x1 windows on 1x1 planes and a window of a
    /// whole 2x3 image, image counts below and above a panel's 8 rows, filter counts below
    /// and above a panel's 48 columns.
    #[test]
    fn dot_products_of_filters_with_whole_images() {
        for (n, m, c, h, w) in [(6, 50, 200, 1, 1), (1, 3, 5, 1, 1), (11, 9, 7, 2, 3)] {
            let conv = Convolution {
                window: Window {
                    shape: vec![h, w],
                    strides: vec![1, 1],
                    dilations: vec![1, 1],
                    pads_begin: vec![0, 0],
                    pads_end: vec![0, 0],
                },
                groups: 1,
            };
            let (sx, sf) = (Shape::new([n, c, h, w]), Shape::new([m, c, h, w]));
            let g = Geometry::of(&sx, &sf, &conv).unwrap();
            assert!(g.covers_images(&conv));
            let depth = c * h * w;
            let x: Vec<f32> = (0..n * depth)
                .map(|i| ((i * 37 % 101) as f32) / 50.0 - 1.0)
                .collect();
            let f: Vec<f32> = (0..m * depth)
                .map(|i| ((i * 13 % 89) as f32) / 40.0 - 1.0)
                .collect();
            let packed = PackedWeights::pack_transposed(&f, 1, (1, m, depth));
            for packed in [packed.as_ref(), None] {
                let mut y = vec![f32::NAN; n * m];
                assert!(convolve((&x, &f), &g, packed, &mut y));
                for b in 0..n {
                    for r in 0..m {
                        let want: f64 = (0..depth)
                            .map(|k| f64::from(f[r * depth + k]) * f64::from(x[b * depth + k]))
                            .sum();
                        let got = f64::from(y[b * m + r]);
                        assert!(
                            (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                            "[{b}, {r}]"
                        );
                    }
                }
            }
        }
    }

    /// Padding, or a window smaller than the image, is an ordinary convolution.
    #[test]
    fn padded_or_sliding_windows_do_not_cover_images() {
        let window = |k: usize, pad: usize| Convolution {
            window: Window {
                shape: vec![k, k],
                strides: vec![1, 1],
                dilations: vec![1, 1],
                pads_begin: vec![pad, pad],
                pads_end: vec![pad, pad],
            },
            groups: 1,
        };
        let (padded, sliding) = (window(1, 1), window(1, 0));
        let g = |c: &Convolution, hw: usize| {
            Geometry::of(&Shape::new([2, 3, hw, hw]), &Shape::new([4, 3, 1, 1]), c).unwrap()
        };
        assert!(!g(&padded, 1).covers_images(&padded));
        assert!(!g(&sliding, 2).covers_images(&sliding));
    }
}
