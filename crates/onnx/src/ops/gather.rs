//! Indexing operators composed from `Gather` on a flattened view: `GatherElements` and
//! `GatherND` compute each output element's row-major position in the data with integer
//! elementwise ops (fused by the JIT) and gather it; `OneHot` compares the indices with a
//! constant range. An index outside its axis becomes a position past the end, which
//! `Gather` refuses at run time (never a silent read of another element).

use graphlift_ir::{
    BinaryOp, CompareOp, ElementType, Op, Output, ReduceOp, Reduction, Shape, TensorData,
};

use super::layout::{axis, dims, reshape_to as reshape, slice_range};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// Row-major strides of `d`.
fn strides(d: &[usize]) -> Vec<usize> {
    let mut s = vec![1; d.len()];
    for k in (0..d.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * d[k + 1];
    }
    s
}

/// An `i64` constant of `shape`.
pub(super) fn i64s(
    e: &mut NodeEmitter<'_>,
    v: Vec<usize>,
    shape: &[usize],
) -> Result<Output, OnnxError> {
    let v = v.into_iter().map(|x| x as i64).collect();
    e.constant(TensorData::I64(v), Shape::new(shape))
}

/// `idx` (converted to `i64`) with negative entries counted from `extent` (which broadcasts
/// to `idx`), and `ok`: whether each entry lies in `[-extent, extent)`.
fn wrapped(
    e: &mut NodeEmitter<'_>,
    idx: Output,
    extent: Output,
) -> Result<(Output, Output), OnnxError> {
    let idx = e.convert(idx, ElementType::I64)?;
    let zero = e.scalar(ElementType::I64, 0.0)?;
    let neg = e.compare(CompareOp::Less, idx, zero)?;
    let shifted = e.binary(BinaryOp::Add, idx, extent)?;
    let idx = e.select(neg, shifted, idx)?;
    let lo = e.compare(CompareOp::GreaterEq, idx, zero)?;
    let hi = e.compare(CompareOp::Less, idx, extent)?;
    let ok = e.binary(BinaryOp::And, lo, hi)?;
    Ok((idx, ok))
}

/// `pos` where `ok`, else `past` (an out-of-range position for `Gather` to refuse).
fn guarded(
    e: &mut NodeEmitter<'_>,
    ok: Output,
    pos: Output,
    past: usize,
) -> Result<Output, OnnxError> {
    let past = e.scalar(ElementType::I64, past as f64)?;
    e.select(ok, pos, past)
}

/// Whether `indices` (extents `di`) have the rank of data `dd` and no larger extent off
/// axis `a` (ONNX `GatherElements` and `ScatterElements`).
pub(super) fn fits_off_axis(di: &[usize], dd: &[usize], a: usize) -> bool {
    di.len() == dd.len()
        && di
            .iter()
            .zip(dd)
            .enumerate()
            .all(|(k, (i, d))| k == a || i <= d)
}

/// When `indices` is a constant, that every entry lies in `[-n, n)` for the extent `n` of
/// the data axis it indexes (`axis_of(k)` for the entry at flat position `k`; `dd` the
/// data's extents): an error naming the first entry that does not, at import instead of at
/// run time (where a variable index is checked, against the flattened data).
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] naming the entry, its axis and the data's shape.
pub(super) fn check_constant_indices(
    e: &NodeEmitter<'_>,
    indices: Output,
    dd: &[usize],
    axis_of: impl Fn(usize) -> usize,
) -> Result<(), OnnxError> {
    if e.constant_value(indices).is_none() {
        return Ok(());
    }
    let values = e.constant_ints(indices, "indices")?;
    for (k, &v) in values.iter().enumerate() {
        let a = axis_of(k);
        let n = i64::try_from(dd[a]).unwrap_or(i64::MAX);
        if v < -n || v >= n {
            return Err(e.shape_error(format!(
                "index {v} (element {k} of the constant indices) is outside [{}, {n}) on axis {a} \
                 of data {dd:?}",
                -n
            )));
        }
    }
    Ok(())
}

pub(super) fn require_index(e: &NodeEmitter<'_>, v: Output) -> Result<(), OnnxError> {
    e.require(
        v,
        |t| matches!(t, ElementType::I32 | ElementType::I64),
        "INT32 or INT64 indices as",
    )
    .map(|_| ())
}

