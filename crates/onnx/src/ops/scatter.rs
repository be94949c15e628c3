//! `ScatterND` and `ScatterElements` (and its former name `Scatter`) as the IR's
//! `ScatterNd`: `ScatterElements` becomes one full index tuple per update element, the
//! element's own coordinates with the index put in on the axis.

use graphlift_ir::{ElementType, Op, Output, ScatterReduction};

use super::gather::{check_constant_indices, fits_off_axis, i64s, require_index};
use super::layout::{axis, dims, reshape_to};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// The `reduction` attribute (opsets 16 and 18; absent before: `none`).
fn reduction(e: &NodeEmitter<'_>) -> Result<ScatterReduction, OnnxError> {
    let options = [
        ScatterReduction::None,
        ScatterReduction::Add,
        ScatterReduction::Mul,
        ScatterReduction::Max,
        ScatterReduction::Min,
    ]
    .map(|r| (r.name(), r));
    e.attr_choice("reduction", "none", &options)
}

/// `data`, `indices` and `updates`, `updates` of `data`'s element type.
fn operands(e: &NodeEmitter<'_>, ins: In<'_>) -> Result<(Output, Output, Output), OnnxError> {
    e.arity(ins, 3, 3)?;
    let (data, indices, updates) = (e.input(ins, 0)?, e.input(ins, 1)?, e.input(ins, 2)?);
    require_index(e, indices)?;
    e.same_type(&[data, updates])?;
    Ok((data, indices, updates))
}

/// `ScatterND` (opsets 11, 13, 16, 18): a copy of `data` whose slices `data[indices[i..]]`
/// are replaced by (or, with `reduction`, combined with) `updates[i..]`; `indices` `[I.., q]`,
/// `updates` `[I.., data.shape[q..]]`. Negative indices count from the end; one outside its
/// axis is an error at run time. Of repeated positions without a reduction the last update
/// wins (ONNX leaves that case undefined).
///
/// # Errors
/// [`OnnxError::ShapeMismatch`] when the shapes do not fit; [`OnnxError::TypeMismatch`] for
/// non-integer indices, `updates` of another type than `data`, or a reduction of BOOL;
/// [`OnnxError::BadAttribute`] for an unknown reduction.
pub(super) fn scatter_nd(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let (data, indices, updates) = operands(e, ins)?;
    let r = reduction(e)?;
    let (dd, di, du) = (dims(e, data)?, dims(e, indices)?, dims(e, updates)?);
    let fits = di.split_last().is_some_and(|(&q, lead)| {
        q <= dd.len()
            && du.len() == lead.len() + dd.len() - q
            && du[..lead.len()] == *lead
            && du[lead.len()..] == dd[q..]
    });
    if !fits {
        return Err(e.shape_error(format!(
            "indices {di:?} and updates {du:?} do not fit data {dd:?} (updates must be \
             indices.shape[..-1] ++ data.shape[indices.shape[-1]..])"
        )));
    }
    numeric_if_reduced(e, data, r)?;
    let q = di.last().copied().unwrap_or(1).max(1);
    check_constant_indices(e, indices, &dd, |i| i % q)?;
    e.op(Op::ScatterNd(r), &[data, indices, updates])
}

/// `ScatterElements` (opsets 11, 13, 16, 18) and `Scatter` (opsets 9–10): a copy of `data`
/// with `data[i.. with i(axis) = indices[i..]]` replaced by (or combined with)
/// `updates[i..]`; `indices` and `updates` of one shape, `data`'s rank and no larger extent
/// off the axis; `axis` (default 0) may be negative, so may the indices.
///
/// # Errors
/// As [`scatter_nd`], and [`OnnxError::BadAttribute`] for an axis out of range.
pub(super) fn scatter_elements(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let (data, indices, updates) = operands(e, ins)?;
    let r = reduction(e)?;
    let (dd, di, du) = (dims(e, data)?, dims(e, indices)?, dims(e, updates)?);
    let a = axis(e, e.attr_i64("axis")?.unwrap_or(0), dd.len(), "axis")?;
    if di != du || !fits_off_axis(&di, &dd, a) {
        return Err(e.shape_error(format!(
            "indices {di:?} and updates {du:?} must have one shape, the rank of data {dd:?} \
             and no larger extent off axis {a}"
        )));
    }
    numeric_if_reduced(e, data, r)?;
    check_constant_indices(e, indices, &dd, |_| a)?;
    // Tuples [.., rank]: the element's coordinates before the axis, the index, those after.
    let count: usize = di.iter().product();
    let coordinates = |e: &mut NodeEmitter<'_>, axes: std::ops::Range<usize>| {
        let width = axes.len();
        let mut v = Vec::with_capacity(count * width);
        for flat in 0..count {
            let mut rest = flat;
            let mut coords = vec![0; di.len()];
            for k in (0..di.len()).rev() {
                coords[k] = rest % di[k];
                rest /= di[k];
            }
            v.extend(axes.clone().map(|k| coords[k]));
        }
        let mut shape = di.clone();
        shape.push(width);
        i64s(e, v, &shape)
    };
    let mut parts = Vec::with_capacity(3);
    if a > 0 {
        parts.push(coordinates(e, 0..a)?);
    }
    let idx = e.convert(indices, ElementType::I64)?;
    let mut column = di.clone();
    column.push(1);
    parts.push(reshape_to(e, idx, column)?);
    if a + 1 < dd.len() {
        parts.push(coordinates(e, a + 1..dd.len())?);
    }
    let tuples = if parts.len() == 1 {
        parts[0]
    } else {
        e.op(Op::Concat(dd.len()), &parts)?
    };
    e.op(Op::ScatterNd(r), &[data, tuples, updates])
}

fn numeric_if_reduced(
    e: &NodeEmitter<'_>,
    data: Output,
    r: ScatterReduction,
) -> Result<(), OnnxError> {
    if r != ScatterReduction::None && !e.et(data)?.is_numeric() {
        return Err(e.type_error(format!(
            "reduction `{}` needs a numeric type, data is {}",
            r.name(),
            e.et(data)?
        )));
    }
    Ok(())
}
