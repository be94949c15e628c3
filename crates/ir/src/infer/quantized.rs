//! Inference for [`crate::Op::QuantizedMatMul`]: FLOAT `x` `[..., M, K]`, INT8 `w`
//! `[ceil(K / 4), N, 4]` (VNNI layout), INT32 `offset` `[N]` and FLOAT `scale` `[N]` give
//! FLOAT `[..., M, N]`; and for [`crate::Op::ConvolutionInteger`]: 8-bit `x`, `w` and
//! their zero points give INT32 of the convolution's shape.

use smallvec::smallvec;

use super::OutputTypes;
use crate::attrs::{Convolution, QuantizedMatMul};
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

/// `x`, `x_zero_point`, `w`, `w_zero_point` (see [`crate::Op::ConvolutionInteger`]) to INT32
/// `[N, M, O..]`: the shapes checked as [`crate::Op::Convolution`] checks them, each zero
/// point of its operand's type, `x`'s of one element, `w`'s of one element or `[M]`.
pub(super) fn convolution_integer(
    c: &Convolution,
    inputs: &[TensorType],
) -> Result<OutputTypes, String> {
    let [x, xz, w, wz] = inputs else {
        return Err(format!(
            "expects x, x_zero_point, w and w_zero_point (4 operands), got {}",
            inputs.len()
        ));
    };
    for (what, t) in [("x", x), ("w", w)] {
        if !matches!(t.element_type, ElementType::U8 | ElementType::I8) {
            return Err(format!("{what} must be u8 or i8, is {}", t.element_type));
        }
    }
    for (what, z, v) in [("x_zero_point", xz, x), ("w_zero_point", wz, w)] {
        if z.element_type != v.element_type {
            return Err(format!(
                "{what} is {}, its operand is {}; they must have one type",
                z.element_type, v.element_type
            ));
        }
    }
    let as_float = |t: &TensorType| TensorType::new(ElementType::F32, t.shape.clone());
    let mut out = super::tensor_ops::convolution(c, &[as_float(x), as_float(w)])?;
    let m = w.shape.dims()[0];
    let count = |t: &TensorType| t.shape.dims().iter().product::<usize>();
    if count(xz) != 1 {
        return Err(format!(
            "x_zero_point must have one element, is {}",
            xz.shape
        ));
    }
    if count(wz) != 1 && wz.shape.dims() != [m] {
        return Err(format!(
            "w_zero_point must have one element or be [{m}] (one per output channel), is {}",
            wz.shape
        ));
    }
    out[0].element_type = ElementType::I32;
    Ok(out)
}
