//! Lowers QDQ (`QuantizeLinear -> DequantizeLinear`) models onto integer kernels: each
//! `MatMul` of a quantized activation by a dequantized constant weight becomes a
//! [`Op::QuantizedMatMul`] (UINT8 x INT8 products in INT32, dequantized in the store), and
//! each remaining round trip through an 8-bit type becomes the float clamp it is, so that it
//! fuses with its neighbours. Static quantization tools (onnxruntime's `quantize_static`,
//! NNCF, the PyTorch exporters) write these pairs; onnxruntime runs them the same way
//! (its QDQ selectors and `MatMulIntegerToFloat`).

mod pattern;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use graphlift_ir::{
    BinaryOp, CompareOp, Convolution, ElementType, Function, NodeId, Op, Output, QuantizedMatMul,
    Shape, TensorData,
};
use graphlift_runtime::reference::pack_vnni;

use crate::rewrite::{record_pass_once, replace_by_value, rewrite_on_copy};
use crate::{Pass, PassError, PassOutcome};
use pattern::{
    dequantized, dequantized_filter, integer_convolution, quantized_activation, quantized_value,
    quantized_weight, requantizing_divide, round_trip,
};

/// What the QDQ lowering did with each candidate: the products that became integer kernels,
/// those that stayed in float and why, and how many 8-bit round trips became float clamps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QdqReport {
    /// `(node, what)`: each `MatMul` (by name) made a `QuantizedMatMul`, with its `M x K x N`.
    pub lowered: Vec<(String, String)>,
    /// `(node, why)`: each `MatMul` or `Convolution` reading a dequantized value that stayed
    /// in float, and each other op whose result is quantized again (an `Add`, an activation,
    /// a `Softmax` of a QDQ model), with the reason.
    pub stayed_float: Vec<(String, String)>,
    /// The `QuantizeLinear -> DequantizeLinear` round trips left in float, each made the clamp
    /// it computes (no 8-bit value in between).
    pub round_trips: usize,
}

/// The QDQ lowering pass (see the module documentation). `MatMul(DequantizeLinear(
/// QuantizeLinear(x)), DequantizeLinear(W))` with `x` FLOAT quantized per tensor to UINT8 or
/// INT8 and `W` a constant 2-D UINT8/INT8 matrix (transposed or not, as Gemm imports it)
/// with a per-tensor or per-column scale and zero point becomes
/// `QuantizedMatMul(x, pack(W - zp_w), offset, scale)` with
/// `offset[n] = -zp_dq · Σ_k (W - zp_w)[k, n]` and `scale[n] = s_dq · s_w[n]` (FLOAT).
/// The integer sum is exact where the float product rounded each term: results agree with
/// onnxruntime's integer kernels, not bit for bit with the float graph.
///
/// A product of two per-tensor dequantized values (attention's scores) becomes the INT32
/// product of the integers, converted and scaled once after (`scale_after`); a convolution of a quantized
/// activation by a per-channel 8-bit filter a `ConvolutionInteger` of the 8-bit operands,
/// scaled once after (`conv_scale_after`). Stays float (reported
/// with the reason): weights whose zero point leaves `W - zp` outside INT8, per-row or
/// blocked scales, filters with a scale that is not per output channel. Provenance: the new
/// nodes take the replaced node's tags by nGraph's rule and record [`QdqLowering::NAME`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QdqLowering;

impl QdqLowering {
    /// The pass's name, recorded in the pass history of every node it creates.
    pub const NAME: &'static str = "qdq_lowering";
}

impl Pass for QdqLowering {
    fn name(&self) -> &'static str {
        QdqLowering::NAME
    }

    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        Ok(self.run_with_report(f)?.changed)
    }

    /// Lowers as described above; reports every candidate.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` does not validate; `f` is then unchanged.
    fn run_with_report(&self, f: &mut Function) -> Result<PassOutcome, PassError> {
        let mut report = QdqReport::default();
        let changed = rewrite_on_copy(
            f,
            QdqLowering::NAME,
            |g| Ok(g.nodes().any(|n| matches!(n.op(), Op::Convert(_)))),
            |g| lower_all(g, &mut report),
        )?;
        Ok(PassOutcome {
            changed,
            qdq: Some(report),
            ..PassOutcome::default()
        })
    }
}

