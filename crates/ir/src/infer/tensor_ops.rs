//! Inference for the ops that are not elementwise: layout (reshape, transpose, slice,
//! concat, gather), reductions, matrix products, normalisations, convolution and pooling.

use crate::attrs::{
    Convolution, LayerNorm, ReduceOp, Reduction, ScatterReduction, SliceAxis, Window,
};
use smallvec::smallvec;

use super::OutputTypes;
use crate::{ElementType, Shape, TensorType};

type Res = Result<OutputTypes, String>;

fn one(element_type: ElementType, dims: Vec<usize>) -> Res {
    let shape = Shape::new(dims);
    shape.element_count().map_err(|e| e.to_string())?;
    Ok(smallvec![TensorType::new(element_type, shape)])
}

fn arity(inputs: &[TensorType], n: usize) -> Result<(), String> {
    if inputs.len() == n {
        Ok(())
    } else {
        Err(format!("expects {n} operand(s), got {}", inputs.len()))
    }
}

fn float_only(what: &str, t: &TensorType) -> Result<(), String> {
    if t.element_type.is_float() {
        Ok(())
    } else {
        Err(format!("{what} must be f32 or f64, is {}", t.element_type))
    }
}

fn axis_in(axis: usize, rank: usize) -> Result<(), String> {
    if axis < rank {
        Ok(())
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}"))
    }
}

pub(super) fn reshape(target: &Shape, inputs: &[TensorType]) -> Res {
    arity(inputs, 1)?;
    let from = inputs[0].shape.element_count().map_err(|e| e.to_string())?;
    let to = target.element_count().map_err(|e| e.to_string())?;
    if from != to {
        return Err(format!(
            "cannot reshape {} ({from} elements) to {target} ({to} elements)",
            inputs[0].shape
        ));
    }
    one(inputs[0].element_type, target.dims().to_vec())
}

pub(super) fn transpose(perm: &[usize], inputs: &[TensorType]) -> Res {
    arity(inputs, 1)?;
    let dims = inputs[0].shape.dims();
    let mut seen = vec![false; dims.len()];
    let valid = perm.len() == dims.len()
        && perm
            .iter()
            .all(|&p| p < dims.len() && !std::mem::replace(&mut seen[p], true));
    if !valid {
        return Err(format!(
            "perm {perm:?} is not a permutation of the {} axes of {}",
            dims.len(),
            inputs[0].shape
        ));
    }
    one(
        inputs[0].element_type,
        perm.iter().map(|&p| dims[p]).collect(),
    )
}

pub(super) fn slice(axes: &[SliceAxis], inputs: &[TensorType]) -> Res {
    arity(inputs, 1)?;
    let dims = inputs[0].shape.dims();
    if axes.len() != dims.len() {
        return Err(format!(
            "{} slice axes for the {} axes of {}",
            axes.len(),
            dims.len(),
            inputs[0].shape
        ));
    }
    for (a, (s, &d)) in axes.iter().zip(dims).enumerate() {
        if s.step == 0 {
            return Err(format!("axis {a}: step is 0"));
        }
        if s.len == 0 {
            continue;
        }
        let last = i128::from(s.step) * (s.len as i128 - 1) + s.start as i128;
        if s.start >= d || last < 0 || last >= d as i128 {
            return Err(format!(
                "axis {a}: {} elements from {} by {} leave the extent {d}",
                s.len, s.start, s.step
            ));
        }
    }
    one(inputs[0].element_type, axes.iter().map(|s| s.len).collect())
}

pub(super) fn concat(axis: usize, inputs: &[TensorType]) -> Res {
    let Some(first) = inputs.first() else {
        return Err("expects at least one operand".into());
    };
    let rank = first.shape.rank();
    axis_in(axis, rank)?;
    let mut dims = first.shape.dims().to_vec();
    for (i, t) in inputs.iter().enumerate().skip(1) {
        if t.element_type != first.element_type {
            return Err(format!(
                "operand {i} is {}, operand 0 is {}",
                t.element_type, first.element_type
            ));
        }
        let d = t.shape.dims();
        let same_except_axis =
            d.len() == rank && (0..rank).all(|a| a == axis || d[a] == first.shape.dims()[a]);
        if !same_except_axis {
            return Err(format!(
                "operand {i} has shape {}, operand 0 has {} (they may differ on axis {axis} only)",
                t.shape, first.shape
            ));
        }
        dims[axis] = dims[axis]
            .checked_add(d[axis])
            .ok_or("the concatenated extent overflows")?;
    }
    one(first.element_type, dims)
}

