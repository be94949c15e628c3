//! Windowed kernels over the spatial axes of `[N, C, D1, ...]` tensors: convolution and max
//! pooling, for any number of spatial axes. Convolution is computed in `f64` and rounded
//! once; max pooling compares in the element type (the maximum is exact).

use num_traits::Float;

use graphlift_ir::{Convolution, Shape, TensorData, Window};

use super::widen::{float_operand, narrow};

/// Per output position, per window position: the input offset read, `None` in padding.
pub(super) type Taps = Vec<Vec<Option<usize>>>;

/// For every output position (row-major over the output's spatial extents), the input
/// offset (row-major over `input`) under each window position, or `None` where the window
/// reads padding. Returns the output extents too.
pub(super) fn taps(window: &Window, input: &[usize]) -> Result<(Vec<usize>, Taps), String> {
    let out = window.output_extents(input)?;
    let in_strides = Shape::new(input).strides();
    let positions = |dims: &[usize]| -> Vec<Vec<usize>> {
        let count: usize = dims.iter().product();
        let mut idx = vec![0usize; dims.len()];
        let mut all = Vec::with_capacity(count);
        for _ in 0..count {
            all.push(idx.clone());
            for a in (0..dims.len()).rev() {
                idx[a] += 1;
                if idx[a] < dims[a] {
                    break;
                }
                idx[a] = 0;
            }
        }
        all
    };
    let kernel = positions(&window.shape);
    let table = positions(&out)
        .iter()
        .map(|o| {
            kernel
                .iter()
                .map(|k| {
                    let mut offset = 0usize;
                    for a in 0..input.len() {
                        let p = (o[a] * window.strides[a] + k[a] * window.dilations[a])
                            .checked_sub(window.pads_begin[a])?;
                        if p >= input[a] {
                            return None;
                        }
                        offset += p * in_strides[a];
                    }
                    Some(offset)
                })
                .collect()
        })
        .collect();
    Ok((out, table))
}

/// A float operand `[N, C, D1, ...]` as `f64`.
pub(super) fn float_input(
    data: &TensorData,
    shape: &Shape,
    what: &str,
) -> Result<Vec<f64>, String> {
    if shape.rank() < 3 {
        return Err(format!("{what} has shape {shape}; need [N, C, D1, ...]"));
    }
    float_operand(data, shape, what)
}

/// The multiply-adds of one convolution of data `[N, C, D..]` with a filter
/// `[M, C / groups, K..]`: the forward op and both its adjoints walk the same ones.
pub(super) struct ConvolutionTaps {
    /// `N, C, M`, `C / groups` and `M / groups`.
    n: usize,
    ch: usize,
    m: usize,
    cg: usize,
    mg: usize,
    /// Elements of one data plane and one filter plane.
    s_in: usize,
    k_len: usize,
    table: Taps,
}

impl ConvolutionTaps {
    /// The taps of `c` on data of shape `sx` and a filter of shape `sf` (both `[_, _, D..]`).
    pub(super) fn of(sx: &Shape, sf: &Shape, c: &Convolution) -> Result<ConvolutionTaps, String> {
        let (dx, df) = (sx.dims(), sf.dims());
        if dx.len() < 3 || df.len() != dx.len() {
            return Err(format!(
                "x {sx} and filter {sf} must both be [_, _, D1, ...]"
            ));
        }
        let (n, ch, m, cg) = (dx[0], dx[1], df[0], df[1]);
        let g = c.groups;
        if g == 0 || ch % g != 0 || m % g != 0 || cg != ch / g || df[2..] != c.window.shape[..] {
            return Err(format!("filter {sf} and groups {g} do not fit x {sx}"));
        }
        let (_, table) = taps(&c.window, &dx[2..])?;
        Ok(ConvolutionTaps {
            n,
            ch,
            m,
            cg,
            mg: m / g,
            s_in: dx[2..].iter().product(),
            k_len: df[2..].iter().product(),
            table,
        })
    }

    /// The output's element count, `N · M · O..`.
    pub(super) fn output_len(&self) -> usize {
        self.n * self.m * self.table.len()
    }

