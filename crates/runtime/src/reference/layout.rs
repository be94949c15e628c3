//! Data-movement reference kernels: reshape, transpose, slice, concat, gather and scatter. None of
//! them computes; each output element is a copy of one input element.

use graphlift_ir::{map_data, match_data, BinaryOp, Shape, SliceAxis, TensorData};

use super::arith::Arith;

/// The elements of `data` at `index`, in order (any element type): the definition the
/// strided walk [`take_strided`] is tested against, and the gather of the padding modes that
/// copy elements.
pub(crate) fn take(data: &TensorData, index: &[usize]) -> TensorData {
    fn pick<T: Clone>(v: &[T], index: &[usize]) -> Vec<T> {
        index.iter().map(|&i| v[i].clone()).collect()
    }
    map_data!(data, v => pick(v, index))
}

/// The source index of every element of an output of extents `dims` (row-major), where
/// moving one step along output axis `a` moves `strides[a]` in the source and the first
/// element is at `base`. Broadcast (stride 0), transpose (permuted strides) and slice
/// (scaled, possibly negative strides) are all this walk ([`take_strided`] copies along it).
pub(crate) fn strided_indices(dims: &[usize], strides: &[isize], base: usize) -> Vec<usize> {
    let n: usize = dims.iter().product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let mut idx = vec![0usize; dims.len()];
    let mut src = base as isize;
    for _ in 0..n {
        out.push(src as usize);
        for a in (0..dims.len()).rev() {
            idx[a] += 1;
            src += strides[a];
            if idx[a] < dims[a] {
                break;
            }
            src -= strides[a] * idx[a] as isize;
            idx[a] = 0;
        }
    }
    out
}

/// The elements of `data` along the strided walk of [`strided_indices`] (output extents
/// `dims`, source `strides` per output axis, first element at `base`), copied directly: axes
/// of extent 1 are dropped, adjacent axes that walk the source as one are merged, and an
/// innermost stride of 1 copies whole runs. Same elements as
/// `take(data, &strided_indices(dims, strides, base))` without the index vector.
pub(crate) fn take_strided(
    data: &TensorData,
    dims: &[usize],
    strides: &[isize],
    base: usize,
) -> TensorData {
    // (extent, stride) per kept axis, outermost first, merged where contiguous.
    let mut axes: Vec<(usize, isize)> = Vec::with_capacity(dims.len());
    for (&d, &s) in dims.iter().zip(strides) {
        if d == 0 {
            return TensorData::zeros(data.element_type(), 0);
        }
        if d == 1 {
            continue;
        }
        match axes.last_mut() {
            Some((od, os)) if *os == s * d as isize => {
                *od *= d;
                *os = s;
            }
            _ => axes.push((d, s)),
        }
    }
    fn copy<T: Clone>(v: &[T], axes: &[(usize, isize)], base: usize) -> Vec<T> {
        let Some((&(inner, step), outer)) = axes.split_last() else {
            return vec![v[base].clone()];
        };
        let n = inner * outer.iter().map(|a| a.0).product::<usize>();
        let mut out = Vec::with_capacity(n);
        let mut idx = vec![0usize; outer.len()];
        let mut src = base as isize;
        loop {
            let start = src as usize;
            if step == 1 {
                out.extend_from_slice(&v[start..start + inner]);
            } else {
                out.extend((0..inner).map(|k| v[(src + k as isize * step) as usize].clone()));
            }
            // Odometer over the outer axes.
            let mut a = outer.len();
            loop {
                if a == 0 {
                    return out;
                }
                a -= 1;
                idx[a] += 1;
                src += outer[a].1;
                if idx[a] < outer[a].0 {
                    break;
                }
                src -= outer[a].1 * idx[a] as isize;
                idx[a] = 0;
            }
        }
    }
    map_data!(data, v => copy(v, &axes, base))
}

pub(crate) fn check_len(data: &TensorData, shape: &Shape) -> Result<usize, String> {
    let n = shape.element_count().map_err(|e| e.to_string())?;
    if data.len() == n {
        Ok(n)
    } else {
        Err(format!("{} elements for shape {shape}", data.len()))
    }
}

fn signed_strides(shape: &Shape) -> Vec<isize> {
    shape.strides().iter().map(|&s| s as isize).collect()
}

