//! Shape and data-movement operators (`Shape`, `Size`, `Reshape`, `Flatten`, `Squeeze`,
//! `Unsqueeze`, `Transpose`, `Concat`, `Slice`, `Gather`, `Expand`, `ConstantOfShape`,
//! `Range`, `NonZero`); shapes are static, so every shape-valued input must be a constant once
//! import-time folding has run.

use graphlift_ir::{Op, Output, Shape, SliceAxis, TensorData};
use graphlift_runtime::reference;

use super::In;
use crate::emit::{NodeEmitter, FOLD_LIMIT};
use crate::error::OnnxError;
use crate::tensor::tensor_from_proto;

/// `a` as an axis of a rank-`rank` tensor (ONNX allows `-rank..rank`).
pub(super) fn axis(
    e: &NodeEmitter<'_>,
    a: i64,
    rank: usize,
    what: &str,
) -> Result<usize, OnnxError> {
    let r = rank as i64;
    if a < -r || a >= r {
        return Err(e.attribute_error(what, format!("axis {a} is out of range for rank {rank}")));
    }
    Ok(if a < 0 { a + r } else { a } as usize)
}

/// Sorted, distinct axes from a list that may hold negative ones.
pub(super) fn axes(
    e: &NodeEmitter<'_>,
    list: &[i64],
    rank: usize,
    what: &str,
) -> Result<Vec<usize>, OnnxError> {
    let mut out = list
        .iter()
        .map(|&a| axis(e, a, rank, what))
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_unstable();
    if out.windows(2).any(|w| w[0] == w[1]) {
        return Err(e.attribute_error(what, format!("repeats an axis: {list:?}")));
    }
    Ok(out)
}

/// The extents of `v`.
pub(super) fn dims(e: &NodeEmitter<'_>, v: Output) -> Result<Vec<usize>, OnnxError> {
    Ok(e.ty(v)?.shape.dims().to_vec())
}

/// `x` reshaped to `target` (no node when the shape already matches).
pub(super) fn reshape_to(
    e: &mut NodeEmitter<'_>,
    x: Output,
    target: Vec<usize>,
) -> Result<Output, OnnxError> {
    if dims(e, x)? == target {
        return Ok(x);
    }
    e.op(Op::Reshape(Shape::new(target)), &[x])
}

/// The elements `start..start + len` of `x` along `axis` (all of the other axes); `x` itself
/// when that is the whole axis.
pub(super) fn slice_range(
    e: &mut NodeEmitter<'_>,
    x: Output,
    axis: usize,
    start: usize,
    len: usize,
) -> Result<Output, OnnxError> {
    let d = dims(e, x)?;
    if start == 0 && d.get(axis) == Some(&len) {
        return Ok(x);
    }
    let mut spec: Vec<SliceAxis> = d.iter().map(|&n| SliceAxis::full(n)).collect();
    if let Some(a) = spec.get_mut(axis) {
        *a = SliceAxis {
            start: if len == 0 { 0 } else { start },
            step: 1,
            len,
        };
    }
    e.op(Op::Slice(spec), &[x])
}

/// `Shape`: the input's shape as an INT64 vector (opset 15: `start`/`end` select a range
/// of axes). Always a constant, so with the symbolic input dimensions bound
/// ([`crate::ImportOptions`]) the shape subgraphs exporters write
/// (`Shape -> Gather -> Unsqueeze -> Concat -> Reshape`) fold.
pub(super) fn shape(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let d = dims(e, e.input(ins, 0)?)?;
    let r = d.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let start = clamp(e.attr_i64("start")?.unwrap_or(0));
    let end = clamp(e.attr_i64("end")?.unwrap_or(r)).max(start);
    let values: Vec<i64> = d[start..end].iter().map(|&x| x as i64).collect();
    let n = values.len();
    e.constant(TensorData::I64(values), Shape::new([n]))
}

/// `Size`: the input's element count, an INT64 scalar constant.
pub(super) fn size(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let n: usize = dims(e, e.input(ins, 0)?)?.iter().product();
    e.constant(TensorData::I64(vec![n as i64]), Shape::scalar())
}

/// `NonZero` (opsets 9, 13): the `i64[rank, count]` indices of the operand's non-zero
/// elements ([`reference::non_zero`]), a Constant when the operand is known at import (a
/// constant, or computed from bound inputs). Otherwise its shape is only known at run time:
/// [`OnnxError::DataDependentShape`] names the node's operand and output for a
/// [`crate::Session`], which runs the node between two compiled parts of the model.
pub(super) fn non_zero(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let Some(value) = e.constant_value(x) else {
        let node = e.node();
        return Err(OnnxError::DataDependentShape {
            at: e.at(),
            operand: node.input[0].clone(),
            output: node.output.first().cloned().unwrap_or_default(),
        });
    };
    let (data, shape) =
        reference::non_zero(value.data(), value.shape()).map_err(|message| OnnxError::Fold {
            at: e.at(),
            message,
        })?;
    e.constant(data, shape)
}

