//! The unrolled form as a body Function of float weights: what autodiff differentiates a
//! recurrent op through.

use super::{unroll, UnrollGraph, UnrollOperands};
use crate::{Op, Output, RecurrentCell, RecurrentSequence, Shape, SliceAxis, TensorData};

/// The op's unrolled form as a body [`crate::Function`] (named after the op): Parameters
/// `X, W, R, B, sequence_lens, initial_h` (and `initial_c, P`) of `inputs`' types, results
/// `Y, Y_h` (and `Y_c`). `lengths` are the values of `sequence_lens` (the unrolled form
/// needs them at build time; `None`: every entry runs all steps), the parameter being then
/// unused. Autodiff differentiates the op through it.
///
/// # Errors
/// [`crate::IrError`] when `inputs` do not fit the op (as inference says) or `lengths` are
/// out of `1..=seq`.
pub fn decomposition(
    r: &RecurrentSequence,
    inputs: &[crate::TensorType],
    lengths: Option<Vec<usize>>,
) -> Result<crate::Function, crate::IrError> {
    let op = Op::Recurrent(std::sync::Arc::new(r.clone()));
    let invalid = |message: String| crate::IrError::Invalid {
        function: r.type_name().to_string(),
        message,
    };
    crate::infer_output_types(&op, inputs).map_err(invalid)?;
    let mut f = crate::Function::new(r.type_name());
    let names = RecurrentSequence::OPERANDS;
    let mut params = Vec::with_capacity(inputs.len());
    for (name, t) in names.iter().zip(inputs) {
        let id = f.add_parameter(*name, t.element_type, t.shape.clone())?;
        params.push(Output::from(id));
    }
    let x = &inputs[0];
    let (seq, batch) = r.seq_batch(x.shape.dims()).unwrap_or_default();
    if let Some(l) = &lengths {
        if l.len() != batch || l.iter().any(|&l| l == 0 || l > seq) {
            return Err(invalid(format!(
                "sequence_lens {l:?} must hold one length in 1..={seq} per batch entry"
            )));
        }
    }
    let lstm = r.cell == RecurrentCell::Lstm;
    let operands = UnrollOperands {
        x: params[0],
        element_type: x.element_type,
        extents: (seq, batch, x.shape.dims()[2]),
        b: Some(params[3]),
        lengths: lengths.filter(|l| l.iter().any(|&l| l < seq)),
        initial_h: Some(params[5]),
        initial_c: lstm.then(|| params[6]),
        p: lstm.then(|| params[7]),
    };
    let mut g = Body {
        f: &mut f,
        w: params[1],
        r: params[2],
    };
    let outs = unroll(&mut g, r, &operands)?;
    for o in outs {
        f.add_result(o, None)?;
    }
    Ok(f)
}

/// [`UnrollGraph`] over a body Function with float weights `W`, `R` (Parameters).
struct Body<'a> {
    f: &'a mut crate::Function,
    w: Output,
    r: Output,
}

impl Body<'_> {
    /// Direction `d` of `m` `[dirs, N, K]`, transposed to `[K, N]`.
    fn oriented(&mut self, m: Output, d: usize) -> Result<Output, crate::IrError> {
        let dims = self.f.output_type(m)?.shape.dims().to_vec();
        let mut axes: Vec<SliceAxis> = dims.iter().map(|&n| SliceAxis::full(n)).collect();
        axes[0] = SliceAxis {
            start: d,
            len: 1,
            step: 1,
        };
        let s = self.op(Op::Slice(axes), &[m])?;
        let s = self.op(Op::Reshape(Shape::new(&dims[1..])), &[s])?;
        self.op(Op::Transpose(vec![1, 0]), &[s])
    }
}

impl UnrollGraph for Body<'_> {
    type Error = crate::IrError;
    type Matrix = Output;

    fn op(&mut self, op: Op, inputs: &[Output]) -> Result<Output, crate::IrError> {
        self.f.add_node(op, inputs).map(Output::from)
    }

    fn constant(&mut self, data: TensorData, shape: Shape) -> Result<Output, crate::IrError> {
        self.f.add_constant(data, shape).map(Output::from)
    }

    fn weights(&mut self, d: usize) -> Result<(Output, Output), crate::IrError> {
        let (w, r) = (self.w, self.r);
        Ok((self.oriented(w, d)?, self.oriented(r, d)?))
    }

    fn product(&mut self, a: Output, m: &Output) -> Result<Output, crate::IrError> {
        self.op(Op::MatMul, &[a, *m])
    }

    fn columns(&mut self, m: &Output, start: usize, len: usize) -> Result<Output, crate::IrError> {
        let dims = self.f.output_type(*m)?.shape.dims().to_vec();
        let axes = vec![
            SliceAxis::full(dims[0]),
            SliceAxis {
                start,
                len,
                step: 1,
            },
        ];
        self.op(Op::Slice(axes), &[*m])
    }
}