/// `GatherElements` (opsets 11, 13): `out[i..] = data[i.. with i(axis) = indices[i..]]`,
/// `indices` of `data`'s rank; negative indices count from the end.
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] when the ranks differ or an extent of `indices` off the axis
/// exceeds `data`'s; [`OnnxError::BadAttribute`] for an axis out of range.
pub(super) fn gather_elements(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (data, indices) = (e.input(ins, 0)?, e.input(ins, 1)?);
    require_index(e, indices)?;
    let (dd, di) = (dims(e, data)?, dims(e, indices)?);
    let a = axis(e, e.attr_i64("axis")?.unwrap_or(0), dd.len(), "axis")?;
    if !fits_off_axis(&di, &dd, a) {
        return Err(e.shape_error(format!(
            "indices {di:?} must have the rank of data {dd:?} and no larger extent off axis {a}"
        )));
    }
    check_constant_indices(e, indices, &dd, |_| a)?;
    along_axis(e, data, indices, a)
}

/// `data` read at `indices` along axis `a`, as `GatherElements` does (numpy's
/// `take_along_axis`): `out[i..] = data[i.. with i(a) = indices[i..]]`, `indices` (`i32` or
/// `i64`) of `data`'s rank and no larger extent off the axis (the caller checked), negative
/// ones counting from the end; one outside the axis is refused by `Gather` at run time.
pub(super) fn along_axis(
    e: &mut NodeEmitter<'_>,
    data: Output,
    indices: Output,
    a: usize,
) -> Result<Output, OnnxError> {
    let (dd, di) = (dims(e, data)?, dims(e, indices)?);
    let ds = strides(&dd);
    let n: usize = dd.iter().product();
    // The position of each index's row, every coordinate but the axis's.
    let is = strides(&di);
    let count: usize = di.iter().product();
    let offsets: Vec<usize> = (0..count)
        .map(|flat| {
            (0..di.len())
                .filter(|&k| k != a)
                .map(|k| (flat / is[k]) % di[k] * ds[k])
                .sum()
        })
        .collect();
    let extent = e.scalar(ElementType::I64, dd[a] as f64)?;
    let (idx, ok) = wrapped(e, indices, extent)?;
    let step = e.scalar(ElementType::I64, ds[a] as f64)?;
    let along = e.binary(BinaryOp::Multiply, idx, step)?;
    let offsets = i64s(e, offsets, &di)?;
    let pos = e.binary(BinaryOp::Add, along, offsets)?;
    let pos = guarded(e, ok, pos, n)?;
    let flat = reshape(e, data, vec![n])?;
    e.op(Op::Gather(0), &[flat, pos])
}