/// `Range`: `start, start + delta, ..` below `limit` (above it for a negative `delta`):
/// `max(ceil((limit - start) / delta), 0)` elements of the inputs' type, the three inputs
/// constant scalars (so the result is a constant). Computed in `f64` (`i64` for integers)
/// and converted once.
pub(super) fn range(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 3, 3)?;
    let values = (0..3)
        .map(|i| e.input(ins, i))
        .collect::<Result<Vec<_>, _>>()?;
    let et = e.same_type(&values)?;
    let names = [
        "input 0 (`start`)",
        "input 1 (`limit`)",
        "input 2 (`delta`)",
    ];
    let mut scalars = [0.0f64; 3];
    let mut ints = [0i64; 3];
    for (k, &v) in values.iter().enumerate() {
        if e.ty(v)?.shape.element_count().unwrap_or(0) != 1 {
            return Err(e.shape_error(format!("{} must be a scalar", names[k])));
        }
        if et.is_float() {
            scalars[k] = e.constant_floats(v, names[k])?[0];
        } else if et.is_numeric() {
            ints[k] = e.constant_ints(v, names[k])?[0];
            scalars[k] = ints[k] as f64;
        } else {
            return Err(e.type_error(format!("Range of {et}: needs a numeric type")));
        }
    }
    let [start, limit, delta] = scalars;
    if delta == 0.0 || !delta.is_finite() || !start.is_finite() || !limit.is_finite() {
        return Err(e.shape_error(format!(
            "Range({start}, {limit}, {delta}) needs finite bounds and a non-zero delta"
        )));
    }
    let n = ((limit - start) / delta).ceil().max(0.0) as usize;
    if n > FOLD_LIMIT.max(1 << 20) {
        return Err(e.shape_error(format!("Range of {n} elements is too large")));
    }
    // Floats: computed in f64 and rounded once to the type; integers: wrapping in i64, then
    // wrapped into the type.
    let data = if et.is_float() {
        let v: Vec<f64> = (0..n).map(|i| start + i as f64 * delta).collect();
        TensorData::from_f64(et, &v)
    } else {
        let (s, d) = (ints[0], ints[2]);
        let v: Vec<i64> = (0..n as i64)
            .map(|i| s.wrapping_add(i.wrapping_mul(d)))
            .collect();
        graphlift_runtime::reference::convert(&TensorData::I64(v), et)
            .map_err(|m| e.type_error(m))?
    };
    e.constant(data, Shape::new([n]))
}

/// `Reshape`: `shape` (a constant) may hold one `-1` (inferred) and `0` (copy the input's
/// extent, unless `allowzero` = 1).
pub(super) fn reshape(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let x = e.input(ins, 0)?;
    let spec = e.constant_ints(e.input(ins, 1)?, "input 1 (`shape`)")?;
    let allow_zero = e.attr_i64("allowzero")?.unwrap_or(0) != 0;
    let d = dims(e, x)?;
    let total: usize = d.iter().product();
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &s) in spec.iter().enumerate() {
        match s {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            0 if !allow_zero => out.push(*d.get(i).ok_or_else(|| {
                e.shape_error(format!(
                    "shape {spec:?} copies axis {i}, which the input {d:?} lacks"
                ))
            })?),
            s if s >= 0 => out.push(s as usize),
            _ => return Err(e.shape_error(format!("shape {spec:?} is not a valid target"))),
        }
    }
    if let Some(i) = infer {
        let known: usize = out.iter().product();
        if known == 0 || !total.is_multiple_of(known) {
            return Err(e.shape_error(format!(
                "cannot infer the -1 of {spec:?} for {total} elements"
            )));
        }
        out[i] = total / known;
    }
    reshape_to(e, x, out)
}

/// `Flatten`: `[prod(d[..axis]), prod(d[axis..])]` (axis default 1, may be negative or
/// equal to the rank).
pub(super) fn flatten(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let a = e.attr_i64("axis")?.unwrap_or(1);
    let a = if a == d.len() as i64 {
        d.len()
    } else {
        axis(e, a, d.len(), "axis")?
    };
    reshape_to(e, x, vec![d[..a].iter().product(), d[a..].iter().product()])
}

