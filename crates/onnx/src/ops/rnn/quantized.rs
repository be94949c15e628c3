//! The weights of `DynamicQuantizeLSTM` (onnxruntime's contrib operator): 8-bit matrices with
//! their scales and zero points, multiplied through [`dynamic_quantized_matmul`] in the op's
//! unrolled form ([`graphlift_ir::unroll`]).

use graphlift_ir::unroll::UnrollGraph;

use super::*;
use crate::ops::integer::{dynamic_quantized_matmul, QuantizedMatrix};
use crate::ops::layout::{reshape_to as reshape, slice_range};

/// How a node gives its weights `W` and `R`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(in crate::ops) enum Form {
    /// ONNX's: `W` `[dirs, G·h, input]`, `R` `[dirs, G·h, h]`, of `X`'s float type.
    Float,
    /// `DynamicQuantizeLSTM`'s: 8-bit `W` `[dirs, input, G·h]` and `R` `[dirs, h, G·h]` with
    /// scales and zero points at inputs 8 to 11.
    DynamicQuantized,
}

/// The unrolled `DynamicQuantizeLSTM`: nodes through the node's emitter, each product a
/// dynamically quantized one of direction `d`'s 8-bit weights.
pub(super) struct QuantizedGraph<'e, 'a, 'i> {
    pub e: &'e mut NodeEmitter<'a>,
    pub ins: In<'i>,
    pub s: &'e Spec,
}

impl UnrollGraph for QuantizedGraph<'_, '_, '_> {
    type Error = OnnxError;
    type Matrix = QuantizedMatrix;

    fn op(&mut self, op: Op, inputs: &[Output]) -> Result<Output, OnnxError> {
        self.e.op(op, inputs)
    }

    fn constant(&mut self, data: TensorData, shape: Shape) -> Result<Output, OnnxError> {
        self.e.constant(data, shape)
    }

    fn weights(&mut self, d: usize) -> Result<(QuantizedMatrix, QuantizedMatrix), OnnxError> {
        Ok((
            quantized(self.e, self.ins, self.s, [1, 8, 9], d)?,
            quantized(self.e, self.ins, self.s, [2, 10, 11], d)?,
        ))
    }

    fn product(&mut self, a: Output, m: &QuantizedMatrix) -> Result<Output, OnnxError> {
        dynamic_quantized_matmul(self.e, a, m)
    }

    fn columns(
        &mut self,
        _: &QuantizedMatrix,
        _: usize,
        _: usize,
    ) -> Result<QuantizedMatrix, OnnxError> {
        Err(self
            .e
            .unsupported("column blocks of quantized recurrent weights (GRU)"))
    }
}

/// Direction `d`'s quantized matrix of `DynamicQuantizeLSTM`'s weight, scale and zero point
/// at inputs `[wi, si, zi]`: the weight `[dirs, K, G·h]` sliced to `[K, G·h]`, the scale and
/// zero point (equal shapes, `[dirs]` or `[dirs, G·h]`) to a scalar or `[G·h]`.
pub(super) fn quantized(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    s: &Spec,
    [wi, si, zi]: [usize; 3],
    d: usize,
) -> Result<QuantizedMatrix, OnnxError> {
    let (w, scale, zp) = (e.input(ins, wi)?, e.input(ins, si)?, e.input(ins, zi)?);
    e.require(scale, |t| t == ElementType::F32, "a FLOAT scale")?;
    let zt = e.et(zp)?;
    let wt = e.et(w)?;
    if zt != wt {
        return Err(e.type_error(format!(
            "zero point (input {zi}) is {zt}, its weight (input {wi}) is {wt}; they must have \
             one type"
        )));
    }
    let g = s.cell.gates() * s.hidden;
    let sd = dims(e, scale)?;
    if sd != [s.directions] && sd != [s.directions, g] {
        return Err(e.shape_error(format!(
            "scale (input {si}) has shape {sd:?}: it must be [{dirs}] (per direction) or \
             [{dirs}, {g}] (per column)",
            dirs = s.directions
        )));
    }
    expect_dims(e, zp, &sd, &format!("zero point (input {zi})"))?;
    crate::ops::quantize::check_scale(e, scale, "scale")?;
    let one = |e: &mut NodeEmitter<'_>, v: Output| -> Result<Output, OnnxError> {
        let sliced = slice_range(e, v, 0, d, 1)?;
        let rest = dims(e, sliced)?[1..].to_vec();
        reshape(e, sliced, rest)
    };
    Ok(QuantizedMatrix::new(
        one(e, w)?,
        one(e, scale)?,
        one(e, zp)?,
    ))
}
