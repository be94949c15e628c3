//! Inference for the adjoints of the windowed ops (`ConvolutionBackpropData`,
//! `ConvolutionBackpropFilters`, `MaxPoolBackprop`): each checks its operands by inferring
//! the forward op it differentiates and comparing the forward's output with `dy`, so the
//! forward's rules (groups, window, padding) are stated once.

use smallvec::smallvec;

use super::tensor_ops::{convolution, max_pool};
use super::OutputTypes;
use crate::{ConvolutionBackprop, Shape, TensorType, Window};

type Res = Result<OutputTypes, String>;

fn arity(inputs: &[TensorType], n: usize) -> Result<(), String> {
    if inputs.len() == n {
        Ok(())
    } else {
        Err(format!("expects {n} operand(s), got {}", inputs.len()))
    }
}

/// `dy` must be what the forward op gives (`forward`, from operands made of the attribute's
/// shape); the result is `result` of `dy`'s element type.
fn check_dy(forward: Res, dy: &TensorType, result: &Shape) -> Res {
    let forward = forward.map_err(|m| format!("the forward op does not fit: {m}"))?;
    if forward.first() != Some(dy) {
        return Err(format!(
            "dy is {dy}, the forward op's output is {}",
            forward
                .first()
                .map_or_else(|| "missing".to_string(), ToString::to_string)
        ));
    }
    result.element_count().map_err(|e| e.to_string())?;
    Ok(smallvec![TensorType::new(dy.element_type, result.clone())])
}

/// `(dy, filter)` to `dx` of `b.shape`.
pub(super) fn convolution_backprop_data(b: &ConvolutionBackprop, inputs: &[TensorType]) -> Res {
    arity(inputs, 2)?;
    let (dy, filter) = (&inputs[0], &inputs[1]);
    let x = TensorType::new(dy.element_type, b.shape.clone());
    check_dy(
        convolution(&b.convolution, &[x, filter.clone()]),
        dy,
        &b.shape,
    )
}

/// `(x, dy)` to the filter's adjoint of `b.shape`.
pub(super) fn convolution_backprop_filters(b: &ConvolutionBackprop, inputs: &[TensorType]) -> Res {
    arity(inputs, 2)?;
    let (x, dy) = (&inputs[0], &inputs[1]);
    let filter = TensorType::new(x.element_type, b.shape.clone());
    check_dy(
        convolution(&b.convolution, &[x.clone(), filter]),
        dy,
        &b.shape,
    )
}

/// `(x, dy)` to `dx` of `x`'s shape.
pub(super) fn max_pool_backprop(w: &Window, inputs: &[TensorType]) -> Res {
    arity(inputs, 2)?;
    let (x, dy) = (&inputs[0], &inputs[1]);
    check_dy(max_pool(w, std::slice::from_ref(x)), dy, &x.shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Convolution, ElementType};

    fn f32s(dims: &[usize]) -> TensorType {
        TensorType::new(ElementType::F32, Shape::new(dims))
    }

    #[test]
    fn shapes_come_from_the_attribute_and_dy_is_checked() {
        let window = Window {
            shape: vec![3, 3],
            strides: vec![2, 2],
            dilations: vec![1, 1],
            pads_begin: vec![1, 1],
            pads_end: vec![1, 1],
        };
        let data = ConvolutionBackprop {
            convolution: Convolution {
                window: window.clone(),
                groups: 2,
            },
            // 9 and 10 both give 5 output rows at stride 2: the attribute decides.
            shape: Shape::new([1, 4, 10, 9]),
        };
        let dx = convolution_backprop_data(&data, &[f32s(&[1, 6, 5, 5]), f32s(&[6, 2, 3, 3])]);
        assert_eq!(dx.unwrap()[0], f32s(&[1, 4, 10, 9]));
        let bad = convolution_backprop_data(&data, &[f32s(&[1, 6, 4, 5]), f32s(&[6, 2, 3, 3])]);
        assert!(bad.unwrap_err().contains("dy is f32[1, 6, 4, 5]"));
        let groups = convolution_backprop_data(&data, &[f32s(&[1, 6, 5, 5]), f32s(&[6, 4, 3, 3])]);
        assert!(groups.unwrap_err().contains("groups 2"));
        let filters = ConvolutionBackprop {
            shape: Shape::new([6, 2, 3, 3]),
            ..data
        };
        let df =
            convolution_backprop_filters(&filters, &[f32s(&[1, 4, 10, 9]), f32s(&[1, 6, 5, 5])]);
        assert_eq!(df.unwrap()[0], f32s(&[6, 2, 3, 3]));
        assert!(convolution_backprop_filters(&filters, &[f32s(&[1, 4, 10, 9])]).is_err());
        let dx = max_pool_backprop(&window, &[f32s(&[2, 3, 7, 7]), f32s(&[2, 3, 4, 4])]);
        assert_eq!(dx.unwrap()[0], f32s(&[2, 3, 7, 7]));
        let wrong_type = TensorType::new(ElementType::F64, Shape::new([2, 3, 4, 4]));
        assert!(max_pool_backprop(&window, &[f32s(&[2, 3, 7, 7]), wrong_type]).is_err());
    }
}