pub(super) fn gather(axis: usize, inputs: &[TensorType]) -> Res {
    arity(inputs, 2)?;
    let (data, indices) = (&inputs[0], &inputs[1]);
    axis_in(axis, data.shape.rank())?;
    if !matches!(indices.element_type, ElementType::I32 | ElementType::I64) {
        return Err(format!(
            "indices must be i32 or i64, are {}",
            indices.element_type
        ));
    }
    let d = data.shape.dims();
    if d[axis] == 0 && indices.shape.element_count().map_err(|e| e.to_string())? > 0 {
        return Err(format!(
            "gathers from axis {axis} of extent 0 in {}",
            data.shape
        ));
    }
    let mut dims = d[..axis].to_vec();
    dims.extend_from_slice(indices.shape.dims());
    dims.extend_from_slice(&d[axis + 1..]);
    one(data.element_type, dims)
}

pub(super) fn pad(p: &crate::Pad, inputs: &[TensorType]) -> Res {
    if p.mode != crate::PadMode::Constant {
        arity(inputs, 1)?;
        return one(
            inputs[0].element_type,
            p.output_extents(inputs[0].shape.dims())?,
        );
    }
    arity(inputs, 2)?;
    let (x, value) = (&inputs[0], &inputs[1]);
    if value.element_type != x.element_type || value.shape.rank() != 0 {
        return Err(format!(
            "the padding value must be a scalar of {}, is {value}",
            x.element_type
        ));
    }
    one(x.element_type, p.output_extents(x.shape.dims())?)
}

pub(super) fn scatter_add(s: &crate::ScatterAdd, inputs: &[TensorType]) -> Res {
    arity(inputs, 2)?;
    let (updates, indices) = (&inputs[0], &inputs[1]);
    axis_in(s.axis, s.shape.rank())?;
    if !matches!(indices.element_type, ElementType::I32 | ElementType::I64) {
        return Err(format!(
            "indices must be i32 or i64, are {}",
            indices.element_type
        ));
    }
    if !updates.element_type.is_numeric() {
        return Err(format!(
            "updates must be numeric, are {}",
            updates.element_type
        ));
    }
    s.shape.element_count().map_err(|e| e.to_string())?;
    let d = s.shape.dims();
    let mut want = d[..s.axis].to_vec();
    want.extend_from_slice(indices.shape.dims());
    want.extend_from_slice(&d[s.axis + 1..]);
    if updates.shape.dims() != want.as_slice() {
        return Err(format!(
            "updates must have the gather's shape {}, have {}",
            Shape::new(want),
            updates.shape
        ));
    }
    one(updates.element_type, d.to_vec())
}

/// `data` `D`, integer `indices` `[I.., q]` with `q <= rank D`, and `updates` `[I.., D[q..]]`
/// of `data`'s element type give `data`'s type; a reduction needs a numeric type.
pub(super) fn scatter_nd(r: ScatterReduction, inputs: &[TensorType]) -> Res {
    arity(inputs, 3)?;
    let (data, indices, updates) = (&inputs[0], &inputs[1], &inputs[2]);
    if !matches!(indices.element_type, ElementType::I32 | ElementType::I64) {
        return Err(format!(
            "indices must be i32 or i64, are {}",
            indices.element_type
        ));
    }
    if updates.element_type != data.element_type {
        return Err(format!(
            "updates are {}, data {}",
            updates.element_type, data.element_type
        ));
    }
    if r != ScatterReduction::None && !data.element_type.is_numeric() {
        return Err(format!(
            "reduction `{}` needs a numeric type, got {}",
            r.name(),
            data.element_type
        ));
    }
    let (d, i) = (data.shape.dims(), indices.shape.dims());
    let Some((&q, lead)) = i.split_last() else {
        return Err("indices must have rank >= 1 (the last axis holds the index tuples)".into());
    };
    if q > d.len() {
        return Err(format!(
            "index tuples of {q} coordinates for data of rank {}",
            d.len()
        ));
    }
    let mut want = lead.to_vec();
    want.extend_from_slice(&d[q..]);
    if updates.shape.dims() != want.as_slice() {
        return Err(format!(
            "updates must have shape {} (indices {} and data {}), have {}",
            Shape::new(want),
            indices.shape,
            data.shape,
            updates.shape
        ));
    }
    one(data.element_type, d.to_vec())
}

