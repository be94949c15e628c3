//! Half-precision widening: every op on `f16`/`bf16` values computed in `f32`, its result
//! rounded back to the half type, so that the backend's `f32` kernels (GEMM, native
//! convolution, fused JIT loops) run what would otherwise run the reference's per-element
//! half arithmetic.

use std::collections::BTreeSet;

use graphlift_ir::{ElementType, Function, NodeId, Op, Output};

use crate::rewrite::{record_pass_once, replace_by_value, rewrite_on_copy};
use crate::{Pass, PassError};

/// Rewrites each op that reads or writes `f16`/`bf16` values into the same op on `f32`:
/// half operands are converted to `f32` (exact), the op runs on `f32`, and a half result is
/// converted back (round to nearest even).
///
/// The reference defines a half op as computed in `f32` and rounded once to the half type
/// (ONNX's rule), so for elementwise ops, comparisons, selects and data movement the
/// rewrite is exact; for the ops that accumulate (`MatMul`, reductions, convolutions,
/// `Softmax`, `LayerNorm`, `Attention`) it differs only in the order the `f32` kernels add in,
/// far below half precision. The rounding after every op stays (a value between two ops is a
/// half value, as the model says), so consecutive converts are not merged.
///
/// Not rewritten: parameters, constants, results, `Convert` (it is the rounding), state ops
/// (`Variable`, `ReadVariable`, `Assign`), `Random`, `CumSum` (its running sum is rounded to
/// the half type at every step, as the reference and numpy define it, and a sum kept in `f32`
/// gives other values: `256 + 1 + 1` in `bf16` is 256 step by step, 258 rounded once), fused
/// kernels, nodes with several
/// outputs or control dependencies, and the data-movement ops ([`Op::moves_data`]): each
/// output element is a copy of an input element, exact in any type, and widening one would convert all of its input to
/// move a part of it (a `Gather` of 128 rows from an `f16` embedding table would convert
/// the whole table on every call). Each new node has [`HalfWidening::NAME`] in its pass
/// history; the widened op takes the original's provenance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HalfWidening;

impl HalfWidening {
    /// The pass's name, recorded in the pass history of every node it creates.
    pub const NAME: &'static str = "half_widening";
}

impl Pass for HalfWidening {
    fn name(&self) -> &'static str {
        HalfWidening::NAME
    }

    /// Widens every eligible op; `true` when anything changed.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` does not validate. `f` is then unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        rewrite_on_copy(f, HalfWidening::NAME, any_half_op, widen)
    }
}

fn half(t: ElementType) -> bool {
    matches!(t, ElementType::F16 | ElementType::BF16)
}

