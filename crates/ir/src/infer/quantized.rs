//! Inference for [`crate::Op::QuantizedMatMul`]: FLOAT `x` `[..., M, K]`, INT8 `w`
//! `[ceil(K / 4), N, 4]` (VNNI layout), INT32 `offset` `[N]` and FLOAT `scale` `[N]` give
//! FLOAT `[..., M, N]`.

use smallvec::smallvec;

use super::OutputTypes;
use crate::attrs::QuantizedMatMul;
use crate::{ElementType, Shape, TensorType};

pub(super) fn quantized_matmul(
    q: &QuantizedMatMul,
    inputs: &[TensorType],
) -> Result<OutputTypes, String> {
    let [x, w, offset, scale] = inputs else {
        return Err(format!(
            "expects x, w, offset and scale (4 operands), got {}",
            inputs.len()
        ));
    };
    if !q.x_scale.is_finite() || q.x_scale == 0.0 {
        return Err(format!("x_scale {} must be finite and nonzero", q.x_scale));
    }
    for (what, t, want) in [
        ("x", x, ElementType::F32),
        ("w", w, ElementType::I8),
        ("offset", offset, ElementType::I32),
        ("scale", scale, ElementType::F32),
    ] {
        if t.element_type != want {
            return Err(format!("{what} must be {want}, is {}", t.element_type));
        }
    }
    let (dx, dw) = (x.shape.dims(), w.shape.dims());
    let [.., m, k] = *dx else {
        return Err(format!("x must have rank >= 2, is {}", x.shape));
    };
    let &[k4, n, 4] = dw else {
        return Err(format!(
            "w must be [ceil(K / 4), N, 4] (VNNI layout), is {}",
            w.shape
        ));
    };
    if k4 != k.div_ceil(4) {
        return Err(format!(
            "w {} does not fit x {}: its first extent must be ceil({k} / 4) = {}",
            w.shape,
            x.shape,
            k.div_ceil(4)
        ));
    }
    for (what, t) in [("offset", offset), ("scale", scale)] {
        if t.shape.dims() != [n] {
            return Err(format!(
                "{what} must be [{n}] (one per column), is {}",
                t.shape
            ));
        }
    }
    let mut dims = dx[..dx.len() - 2].to_vec();
    dims.extend([m, n]);
    Ok(smallvec![TensorType::new(
        ElementType::F32,
        Shape::new(dims)
    )])
}