/// Lowers every product, then every remaining round trip; `true` when anything changed.
fn lower_all(g: &mut Function, report: &mut QdqReport) -> Result<bool, PassError> {
    *report = QdqReport::default();
    let mut touched = BTreeSet::new();
    let candidates: Vec<NodeId> = g
        .nodes()
        .filter(|n| matches!(n.op(), Op::MatMul | Op::Convolution(_)))
        .map(|n| n.id())
        .collect();
    for id in candidates {
        let node = g.node(id)?;
        let name = node.name().to_string();
        let [a, b] = node.inputs()[..] else { continue };
        if let Op::Convolution(conv) = node.op() {
            let conv = conv.clone();
            if let Some(what) = conv_scale_after(g, id, conv, a, b, &mut touched)? {
                report.lowered.push((name, what));
            } else if dequantized(g, a)?.is_some() {
                report.stayed_float.push((
                    name,
                    "Convolution: the filter is not a dequantized constant with a scale per \
                     output channel"
                        .into(),
                ));
            }
            continue;
        }
        let act = quantized_activation(g, a)?;
        let weight = quantized_weight(g, b)?;
        match (act, weight) {
            (Ok(act), Ok(w)) => {
                let what = lower_matmul(g, id, &act, &w, &mut touched)?;
                report.lowered.push((name, what));
            }
            (act, weight) => {
                if let Some(what) = scale_after(g, id, a, b, &mut touched)? {
                    report.lowered.push((name, what));
                    continue;
                }
                let why = match (act, weight) {
                    (Ok(_), Err(why)) => format!("MatMul: operand b {why}"),
                    (Err(why), _) => format!("MatMul: operand a {why}"),
                    (Ok(_), Ok(_)) => continue,
                };
                if dequantized(g, a)?.is_some() || dequantized(g, b)?.is_some() {
                    report.stayed_float.push((name, why));
                }
            }
        }
    }
    let convert_ids: Vec<NodeId> = g
        .nodes()
        .filter(|n| matches!(n.op(), Op::Convert(ElementType::F32)))
        .map(|n| n.id())
        .collect();
    for id in convert_ids {
        if g.get(id).is_none() || !g.is_used(id)? {
            continue;
        }
        if let Some(clamped) = round_trip(g, Output::new(id, 0))? {
            float_producer(g, clamped, &touched, report)?;
            // NaN goes to 0 through the 8-bit type; every other value is unchanged.
            let same = g.add_node(Op::Compare(CompareOp::Equal), &[clamped, clamped])?;
            let zero = g.add_constant(TensorData::F32(vec![0.0]), Shape::scalar())?;
            let ty = g.output_type(clamped)?.shape.clone();
            let zero = g.add_node(Op::Broadcast(ty), &[zero.into()])?;
            let v = g.add_node(Op::Select, &[same.into(), clamped, zero.into()])?;
            replace_by_value(g, id, v.into(), &[], QdqLowering::NAME)?;
            touched.extend([same, zero, v]);
            report.round_trips += 1;
        }
    }
    record_pass_once(g, &touched, QdqLowering::NAME)?;
    Ok(!touched.is_empty())
}

/// Reports the op whose value the round trip at `clamped` quantizes when it stays in float
/// (an `Add`, an activation, a `Softmax` between `DequantizeLinear` and `QuantizeLinear`):
/// products are reported where they are lowered, and ops that only move data (`Reshape`,
/// `MaxPool`, ...) are exact in float.
fn float_producer(
    g: &Function,
    clamped: Output,
    touched: &BTreeSet<NodeId>,
    report: &mut QdqReport,
) -> Result<(), PassError> {
    let Some(v) = quantized_value(g, clamped)? else {
        return Ok(());
    };
    let node = g.node(v.node)?;
    let op = node.op();
    let skipped = touched.contains(&v.node)
        || op.moves_data()
        || matches!(
            op,
            Op::MatMul
                | Op::Convolution(_)
                | Op::QuantizedMatMul(_)
                | Op::Convert(_)
                | Op::Parameter
                | Op::Constant(_)
        );
    let name = node.name().to_string();
    if skipped || report.stayed_float.iter().any(|(n, _)| *n == name) {
        return Ok(());
    }
    report.stayed_float.push((
        name,
        format!(
            "{} stays in float: there is no integer kernel for it, and the \
             QuantizeLinear -> DequantizeLinear after it is a float clamp",
            op.type_name()
        ),
    ));
    Ok(())
}

