//! Operators that rearrange elements without computing: `Split` (slices), `Tile` (a
//! broadcast between reshapes), `DepthToSpace` and `SpaceToDepth` (reshape, transpose,
//! reshape) and `Trilu` (a select with a constant mask).

use graphlift_ir::{Op, Output, Shape, TensorData};

use super::layout::{axis, dims, reshape_to as reshape, slice_range};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `Split` along `axis` (default 0) into the node's outputs: by `split` (the attribute before
/// opset 13, input 1 from 13), else into `num_outputs` (opset 18) or as many parts as the
/// node has outputs, of `ceil(d / n)` elements each and a smaller last one (before opset 18
/// the parts must be equal). Each part is a `Slice`.
pub(super) fn split(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Vec<Output>, OnnxError> {
    e.arity(ins, 1, 2)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let a = axis(e, e.attr_i64("axis")?.unwrap_or(0), d.len(), "axis")?;
    let outputs = e.node().output.len();
    let given = if e.opset() >= 13 {
        match e.optional_input(ins, 1) {
            Some(v) => Some(e.constant_ints(v, "input 1 (`split`)")?),
            None => None,
        }
    } else {
        e.attr_ints("split")?
    };
    let parts: Vec<usize> = match given {
        Some(list) => {
            let parts = list
                .iter()
                .map(|&p| usize::try_from(p))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| e.shape_error(format!("split {list:?} has a negative part")))?;
            if parts.iter().sum::<usize>() != d[a] || parts.len() != outputs {
                return Err(e.shape_error(format!(
                    "split {list:?} must have one part per output ({outputs}) summing to the \
                     extent {} of axis {a}",
                    d[a]
                )));
            }
            parts
        }
        None => {
            let n = match e.attr_i64("num_outputs")? {
                Some(n) if usize::try_from(n).ok() == Some(outputs) => outputs,
                Some(n) => {
                    return Err(e.attribute_error(
                        "num_outputs",
                        format!("{n}, but the node has {outputs} outputs"),
                    ))
                }
                None => outputs,
            };
            if n == 0 {
                return Err(e.shape_error("Split has no outputs".into()));
            }
            let chunk = d[a].div_ceil(n);
            if e.opset() < 18 && d[a] % n != 0 {
                return Err(e.shape_error(format!(
                    "axis {a} of extent {} does not split into {n} equal parts",
                    d[a]
                )));
            }
            (0..n)
                .map(|k| chunk.min(d[a].saturating_sub(k * chunk)))
                .collect()
        }
    };
    let mut start = 0;
    parts
        .iter()
        .map(|&len| {
            let from = start;
            start += len;
            slice_range(e, x, a, from, len)
        })
        .collect()
}

/// `Tile`: the input repeated `repeats[a]` times along each axis (`repeats` a constant):
/// `[d..]` reshaped to `[1, d0, 1, d1, ..]`, broadcast to `[r0, d0, r1, d1, ..]`, reshaped to
/// `[r0 d0, r1 d1, ..]`.
pub(super) fn tile(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let repeats = e.constant_ints(e.input(ins, 1)?, "input 1 (`repeats`)")?;
    if repeats.len() != d.len() || repeats.iter().any(|&r| r < 0) {
        return Err(e.shape_error(format!(
            "repeats {repeats:?} must have one non-negative entry per axis of {d:?}"
        )));
    }
    let r: Vec<usize> = repeats.iter().map(|&v| v as usize).collect();
    if r.iter().all(|&v| v == 1) {
        return Ok(x);
    }
    let split: Vec<usize> = d.iter().flat_map(|&n| [1, n]).collect();
    let spread: Vec<usize> = d.iter().zip(&r).flat_map(|(&n, &k)| [k, n]).collect();
    let out: Vec<usize> = d.iter().zip(&r).map(|(&n, &k)| n * k).collect();
    let y = reshape(e, x, split)?;
    let y = e.broadcast_to(y, &Shape::new(spread))?;
    reshape(e, y, out)
}