/// The `axes` of Squeeze/Unsqueeze/Reduce*: an input from `since` on, an attribute before.
pub(super) fn axes_operand(
    e: &NodeEmitter<'_>,
    ins: In<'_>,
    since: i64,
) -> Result<Option<Vec<i64>>, OnnxError> {
    if e.opset() >= since {
        match ins.get(1).copied().flatten() {
            Some(v) => e.constant_ints(v, "input 1 (`axes`)").map(Some),
            None => Ok(None),
        }
    } else {
        e.attr_ints("axes")
    }
}

/// `Squeeze`: removes the listed axes (each of extent 1), or every extent-1 axis.
pub(super) fn squeeze(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 2)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let drop = match axes_operand(e, ins, 13)? {
        Some(list) => axes(e, &list, d.len(), "axes")?,
        None => (0..d.len()).filter(|&a| d[a] == 1).collect(),
    };
    if let Some(&a) = drop.iter().find(|&&a| d[a] != 1) {
        return Err(e.shape_error(format!("axis {a} of {d:?} has extent {}, not 1", d[a])));
    }
    let out = (0..d.len())
        .filter(|a| !drop.contains(a))
        .map(|a| d[a])
        .collect();
    reshape_to(e, x, out)
}

/// `Unsqueeze`: inserts extent-1 axes at the listed positions of the output.
pub(super) fn unsqueeze(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 2)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let Some(list) = axes_operand(e, ins, 13)? else {
        return Err(e.attribute_error("axes", "is required".into()));
    };
    let rank = d.len() + list.len();
    let add = axes(e, &list, rank, "axes")?;
    let mut rest = d.iter();
    let out = (0..rank)
        .map(|a| {
            if add.contains(&a) {
                1
            } else {
                rest.next().copied().unwrap_or(1)
            }
        })
        .collect();
    reshape_to(e, x, out)
}

/// `Transpose`: `perm` (default: reverse the axes).
pub(super) fn transpose(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let rank = dims(e, x)?.len();
    let perm = match e.attr_ints("perm")? {
        Some(p) => p
            .iter()
            .map(|&a| usize::try_from(a).map_err(|_| e.attribute_error("perm", format!("{p:?}"))))
            .collect::<Result<Vec<_>, _>>()?,
        None => (0..rank).rev().collect(),
    };
    if perm.iter().copied().eq(0..rank) {
        return Ok(x);
    }
    e.op(Op::Transpose(perm), &[x])
}

/// `Concat` along `axis` (required, may be negative).
pub(super) fn concat(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, usize::MAX)?;
    let values = (0..ins.len())
        .map(|i| e.input(ins, i))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(a) = e.attr_i64("axis")? else {
        return Err(e.attribute_error("axis", "is required".into()));
    };
    let a = axis(e, a, dims(e, values[0])?.len(), "axis")?;
    if values.len() == 1 {
        return Ok(values[0]);
    }
    e.op(Op::Concat(a), &values)
}

/// One axis of ONNX `Slice` resolved into a [`SliceAxis`] (negative bounds count from the
/// end; bounds clamp to the extent, `[-1, d - 1]` for a negative step).
fn slice_axis(start: i64, end: i64, step: i64, d: usize) -> SliceAxis {
    if d == 0 {
        return SliceAxis {
            start: 0,
            step,
            len: 0,
        };
    }
    let d = d as i64;
    let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
    let (start, end) = (norm(start), norm(end));
    let (start, end) = if step > 0 {
        (start.clamp(0, d), end.clamp(0, d))
    } else {
        (start.clamp(0, d - 1), end.clamp(-1, d - 1))
    };
    let span = if step > 0 { end - start } else { start - end };
    let len = if span <= 0 {
        0
    } else {
        (span - 1) / step.abs() + 1
    };
    SliceAxis {
        start: if len == 0 { 0 } else { start as usize },
        step,
        len: len as usize,
    }
}