/// `GatherND` (opsets 11–13): `indices` `[B.., I.., k]` pick slices of `data`
/// `[B.., D..]` (`B` the `batch_dims` leading axes, shared): `out[b, i] =
/// data[b, indices[b, i, 0], .., indices[b, i, k-1], ..]` of shape `[B.., I.., D[k..]]`.
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] when `k` exceeds the data's rank after the batch axes or the
/// batch extents differ; [`OnnxError::BadAttribute`] for a negative or too large
/// `batch_dims`.
pub(super) fn gather_nd(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (data, indices) = (e.input(ins, 0)?, e.input(ins, 1)?);
    require_index(e, indices)?;
    let (dd, di) = (dims(e, data)?, dims(e, indices)?);
    if di.is_empty() {
        return Err(e.shape_error("indices must have rank >= 1, are a scalar".into()));
    }
    let b = e.attr_i64("batch_dims")?.unwrap_or(0);
    let b = usize::try_from(b)
        .ok()
        .filter(|&b| b < di.len() && b < dd.len())
        .ok_or_else(|| {
            e.attribute_error(
                "batch_dims",
                format!("{b} is out of range for {dd:?}, {di:?}"),
            )
        })?;
    let k = di[di.len() - 1];
    if dd[..b] != di[..b] || b + k > dd.len() {
        return Err(e.shape_error(format!(
            "indices {di:?} do not index data {dd:?} with batch_dims {b}"
        )));
    }
    check_constant_indices(e, indices, &dd, |i| b + i % k.max(1))?;
    let picked = &dd[b..b + k];
    let rest = dd[b + k..].to_vec();
    let batch: usize = dd[..b].iter().product();
    let cells: usize = picked.iter().product();
    let rows = batch * cells;
    let extents = i64s(e, picked.to_vec(), &[k])?;
    let (idx, ok) = wrapped(e, indices, extents)?;
    let weights = i64s(e, strides(picked), &[k])?;
    let weighted = e.binary(BinaryOp::Multiply, idx, weights)?;
    let last = di.len() - 1;
    let sum = Reduction {
        op: ReduceOp::Sum,
        axes: vec![last],
        keep_dims: false,
    };
    let pos = e.op(Op::Reduce(sum), &[weighted])?;
    let all = Reduction {
        op: ReduceOp::Min,
        axes: vec![last],
        keep_dims: false,
    };
    // Every coordinate in range ("all", over 0/1 integers).
    let ok = e.convert(ok, ElementType::I32)?;
    let ok = e.op(Op::Reduce(all), &[ok])?;
    let zero = e.scalar(ElementType::I32, 0.0)?;
    let ok = e.compare(CompareOp::Greater, ok, zero)?;
    let lead = di[..last].to_vec();
    let pos = if b > 0 {
        let per_batch: usize = di[b..last].iter().product();
        let offsets = (0..batch * per_batch)
            .map(|f| f / per_batch * cells)
            .collect();
        let offsets = i64s(e, offsets, &lead)?;
        e.binary(BinaryOp::Add, pos, offsets)?
    } else {
        pos
    };
    let pos = guarded(e, ok, pos, rows)?;
    let mut view = vec![rows];
    view.extend(&rest);
    let flat = reshape(e, data, view)?;
    e.op(Op::Gather(0), &[flat, pos])
}

/// `OneHot` (opsets 9, 11): `out[.., j at axis, ..] = indices[..] == j ? on : off` for `j` in
/// `0..depth`, negative indices counting from `depth`; `depth` a constant, `values` =
/// `[off, on]` giving the output type; `axis` (default -1) where the new axis goes.
///
/// # Errors
/// [`OnnxError::RunTimeOperand`] / [`OnnxError::UnsupportedFeature`] when `depth` is not
/// constant; [`OnnxError::ShapeMismatch`] for a depth that is not one positive number or
/// `values` not of 2 elements.
pub(super) fn one_hot(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 3, 3)?;
    let (indices, depth, values) = (e.input(ins, 0)?, e.input(ins, 1)?, e.input(ins, 2)?);
    let depth_value = if e.et(depth)?.is_float() {
        e.constant_floats(depth, "input 1 (`depth`)")?
    } else {
        e.constant_ints(depth, "input 1 (`depth`)")?
            .into_iter()
            .map(|d| d as f64)
            .collect()
    };
    let n = match depth_value[..] {
        [d] if (1.0..1e12).contains(&d) => d as usize,
        _ => {
            return Err(e.shape_error(format!(
                "depth must be one positive number, is {depth_value:?}"
            )))
        }
    };
    if dims(e, values)?.iter().product::<usize>() != 2 {
        return Err(e.shape_error("values must hold 2 elements (off, on)".into()));
    }
    let values = reshape(e, values, vec![2])?;
    let off = slice_range(e, values, 0, 0, 1)?;
    let off = reshape(e, off, vec![])?;
    let on = slice_range(e, values, 0, 1, 1)?;
    let on = reshape(e, on, vec![])?;
    let di = dims(e, indices)?;
    let a = axis(e, e.attr_i64("axis")?.unwrap_or(-1), di.len() + 1, "axis")?;
    let extent = e.scalar(ElementType::I64, n as f64)?;
    let (idx, _) = wrapped(e, indices, extent)?;
    let mut spread = di.clone();
    spread.insert(a, 1);
    let idx = reshape(e, idx, spread)?;
    let mut along = vec![1; di.len() + 1];
    along[a] = n;
    let range = i64s(e, (0..n).collect(), &along)?;
    let hit = e.compare(CompareOp::Equal, idx, range)?;
    e.select(hit, on, off)
}