pub(super) fn reduce(r: &Reduction, inputs: &[TensorType]) -> Res {
    arity(inputs, 1)?;
    let t = &inputs[0];
    let rank = t.shape.rank();
    if !r.axes.windows(2).all(|w| w[0] < w[1]) || r.axes.iter().any(|&a| a >= rank) {
        return Err(format!(
            "axes {:?} must be ascending, distinct and below the rank {rank}",
            r.axes
        ));
    }
    let ok = match r.op {
        ReduceOp::Mean => t.element_type.is_float(),
        _ => t.element_type.is_numeric(),
    };
    if !ok {
        return Err(format!(
            "Reduce{} does not accept {}",
            r.op.name(),
            t.element_type
        ));
    }
    let dims = t
        .shape
        .dims()
        .iter()
        .enumerate()
        .filter_map(|(a, &d)| match (r.axes.contains(&a), r.keep_dims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    one(t.element_type, dims)
}

pub(super) fn matmul(inputs: &[TensorType]) -> Res {
    arity(inputs, 2)?;
    let (a, b) = (&inputs[0], &inputs[1]);
    if a.element_type != b.element_type || !a.element_type.is_numeric() {
        return Err(format!(
            "operands must share a numeric element type, are {} and {}",
            a.element_type, b.element_type
        ));
    }
    let (da, db) = (a.shape.dims(), b.shape.dims());
    if da.len() < 2 || db.len() < 2 {
        return Err(format!(
            "operands must have rank >= 2, have shapes {} and {} (reshape vectors first)",
            a.shape, b.shape
        ));
    }
    let (m, k) = (da[da.len() - 2], da[da.len() - 1]);
    let (k2, n) = (db[db.len() - 2], db[db.len() - 1]);
    if k != k2 {
        return Err(format!(
            "inner extents differ: {} x {} ({k} vs {k2})",
            a.shape, b.shape
        ));
    }
    let batch = Shape::broadcast(
        &Shape::new(&da[..da.len() - 2]),
        &Shape::new(&db[..db.len() - 2]),
    )
    .ok_or_else(|| {
        format!(
            "batch axes of {} and {} do not broadcast (numpy rules)",
            a.shape, b.shape
        )
    })?;
    let mut dims = batch.dims().to_vec();
    dims.extend([m, n]);
    one(a.element_type, dims)
}

pub(super) fn softmax(axis: usize, inputs: &[TensorType]) -> Res {
    arity(inputs, 1)?;
    float_only("the operand", &inputs[0])?;
    axis_in(axis, inputs[0].shape.rank())?;
    Ok(smallvec![inputs[0].clone()])
}

pub(super) fn layer_norm(l: &LayerNorm, inputs: &[TensorType]) -> Res {
    arity(inputs, 3)?;
    let x = &inputs[0];
    float_only("x", x)?;
    axis_in(l.axis, x.shape.rank())?;
    if l.epsilon.is_nan() || l.epsilon < 0.0 {
        return Err(format!("epsilon {} must be >= 0", l.epsilon));
    }
    let want = Shape::new(&x.shape.dims()[l.axis..]);
    for (i, what) in [(1, "scale"), (2, "bias")] {
        if inputs[i].element_type != x.element_type || inputs[i].shape != want {
            return Err(format!(
                "{what} must be {}{want}, is {}",
                x.element_type, inputs[i]
            ));
        }
    }
    Ok(smallvec![x.clone()])
}

pub(super) fn batch_norm(epsilon: f64, inputs: &[TensorType]) -> Res {
    arity(inputs, 5)?;
    let x = &inputs[0];
    float_only("x", x)?;
    if x.shape.rank() < 2 {
        return Err(format!("x must be [N, C, ...], is {}", x.shape));
    }
    if epsilon.is_nan() || epsilon < 0.0 {
        return Err(format!("epsilon {epsilon} must be >= 0"));
    }
    let want = Shape::new([x.shape.dims()[1]]);
    for (i, what) in [(1, "scale"), (2, "bias"), (3, "mean"), (4, "variance")] {
        if inputs[i].element_type != x.element_type || inputs[i].shape != want {
            return Err(format!(
                "{what} must be {}{want}, is {}",
                x.element_type, inputs[i]
            ));
        }
    }
    Ok(smallvec![x.clone()])
}

/// Checks `x` is `[N, C, D..]` with as many spatial axes as `w` and returns the output's
/// spatial extents.
fn spatial(x: &TensorType, w: &Window) -> Result<Vec<usize>, String> {
    let d = x.shape.dims();
    if d.len() < 3 {
        return Err(format!(
            "x must be [N, C, D1, ...] with a spatial axis, is {}",
            x.shape
        ));
    }
    w.output_extents(&d[2..])
}

pub(super) fn convolution(c: &Convolution, inputs: &[TensorType]) -> Res {
    arity(inputs, 2)?;
    let (x, f) = (&inputs[0], &inputs[1]);
    float_only("x", x)?;
    if f.element_type != x.element_type {
        return Err(format!(
            "the filter is {}, x is {}",
            f.element_type, x.element_type
        ));
    }
    let (dx, df) = (x.shape.dims(), f.shape.dims());
    if df.len() != dx.len() || dx.len() < 3 {
        return Err(format!(
            "x {} and filter {} must both be [_, _, D1, ...] of one rank >= 3",
            x.shape, f.shape
        ));
    }
    let g = c.groups;
    if g == 0 || dx[1] % g != 0 || df[0] % g != 0 || df[1] != dx[1] / g {
        return Err(format!(
            "groups {g}: x has {} channels and the filter is {}; need C % groups == 0, M % groups == 0 and filter [M, C / groups, ...]",
            dx[1], f.shape
        ));
    }
    if c.window.shape != df[2..] {
        return Err(format!(
            "window shape {:?} differs from the filter's spatial shape {:?}",
            c.window.shape,
            &df[2..]
        ));
    }
    let mut dims = vec![dx[0], df[0]];
    dims.extend(spatial(x, &c.window)?);
    one(x.element_type, dims)
}

pub(super) fn max_pool(w: &Window, inputs: &[TensorType]) -> Res {
    arity(inputs, 1)?;
    let x = &inputs[0];
    float_only("x", x)?;
    let mut dims = x.shape.dims()[..2.min(x.shape.rank())].to_vec();
    dims.extend(spatial(x, w)?);
    one(x.element_type, dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(et: ElementType, dims: &[usize]) -> TensorType {
        TensorType::new(et, Shape::new(dims))
    }
    fn f32s(dims: &[usize]) -> TensorType {
        t(ElementType::F32, dims)
    }
    fn dims(r: Res) -> Vec<usize> {
        r.unwrap()[0].shape.dims().to_vec()
    }

    #[test]
    fn layout_ops() {
        assert_eq!(dims(reshape(&Shape::new([6]), &[f32s(&[2, 3])])), [6]);
        assert!(reshape(&Shape::new([5]), &[f32s(&[2, 3])])
            .unwrap_err()
            .contains("6 elements"));
        assert_eq!(dims(transpose(&[2, 0, 1], &[f32s(&[2, 3, 4])])), [4, 2, 3]);
        assert!(transpose(&[0, 0], &[f32s(&[2, 3])]).is_err());
        let s = SliceAxis {
            start: 3,
            step: -2,
            len: 2,
        };
        assert_eq!(dims(slice(&[s], &[f32s(&[4])])), [2]);
        let too_far = SliceAxis {
            start: 3,
            step: -2,
            len: 3,
        };
        assert!(slice(&[too_far], &[f32s(&[4])]).is_err());
        let p = crate::Pad {
            low: vec![1, 0],
            high: vec![2, 0],
            interior: vec![3, 1],
            mode: crate::PadMode::Constant,
        };
        assert_eq!(dims(pad(&p, &[f32s(&[4, 0]), f32s(&[])])), [16, 0]);
        assert!(pad(&p, &[f32s(&[4, 2]), t(ElementType::F64, &[])])
            .unwrap_err()
            .contains("padding value"));
        assert!(pad(&p, &[f32s(&[4]), f32s(&[])])
            .unwrap_err()
            .contains("entries for 1 axes"));
        let huge = crate::Pad {
            low: vec![usize::MAX],
            high: vec![1],
            interior: vec![0],
            mode: crate::PadMode::Constant,
        };
        assert!(pad(&huge, &[f32s(&[1]), f32s(&[])])
            .unwrap_err()
            .contains("overflows"));
        assert_eq!(dims(concat(1, &[f32s(&[2, 3]), f32s(&[2, 5])])), [2, 8]);
        assert!(concat(0, &[f32s(&[2, 3]), f32s(&[2, 5])]).is_err());
        let idx = t(ElementType::I64, &[4, 5]);
        assert_eq!(dims(gather(1, &[f32s(&[2, 3, 7]), idx])), [2, 4, 5, 7]);
        assert!(gather(0, &[f32s(&[2]), f32s(&[1])]).is_err());
    }

    #[test]
    fn reductions_and_products() {
        let r = Reduction {
            op: ReduceOp::Sum,
            axes: vec![0, 2],
            keep_dims: false,
        };
        assert_eq!(dims(reduce(&r, &[f32s(&[2, 3, 4])])), [3]);
        let keep = Reduction {
            keep_dims: true,
            ..r.clone()
        };
        assert_eq!(dims(reduce(&keep, &[f32s(&[2, 3, 4])])), [1, 3, 1]);
        let mean_int = Reduction {
            op: ReduceOp::Mean,
            ..r
        };
        assert!(reduce(&mean_int, &[t(ElementType::I32, &[2, 3, 4])]).is_err());
        assert_eq!(
            dims(matmul(&[f32s(&[2, 1, 3, 4]), f32s(&[5, 4, 6])])),
            [2, 5, 3, 6]
        );
        assert!(matmul(&[f32s(&[3, 4]), f32s(&[5, 6])])
            .unwrap_err()
            .contains("inner"));
        assert!(matmul(&[f32s(&[4]), f32s(&[4, 6])]).is_err());
    }

    #[test]
    fn convolution_and_pooling() {
        let w = Window {
            shape: vec![3, 3],
            strides: vec![2, 1],
            dilations: vec![1, 1],
            pads_begin: vec![1, 1],
            pads_end: vec![1, 1],
        };
        let c = Convolution {
            window: w.clone(),
            groups: 2,
        };
        let out = convolution(&c, &[f32s(&[1, 4, 48, 192]), f32s(&[8, 2, 3, 3])]);
        assert_eq!(dims(out), [1, 8, 24, 192]);
        let bad = convolution(&c, &[f32s(&[1, 4, 48, 192]), f32s(&[8, 4, 3, 3])]);
        assert!(bad.unwrap_err().contains("groups 2"));
        assert_eq!(dims(max_pool(&w, &[f32s(&[1, 3, 5, 5])])), [1, 3, 3, 5]);
        let huge = Window {
            shape: vec![9, 1],
            ..w
        };
        assert!(max_pool(&huge, &[f32s(&[1, 3, 5, 5])])
            .unwrap_err()
            .contains("larger than the padded input"));
    }

    #[test]
    fn normalisations() {
        let l = LayerNorm {
            axis: 2,
            epsilon: 1e-12,
        };
        let x = f32s(&[1, 7, 384]);
        let p = f32s(&[384]);
        assert_eq!(
            dims(layer_norm(&l, &[x.clone(), p.clone(), p.clone()])),
            [1, 7, 384]
        );
        assert!(layer_norm(&l, &[x, p.clone(), f32s(&[7, 384])]).is_err());
        let c = f32s(&[3]);
        let x = f32s(&[1, 3, 4, 4]);
        let ok = batch_norm(
            1e-5,
            &[x.clone(), c.clone(), c.clone(), c.clone(), c.clone()],
        );
        assert_eq!(dims(ok), [1, 3, 4, 4]);
        assert!(batch_norm(1e-5, &[x, c.clone(), c.clone(), c, p]).is_err());
    }
}
