//! `Pad` (every opset): non-negative pads as one [`graphlift_ir::Op::Pad`], negative pads
//! as a `Slice` of the data first.

use graphlift_ir::{Op, Output, Pad, PadMode, SliceAxis};

use super::layout::{axis, dims, reshape_to};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `Pad`: `pads` (`[begin.., end..]` over the padded axes; an input from opset 11, the
/// `pads`/`paddings` attribute before), the padding value (input 2 from opset 11, a scalar or
/// one-element tensor that may be computed at run time; the `value` attribute before;
/// default 0), `axes` (input 3, opset 18; default all), `mode` (`constant`, `reflect`,
/// `edge`, and `wrap` from opset 19). A negative pad removes elements: the data is sliced
/// first and the remaining pads apply to the slice (so `reflect` mirrors the sliced data).
pub(super) fn pad(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let modern = e.opset() >= 11;
    if modern {
        e.arity(ins, 2, 4)?;
    } else {
        e.arity(ins, 1, 1)?;
    }
    let x = e.input(ins, 0)?;
    let d = dims(e, x)?;
    let rank = d.len();
    let pads = if modern {
        e.constant_ints(e.input(ins, 1)?, "input 1 (`pads`)")?
    } else {
        let name = if e.opset() < 2 { "paddings" } else { "pads" };
        e.attr_ints(name)?
            .ok_or_else(|| e.attribute_error(name, "is required".into()))?
    };
    let axes: Vec<usize> = match e.optional_input(ins, 3) {
        Some(v) if modern => {
            let list = e.constant_ints(v, "input 3 (`axes`)")?;
            let mut seen = vec![false; rank];
            list.iter()
                .map(|&a| {
                    let a = axis(e, a, rank, "axes")?;
                    if std::mem::replace(&mut seen[a], true) {
                        return Err(e.shape_error(format!("axes {list:?} repeats an axis")));
                    }
                    Ok(a)
                })
                .collect::<Result<_, _>>()?
        }
        _ => (0..rank).collect(),
    };
    let n = axes.len();
    if pads.len() != 2 * n {
        return Err(e.shape_error(format!(
            "pads {pads:?} has {} entries; {n} padded axes need {}",
            pads.len(),
            2 * n
        )));
    }
    let mut modes = vec![
        ("constant", PadMode::Constant),
        ("reflect", PadMode::Reflect),
    ];
    modes.push(("edge", PadMode::Edge));
    if e.opset() >= 19 {
        modes.push(("wrap", PadMode::Wrap));
    }
    let mode = e.attr_choice("mode", "constant", &modes)?;
    // Per axis: (begin, end), negative parts cropped first.
    let (mut low, mut high) = (vec![0i64; rank], vec![0i64; rank]);
    for (k, &a) in axes.iter().enumerate() {
        low[a] = pads[k];
        high[a] = pads[n + k];
    }
    let mut crop: Vec<SliceAxis> = d.iter().map(|&len| SliceAxis::full(len)).collect();
    for a in 0..rank {
        let cut_low = (-low[a]).max(0) as usize;
        let cut_high = (-high[a]).max(0) as usize;
        if cut_low + cut_high > d[a] {
            return Err(e.shape_error(format!(
                "pads {pads:?} remove {} elements of axis {a}, which has {}",
                cut_low + cut_high,
                d[a]
            )));
        }
        crop[a] = SliceAxis {
            start: if cut_low + cut_high == d[a] {
                0
            } else {
                cut_low
            },
            step: 1,
            len: d[a] - cut_low - cut_high,
        };
    }
    let x = if crop
        .iter()
        .zip(&d)
        .all(|(s, &len)| *s == SliceAxis::full(len))
    {
        x
    } else {
        e.op(Op::Slice(crop), &[x])?
    };
    let p = Pad {
        low: low.iter().map(|&v| v.max(0) as usize).collect(),
        high: high.iter().map(|&v| v.max(0) as usize).collect(),
        interior: vec![0; rank],
        mode,
    };
    if p.low.iter().chain(&p.high).all(|&v| v == 0) {
        return Ok(x);
    }
    if mode != PadMode::Constant {
        p.output_extents(&dims(e, x)?)
            .map_err(|m| e.shape_error(m))?;
        return e.op(Op::Pad(p), &[x]);
    }
    let value = match e.optional_input(ins, 2) {
        Some(v) if modern => {
            let n = e.ty(v)?.shape.element_count().unwrap_or(0);
            if n != 1 {
                return Err(e.shape_error(format!(
                    "the padding value must be one element, has shape {}",
                    e.ty(v)?.shape
                )));
            }
            e.same_type(&[x, v])?;
            reshape_to(e, v, Vec::new())?
        }
        _ => {
            let value = if modern {
                0.0
            } else {
                f64::from(e.attr_f32("value", 0.0)?)
            };
            e.scalar_like(x, value)?
        }
    };
    e.op(Op::Pad(p), &[x, value])
}
