//! Inference for [`crate::Op::Recurrent`]: `X`, `W`, `R`, `B`, `sequence_lens`,
//! `initial_h` (and for LSTM `initial_c`, `P`) give `Y`, `Y_h` (and `Y_c`).

use super::OutputTypes;
use crate::attrs::RecurrentSequence;
use crate::{ElementType, Shape, TensorType};

pub(super) fn recurrent(
    r: &RecurrentSequence,
    inputs: &[TensorType],
) -> Result<OutputTypes, String> {
    r.check()?;
    let names = RecurrentSequence::OPERANDS;
    if inputs.len() != r.cell.inputs() {
        return Err(format!(
            "takes {} operands ({}), got {}",
            r.cell.inputs(),
            names[..r.cell.inputs()].join(", "),
            inputs.len()
        ));
    }
    let x = &inputs[0];
    let et = x.element_type;
    if !et.is_float() {
        return Err(format!("X must be a float tensor, is {x}"));
    }
    let (seq, batch) = r
        .seq_batch(x.shape.dims())
        .ok_or_else(|| format!("X must have rank 3, is {x}"))?;
    let input = x.shape.dims()[2];
    let (dirs, h) = (r.direction.count(), r.hidden_size);
    let g = r.cell.gates() * h;
    let state = r.state_dims(batch).to_vec();
    let mut want: Vec<(usize, Vec<usize>)> = vec![
        (1, vec![dirs, g, input]),
        (2, vec![dirs, g, h]),
        (3, vec![dirs, 2 * g]),
        (5, state.clone()),
    ];
    if inputs.len() == 8 {
        want.push((6, state.clone()));
        want.push((7, vec![dirs, 3 * h]));
    }
    for (i, dims) in want {
        let t = &inputs[i];
        if t.element_type != et || t.shape.dims() != dims.as_slice() {
            return Err(format!("{} must be {et} {dims:?}, is {t}", names[i]));
        }
    }
    let lens = &inputs[4];
    if !matches!(lens.element_type, ElementType::I32 | ElementType::I64)
        || lens.shape.dims() != [batch]
    {
        return Err(format!(
            "sequence_lens must be i32 or i64 [{batch}], is {lens}"
        ));
    }
    let mut out: OutputTypes = OutputTypes::new();
    out.push(TensorType::new(et, Shape::new(r.y_dims(seq, batch))));
    for _ in 1..r.cell.outputs() {
        out.push(TensorType::new(et, Shape::new(state.clone())));
    }
    Ok(out)
}
