//! The `Pad` reference kernel: constant padding (with interior padding, XLA's), and ONNX's
//! `reflect`, `edge` and `wrap` modes, which copy elements of the data.

use graphlift_ir::{map_data, Pad, PadMode, Shape, TensorData};

use super::layout::{check_len, strided_indices, take};

/// `data` (shape `from`) padded as `p` says ([`graphlift_ir::Pad`]). In
/// [`PadMode::Constant`] every output element is `value` except where an input element
/// lands, at `low[a] + i[a] * (interior[a] + 1)` along each axis; in the other modes output
/// position `o` of axis `a` copies the input element [`source_index`] gives.
///
/// # Errors
/// A message when the data does not fill `from`, the pads do not fit its rank, the mode
/// cannot pad an empty axis, or (constant mode) `value` is missing or not one element of
/// `data`'s type.
pub fn pad(
    data: &TensorData,
    from: &Shape,
    value: Option<&TensorData>,
    p: &Pad,
) -> Result<TensorData, String> {
    check_len(data, from)?;
    let to = Shape::new(p.output_extents(from.dims())?);
    let n = to.element_count().map_err(|e| e.to_string())?;
    if p.mode != PadMode::Constant {
        let maps: Vec<Vec<usize>> = (0..from.rank())
            .map(|a| {
                let d = from.dims()[a];
                (0..to.dims()[a])
                    .map(|o| source_index(p.mode, o as i64 - p.low[a] as i64, d))
                    .collect()
            })
            .collect();
        let strides = from.strides();
        let mut index = vec![0usize; n];
        // Row-major over the output: the source offset is the sum over axes.
        let out_strides = to.strides();
        for (k, slot) in index.iter_mut().enumerate() {
            *slot = (0..from.rank())
                .map(|a| maps[a][(k / out_strides[a]) % to.dims()[a]] * strides[a])
                .sum();
        }
        return Ok(take(data, &index));
    }
    let value = value.ok_or("constant padding needs the padding value")?;
    let out_strides = to.strides();
    let strides: Vec<isize> = (0..from.rank())
        .map(|a| (out_strides[a] * (p.interior[a] + 1)) as isize)
        .collect();
    let base = (0..from.rank()).map(|a| p.low[a] * out_strides[a]).sum();
    let landing = strided_indices(from.dims(), &strides, base);
    fn fill<T: Clone>(x: &[T], value: &[T], n: usize, landing: &[usize]) -> Result<Vec<T>, String> {
        let [v] = value else {
            return Err(format!(
                "the padding value has {} elements, not 1",
                value.len()
            ));
        };
        let mut out = vec![v.clone(); n];
        for (&at, e) in landing.iter().zip(x) {
            out[at] = e.clone();
        }
        Ok(out)
    }
    let mismatch = || {
        format!(
            "the padding value is {}, the data {}",
            value.element_type(),
            data.element_type()
        )
    };
    Ok(map_data!(data, x => {
        fill(x, value.as_slice().ok_or_else(mismatch)?, n, &landing)?
    }, String(x) => fill(x, value.as_strings().ok_or_else(mismatch)?, n, &landing)?))
}

/// The input index along an axis of extent `d >= 1` that padding `mode` copies to position
/// `i` (relative to the first input element, so negative before it): `Edge` clamps,
/// `Wrap` is periodic with period `d`, `Reflect` mirrors without repeating the edge (period
/// `2 (d - 1)`, numpy's `reflect`). `Constant` has no source; it gets the clamped index.
pub fn source_index(mode: PadMode, i: i64, d: usize) -> usize {
    let d = d as i64;
    let at = match mode {
        PadMode::Constant | PadMode::Edge => i.clamp(0, d - 1),
        PadMode::Wrap => i.rem_euclid(d),
        PadMode::Reflect if d == 1 => 0,
        PadMode::Reflect => {
            let m = i.rem_euclid(2 * (d - 1));
            if m >= d {
                2 * (d - 1) - m
            } else {
                m
            }
        }
    };
    at as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: &[f32]) -> TensorData {
        TensorData::F32(v.to_vec())
    }
    fn iota(n: usize) -> TensorData {
        TensorData::F32((0..n).map(|i| i as f32).collect())
    }
    fn padding(low: Vec<usize>, high: Vec<usize>, mode: PadMode) -> Pad {
        let interior = vec![0; low.len()];
        Pad {
            low,
            high,
            interior,
            mode,
        }
    }

    #[test]
    fn pad_puts_the_data_between_the_padding() {
        let p = Pad {
            low: vec![1, 0],
            high: vec![0, 1],
            interior: vec![0, 1],
            mode: PadMode::Constant,
        };
        // [[0, 1], [2, 3]] -> one row before, a zero between and after each row's elements.
        let r = pad(&iota(4), &Shape::new([2, 2]), Some(&f(&[9.])), &p).unwrap();
        let want = [9., 9., 9., 9., 0., 9., 1., 9., 2., 9., 3., 9.];
        assert_eq!(r, f(&want));
        let empty = pad(&iota(0), &Shape::new([0, 2]), Some(&f(&[7.])), &p).unwrap();
        assert_eq!(empty, f(&[7.; 4]));
        let bad = pad(
            &iota(4),
            &Shape::new([2, 2]),
            Some(&TensorData::I64(vec![1])),
            &p,
        );
        assert!(bad.unwrap_err().contains("padding value"));
        assert!(pad(&iota(4), &Shape::new([2, 2]), None, &p).is_err());
        let short = Pad { low: vec![1], ..p };
        assert!(pad(&iota(4), &Shape::new([2, 2]), Some(&f(&[0.])), &short).is_err());
    }

    #[test]
    fn modes_copy_as_numpy_pad_does() {
        // np.pad([0, 1, 2], (2, 3), mode)
        let x = iota(3);
        let s = Shape::new([3]);
        let run = |mode| pad(&x, &s, None, &padding(vec![2], vec![3], mode)).unwrap();
        assert_eq!(run(PadMode::Reflect), f(&[2., 1., 0., 1., 2., 1., 0., 1.]));
        assert_eq!(run(PadMode::Edge), f(&[0., 0., 0., 1., 2., 2., 2., 2.]));
        assert_eq!(run(PadMode::Wrap), f(&[1., 2., 0., 1., 2., 0., 1., 2.]));
        // 2-D: rows and columns at once; np.pad([[0, 1], [2, 3]], ((1, 0), (0, 1)), "reflect")
        let p = padding(vec![1, 0], vec![0, 1], PadMode::Reflect);
        let r = pad(&iota(4), &Shape::new([2, 2]), None, &p).unwrap();
        assert_eq!(r, f(&[2., 3., 2., 0., 1., 0., 2., 3., 2.]));
        // Reflection beyond the extent, and of one element.
        assert_eq!(source_index(PadMode::Reflect, -5, 3), 1);
        assert_eq!(source_index(PadMode::Reflect, 7, 1), 0);
        // An empty axis has nothing to copy.
        let p = padding(vec![1], vec![0], PadMode::Edge);
        assert!(pad(&iota(0), &Shape::new([0]), None, &p)
            .unwrap_err()
            .contains("empty"));
        let mut p = padding(vec![1], vec![0], PadMode::Wrap);
        p.interior = vec![1];
        assert!(pad(&x, &s, None, &p).unwrap_err().contains("interior"));
    }
}