    /// Calls `mac(x, f, y)` with the data, filter and output offsets of every multiply-add
    /// (taps in padding left out), output by output in row-major order and, within one,
    /// by input channel then window position.
    pub(super) fn for_each(&self, mut mac: impl FnMut(usize, usize, usize)) {
        let mut y = 0;
        for b in 0..self.n {
            for f in 0..self.m {
                let group = f / self.mg;
                for row in &self.table {
                    for c_in in 0..self.cg {
                        let x_base = (b * self.ch + group * self.cg + c_in) * self.s_in;
                        let f_base = (f * self.cg + c_in) * self.k_len;
                        for (k, tap) in row.iter().enumerate() {
                            if let Some(off) = tap {
                                mac(x_base + off, f_base + k, y);
                            }
                        }
                    }
                    y += 1;
                }
            }
        }
    }
}

/// Convolution (cross-correlation) of `x` `[N, C, D..]` with `filter` `[M, C / groups, K..]`,
/// giving `[N, M, O..]`; padding reads as zero.
///
/// # Errors
/// A message when the shapes, groups or window do not fit.
pub fn convolution(
    x: &TensorData,
    sx: &Shape,
    filter: &TensorData,
    sf: &Shape,
    c: &Convolution,
) -> Result<TensorData, String> {
    let xv = float_input(x, sx, "x")?;
    let fv = float_input(filter, sf, "filter")?;
    let plan = ConvolutionTaps::of(sx, sf, c)?;
    let mut y = vec![0.0; plan.output_len()];
    plan.for_each(|xi, fi, yi| y[yi] += xv[xi] * fv[fi]);
    Ok(narrow(x.element_type(), y))
}

/// Max pooling of `x` `[N, C, D..]` over `window`; padding never wins (a window entirely in
/// padding gives `-inf`), NaN propagates as in `Maximum`.
///
/// # Errors
/// A message when the shapes or window do not fit.
pub fn max_pool(x: &TensorData, sx: &Shape, window: &Window) -> Result<TensorData, String> {
    if sx.rank() < 3 {
        return Err(format!("x has shape {sx}; need [N, C, D1, ...]"));
    }
    let n = sx.element_count().map_err(|e| e.to_string())?;
    if x.len() != n {
        return Err(format!("x: {} elements for shape {sx}", x.len()));
    }
    let dx = sx.dims();
    let (_, table) = taps(window, &dx[2..])?;
    let s_in: usize = dx[2..].iter().product();
    let planes = dx[0] * dx[1];
    // The maximum is exact in the element type: no widening is needed.
    fn pool<T: Float>(xv: &[T], planes: usize, s_in: usize, table: &Taps) -> Vec<T> {
        let mut y = Vec::with_capacity(planes * table.len());
        for plane in 0..planes {
            let base = plane * s_in;
            for row in table {
                let m = row.iter().flatten().fold(T::neg_infinity(), |m, &off| {
                    let v = xv[base + off];
                    if v.is_nan() || m.is_nan() {
                        T::nan()
                    } else {
                        m.max(v)
                    }
                });
                y.push(m);
            }
        }
        y
    }
    match x {
        TensorData::F32(v) => Ok(TensorData::F32(pool(v, planes, s_in, &table))),
        TensorData::F64(v) => Ok(TensorData::F64(pool(v, planes, s_in, &table))),
        other => Err(format!("x is {}, not a float", other.element_type())),
    }
}

/// Where the maximum of the window `row` (offsets from `base` into `x`, `None` for
/// padding) is: of equal maxima the first in row-major window order, a NaN being the
/// maximum (the first NaN); `None` for a window wholly in padding. `MaxPool`'s adjoint and
/// its `Indices` both pick this element.
pub(super) fn window_argmax(x: &[f64], base: usize, row: &[Option<usize>]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for &off in row.iter().flatten() {
        let v = x[base + off];
        let wins = match best {
            None => true,
            Some(b) => !x[b].is_nan() && (v > x[b] || v.is_nan()),
        };
        if wins {
            best = Some(base + off);
        }
    }
    best
}

