//! The one call into the `gemm` crate: a product of strided matrix operands, every extent
//! and slice length checked before the call (the native MatMul, Convolution and Attention
//! all go through it).

use std::any::TypeId;

use gemm::{gemm, Parallelism};

/// A matrix operand laid out in a slice with strides: element `(i, j)` of its `rows × cols`
/// is at `i · row_stride + j · col_stride` (`[rows, cols]` row-major is
/// [`Strided::row_major`]; a transpose swaps the strides, a column block of a wider matrix
/// keeps the wider row stride).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Strided {
    pub rows: usize,
    pub cols: usize,
    pub row_stride: usize,
    pub col_stride: usize,
}

impl Strided {
    /// A `[rows, cols]` row-major matrix.
    pub(super) fn row_major(rows: usize, cols: usize) -> Strided {
        Strided {
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// The slice length the operand needs: its last element's index + 1 (0 when empty);
    /// `None` on overflow.
    fn extent(&self) -> Option<usize> {
        if self.rows == 0 || self.cols == 0 {
            return Some(0);
        }
        let last_row = (self.rows - 1).checked_mul(self.row_stride)?;
        let last_col = (self.cols - 1).checked_mul(self.col_stride)?;
        last_row.checked_add(last_col)?.checked_add(1)
    }
}

/// `c = beta · a · b` through gemm on one thread or as `parallelism` says (`c`'s old
/// contents are never read), for `T` = `f32` or `f64`. `a` is `m × k`, `b` `k × n`, `c`
/// `m × n` with unit column stride and a row stride of at least `n` (so no two elements of
/// `c` share an address). With `keep = Some(alpha)`, `c = alpha · c + beta · a · b` instead
/// (an accumulating product: `c`'s contents are read).
///
/// Returns `false`, writing nothing, when the extents disagree, a slice is shorter than its
/// operand's [`Strided::extent`], `c`'s layout could alias, or `T` is another type.
pub(super) fn gemm_into<T: Copy + 'static>(
    (c, cv): (&mut [T], Strided),
    (a, av): (&[T], Strided),
    (b, bv): (&[T], Strided),
    beta: T,
    keep: Option<T>,
    parallelism: Parallelism,
) -> bool {
    let (m, k, n) = (av.rows, av.cols, bv.cols);
    let float =
        TypeId::of::<T>() == TypeId::of::<f32>() || TypeId::of::<T>() == TypeId::of::<f64>();
    let fits = |s: &Strided, len: usize| s.extent().is_some_and(|e| e <= len);
    let strides_fit = [
        av.row_stride,
        av.col_stride,
        bv.row_stride,
        bv.col_stride,
        cv.row_stride,
    ]
    .iter()
    .all(|&s| isize::try_from(s).is_ok());
    if !float
        || bv.rows != k
        || (cv.rows, cv.cols) != (m, n)
        || cv.col_stride != 1
        || cv.row_stride < n
        || !strides_fit
        || !fits(&av, a.len())
        || !fits(&bv, b.len())
        || !fits(&cv, c.len())
    {
        return false;
    }
    if m == 0 || n == 0 {
        return true;
    }
    // SAFETY: gemm reads `a` at `i · row_stride + p · col_stride` for `i < m`, `p < k`, and
    // `b` likewise for `p < k`, `j < n`: at most the operands' extents, which are within
    // `a.len()` and `b.len()` (checked above, without overflow, and every stride fits an
    // `isize`). It writes `c` at `i · row_stride + j` for `i < m`, `j < n`: within
    // `c.len()` (checked), and distinct for distinct `(i, j)` since `row_stride >= n`. `c`
    // is an exclusive borrow, so nothing else reads or writes it during the call, and the
    // shared borrows `a` and `b` cannot overlap it. `c`'s old contents are read only with
    // `keep` (`read_dst`), and they are initialized elements of the slice. `T` is `f32` or
    // `f64` (checked), the types gemm supports without panicking.
    unsafe {
        gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            cv.row_stride as isize,
            keep.is_some(),
            a.as_ptr(),
            av.col_stride as isize,
            av.row_stride as isize,
            b.as_ptr(),
            bv.col_stride as isize,
            bv.row_stride as isize,
            keep.unwrap_or(beta),
            beta,
            false,
            false,
            false,
            parallelism,
        );
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transposed, column-blocked operand multiplies as its dense copy does.
    #[test]
    fn strided_operands_and_bad_lengths() {
        // a: columns 1..3 of a [2, 4] matrix; b: the transpose of a [3, 2] matrix.
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
        let av = Strided {
            rows: 2,
            cols: 2,
            row_stride: 4,
            col_stride: 1,
        };
        let b = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // [3, 2]; bᵀ is [2, 3]
        let bv = Strided {
            rows: 2,
            cols: 3,
            row_stride: 1,
            col_stride: 2,
        };
        let mut c = [0f32; 6];
        let cv = Strided::row_major(2, 3);
        assert!(gemm_into(
            (&mut c, cv),
            (&a[1..], av),
            (&b, bv),
            2.0,
            None,
            Parallelism::None
        ));
        // [[2, 3], [6, 7]] · [[1, 3, 5], [2, 4, 6]], times 2.
        assert_eq!(c, [16.0, 36.0, 56.0, 40.0, 92.0, 144.0]);
        // Accumulating: c = 1 · c + 0.5 · a · b.
        assert!(gemm_into(
            (&mut c, cv),
            (&a[1..], av),
            (&b, bv),
            0.5,
            Some(1.0),
            Parallelism::None
        ));
        assert_eq!(c, [20.0, 45.0, 70.0, 50.0, 115.0, 180.0]);
        assert!(!gemm_into(
            (&mut c, cv),
            (&a[3..], av),
            (&b, bv),
            1.0,
            None,
            Parallelism::None
        ));
        assert!(!gemm_into(
            (&mut c[1..], cv),
            (&a, av),
            (&b, bv),
            1.0,
            None,
            Parallelism::None
        ));
        let ints = [1i32; 8];
        let mut ci = [0i32; 6];
        assert!(!gemm_into(
            (&mut ci, cv),
            (&ints, av),
            (&ints, bv),
            1,
            None,
            Parallelism::None
        ));
    }
}