/// Whether node `id` is an op to widen.
fn eligible(g: &Function, id: NodeId) -> Result<bool, PassError> {
    let node = g.node(id)?;
    let kept = matches!(
        node.op(),
        Op::Parameter
            | Op::Constant(_)
            | Op::Result
            | Op::Convert(_)
            | Op::Variable(_)
            | Op::ReadVariable
            | Op::Assign
            | Op::Random(_)
            | Op::CumSum(_)
            | Op::FusedKernel(_)
    ) || node.op().moves_data();
    if kept
        || node.inputs().is_empty()
        || node.outputs().len() != 1
        || !node.other_deps().is_empty()
    {
        return Ok(false);
    }
    if half(node.output_type().element_type) {
        return Ok(true);
    }
    for input in node.inputs() {
        if half(g.output_type(*input)?.element_type) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn any_half_op(g: &Function) -> Result<bool, PassError> {
    for node in g.nodes() {
        if eligible(g, node.id())? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn widen(g: &mut Function) -> Result<bool, PassError> {
    let mut created = BTreeSet::new();
    let mut changed = false;
    for id in g.topological_order()? {
        if !eligible(g, id)? {
            continue;
        }
        let node = g.node(id)?;
        let (op, site) = (node.op().clone(), node.creation_site().clone());
        let (inputs, out_type) = (node.inputs().to_vec(), node.output_type().element_type);
        let mut wide = Vec::with_capacity(inputs.len());
        for input in inputs {
            if half(g.output_type(input)?.element_type) {
                let c = g.add_node_at(Op::Convert(ElementType::F32), &[input], site.clone())?;
                created.insert(c);
                wide.push(Output::from(c));
            } else {
                wide.push(input);
            }
        }
        let widened = g.add_node_at(op, &wide, site.clone())?;
        created.insert(widened);
        let value = if half(out_type) {
            let back = g.add_node_at(Op::Convert(out_type), &[widened.into()], site)?;
            created.insert(back);
            back.into()
        } else {
            widened.into()
        };
        replace_by_value(g, id, value, &[], HalfWidening::NAME)?;
        changed = true;
    }
    record_pass_once(g, &created, HalfWidening::NAME)?;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::{FunctionBuilder, ReduceOp, Reduction, Shape, TensorData};
    use graphlift_runtime::{Backend, InterpreterBackend, Tensor};

    /// `relu(x · y + x)` and its sum over the last axis, in `t`.
    fn model(t: ElementType) -> Function {
        let b = FunctionBuilder::new("half");
        let x = b.parameter("x", t, [3, 8]);
        let y = b.parameter("y", t, [3, 8]);
        let z = (x * y + x).relu();
        let sum = Reduction {
            op: ReduceOp::Sum,
            axes: vec![1],
            keep_dims: false,
        };
        let s = b.op(Op::Reduce(sum), &[z]);
        b.finish(&[z, s]).unwrap()
    }

    /// A row `Gather` from a half table (an embedding lookup) moves half values: the table
    /// is never converted, only the gathered rows are, by the `Add` that reads them.
    #[test]
    fn data_movement_stays_on_half_values() {
        for t in [ElementType::F16, ElementType::BF16] {
            let b = FunctionBuilder::new("lookup");
            let table = b.parameter("table", t, [6, 4]);
            let ids = b.parameter("ids", ElementType::I64, [3]);
            let bias = b.parameter("bias", t, [3, 4]);
            let rows = b.op(Op::Gather(0), &[table, ids]);
            let moved = b.op(Op::Transpose(vec![1, 0]), &[rows]);
            let back = b.op(Op::Transpose(vec![1, 0]), &[moved]);
            let f = b.finish(&[back + bias]).unwrap();
            let mut g = f.clone();
            assert!(HalfWidening.run(&mut g).unwrap());
            let mut converted = Vec::new();
            for node in g.nodes() {
                match node.op() {
                    Op::Gather(_) | Op::Transpose(_) => {
                        assert_eq!(node.output_type().element_type, t, "{:?}", node.op());
                    }
                    Op::Convert(_) => converted.push(node.output_type().shape.clone()),
                    _ => {}
                }
            }
            // The two Add operands widened and the sum rounded back, all [3, 4].
            assert_eq!(converted, vec![Shape::new([3, 4]); 3], "{t:?}");
            let table: Vec<f64> = (0..24).map(|i| f64::from(i) / 7.0 - 1.5).collect();
            let bias: Vec<f64> = (0..12).map(|i| f64::from(i) / 3.0).collect();
            let inputs = [
                Tensor::from_data(TensorData::from_f64(t, &table), Shape::new([6, 4])).unwrap(),
                Tensor::from_data(TensorData::I64(vec![5, 0, 5]), Shape::new([3])).unwrap(),
                Tensor::from_data(TensorData::from_f64(t, &bias), Shape::new([3, 4])).unwrap(),
            ];
            let run = |f: &Function| InterpreterBackend.compile(f).unwrap().run(&inputs).unwrap();
            assert_eq!(run(&g), run(&f), "{t:?}");
        }
    }

    /// A half `CumSum` keeps its half steps: widening it would round once per output.
    #[test]
    fn a_half_cum_sum_is_not_widened() {
        let b = FunctionBuilder::new("scan");
        let x = b.parameter("x", ElementType::BF16, [4]);
        let c = graphlift_ir::CumSum {
            axis: 0,
            exclusive: false,
            reverse: true,
        };
        let mut f = b.finish(&[b.op(Op::CumSum(c), &[x])]).unwrap();
        assert!(!HalfWidening.run(&mut f).unwrap());
    }

    #[test]
    fn every_half_op_runs_in_f32_with_the_reference_results() {
        for t in [ElementType::F16, ElementType::BF16] {
            let f = model(t);
            let mut g = f.clone();
            assert!(HalfWidening.run(&mut g).unwrap());
            // No op but the converts and the results reads or writes a half value.
            for node in g.nodes() {
                let converts = matches!(
                    node.op(),
                    Op::Convert(_) | Op::Parameter | Op::Result | Op::Constant(_)
                );
                if !converts {
                    assert!(!eligible(&g, node.id()).unwrap(), "{:?}", node.op());
                }
            }
            let inputs: Vec<Tensor> = (0..2)
                .map(|k| {
                    let v: Vec<f64> = (0..24)
                        .map(|i| f64::from(i * 7 + k * 5) / 9.0 - 1.2)
                        .collect();
                    Tensor::from_data(TensorData::from_f64(t, &v), Shape::new([3, 8])).unwrap()
                })
                .collect();
            let want = InterpreterBackend
                .compile(&f)
                .unwrap()
                .run(&inputs)
                .unwrap();
            let got = InterpreterBackend
                .compile(&g)
                .unwrap()
                .run(&inputs)
                .unwrap();
            // Elementwise: bit for bit. The sum: within one half ulp.
            assert_eq!(got[0], want[0], "{t:?}");
            let c = graphlift_runtime::compare(&got[1], &want[1], 1e-2, 0.0);
            assert!(c.passed(), "{t:?}: {c}");
            assert!(
                !HalfWidening.run(&mut g).unwrap(),
                "a second run changes nothing"
            );
        }
    }
}