/// The flat row-major index into `x` `[N, C, D..]` of each window's maximum (the first of
/// equal maxima in row-major window order, a NaN being the maximum; padding never), `i64`
/// of `MaxPool(window)`'s output shape; `-1` for a window wholly in padding (ONNX
/// `MaxPool`'s `Indices` with `storage_order` 0).
///
/// # Errors
/// A message when the shapes or window do not fit, or `x` is not a float.
pub fn max_pool_indices(x: &TensorData, sx: &Shape, window: &Window) -> Result<TensorData, String> {
    let xv = float_input(x, sx, "x")?;
    let dx = sx.dims();
    let (_, table) = taps(window, &dx[2..])?;
    let s_in: usize = dx[2..].iter().product();
    let planes = dx[0] * dx[1];
    let mut at = Vec::with_capacity(planes * table.len());
    for plane in 0..planes {
        for row in &table {
            let i = window_argmax(&xv, plane * s_in, row);
            at.push(i.map_or(-1, |i| i as i64));
        }
    }
    Ok(TensorData::I64(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(k: usize, stride: usize, pad: usize) -> Window {
        Window {
            shape: vec![k, k],
            strides: vec![stride; 2],
            dilations: vec![1; 2],
            pads_begin: vec![pad; 2],
            pads_end: vec![pad; 2],
        }
    }

    #[test]
    fn convolution_with_padding_and_groups() {
        // 1x1x3x3 input 1..9, 3x3 all-ones filter, pad 1: each output sums its neighbourhood.
        let x = TensorData::F32((1..=9).map(|i| i as f32).collect());
        let f = TensorData::F32(vec![1.0; 9]);
        let c = Convolution {
            window: window(3, 1, 1),
            groups: 1,
        };
        let y = convolution(
            &x,
            &Shape::new([1, 1, 3, 3]),
            &f,
            &Shape::new([1, 1, 3, 3]),
            &c,
        );
        let want = [12., 21., 16., 27., 45., 33., 24., 39., 28.];
        assert_eq!(y.unwrap(), TensorData::F32(want.to_vec()));
        // Depthwise (groups = C = 2), 1x1 filters scaling each channel.
        let x = TensorData::F32(vec![1., 2., 3., 4.]);
        let f = TensorData::F32(vec![10., 100.]);
        let dw = Convolution {
            window: window(1, 1, 0),
            groups: 2,
        };
        let y = convolution(
            &x,
            &Shape::new([1, 2, 1, 2]),
            &f,
            &Shape::new([2, 1, 1, 1]),
            &dw,
        );
        assert_eq!(y.unwrap(), TensorData::F32(vec![10., 20., 300., 400.]));
    }

    #[test]
    fn max_pool_strided() {
        let x = TensorData::F32((0..16).map(|i| i as f32).collect());
        let y = max_pool(&x, &Shape::new([1, 1, 4, 4]), &window(2, 2, 0)).unwrap();
        assert_eq!(y, TensorData::F32(vec![5., 7., 13., 15.]));
        let y = max_pool(&x, &Shape::new([1, 1, 4, 4]), &window(3, 2, 1)).unwrap();
        assert_eq!(y, TensorData::F32(vec![5., 7., 13., 15.]));
    }

    #[test]
    fn max_pool_f32_is_the_f64_result_rounded() {
        // Signed zeros, a NaN and infinities among ordinary values.
        let v = [
            -0.0f32,
            0.0,
            3.5,
            -2.0,
            f32::NAN,
            1.0,
            -0.0,
            -0.0,
            f32::NEG_INFINITY,
            7.25,
            0.0,
            -0.0,
            2.0,
            f32::INFINITY,
            -1.0,
            0.5,
        ];
        let s = Shape::new([1, 1, 4, 4]);
        for w in [window(2, 2, 0), window(2, 1, 0), window(3, 2, 1)] {
            let y32 = max_pool(&TensorData::F32(v.to_vec()), &s, &w).unwrap();
            let wide = TensorData::F64(v.iter().map(|&x| f64::from(x)).collect());
            let TensorData::F64(y64) = max_pool(&wide, &s, &w).unwrap() else {
                panic!("f64 in, f64 out")
            };
            let bits = |d: Vec<f32>| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let TensorData::F32(y32) = y32 else {
                panic!("f32 in, f32 out")
            };
            assert_eq!(bits(y32), bits(y64.iter().map(|&x| x as f32).collect()));
        }
    }
}
