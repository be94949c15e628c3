//! `ArgMax` and `ArgMin` over the last axis of an `f32` tensor (a classifier's or a
//! language model's logits over its vocabulary): each row scanned in `f32` lanes for its
//! extreme value, then for the first (or last) index holding it, with the reference's
//! rules for NaN and ties (`graphlift_runtime::reference::arg_reduce`) and without its
//! widened copy of the whole tensor.

use graphlift_ir::{ArgOp, ArgReduction, Shape, TensorData};
use multiversion::multiversion;

/// Lanes of the partial extremes: independent compare-and-select chains, which LLVM
/// turns into vector `max`/`min` instructions.
const LANES: usize = 16;

/// The `i64` index of the extreme element of each row of `x` along the last axis of
/// `from`, as the reference defines it (the first of equal extremes, the last with
/// `select_last_index`; a NaN beats every number, and of several NaNs the same tie rule
/// picks); `None` (the caller runs the reference) for other element types, another axis,
/// an empty axis or data that does not fill `from`.
pub fn arg_reduce(x: &TensorData, from: &Shape, r: &ArgReduction) -> Option<TensorData> {
    let TensorData::F32(x) = x else {
        return None;
    };
    let d = *from.dims().last()?;
    if r.axis + 1 != from.rank() || d == 0 || x.len() != from.element_count().ok()? {
        return None;
    }
    let indices = x
        .chunks_exact(d)
        .map(|row| extreme_index(row, r.op, r.select_last_index) as i64)
        .collect();
    Some(TensorData::I64(indices))
}

/// The index of the extreme of one non-empty row.
fn extreme_index(row: &[f32], op: ArgOp, last: bool) -> usize {
    let (value, nan) = extreme(row, op);
    let hit = |&v: &f32| if nan { v.is_nan() } else { v == value };
    let found = if last {
        row.iter().rposition(hit)
    } else {
        row.iter().position(hit)
    };
    found.unwrap_or(0)
}

/// The row's largest (`Max`) or smallest number, and whether it holds a NaN (NaNs left out
/// of the extreme).
#[multiversion(targets = "simd")]
fn extreme(row: &[f32], op: ArgOp) -> (f32, bool) {
    let start = match op {
        ArgOp::Max => f32::NEG_INFINITY,
        ArgOp::Min => f32::INFINITY,
    };
    let mut acc = [start; LANES];
    let mut nan = [false; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        for ((a, n), &v) in acc.iter_mut().zip(&mut nan).zip(chunk) {
            let beyond = match op {
                ArgOp::Max => v > *a,
                ArgOp::Min => v < *a,
            };
            *a = if beyond { v } else { *a };
            *n |= v.is_nan();
        }
    }
    let mut value = start;
    let mut any_nan = nan.iter().any(|&n| n);
    for &v in acc.iter().chain(chunks.remainder()) {
        any_nan |= v.is_nan();
        let beyond = match op {
            ArgOp::Max => v > value,
            ArgOp::Min => v < value,
        };
        if beyond {
            value = v;
        }
    }
    (value, any_nan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_runtime::reference;

    /// Rows with ties, infinities, NaNs and tails agree with the reference, both ops and
    /// both tie rules.
    #[test]
    fn agrees_with_the_reference() {
        let rows: Vec<Vec<f32>> = vec![
            vec![1.0, 3.0, 3.0, -2.0],
            vec![f32::NEG_INFINITY; 5],
            vec![0.5, f32::NAN, 2.0, f32::NAN, -1.0],
            (0..37).map(|i| ((i * 7) % 11) as f32 - 5.0).collect(),
            (0..40)
                .map(|i| if i % 13 == 0 { 9.0 } else { -(i as f32) })
                .collect(),
            vec![f32::INFINITY, 0.0, f32::INFINITY],
            vec![-0.0, 0.0],
        ];
        for row in rows {
            let shape = Shape::new([2, row.len()]);
            let mut data = row.clone();
            data.extend(row.iter().rev());
            let x = TensorData::F32(data);
            for op in [ArgOp::Max, ArgOp::Min] {
                for select_last_index in [false, true] {
                    let r = ArgReduction {
                        op,
                        axis: 1,
                        keep_dims: false,
                        select_last_index,
                    };
                    let want = reference::arg_reduce(&x, &shape, &r).unwrap();
                    assert_eq!(
                        arg_reduce(&x, &shape, &r),
                        Some(want),
                        "{row:?} {op:?} {r:?}"
                    );
                }
            }
        }
    }

    /// Another axis, an empty axis or another element type is left to the reference.
    #[test]
    fn declines_what_it_does_not_cover() {
        let r = |axis| ArgReduction {
            op: ArgOp::Max,
            axis,
            keep_dims: true,
            select_last_index: false,
        };
        let x = TensorData::F32(vec![1.0; 6]);
        assert_eq!(arg_reduce(&x, &Shape::new([2, 3]), &r(0)), None);
        assert_eq!(
            arg_reduce(&TensorData::F32(vec![]), &Shape::new([2, 0]), &r(1)),
            None
        );
        assert_eq!(
            arg_reduce(&TensorData::I32(vec![1; 6]), &Shape::new([2, 3]), &r(1)),
            None
        );
    }
}