/// `Slice`: opset 10+ takes `starts`, `ends`, `axes`, `steps` as (constant) inputs;
/// before, `starts`, `ends`, `axes` attributes.
pub(super) fn slice(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let (starts, ends, axes_list, steps);
    if e.opset() >= 10 {
        e.arity(ins, 3, 5)?;
        let get = |i: usize, what: &str| -> Result<Option<Vec<i64>>, OnnxError> {
            match ins.get(i).copied().flatten() {
                Some(v) => e.constant_ints(v, what).map(Some),
                None => Ok(None),
            }
        };
        starts = get(1, "input 1 (`starts`)")?.unwrap_or_default();
        ends = get(2, "input 2 (`ends`)")?.unwrap_or_default();
        axes_list = get(3, "input 3 (`axes`)")?;
        steps = get(4, "input 4 (`steps`)")?;
    } else {
        e.arity(ins, 1, 1)?;
        starts = e.attr_ints("starts")?.unwrap_or_default();
        ends = e.attr_ints("ends")?.unwrap_or_default();
        axes_list = e.attr_ints("axes")?;
        steps = None;
    }
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let axes_list = axes_list.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes_list.len() != starts.len() || steps.len() != starts.len()
    {
        return Err(e.shape_error(format!(
            "starts {starts:?}, ends {ends:?}, axes {axes_list:?} and steps {steps:?} differ in length"
        )));
    }
    let mut spec: Vec<SliceAxis> = d.iter().map(|&n| SliceAxis::full(n)).collect();
    // Rejects repeated axes.
    axes(e, &axes_list, d.len(), "axes")?;
    for (k, &a_raw) in axes_list.iter().enumerate() {
        let a = axis(e, a_raw, d.len(), "axes")?;
        if steps[k] == 0 {
            return Err(e.shape_error(format!("step 0 on axis {a}")));
        }
        spec[a] = slice_axis(starts[k], ends[k], steps[k], d[a]);
    }
    if spec.iter().zip(&d).all(|(s, &n)| *s == SliceAxis::full(n)) {
        return Ok(x);
    }
    e.op(Op::Slice(spec), &[x])
}

/// `Gather` along `axis` (default 0) with INT32/INT64 indices.
pub(super) fn gather(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (x, idx) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let a = axis(
        e,
        e.attr_i64("axis")?.unwrap_or(0),
        dims(e, x)?.len(),
        "axis",
    )?;
    e.op(Op::Gather(a), &[x, idx])
}

/// `Expand`: broadcasts the input with the (constant) `shape` both ways (numpy rules).
pub(super) fn expand(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let x = e.input(ins, 0)?;
    let spec = e.constant_ints(e.input(ins, 1)?, "input 1 (`shape`)")?;
    let spec = spec
        .iter()
        .map(|&s| usize::try_from(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| e.shape_error(format!("shape {spec:?} has a negative extent")))?;
    let from = e.ty(x)?.shape;
    let target = Shape::broadcast(&from, &Shape::new(spec.clone()))
        .ok_or_else(|| e.shape_error(format!("{from} does not broadcast with {spec:?}")))?;
    e.broadcast_to(x, &target)
}

/// `ConstantOfShape`: a tensor of the (constant) shape filled with `value` (a one-element
/// tensor, default FLOAT 0).
pub(super) fn constant_of_shape(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let spec = e.constant_ints(e.input(ins, 0)?, "input 0 (`input`)")?;
    let dims = spec
        .iter()
        .map(|&s| usize::try_from(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| e.shape_error(format!("shape {spec:?} has a negative extent")))?;
    let value = match e.attr("value")? {
        Some(a) => {
            let Some(t) = &a.t else {
                return Err(e.attribute_error("value", "has no tensor".into()));
            };
            let (d, s) = tensor_from_proto(t, &e.at())?;
            if d.len() != 1 {
                return Err(
                    e.attribute_error("value", format!("must hold one element, has shape {s}"))
                );
            }
            d
        }
        None => TensorData::F32(vec![0.0]),
    };
    let shape = Shape::new(dims);
    let n = shape
        .element_count()
        .map_err(|err| e.shape_error(err.to_string()))?;
    if n <= FOLD_LIMIT {
        // Small (shape computations use it): a real constant, which later nodes fold.
        let filled = graphlift_runtime::reference::broadcast(&value, &Shape::scalar(), &shape)
            .map_err(|m| e.shape_error(m))?;
        return e.constant(filled, shape);
    }
    let scalar = e.constant(value, Shape::scalar())?;
    e.broadcast_to(scalar, &shape)
}

#[cfg(test)]
mod tests {
    use super::slice_axis;

    fn indices(start: i64, end: i64, step: i64, d: usize) -> Vec<i64> {
        let s = slice_axis(start, end, step, d);
        (0..s.len as i64)
            .map(|i| s.start as i64 + i * s.step)
            .collect()
    }

    #[test]
    fn slice_bounds_follow_onnx() {
        assert_eq!(indices(1, 3, 1, 5), [1, 2]);
        assert_eq!(indices(0, i64::MAX, 2, 5), [0, 2, 4]);
        assert_eq!(indices(-1, i64::MIN, -1, 4), [3, 2, 1, 0]);
        assert_eq!(indices(-2, -1, 1, 4), [2]);
        assert_eq!(indices(10, 0, -3, 4), [3]);
        assert_eq!(indices(3, 1, 1, 5), Vec::<i64>::new());
        assert_eq!(indices(0, 1, 1, 0), Vec::<i64>::new());
    }
}
