//! The adjoints of the windowed kernels: `ConvolutionBackpropData`,
//! `ConvolutionBackpropFilters` and `MaxPoolBackprop`, for any number of spatial axes. They
//! walk the forward kernels' taps ([`super::window`]) and accumulate in `f64`, rounded once.

use graphlift_ir::{ConvolutionBackprop, Shape, TensorData, Window};

use super::widen::{float_operand, narrow};
use super::window::{float_input, taps, window_argmax, ConvolutionTaps};

/// `dy` of `sdy` must have the forward op's output extents: `count` elements, and `[N, C]`
/// or `[N, M]` leading axes `lead`.
fn check_dy(sdy: &Shape, lead: [usize; 2], count: usize) -> Result<(), String> {
    let d = sdy.dims();
    if d.len() < 2 || d[..2] != lead || sdy.element_count().ok() != Some(count) {
        return Err(format!(
            "dy has shape {sdy}, the forward op's output has {count} elements and leading axes {lead:?}"
        ));
    }
    Ok(())
}

/// The adjoint of `Convolution` with respect to its data (a transposed convolution, ONNX
/// `ConvTranspose` with an explicit output shape): `dy` `[N, M, O..]` and `filter`
/// `[M, C / groups, K..]` give `dx` of `b.shape` `[N, C, D..]`; each `dy` element times each
/// filter tap is added where the forward convolution read it, padding dropped.
///
/// # Errors
/// A message when the shapes, groups or window do not fit.
pub fn convolution_backprop_data(
    dy: &TensorData,
    sdy: &Shape,
    filter: &TensorData,
    sf: &Shape,
    b: &ConvolutionBackprop,
) -> Result<TensorData, String> {
    let dyv = float_input(dy, sdy, "dy")?;
    let fv = float_input(filter, sf, "filter")?;
    let plan = ConvolutionTaps::of(&b.shape, sf, &b.convolution)?;
    let d = b.shape.dims();
    check_dy(sdy, [d[0], sf.dims()[0]], plan.output_len())?;
    let mut dx = vec![0.0; b.shape.element_count().map_err(|e| e.to_string())?];
    plan.for_each(|xi, fi, yi| dx[xi] += dyv[yi] * fv[fi]);
    Ok(narrow(dy.element_type(), dx))
}

/// The adjoint of `Convolution` with respect to its filter: data `x` `[N, C, D..]` and `dy`
/// `[N, M, O..]` give the filter's adjoint of `b.shape` `[M, C / groups, K..]`: each filter
/// tap's sum, over the batch and the output positions, of `dy` times the data it read.
///
/// # Errors
/// A message when the shapes, groups or window do not fit.
pub fn convolution_backprop_filters(
    x: &TensorData,
    sx: &Shape,
    dy: &TensorData,
    sdy: &Shape,
    b: &ConvolutionBackprop,
) -> Result<TensorData, String> {
    let xv = float_input(x, sx, "x")?;
    let dyv = float_input(dy, sdy, "dy")?;
    let plan = ConvolutionTaps::of(sx, &b.shape, &b.convolution)?;
    check_dy(sdy, [sx.dims()[0], b.shape.dims()[0]], plan.output_len())?;
    let mut df = vec![0.0; b.shape.element_count().map_err(|e| e.to_string())?];
    plan.for_each(|xi, fi, yi| df[fi] += dyv[yi] * xv[xi]);
    Ok(narrow(x.element_type(), df))
}