/// The `blocksize` attribute (required, >= 1) and `X`'s `[N, C, H, W]`.
fn blocks(e: &NodeEmitter<'_>, x: Output) -> Result<(usize, [usize; 4]), OnnxError> {
    let b = e
        .attr_i64("blocksize")?
        .ok_or_else(|| e.attribute_error("blocksize", "is required".into()))?;
    let b = usize::try_from(b)
        .ok()
        .filter(|&b| b >= 1)
        .ok_or_else(|| e.attribute_error("blocksize", format!("must be >= 1, is {b}")))?;
    let d = dims(e, x)?;
    let [n, c, h, w] = d[..] else {
        return Err(e.shape_error(format!("X {d:?} must be [N, C, H, W]")));
    };
    Ok((b, [n, c, h, w]))
}

/// `DepthToSpace`: `[N, C, H, W]` to `[N, C / b², H b, W b]`; `mode` `DCR` (default) takes
/// the block offsets from the outer channel bits, `CRD` from the inner ones.
pub(super) fn depth_to_space(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let (b, [n, c, h, w]) = blocks(e, x)?;
    if c % (b * b) != 0 {
        return Err(e.shape_error(format!(
            "C = {c} is not a multiple of blocksize² = {}",
            b * b
        )));
    }
    let crd = e.attr_choice("mode", "DCR", &[("DCR", false), ("CRD", true)])?;
    let c2 = c / (b * b);
    let (split, perm) = if crd {
        (vec![n, c2, b, b, h, w], vec![0, 1, 4, 2, 5, 3])
    } else {
        (vec![n, b, b, c2, h, w], vec![0, 3, 4, 1, 5, 2])
    };
    let y = reshape(e, x, split)?;
    let y = e.op(Op::Transpose(perm), &[y])?;
    reshape(e, y, vec![n, c2, h * b, w * b])
}

/// `SpaceToDepth`: `[N, C, H, W]` to `[N, C b², H / b, W / b]`, the block offsets becoming
/// the outer channel bits.
pub(super) fn space_to_depth(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    let (b, [n, c, h, w]) = blocks(e, x)?;
    if h % b != 0 || w % b != 0 {
        return Err(e.shape_error(format!("H = {h} and W = {w} must be multiples of {b}")));
    }
    let y = reshape(e, x, vec![n, c, h / b, b, w / b, b])?;
    let y = e.op(Op::Transpose(vec![0, 3, 5, 1, 2, 4]), &[y])?;
    reshape(e, y, vec![n, c * b * b, h / b, w / b])
}

/// `Trilu`: the upper (`upper` = 1, default) or lower triangle of the last two axes, from
/// diagonal `k` (input 1, a constant scalar, default 0) on; the rest is 0.
pub(super) fn trilu(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 2)?;
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    if d.len() < 2 {
        return Err(e.shape_error(format!("input {d:?} must have rank >= 2")));
    }
    let k = match e.optional_input(ins, 1) {
        Some(v) => match e.constant_ints(v, "input 1 (`k`)")?[..] {
            [k] => k,
            ref other => return Err(e.shape_error(format!("k {other:?} must be one value"))),
        },
        None => 0,
    };
    let upper = e.attr_i64("upper")?.unwrap_or(1) != 0;
    let (rows, cols) = (d[d.len() - 2], d[d.len() - 1]);
    let mask: Vec<bool> = (0..rows * cols)
        .map(|at| {
            let (i, j) = ((at / cols) as i64, (at % cols) as i64);
            if upper {
                j - i >= k
            } else {
                j - i <= k
            }
        })
        .collect();
    let mask = e.constant(TensorData::Bool(mask), Shape::new([rows, cols]))?;
    let zero = e.scalar_like(x, 0.0)?;
    e.select(mask, x, zero)
}