/// Replaces the `MatMul` `id` by a `QuantizedMatMul`; returns its `M x K x N`.
fn lower_matmul(
    g: &mut Function,
    id: NodeId,
    act: &pattern::QuantizedActivation,
    w: &pattern::QuantizedWeight,
    touched: &mut BTreeSet<NodeId>,
) -> Result<String, PassError> {
    let (k, n) = (w.k, w.n);
    let mut offset = vec![0i32; n];
    for row in w.w.chunks_exact(n.max(1)).take(k) {
        for (o, &v) in offset.iter_mut().zip(row) {
            *o = o.wrapping_add(i32::from(v));
        }
    }
    let zp = act.dq_zero_point as i32;
    for o in &mut offset {
        *o = o.wrapping_mul(-zp);
    }
    let requantized = requantizing_divide(g, id)?;
    let y_scale = requantized.map_or(1.0, |(_, y)| y as f32);
    let scale: Vec<f32> = w
        .scale
        .iter()
        .map(|&s| act.dq_scale as f32 * s as f32 / y_scale)
        .collect();
    let packed = g.add_constant(
        TensorData::I8(pack_vnni(&w.w, k, n)),
        Shape::new([k.div_ceil(4), n, 4]),
    )?;
    let offset = g.add_constant(TensorData::I32(offset), Shape::new([n]))?;
    let scale = g.add_constant(TensorData::F32(scale), Shape::new([n]))?;
    let op = Op::QuantizedMatMul(QuantizedMatMul {
        x_scale: act.q_scale,
        x_zero_point: act.q_zero_point,
    });
    let q = g.add_node(op, &[act.x, packed.into(), offset.into(), scale.into()])?;
    let m = g
        .output_type(act.x)?
        .shape
        .dims()
        .iter()
        .rev()
        .nth(1)
        .copied()
        .unwrap_or(1);
    let (replaced, how) = match requantized {
        Some((divide, _)) => (divide, "requantized"),
        None => (id, "dequantized"),
    };
    replace_by_value(g, replaced, q.into(), &[], QdqLowering::NAME)?;
    touched.extend([packed, offset, scale, q]);
    Ok(format!("QuantizedMatMul {m}x{k}x{n}, {how} in the store"))
}

/// `MatMul(DequantizeLinear(qa), DequantizeLinear(qb))` with both per tensor and not a
/// constant weight (attention's `Q·Kᵀ` and `P·V`): rewritten as
/// `Convert<f32>(MatMul(qa - zp_a, qb - zp_b)) * (s_a · s_b)`, the product of the integers
/// in INT32 (exact: each term is at most 255² in magnitude, so no sum of fewer than 2¹⁵
/// terms wraps; the native kernel multiplies them as 16-bit values) scaled once, as
/// onnxruntime's `MatMulIntegerToFloat` does. Returns what it made, or `None` when the
/// operands are not both dequantized.
fn scale_after(
    g: &mut Function,
    id: NodeId,
    a: Output,
    b: Output,
    touched: &mut BTreeSet<NodeId>,
) -> Result<Option<String>, PassError> {
    let (Some((da, sa)), Some((db, sb))) = (dequantized(g, a)?, dequantized(g, b)?) else {
        return Ok(None);
    };
    let requantized = requantizing_divide(g, id)?;
    let y_scale = requantized.map_or(1.0, |(_, y)| y as f32);
    let ia = g.add_node(Op::Convert(ElementType::I32), &[da])?;
    let ib = g.add_node(Op::Convert(ElementType::I32), &[db])?;
    let product = g.add_node(Op::MatMul, &[ia.into(), ib.into()])?;
    let float = g.add_node(Op::Convert(ElementType::F32), &[product.into()])?;
    let shape = g.output_type(float.into())?.shape.clone();
    let s = g.add_constant(
        TensorData::F32(vec![sa as f32 * sb as f32 / y_scale]),
        Shape::scalar(),
    )?;
    let s_wide = g.add_node(Op::Broadcast(shape), &[s.into()])?;
    let y = g.add_node(
        Op::Binary(BinaryOp::Multiply),
        &[float.into(), s_wide.into()],
    )?;
    let replaced = requantized.map_or(id, |(divide, _)| divide);
    replace_by_value(g, replaced, y.into(), &[], QdqLowering::NAME)?;
    touched.extend([ia, ib, product, float, s, s_wide, y]);
    let k = g.output_type(da)?.shape.dims().last().copied().unwrap_or(0);
    Ok(Some(format!(
        "MatMul of the integers in INT32, scaled after (K = {k})"
    )))
}

