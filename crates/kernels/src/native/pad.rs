//! `Pad` without interior padding (ONNX `Pad` in every mode), output row by output row, a
//! row being the last padded axis with every unpadded axis after it: the input row between
//! `low` and `high` fills (constant mode), or between the pads' source elements (edge,
//! reflect, wrap); a row whose leading indices fall in constant padding is all fill. The
//! reference builds one index per output element; this copies runs.

use graphlift_ir::{match_data, Element, Pad, PadMode, Shape, TensorData};
use graphlift_runtime::reference::source_index;

/// `x` (shape `from`) padded as `p` says, as the reference's `pad` defines it, or `None`
/// where this kernel does not apply and the reference runs instead (interior padding, a
/// scalar, an empty input axis outside constant mode, a padding value that is not one
/// element of `x`'s type: the reference reports those).
pub(super) fn pad(
    x: &TensorData,
    from: &Shape,
    value: Option<&TensorData>,
    p: &Pad,
) -> Option<TensorData> {
    let r = from.rank();
    let fits = r >= 1
        && [&p.low, &p.high, &p.interior].iter().all(|v| v.len() == r)
        && p.interior.iter().all(|&i| i == 0)
        && x.len() == from.element_count().ok()?
        && (p.mode == PadMode::Constant || from.dims().iter().all(|&d| d > 0));
    if !fits {
        return None;
    }
    let (dims, p, block) = merge_unpadded_tail(from.dims(), p);
    let to = p.output_extents(&dims).ok()?;
    match_data!(x, v => {
        let fill = match (p.mode, value) {
            (PadMode::Constant, Some(value)) => match value.as_slice()? {
                [f] => *f,
                _ => return None,
            },
            (PadMode::Constant, None) => return None,
            _ => Default::default(),
        };
        Some(pad_rows(v, &dims, &to, (&p, block), fill).into())
    }, String(_) => None)
}

/// The same padding with the axes after the last padded one merged into it: extents
/// `dims[j] · B` and pads `low[j] · B`, `high[j] · B` for the block `B` of the merged axes'
/// elements (returned; 1 where the last axis is padded). The output rows are then the runs
/// between fills, not the last axis's (one element a row for `[1, T, F, 1]` padded along
/// `F`).
fn merge_unpadded_tail(dims: &[usize], p: &Pad) -> (Vec<usize>, Pad, usize) {
    let j = (0..dims.len())
        .rev()
        .find(|&a| p.low[a] != 0 || p.high[a] != 0)
        .unwrap_or(0);
    let block: usize = dims[j + 1..].iter().product();
    let mut merged = dims[..=j].to_vec();
    merged[j] *= block;
    let q = Pad {
        low: (0..=j)
            .map(|a| p.low[a] * if a == j { block } else { 1 })
            .collect(),
        high: (0..=j)
            .map(|a| p.high[a] * if a == j { block } else { 1 })
            .collect(),
        interior: vec![0; j + 1],
        mode: p.mode,
    };
    (merged, q, block)
}

