//! `GridSample` (opsets 16, 20, 22) as one [`Op::GridSample`], and `AffineGrid` (opset 20),
//! which makes the sampling grid of an affine transform: together, a spatial transformer.

use graphlift_ir::{ElementType, GridMode, GridPadding, GridSample, Op, Output, Shape, TensorData};

use super::layout::dims;
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `GridSample`: `X` `[N, C, D1..Dr]` sampled at `grid` `[N, O1..Or, r]` (positions in
/// `[-1, 1]`, the last axis's first) gives `[N, C, O1..Or]`, as [`GridSample`] defines:
/// `mode` `bilinear`/`nearest`/`bicubic` before opset 20 (4-D `X` only), `linear`/`nearest`/
/// `cubic` from 20 (any `r >= 1`); `padding_mode` `zeros`/`border`/`reflection`;
/// `align_corners`. Float `X` is sampled in its type (`f16`/`bf16` through `f32`, rounded
/// once); integer `X` only in `nearest` mode, which copies elements (exact through `f64`).
///
/// # Errors
/// Named errors for an unknown mode, a rank or grid shape that does not fit, or an integer
/// `X` with an interpolating mode.
pub(super) fn grid_sample(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (x, grid) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let modes: &[(&str, GridMode)] = if e.opset() < 20 {
        &[
            ("bilinear", GridMode::Linear),
            ("nearest", GridMode::Nearest),
            ("bicubic", GridMode::Cubic),
        ]
    } else {
        &[
            ("linear", GridMode::Linear),
            ("nearest", GridMode::Nearest),
            ("cubic", GridMode::Cubic),
        ]
    };
    let mode = e.attr_choice("mode", modes[0].0, modes)?;
    let padding = e.attr_choice(
        "padding_mode",
        "zeros",
        &[
            ("zeros", GridPadding::Zeros),
            ("border", GridPadding::Border),
            ("reflection", GridPadding::Reflection),
        ],
    )?;
    let align_corners = e.attr_i64("align_corners")?.unwrap_or(0) != 0;
    let (dx, dg) = (dims(e, x)?, dims(e, grid)?);
    let r = dx.len().saturating_sub(2);
    if r == 0 || (e.opset() < 20 && r != 2) {
        return Err(e.shape_error(format!(
            "X {dx:?} must be [N, C, H, W]{}",
            if e.opset() < 20 {
                ""
            } else {
                " or [N, C, D1, ..]"
            }
        )));
    }
    if dg.len() != r + 2 || dg[0] != dx[0] || dg[r + 1] != r {
        return Err(e.shape_error(format!(
            "grid {dg:?} must be [N, O1, .., O{r}, {r}] for X {dx:?}"
        )));
    }
    e.require(grid, ElementType::is_float, "a float grid")?;
    let et = e.et(x)?;
    let compute = match et {
        ElementType::F32 | ElementType::F64 => et,
        _ if et.is_float() => ElementType::F32,
        _ if et.is_numeric() && mode == GridMode::Nearest => ElementType::F64,
        _ if et.is_numeric() => {
            return Err(e.unsupported(format!(
                "{et} X with mode {mode:?} (the spec leaves integer interpolation undefined)"
            )))
        }
        _ => return Err(e.type_error(format!("GridSample samples numbers, got {et}"))),
    };
    let (wide_x, wide_grid) = (e.convert(x, compute)?, e.convert(grid, compute)?);
    let op = Op::GridSample(GridSample {
        mode,
        padding,
        align_corners,
    });
    let y = e.op(op, &[wide_x, wide_grid])?;
    e.convert(y, et)
}

/// `AffineGrid` (opset 20): `theta` `[N, 2, 3]` (or `[N, 3, 4]`) and the constant `size`
/// `[N, C, H, W]` (or `[N, C, D, H, W]`) give the sampling grid `[N, H, W, 2]` (or
/// `[N, D, H, W, 3]`) of `theta` applied to the normalised positions of the output's
/// elements (`x` first, as [`grid_sample`] reads them): with `align_corners` the centres
/// of the corner elements are at `-1` and `1`, else their outer edges are.
///
/// # Errors
/// Named errors for a `size` that is not constant or of the wrong length, or a `theta`
/// whose shape does not fit it.
pub(super) fn affine_grid(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let theta = e.input(ins, 0)?;
    let et = e.require(theta, ElementType::is_float, "a float")?;
    let size = e.constant_ints(e.input(ins, 1)?, "input 1 (`size`)")?;
    let align_corners = e.attr_i64("align_corners")?.unwrap_or(0) != 0;
    let size = size
        .iter()
        .map(|&v| usize::try_from(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| e.shape_error(format!("size {size:?} has a negative extent")))?;
    let r = size.len().saturating_sub(2);
    if !(2..=3).contains(&r) {
        return Err(e.shape_error(format!(
            "size {size:?} must be [N, C, H, W] or [N, C, D, H, W]"
        )));
    }
    let dt = dims(e, theta)?;
    if dt != [size[0], r, r + 1] {
        return Err(e.shape_error(format!(
            "theta {dt:?} must be [{}, {r}, {}] for size {size:?}",
            size[0],
            r + 1
        )));
    }
    // The base grid [P, r + 1]: each output position's normalised coordinates, last axis
    // first, then 1 (for theta's translation column).
    let spatial = &size[2..];
    let positions: usize = spatial.iter().product();
    let mut base = Vec::with_capacity(positions * (r + 1));
    for p in 0..positions {
        let mut rest = p;
        let mut index = vec![0; r];
        for a in (0..r).rev() {
            index[a] = rest % spatial[a];
            rest /= spatial[a];
        }
        for a in (0..r).rev() {
            base.push(normalised(index[a], spatial[a], align_corners));
        }
        base.push(1.0);
    }
    let base = e.constant(TensorData::F64(base), Shape::new([1, positions, r + 1]))?;
    let base = e.convert(base, et)?;
    let base = e.broadcast_to(base, &Shape::new([size[0], positions, r + 1]))?;
    // grid[n, p, :] = theta[n] · base[p]: base [N, P, r + 1] times thetaᵀ [N, r + 1, r].
    let theta_t = e.op(Op::Transpose(vec![0, 2, 1]), &[theta])?;
    let grid = e.op(Op::MatMul, &[base, theta_t])?;
    let out: Vec<usize> = std::iter::once(size[0])
        .chain(spatial.iter().copied())
        .chain([r])
        .collect();
    e.op(Op::Reshape(Shape::new(out)), &[grid])
}

/// The normalised coordinate of element `i` of an axis of extent `d` (with
/// `align_corners`, an axis of one element is at `-1`, as ONNX's reference has it).
fn normalised(i: usize, d: usize, align_corners: bool) -> f64 {
    let (i, d) = (i as f64, d as f64);
    if align_corners {
        if d > 1.0 {
            2.0 * i / (d - 1.0) - 1.0
        } else {
            -1.0
        }
    } else {
        (2.0 * i + 1.0) / d - 1.0
    }
}