/// Permutes the axes of `data` (shape `from`): output axis `i` is input axis `perm[i]`.
///
/// # Errors
/// A message when the data does not fill `from` or `perm` is not a permutation of its axes.
pub fn transpose(data: &TensorData, from: &Shape, perm: &[usize]) -> Result<TensorData, String> {
    check_len(data, from)?;
    if perm.len() != from.rank() || perm.iter().any(|&p| p >= from.rank()) {
        return Err(format!("perm {perm:?} does not fit {from}"));
    }
    let s = signed_strides(from);
    let dims: Vec<usize> = perm.iter().map(|&p| from.dims()[p]).collect();
    let strides: Vec<isize> = perm.iter().map(|&p| s[p]).collect();
    Ok(take_strided(data, &dims, &strides, 0))
}

/// A strided slice of `data` (shape `from`), one [`SliceAxis`] per axis.
///
/// # Errors
/// A message when the data does not fill `from` or a slice axis leaves its extent.
pub fn slice(data: &TensorData, from: &Shape, axes: &[SliceAxis]) -> Result<TensorData, String> {
    check_len(data, from)?;
    if axes.len() != from.rank() {
        return Err(format!("{} slice axes for {from}", axes.len()));
    }
    let s = signed_strides(from);
    let mut base = 0usize;
    let mut strides = Vec::with_capacity(axes.len());
    for (a, (ax, &d)) in axes.iter().zip(from.dims()).enumerate() {
        if ax.len > 0 {
            let last = ax.start as i128 + i128::from(ax.step) * (ax.len as i128 - 1);
            if ax.start >= d || last < 0 || last >= d as i128 {
                return Err(format!("slice axis {a} leaves the extent {d}"));
            }
        }
        base += ax.start * from.strides()[a];
        strides.push(ax.step as isize * s[a]);
    }
    let dims: Vec<usize> = axes.iter().map(|a| a.len).collect();
    Ok(take_strided(data, &dims, &strides, base))
}