/// The adjoint of `MaxPool(window)`: `x` `[N, C, D..]` and `dy` of the pooled shape give
/// `dx` of `x`'s shape, each `dy` element added at its window's maximum. Of equal maxima the
/// first in row-major window order wins; a NaN is the maximum (the first NaN wins); padding
/// never wins, and a window wholly in padding passes nothing.
///
/// # Errors
/// A message when the shapes or window do not fit.
pub fn max_pool_backprop(
    x: &TensorData,
    sx: &Shape,
    dy: &TensorData,
    sdy: &Shape,
    window: &Window,
) -> Result<TensorData, String> {
    let xv = float_input(x, sx, "x")?;
    let dyv = float_operand(dy, sdy, "dy")?;
    let dx_dims = sx.dims();
    let (_, table) = taps(window, &dx_dims[2..])?;
    let planes = dx_dims[0] * dx_dims[1];
    check_dy(sdy, [dx_dims[0], dx_dims[1]], planes * table.len())?;
    let s_in: usize = dx_dims[2..].iter().product();
    let mut dx = vec![0.0; xv.len()];
    let mut g = dyv.iter();
    for plane in 0..planes {
        let base = plane * s_in;
        for row in &table {
            let grad = g.next().copied().unwrap_or(0.0);
            if let Some(at) = window_argmax(&xv, base, row) {
                dx[at] += grad;
            }
        }
    }
    Ok(narrow(x.element_type(), dx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::Convolution;

    fn window(k: usize, stride: usize, pad: usize) -> Window {
        Window {
            shape: vec![k],
            strides: vec![stride],
            dilations: vec![1],
            pads_begin: vec![pad],
            pads_end: vec![pad],
        }
    }

    #[test]
    fn transposed_convolution_spreads_each_output() {
        // 1-D, stride 2, filter [1, 10]: dy [1, 2] lands at x positions (0, 1) and (2, 3).
        let b = ConvolutionBackprop {
            convolution: Convolution {
                window: window(2, 2, 0),
                groups: 1,
            },
            shape: Shape::new([1, 1, 5]),
        };
        let dx = convolution_backprop_data(
            &TensorData::F32(vec![1.0, 2.0]),
            &Shape::new([1, 1, 2]),
            &TensorData::F32(vec![1.0, 10.0]),
            &Shape::new([1, 1, 2]),
            &b,
        );
        assert_eq!(dx.unwrap(), TensorData::F32(vec![1., 10., 2., 20., 0.]));
        let filters = ConvolutionBackprop {
            shape: Shape::new([1, 1, 2]),
            ..b
        };
        let df = convolution_backprop_filters(
            &TensorData::F32(vec![1., 2., 3., 4., 5.]),
            &Shape::new([1, 1, 5]),
            &TensorData::F32(vec![1.0, 2.0]),
            &Shape::new([1, 1, 2]),
            &filters,
        );
        assert_eq!(df.unwrap(), TensorData::F32(vec![1. + 6., 2. + 8.]));
        let wrong = convolution_backprop_filters(
            &TensorData::F32(vec![1., 2., 3., 4., 5.]),
            &Shape::new([1, 1, 5]),
            &TensorData::F32(vec![1.0, 2.0, 3.0]),
            &Shape::new([1, 1, 3]),
            &filters,
        );
        assert!(wrong.unwrap_err().contains("dy has shape"));
    }

    #[test]
    fn max_pool_backprop_ties_go_to_the_first_and_padding_never_wins() {
        // Windows of 3, stride 1, pad 1 over [-1, 5, 5, -2]: the tie (5, 5) of the middle
        // windows goes to the first 5; the last window holds only the second.
        let x = TensorData::F64(vec![-1.0, 5.0, 5.0, -2.0]);
        let dy = TensorData::F64(vec![1.0, 10.0, 100.0, 1000.0]);
        let s = Shape::new([1, 1, 4]);
        let dx = max_pool_backprop(&x, &s, &dy, &s, &window(3, 1, 1)).unwrap();
        assert_eq!(dx, TensorData::F64(vec![0.0, 111.0, 1000.0, 0.0]));
        // All negative: the padded edges (no value, not zero) never win.
        let x = TensorData::F64(vec![-3.0, -5.0, -2.0, -4.0]);
        let dx = max_pool_backprop(&x, &s, &dy, &s, &window(3, 1, 1)).unwrap();
        assert_eq!(dx, TensorData::F64(vec![1.0, 0.0, 1110.0, 0.0]));
        let nan = TensorData::F64(vec![1.0, f64::NAN, 9.0, f64::NAN]);
        let dx = max_pool_backprop(&nan, &s, &dy, &s, &window(3, 1, 1)).unwrap();
        assert_eq!(dx, TensorData::F64(vec![0.0, 111.0, 0.0, 1000.0]));
    }
}
