//! Inference for the ops that pick or interpolate elements: `ArgMax`/`ArgMin`, `TopK`,
//! `Resize` and `GridSample`.

use smallvec::smallvec;

use super::OutputTypes;
use crate::attrs::{ArgReduction, Resize, TopK};
use crate::{ElementType, Shape, TensorType};

type Res = Result<OutputTypes, String>;

fn single(inputs: &[TensorType]) -> Result<&TensorType, String> {
    match inputs {
        [x] => Ok(x),
        _ => Err(format!("expects 1 operand(s), got {}", inputs.len())),
    }
}

/// A numeric tensor with extent >= 1 on the axis gives `i64` indices.
pub(super) fn arg_reduce(r: &ArgReduction, inputs: &[TensorType]) -> Res {
    let x = single(inputs)?;
    if !x.element_type.is_numeric() {
        return Err(format!("needs a numeric operand, got {}", x.element_type));
    }
    let dims = x.shape.dims();
    match dims.get(r.axis) {
        None => {
            return Err(format!(
                "axis {} is out of range for rank {}",
                r.axis,
                dims.len()
            ))
        }
        Some(0) => return Err(format!("axis {} is empty: no element to pick", r.axis)),
        Some(_) => {}
    }
    let mut out = dims.to_vec();
    if r.keep_dims {
        out[r.axis] = 1;
    } else {
        out.remove(r.axis);
    }
    Ok(smallvec![TensorType::new(
        ElementType::I64,
        Shape::new(out)
    )])
}

/// A numeric tensor whose axis holds at least `k` elements gives `i64` indices with extent
/// `k` on the axis.
pub(super) fn top_k(t: &TopK, inputs: &[TensorType]) -> Res {
    let x = single(inputs)?;
    if !x.element_type.is_numeric() {
        return Err(format!("needs a numeric operand, got {}", x.element_type));
    }
    let mut out = x.shape.dims().to_vec();
    match out.get_mut(t.axis) {
        None => Err(format!(
            "axis {} is out of range for rank {}",
            t.axis,
            x.shape.rank()
        )),
        Some(d) if *d < t.k => Err(format!(
            "k = {} exceeds the extent {d} of axis {}",
            t.k, t.axis
        )),
        Some(d) => {
            *d = t.k;
            Ok(smallvec![TensorType::new(
                ElementType::I64,
                Shape::new(out)
            )])
        }
    }
}

/// A float tensor of the input's rank gives the attribute's extents.
pub(super) fn resize(r: &Resize, inputs: &[TensorType]) -> Res {
    let x = single(inputs)?;
    if !x.element_type.is_float() {
        return Err(format!("resizes f32 or f64, got {}", x.element_type));
    }
    r.check(x.shape.dims())?;
    let shape = Shape::new(r.shape.clone());
    shape.element_count().map_err(|e| e.to_string())?;
    Ok(smallvec![TensorType::new(x.element_type, shape)])
}

/// `x` `[N, C, D1..Dr]` (`f32` or `f64`, `r >= 1`) sampled at `grid` `[N, O1..Or, r]` of
/// the same type gives `[N, C, O1..Or]`.
pub(super) fn grid_sample(inputs: &[TensorType]) -> Res {
    let [x, grid] = inputs else {
        return Err(format!("expects 2 operand(s), got {}", inputs.len()));
    };
    if !x.element_type.is_float() || grid.element_type != x.element_type {
        return Err(format!(
            "samples f32 or f64 at positions of the same type, got {} at {}",
            x.element_type, grid.element_type
        ));
    }
    let (xd, gd) = (x.shape.dims(), grid.shape.dims());
    let r = xd.len().saturating_sub(2);
    if r == 0 || gd.len() != r + 2 || gd[0] != xd[0] || gd[r + 1] != r {
        return Err(format!(
            "x {} and grid {} must be [N, C, D1..Dr] and [N, O1..Or, r] with r >= 1",
            x.shape, grid.shape
        ));
    }
    let out: Vec<usize> = xd[..2].iter().chain(&gd[1..=r]).copied().collect();
    Ok(smallvec![TensorType::new(x.element_type, Shape::new(out))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attrs::{ArgOp, CoordinateTransform, NearestMode, ResizeMode};

    fn f32s(dims: &[usize]) -> TensorType {
        TensorType::new(ElementType::F32, Shape::new(dims))
    }

    #[test]
    fn arg_reduce_drops_or_keeps_the_axis() {
        let mut r = ArgReduction {
            op: ArgOp::Max,
            axis: 1,
            keep_dims: true,
            select_last_index: false,
        };
        let t = arg_reduce(&r, &[f32s(&[2, 3, 4])]).unwrap();
        assert_eq!(
            t[0],
            TensorType::new(ElementType::I64, Shape::new([2, 1, 4]))
        );
        r.keep_dims = false;
        let t = arg_reduce(&r, &[f32s(&[2, 3, 4])]).unwrap();
        assert_eq!(t[0].shape.dims(), [2, 4]);
        assert!(arg_reduce(&r, &[f32s(&[2, 0])])
            .unwrap_err()
            .contains("empty"));
        r.axis = 3;
        assert!(arg_reduce(&r, &[f32s(&[2, 3])]).is_err());
        let b = TensorType::new(ElementType::Bool, Shape::new([2]));
        r.axis = 0;
        assert!(arg_reduce(&r, &[b]).unwrap_err().contains("numeric"));
    }

    #[test]
    fn resize_checks_its_attribute() {
        let mut r = Resize {
            mode: ResizeMode::Nearest(NearestMode::Floor),
            coordinate_transform: CoordinateTransform::Asymmetric,
            scales: vec![1.0, 2.0],
            shape: vec![1, 4],
            roi: vec![[0.0, 1.0]; 2],
            exclude_outside: false,
            extrapolation_value: 0.0,
            antialias: false,
        };
        assert_eq!(
            resize(&r, &[f32s(&[1, 2])]).unwrap()[0].shape.dims(),
            [1, 4]
        );
        assert!(resize(&r, &[f32s(&[2])]).unwrap_err().contains("rank 1"));
        let i = TensorType::new(ElementType::I32, Shape::new([1, 2]));
        assert!(resize(&r, &[i]).unwrap_err().contains("f32 or f64"));
        r.scales[1] = 0.0;
        assert!(resize(&r, &[f32s(&[1, 2])]).unwrap_err().contains("scale"));
        r.scales[1] = 2.0;
        r.antialias = true;
        assert!(resize(&r, &[f32s(&[1, 2])])
            .unwrap_err()
            .contains("antialias"));
    }
}