/// Joins `parts` (each `(data, shape)`) along `axis`.
///
/// # Errors
/// A message when the parts' element types or shapes do not fit together.
pub fn concat(parts: &[(&TensorData, &Shape)], axis: usize) -> Result<TensorData, String> {
    let Some(&(first, first_shape)) = parts.first() else {
        return Err("nothing to concatenate".into());
    };
    if axis >= first_shape.rank() {
        return Err(format!("axis {axis} is out of range for {first_shape}"));
    }
    let outer: usize = first_shape.dims()[..axis].iter().product();
    let mut chunks = Vec::with_capacity(parts.len());
    for &(d, s) in parts {
        check_len(d, s)?;
        let other_axes_differ = s.rank() != first_shape.rank()
            || (0..s.rank()).any(|a| a != axis && s.dims()[a] != first_shape.dims()[a]);
        if d.element_type() != first.element_type() || other_axes_differ {
            return Err(format!(
                "cannot join {s} of {} to {first_shape}",
                d.element_type()
            ));
        }
        // Elements per outer index: the axis extent times everything after it.
        chunks.push(s.dims()[axis..].iter().product::<usize>());
    }
    let total = chunks.iter().sum::<usize>() * outer;
    // Per outer index, each part's run of `chunk` elements in turn.
    fn join<T: Clone>(parts: &[&[T]], chunks: &[usize], outer: usize, total: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(total);
        for o in 0..outer {
            for (v, &c) in parts.iter().zip(chunks) {
                out.extend_from_slice(&v[o * c..(o + 1) * c]);
            }
        }
        out
    }
    /// Every part's elements as `T` (through `get`), or `None` when a part is of another
    /// element type.
    fn slices<'a, T: 'a>(
        parts: &[(&'a TensorData, &Shape)],
        get: impl Fn(&'a TensorData) -> Option<&'a [T]>,
    ) -> Option<Vec<&'a [T]>> {
        parts.iter().map(|&(d, _)| get(d)).collect()
    }
    let mismatch = || "parts of different element types".to_string();
    Ok(map_data!(first, _v => {
        join(&slices(parts, TensorData::as_slice).ok_or_else(mismatch)?, &chunks, outer, total)
    }, String(_) => {
        join(&slices(parts, TensorData::as_strings).ok_or_else(mismatch)?, &chunks, outer, total)
    }))
}

/// Gathers slices of `data` (shape `from`) along `axis` at `indices` (`i32` or `i64`; a
/// negative index counts from the end).
///
/// # Errors
/// A message naming the first index outside `[-d, d)` for the axis extent `d`, or when the
/// indices are not integers.
pub fn gather(
    data: &TensorData,
    from: &Shape,
    indices: &TensorData,
    axis: usize,
) -> Result<TensorData, String> {
    check_len(data, from)?;
    if axis >= from.rank() {
        return Err(format!("axis {axis} is out of range for {from}"));
    }
    let d = from.dims()[axis];
    let outer: usize = from.dims()[..axis].iter().product();
    let inner: usize = from.dims()[axis + 1..].iter().product();
    let rows = gathered_rows(indices, d, axis)?;
    // One run of `inner` elements per (outer index, gathered row).
    let runs = (0..outer).flat_map(|o| rows.iter().map(move |&r| ((o * d + r) * inner, inner)));
    Ok(take_runs(data, outer * rows.len() * inner, runs))
}

/// The rows along an axis of extent `d` that `Gather` indices (`i32` or `i64`) select, a
/// negative index counting from the end: shared by [`gather`], [`scatter_add`] and the
/// native `Gather` kernel.
///
/// # Errors
/// Indices that are not integers, or one outside `[-d, d)` (naming it and its position).
pub fn gathered_rows(indices: &TensorData, d: usize, axis: usize) -> Result<Vec<usize>, String> {
    index_values(indices)?
        .iter()
        .enumerate()
        .map(|(k, &i)| wrap_index(i, d, k, axis))
        .collect()
}

/// The elements of an index tensor (`i32` or `i64`) as `i64`.
///
/// # Errors
/// Indices that are not integers.
pub(super) fn index_values(indices: &TensorData) -> Result<Vec<i64>, String> {
    match indices {
        TensorData::I32(v) => Ok(v.iter().map(|&i| i64::from(i)).collect()),
        TensorData::I64(v) => Ok(v.clone()),
        other => Err(format!("indices are {}, not i32/i64", other.element_type())),
    }
}

/// Index `i` (element `k` of the indices) on an axis of extent `d`, a negative one counting
/// from the end (ONNX, numpy): shared by `Gather`, `ScatterAdd` and `ScatterNd`.
///
/// # Errors
/// An index outside `[-d, d)`, named with its position and the axis.
pub(super) fn wrap_index(i: i64, d: usize, k: usize, axis: usize) -> Result<usize, String> {
    let j = if i < 0 { i + d as i64 } else { i };
    usize::try_from(j).ok().filter(|&j| j < d).ok_or_else(|| {
        format!("index {i} (element {k} of the indices) is outside [-{d}, {d}) on axis {axis}")
    })
}

/// `ScatterAdd(axis)` into zeros of `shape`: the adjoint of [`gather`] (see
/// [`graphlift_ir::ScatterAdd`]); `updates` have the gather's output shape.
///
/// # Errors
/// An index outside `[-d, d)` (naming it and its position), or indices that are not integers.
pub fn scatter_add(
    updates: &TensorData,
    indices: &TensorData,
    shape: &Shape,
    axis: usize,
) -> Result<TensorData, String> {
    if axis >= shape.rank() {
        return Err(format!("axis {axis} is out of range for {shape}"));
    }
    let d = shape.dims()[axis];
    let outer: usize = shape.dims()[..axis].iter().product();
    let inner: usize = shape.dims()[axis + 1..].iter().product();
    let rows = gathered_rows(indices, d, axis)?;
    if updates.len() != outer * rows.len() * inner {
        return Err(format!(
            "{} updates given, the gather's shape holds {}",
            updates.len(),
            outer * rows.len() * inner
        ));
    }
    /// Sums in the element type ([`Arith`]: integers wrap, `f16`/`bf16` round per add).
    fn add<T: Arith + Default>(
        u: &[T],
        rows: &[usize],
        (outer, d, inner): (usize, usize, usize),
    ) -> Vec<T> {
        let mut out = vec![T::default(); outer * d * inner];
        for o in 0..outer {
            for (k, &r) in rows.iter().enumerate() {
                let src = (o * rows.len() + k) * inner;
                let dst = (o * d + r) * inner;
                for t in 0..inner {
                    out[dst + t] = T::binary(BinaryOp::Add, out[dst + t], u[src + t]);
                }
            }
        }
        out
    }
    if !updates.element_type().is_numeric() {
        return Err(format!(
            "updates are {}, not numeric",
            updates.element_type()
        ));
    }
    let dims = (outer, d, inner);
    match_data!(updates, u => Ok(add(u, &rows, dims).into()),
        String(_) => Err("updates are string, not numeric".into()))
}

/// The runs `(start, len)` of `data`, in order, as one tensor of `total` elements.
fn take_runs(
    data: &TensorData,
    total: usize,
    runs: impl Iterator<Item = (usize, usize)>,
) -> TensorData {
    fn copy<T: Clone>(v: &[T], total: usize, runs: impl Iterator<Item = (usize, usize)>) -> Vec<T> {
        let mut out = Vec::with_capacity(total);
        for (start, len) in runs {
            out.extend_from_slice(&v[start..start + len]);
        }
        out
    }
    map_data!(data, v => copy(v, total, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_strided_is_take_of_strided_indices() {
        let data = TensorData::I64((0..120).collect());
        // (dims, strides, base): a transpose, contiguous runs, a broadcast, a reversed
        // slice, extents of 1 and 0, and a scalar.
        let walks: [(&[usize], &[isize], usize); 8] = [
            (&[5, 4, 6], &[6, 30, 1], 0),
            (&[4, 5, 6], &[1, 24, 4], 0),
            (&[2, 3, 4, 5], &[60, 20, 5, 1], 0),
            (&[3, 1, 4], &[0, 7, 1], 2),
            (&[2, 3, 4], &[-60, 20, -2], 67),
            (&[1, 6, 1], &[9, 5, 3], 11),
            (&[3, 0, 2], &[1, 1, 1], 0),
            (&[], &[], 42),
        ];
        for (dims, strides, base) in walks {
            assert_eq!(
                take_strided(&data, dims, strides, base),
                take(&data, &strided_indices(dims, strides, base)),
                "{dims:?} {strides:?} {base}"
            );
        }
    }

    fn f(v: &[f32]) -> TensorData {
        TensorData::F32(v.to_vec())
    }
    fn iota(n: usize) -> TensorData {
        TensorData::F32((0..n).map(|i| i as f32).collect())
    }

    #[test]
    fn transpose_moves_axes() {
        let r = transpose(&iota(6), &Shape::new([2, 3]), &[1, 0]).unwrap();
        assert_eq!(r, f(&[0., 3., 1., 4., 2., 5.]));
        // [2, 3, 4] with perm [0, 2, 1]: out[a][b][c] = in[a][c][b].
        let r = transpose(&iota(24), &Shape::new([2, 3, 4]), &[0, 2, 1]).unwrap();
        let TensorData::F32(v) = r else { panic!() };
        assert_eq!(v[..6], [0., 4., 8., 1., 5., 9.]);
        assert_eq!(v[12], 12.0);
    }

    #[test]
    fn slice_with_negative_steps() {
        let rev = SliceAxis {
            start: 4,
            step: -2,
            len: 3,
        };
        assert_eq!(
            slice(&iota(5), &Shape::new([5]), &[rev]).unwrap(),
            f(&[4., 2., 0.])
        );
        let rows = SliceAxis {
            start: 1,
            step: 1,
            len: 1,
        };
        let r = slice(&iota(6), &Shape::new([2, 3]), &[rows, SliceAxis::full(3)]).unwrap();
        assert_eq!(r, f(&[3., 4., 5.]));
        let empty = SliceAxis {
            start: 0,
            step: 1,
            len: 0,
        };
        assert!(slice(&iota(5), &Shape::new([5]), &[empty])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn concat_and_gather() {
        let a = iota(4);
        let b = f(&[9., 8.]);
        let (sa, sb) = (Shape::new([2, 2]), Shape::new([2, 1]));
        let r = concat(&[(&a, &sa), (&b, &sb)], 1).unwrap();
        assert_eq!(r, f(&[0., 1., 9., 2., 3., 8.]));
        let r = concat(&[(&a, &sa), (&a, &sa)], 0).unwrap();
        assert_eq!(r, f(&[0., 1., 2., 3., 0., 1., 2., 3.]));
        let idx = TensorData::I64(vec![2, -3, 0]);
        let r = gather(&iota(6), &Shape::new([3, 2]), &idx, 0).unwrap();
        assert_eq!(r, f(&[4., 5., 0., 1., 0., 1.]));
        let r = gather(&iota(6), &Shape::new([3, 2]), &TensorData::I32(vec![1]), 1).unwrap();
        assert_eq!(r, f(&[1., 3., 5.]));
        let bad = gather(&iota(6), &Shape::new([3, 2]), &TensorData::I64(vec![3]), 0);
        assert!(bad.unwrap_err().contains("index 3"));
        // Three parts along a middle axis, and parts whose other extents differ.
        let (s1, s2) = (Shape::new([2, 1, 3]), Shape::new([2, 2, 3]));
        let r = concat(&[(&iota(6), &s1), (&iota(12), &s2), (&iota(6), &s1)], 1).unwrap();
        let want: Vec<f32> = [0., 1., 2., 0., 1., 2., 3., 4., 5., 0., 1., 2.]
            .into_iter()
            .chain([3., 4., 5., 6., 7., 8., 9., 10., 11., 3., 4., 5.])
            .collect();
        assert_eq!(r, f(&want));
        let other = Shape::new([3, 1, 2]);
        let bad = concat(&[(&iota(6), &s1), (&iota(6), &other)], 1);
        assert!(bad.unwrap_err().contains("cannot join"));
    }
}