/// The padded rows of `x` (`dims`) into a tensor of extents `to`, the last axis of `dims`
/// being whole blocks of `block` elements (its pads too: [`merge_unpadded_tail`]).
fn pad_rows<T: Element>(
    x: &[T],
    dims: &[usize],
    to: &[usize],
    (p, block): (&Pad, usize),
    fill: T,
) -> Vec<T> {
    let r = dims.len();
    let (d, o) = (dims[r - 1], to[r - 1]);
    let constant = p.mode == PadMode::Constant;
    // The source column of each output column in the low and high pads (the modes other
    // than constant), block by block; the columns between are the row itself.
    let block = block.max(1);
    let lo = p.low[r - 1];
    let source = |c: usize| {
        let (b, within) = ((c / block) as i64, c % block);
        source_index(p.mode, b - (lo / block) as i64, d / block) * block + within
    };
    let (low_cols, high_cols): (Vec<usize>, Vec<usize>) = if constant {
        (Vec::new(), Vec::new())
    } else {
        (
            (0..lo).map(source).collect(),
            (lo + d..o).map(source).collect(),
        )
    };
    let rows: usize = to[..r - 1].iter().product();
    let mut out = Vec::with_capacity(rows * o);
    // The output row's index along each leading axis (an odometer, last axis fastest).
    let mut at = vec![0usize; r - 1];
    for _ in 0..rows {
        // The input row it reads, or `None` in constant padding.
        let mut src = Some(0usize);
        for (a, &i) in at.iter().enumerate() {
            let rel = i as i64 - p.low[a] as i64;
            let inside = rel >= 0 && (rel as usize) < dims[a];
            src = match src {
                Some(_) if constant && !inside => None,
                Some(s) => Some(s * dims[a] + source_index(p.mode, rel, dims[a])),
                None => None,
            };
        }
        match src {
            None => out.resize(out.len() + o, fill),
            Some(s) => {
                // `o = low + d + high`.
                let row = &x[s * d..(s + 1) * d];
                if constant {
                    out.resize(out.len() + lo, fill);
                    out.extend_from_slice(row);
                    out.resize(out.len() + (o - lo - d), fill);
                } else {
                    out.extend(low_cols.iter().map(|&c| row[c]));
                    out.extend_from_slice(row);
                    out.extend(high_cols.iter().map(|&c| row[c]));
                }
            }
        }
        for a in (0..r - 1).rev() {
            at[a] += 1;
            if at[a] < to[a] {
                break;
            }
            at[a] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_runtime::reference;

    const MODES: [PadMode; 4] = [
        PadMode::Constant,
        PadMode::Edge,
        PadMode::Reflect,
        PadMode::Wrap,
    ];

    /// Every mode over ranks 1-4, pads on every axis (zero, small, past the extent for the
    /// copying modes' periodic cases), against the reference element for element.
    #[test]
    fn every_mode_and_rank_agrees_with_the_reference() {
        let shapes: [&[usize]; 6] = [&[5], &[3, 4], &[2, 1, 3], &[2, 3, 1, 4], &[1, 7], &[4, 2]];
        let pads: [(usize, usize); 4] = [(0, 0), (1, 2), (2, 0), (3, 3)];
        for dims in shapes {
            let n: usize = dims.iter().product();
            let x = TensorData::F32((0..n).map(|i| i as f32 * 1.5 - 2.0).collect());
            let from = Shape::new(dims);
            for mode in MODES {
                for (k, &(lo, hi)) in pads.iter().enumerate() {
                    let r = dims.len();
                    // Vary the pads by axis so axes differ.
                    let low: Vec<usize> = (0..r).map(|a| (lo + a) % 4).collect();
                    let high: Vec<usize> = (0..r).map(|a| (hi + 2 * a + k) % 4).collect();
                    // Reflect needs pads below the extent on axes of extent 1 it mirrors:
                    // the reference handles every case, so every case is compared.
                    let p = Pad {
                        low,
                        high,
                        interior: vec![0; r],
                        mode,
                    };
                    let value = TensorData::F32(vec![-7.25]);
                    let v = (mode == PadMode::Constant).then_some(&value);
                    let want = reference::pad(&x, &from, v, &p).unwrap();
                    let got = pad(&x, &from, v, &p).expect("the native kernel applies");
                    assert_eq!(got, want, "{dims:?} {p:?}");
                }
            }
        }
    }

    /// Pads on an axis followed by unpadded ones (merged into runs:
    /// `merge_unpadded_tail`), in every mode, against the reference: a map `[1, T, F, 1]`
    /// padded along `F` as harmonic stacking does, and `[2, 3, 4, 5]` padded along axis 1.
    #[test]
    fn pads_before_unpadded_axes_agree_with_the_reference() {
        let cases: [(&[usize], usize, (usize, usize)); 4] = [
            (&[1, 6, 9, 1], 2, (0, 5)),
            (&[1, 6, 9, 1], 2, (3, 0)),
            (&[2, 3, 4, 5], 1, (2, 1)),
            (&[2, 3, 4, 5], 0, (1, 1)),
        ];
        for (dims, axis, (lo, hi)) in cases {
            let n: usize = dims.iter().product();
            let x = TensorData::F32((0..n).map(|i| i as f32 * 0.5 - 3.0).collect());
            let from = Shape::new(dims);
            for mode in MODES {
                let r = dims.len();
                let mut p = Pad {
                    low: vec![0; r],
                    high: vec![0; r],
                    interior: vec![0; r],
                    mode,
                };
                (p.low[axis], p.high[axis]) = (lo, hi);
                let value = TensorData::F32(vec![9.5]);
                let v = (mode == PadMode::Constant).then_some(&value);
                let want = reference::pad(&x, &from, v, &p).unwrap();
                let got = pad(&x, &from, v, &p).expect("the native kernel applies");
                assert_eq!(got, want, "{dims:?} {p:?}");
            }
        }
    }

    /// Constant padding of an empty axis, integer data, and the cases left to the
    /// reference (interior padding, a missing or mistyped value).
    #[test]
    fn empty_axes_other_types_and_declined_cases() {
        let p = Pad {
            low: vec![1, 0],
            high: vec![0, 2],
            interior: vec![0, 0],
            mode: PadMode::Constant,
        };
        let empty = TensorData::I64(vec![]);
        let value = TensorData::I64(vec![9]);
        let from = Shape::new([2, 0]);
        assert_eq!(
            pad(&empty, &from, Some(&value), &p),
            Some(reference::pad(&empty, &from, Some(&value), &p).unwrap())
        );
        let x = TensorData::I64(vec![1, 2, 3, 4]);
        let sq = Shape::new([2, 2]);
        assert_eq!(
            pad(&x, &sq, Some(&value), &p),
            Some(reference::pad(&x, &sq, Some(&value), &p).unwrap())
        );
        let interior = Pad {
            interior: vec![1, 0],
            ..p.clone()
        };
        assert_eq!(pad(&x, &sq, Some(&value), &interior), None);
        assert_eq!(pad(&x, &sq, None, &p), None);
        assert_eq!(pad(&x, &sq, Some(&TensorData::F32(vec![1.0])), &p), None);
    }
}