/// `Convolution(DequantizeLinear(qx), DequantizeLinear(W))` with `qx` per tensor and `W` a
/// constant 8-bit filter with a scale per output channel: rewritten as
/// `Convert<f32>(ConvolutionInteger(qx, zp_x, W, zp_w)) * (s_x · s_w[m])` (the scale laid
/// along the output's channel axis): the INT32 sum exact for any window, scaled once, as
/// onnxruntime's `QLinearConv` scales its accumulator. Where a zero point is not a value of
/// its operand's type (or not constant per channel), the convolution of `qx - zp_x` and
/// `W - zp_w` runs in the float kernel instead (exact while every partial sum stays below
/// 2²⁴: always for windows of `C / groups · K..` up to 258 values). `None` when the
/// operands do not fit.
fn conv_scale_after(
    g: &mut Function,
    id: NodeId,
    conv: Convolution,
    a: Output,
    b: Output,
    touched: &mut BTreeSet<NodeId>,
) -> Result<Option<String>, PassError> {
    let (Some((da, sa)), Some((dw, sw))) = (dequantized(g, a)?, dequantized_filter(g, b)?) else {
        return Ok(None);
    };
    let out = g.output_type(Output::new(id, 0))?.shape.clone();
    if out.dims().len() < 2 || out.dims()[1] != sw.len() {
        return Ok(None);
    }
    let window: usize = g.output_type(dw)?.shape.dims()[1..].iter().product();
    let (product, what) = match integer_convolution(g, a, b)? {
        // The 8-bit operands on the integer kernel (exact in INT32, VNNI where the host
        // has it), converted once.
        Some(ic) => {
            let xz = g.add_constant(ic.x_zero_point, Shape::scalar())?;
            let m = ic.w_zero_point.len();
            let wz = g.add_constant(ic.w_zero_point, Shape::new([m]))?;
            let acc = g.add_node(
                Op::ConvolutionInteger(conv),
                &[ic.x, xz.into(), ic.w, wz.into()],
            )?;
            let wide = g.add_node(Op::Convert(ElementType::F32), &[acc.into()])?;
            touched.extend([xz, wz, acc]);
            (
                wide,
                format!("ConvolutionInteger, scaled after per channel (window of {window})"),
            )
        }
        None => {
            let exact = if window <= 258 { ", exact" } else { "" };
            let product = g.add_node(Op::Convolution(conv), &[da, dw])?;
            (
                product,
                format!(
                    "Convolution of the integers in float, scaled after per channel (window \
                     of {window}{exact})"
                ),
            )
        }
    };
    let mut column = vec![1; out.dims().len()];
    column[1] = sw.len();
    let scale: Vec<f32> = sw.iter().map(|&s| sa as f32 * s as f32).collect();
    let s = g.add_constant(TensorData::F32(scale), Shape::new(column))?;
    let s_wide = g.add_node(Op::Broadcast(out), &[s.into()])?;
    let y = g.add_node(
        Op::Binary(BinaryOp::Multiply),
        &[product.into(), s_wide.into()],
    )?;
    replace_by_value(g, id, y.into(), &[], QdqLowering::NAME)?;
    touched.extend([product, s, s_wide, y]);
    Ok(Some(what))
}
