//! The IR shapes of ONNX `QuantizeLinear` and `DequantizeLinear` as the importer composes
//! them (`crates/onnx/src/ops/quantize.rs`), read back: the quantized activation behind a
//! `DequantizeLinear(QuantizeLinear(x))`, the INT8 weight matrix behind a
//! `DequantizeLinear(W)` of a constant, and whether a float value is integral.

use graphlift_ir::{BinaryOp, ElementType, Function, Op, Output, Shape, TensorData, UnaryOp};
use graphlift_runtime::reference;

use crate::rewrite::splat;
use crate::PassError;

/// A node's op and inputs, when it has no control dependencies (a rewrite may not drop one).
fn op_of(g: &Function, o: Output) -> Result<Option<(&Op, Vec<Output>)>, PassError> {
    let n = g.node(o.node)?;
    if !n.other_deps().is_empty() || n.outputs().len() != 1 {
        return Ok(None);
    }
    Ok(Some((n.op(), n.inputs().to_vec())))
}

/// The one value of a splat Constant (through Broadcasts) of one element, as `f64`.
fn scalar(g: &Function, o: Output) -> Result<Option<f64>, PassError> {
    Ok(splat(g, o)?.and_then(|(d, _)| (d.len() == 1).then(|| d.get_f64(0)).flatten()))
}

/// `a op b` with `b` (or, for a commutative `op`, either side) a splat scalar: the other
/// operand and the scalar.
fn with_scalar(g: &Function, o: Output, op: BinaryOp) -> Result<Option<(Output, f64)>, PassError> {
    let Some((&Op::Binary(b), ins)) = op_of(g, o)? else {
        return Ok(None);
    };
    if b != op {
        return Ok(None);
    }
    if let Some(v) = scalar(g, ins[1])? {
        return Ok(Some((ins[0], v)));
    }
    if matches!(op, BinaryOp::Multiply | BinaryOp::Add) {
        if let Some(v) = scalar(g, ins[0])? {
            return Ok(Some((ins[1], v)));
        }
    }
    Ok(None)
}

/// The UINT8 domain's shift for an 8-bit type: 128 for INT8 (`q + 128` is the same value
/// carried as UINT8), 0 for UINT8.
fn shift(t: ElementType) -> Option<f64> {
    match t {
        ElementType::U8 => Some(0.0),
        ElementType::I8 => Some(128.0),
        _ => None,
    }
}

/// `DequantizeLinear(QuantizeLinear(x))` per tensor, read back: `x` (FLOAT), the
/// quantization's scale and zero point (shifted to the UINT8 domain), and the
/// dequantization's zero point (shifted alike) and scale.
#[derive(Debug, Clone, Copy)]
pub(super) struct QuantizedActivation {
    pub x: Output,
    pub q_scale: f32,
    pub q_zero_point: u8,
    pub dq_zero_point: f64,
    pub dq_scale: f64,
}

/// Reads `o` as `(Convert<f32>(q) [- zp]) * s` with `q` an 8-bit
/// `Convert(Minimum(Maximum(Round(x / s_q) [+ zp_q], lo), hi))`, everything per tensor;
/// `Err(reason)` (inside `Ok`) says which part did not fit.
pub(super) fn quantized_activation(
    g: &Function,
    o: Output,
) -> Result<Result<QuantizedActivation, &'static str>, PassError> {
    let Some((d, dq_scale)) = with_scalar(g, o, BinaryOp::Multiply)? else {
        return Ok(Err("it is not a per-tensor DequantizeLinear"));
    };
    let (c, dq_zero) = match with_scalar(g, d, BinaryOp::Subtract)? {
        Some((c, z)) => (c, z),
        None => (d, 0.0),
    };
    let Some((&Op::Convert(ElementType::F32), ins)) = op_of(g, c)? else {
        return Ok(Err("it is not a per-tensor DequantizeLinear"));
    };
    let qv = ins[0];
    let Some(sh) = shift(g.output_type(qv)?.element_type) else {
        return Ok(Err("it dequantizes a type other than UINT8 or INT8"));
    };
    let Some((&Op::Convert(_), ins)) = op_of(g, qv)? else {
        return Ok(Err("its DequantizeLinear does not read a QuantizeLinear"));
    };
    let Some((mx, hi)) = with_scalar(g, ins[0], BinaryOp::Minimum)? else {
        return Ok(Err("its DequantizeLinear does not read a QuantizeLinear"));
    };
    let Some((v, lo)) = with_scalar(g, mx, BinaryOp::Maximum)? else {
        return Ok(Err("its DequantizeLinear does not read a QuantizeLinear"));
    };
    if lo != -sh || hi != 255.0 - sh {
        return Ok(Err("its QuantizeLinear saturates to another range"));
    }
    let (r, q_zero) = match with_scalar(g, v, BinaryOp::Add)? {
        Some((r, z)) => (r, z),
        None => (v, 0.0),
    };
    let Some((&Op::Unary(UnaryOp::Round), ins)) = op_of(g, r)? else {
        return Ok(Err("its QuantizeLinear does not round"));
    };
    let Some((x, q_scale)) = with_scalar(g, ins[0], BinaryOp::Divide)? else {
        return Ok(Err("its QuantizeLinear is not per tensor"));
    };
    if g.output_type(x)?.element_type != ElementType::F32 {
        return Ok(Err("its QuantizeLinear divides in a type other than FLOAT"));
    }
    let q_zero_point = q_zero + sh;
    let q_scale_f32 = q_scale as f32;
    if f64::from(q_scale_f32) != q_scale
        || !q_scale_f32.is_finite()
        || q_scale_f32 == 0.0
        || q_zero_point.fract() != 0.0
        || !(0.0..=255.0).contains(&q_zero_point)
    {
        return Ok(Err(
            "its QuantizeLinear's scale or zero point is out of range",
        ));
    }
    Ok(Ok(QuantizedActivation {
        x,
        q_scale: q_scale_f32,
        q_zero_point: q_zero_point as u8,
        dq_zero_point: dq_zero + sh,
        dq_scale,
    }))
}

/// A dequantized constant weight matrix read back: `W - zero_point` `[K, N]` in INT8
/// (row-major) and the per-column scale `[N]`.
pub(super) struct QuantizedWeight {
    pub w: Vec<i8>,
    pub k: usize,
    pub n: usize,
    pub scale: Vec<f64>,
}

/// `values` (a splat constant through its Broadcasts, or a constant of `shape`) at every
/// element of `shape`.
fn spread(g: &Function, o: Output, shape: &Shape) -> Result<Option<Vec<f64>>, PassError> {
    let Some((d, _)) = splat(g, o)? else {
        return Ok(None);
    };
    // The Constant's own shape: the last node of the splat path.
    let path = splat(g, o)?.map(|(_, p)| p).unwrap_or_default();
    let Some(&c) = path.last() else {
        return Ok(None);
    };
    let from = g.node(c)?.output_type().shape.clone();
    let Ok(full) = reference::broadcast(d, &from, shape) else {
        return Ok(None);
    };
    Ok(Some(
        (0..full.len()).filter_map(|i| full.get_f64(i)).collect(),
    ))
}

/// Reads `o` as `[Transpose<[1, 0]>]((Convert<f32>(W) [- zp]) * s)` with `W` a 2-D 8-bit
/// Constant and `zp`, `s` constant per column of the product's `[K, N]` (per tensor, or per
/// output column); `Err(reason)` (inside `Ok`) says which part did not fit.
pub(super) fn quantized_weight(
    g: &Function,
    o: Output,
) -> Result<Result<QuantizedWeight, &'static str>, PassError> {
    let (inner, transposed) = match op_of(g, o)? {
        Some((Op::Transpose(perm), ins)) if perm.as_slice() == [1, 0] => (ins[0], true),
        _ => (o, false),
    };
    let Some((&Op::Binary(BinaryOp::Multiply), ins)) = op_of(g, inner)? else {
        return Ok(Err("it is not a DequantizeLinear of a constant"));
    };
    let shape = g.output_type(inner)?.shape.clone();
    let &[p, q] = shape.dims() else {
        return Ok(Err("it is not a 2-D weight matrix"));
    };
    let (d, s) = match spread(g, ins[1], &shape)? {
        Some(s) => (ins[0], s),
        None => match spread(g, ins[0], &shape)? {
            Some(s) => (ins[1], s),
            None => return Ok(Err("its scale is not constant")),
        },
    };
    let (c, zp) = match op_of(g, d)? {
        Some((&Op::Binary(BinaryOp::Subtract), ins)) => match spread(g, ins[1], &shape)? {
            Some(z) => (ins[0], z),
            None => return Ok(Err("its zero point is not constant")),
        },
        _ => (d, vec![0.0; p * q]),
    };
    let Some((&Op::Convert(ElementType::F32), ins)) = op_of(g, c)? else {
        return Ok(Err("it is not a DequantizeLinear of a constant"));
    };
    let Some((Op::Constant(data), _)) = op_of(g, ins[0])? else {
        return Ok(Err("it dequantizes a value computed at run time"));
    };
    if !matches!(**data, TensorData::I8(_) | TensorData::U8(_)) {
        return Ok(Err("it dequantizes a type other than UINT8 or INT8"));
    }
    // Element (k, n) of the product's [K, N] at index i of the Constant's [p, q].
    let (k, n) = if transposed { (q, p) } else { (p, q) };
    let at = |kk: usize, nn: usize| if transposed { nn * q + kk } else { kk * q + nn };
    let mut w = vec![0i8; k * n];
    let mut scale = vec![0.0; n];
    for nn in 0..n {
        scale[nn] = s[at(0, nn)];
        for kk in 0..k {
            let i = at(kk, nn);
            if s[i] != scale[nn] || zp[i] != zp[at(0, nn)] {
                return Ok(Err(
                    "its scale or zero point varies along K (per row or blocked)",
                ));
            }
            let v = data.get_f64(i).unwrap_or(f64::NAN) - zp[i];
            if !(-128.0..=127.0).contains(&v) {
                return Ok(Err("a weight minus its zero point leaves INT8"));
            }
            w[kk * n + nn] = v as i8;
        }
    }
    Ok(Ok(QuantizedWeight { w, k, n, scale }))
}

/// Whether every value of `o` is an integer (or infinite, or NaN): `Round`, an integer
/// converted to a float, a float Constant of integers, and sums, differences, maxima and
/// minima of such values (a sum of two integral `f32` values rounds to an integral one).
pub(super) fn integral(g: &Function, o: Output, depth: usize) -> Result<bool, PassError> {
    if depth == 0 {
        return Ok(false);
    }
    let n = g.node(o.node)?;
    Ok(match n.op() {
        Op::Unary(UnaryOp::Round) => true,
        Op::Convert(t) if t.is_float() => g.output_type(n.inputs()[0])?.element_type.is_integer(),
        Op::Constant(d) => (0..d.len()).all(|i| {
            d.get_f64(i)
                .is_some_and(|v| v.fract() == 0.0 || !v.is_finite())
        }),
        Op::Broadcast(_) => integral(g, n.inputs()[0], depth - 1)?,
        Op::Binary(BinaryOp::Add | BinaryOp::Subtract | BinaryOp::Maximum | BinaryOp::Minimum) => {
            integral(g, n.inputs()[0], depth - 1)? && integral(g, n.inputs()[1], depth - 1)?
        }
        _ => false,
    })
}

/// `v` as `Convert<f32>(Convert<I8|U8>(Minimum(Maximum(c, lo), hi)))` with `c` integral and
/// `[lo, hi]` inside the 8-bit type's range: the clamped value `Minimum(..)`, which the
/// round trip through the 8-bit type leaves unchanged but for NaN (which it makes 0).
pub(super) fn round_trip(g: &Function, v: Output) -> Result<Option<Output>, PassError> {
    let Some((&Op::Convert(ElementType::F32), ins)) = op_of(g, v)? else {
        return Ok(None);
    };
    let q = ins[0];
    let Some(sh) = shift(g.output_type(q)?.element_type) else {
        return Ok(None);
    };
    let Some((&Op::Convert(_), ins)) = op_of(g, q)? else {
        return Ok(None);
    };
    let clamped = ins[0];
    if g.output_type(clamped)?.element_type != ElementType::F32 {
        return Ok(None);
    }
    let Some((mx, hi)) = with_scalar(g, clamped, BinaryOp::Minimum)? else {
        return Ok(None);
    };
    let Some((c, lo)) = with_scalar(g, mx, BinaryOp::Maximum)? else {
        return Ok(None);
    };
    let fits = lo >= -sh && hi <= 255.0 - sh && lo.fract() == 0.0 && hi.fract() == 0.0;
    Ok((fits && integral(g, c, 8)?).then_some(clamped))
}

/// The value a round trip's clamp quantizes: `clamped` as `Minimum(Maximum(Round(v / s)
/// [+ zp], lo), hi)` read back to `v` (or to what the `Round` reads where a lowered product
/// already applied the scale); `None` for another shape.
pub(super) fn quantized_value(g: &Function, clamped: Output) -> Result<Option<Output>, PassError> {
    let Some((mx, _)) = with_scalar(g, clamped, BinaryOp::Minimum)? else {
        return Ok(None);
    };
    let Some((v, _)) = with_scalar(g, mx, BinaryOp::Maximum)? else {
        return Ok(None);
    };
    let r = with_scalar(g, v, BinaryOp::Add)?.map_or(v, |(r, _)| r);
    let Some((&Op::Unary(UnaryOp::Round), ins)) = op_of(g, r)? else {
        return Ok(None);
    };
    let divided = with_scalar(g, ins[0], BinaryOp::Divide)?;
    Ok(Some(divided.map_or(ins[0], |(x, _)| x)))
}

/// `o` as a per-tensor `DequantizeLinear` of any 8-bit value: `(Convert<f32>(q) [- zp]) * s`
/// with `zp` and `s` splat scalars; the integer-valued difference `Convert<f32>(q) - zp`
/// and `s`.
pub(super) fn dequantized(g: &Function, o: Output) -> Result<Option<(Output, f64)>, PassError> {
    let Some((d, s)) = with_scalar(g, o, BinaryOp::Multiply)? else {
        return Ok(None);
    };
    let c = match with_scalar(g, d, BinaryOp::Subtract)? {
        Some((c, z)) if z.fract() == 0.0 => c,
        Some(_) => return Ok(None),
        None => d,
    };
    let Some((&Op::Convert(ElementType::F32), ins)) = op_of(g, c)? else {
        return Ok(None);
    };
    let eight_bit = shift(g.output_type(ins[0])?.element_type).is_some();
    Ok(eight_bit.then_some((d, s)))
}

/// The `QuantizeLinear` division `Divide(v, y_scale)` (per tensor) when it is the only user
/// of node `id`'s value `v`: the division's node and `y_scale`. A product that is quantized
/// at once is requantized in its store, `acc · (s_a · s_b / y_scale)` rounded once, as
/// onnxruntime's `QLinearMatMul` does.
pub(super) fn requantizing_divide(
    g: &Function,
    id: graphlift_ir::NodeId,
) -> Result<Option<(graphlift_ir::NodeId, f64)>, PassError> {
    let &[(user, 0)] = g.node(id)?.users(0) else {
        return Ok(None);
    };
    let Some((v, y_scale)) = with_scalar(g, Output::new(user, 0), BinaryOp::Divide)? else {
        return Ok(None);
    };
    Ok((v == Output::new(id, 0)).then_some((user, y_scale)))
}

/// The 8-bit operands of a convolution's dequantized input and filter, as `ConvolutionInteger`
/// takes them: the input `q` (UINT8 or INT8) and its zero point, the filter `W` (an 8-bit
/// Constant `[M, C / groups, K..]`) and its zero point per output channel, each zero point
/// a value of its operand's type.
pub(super) struct IntegerConvolution {
    pub x: Output,
    pub x_zero_point: TensorData,
    pub w: Output,
    pub w_zero_point: TensorData,
}

/// `a` as `(Convert<f32>(q) [- zp]) * s` and `b` as `(Convert<f32>(W) [- zp_w[m]]) * s_w`
/// (what [`dequantized`] and [`dequantized_filter`] accept), read back to their 8-bit
/// operands; `None` when a zero point is not a value of its operand's type or the filter's
/// zero point is not constant within each output channel.
pub(super) fn integer_convolution(
    g: &Function,
    a: Output,
    b: Output,
) -> Result<Option<IntegerConvolution>, PassError> {
    // The 8-bit value under `Convert<f32>`, and the zero point subtracted after it (0 if none).
    let unshift = |d: Output| -> Result<Option<(Output, Output, Option<Output>)>, PassError> {
        let (c, zp) = match op_of(g, d)? {
            Some((&Op::Binary(BinaryOp::Subtract), ins)) => (ins[0], Some(ins[1])),
            _ => (d, None),
        };
        let Some((&Op::Convert(ElementType::F32), ins)) = op_of(g, c)? else {
            return Ok(None);
        };
        Ok(Some((c, ins[0], zp)))
    };
    let (Some((da, _)), Some((dw, _))) = (dequantized(g, a)?, dequantized_filter(g, b)?) else {
        return Ok(None);
    };
    let (Some((_, x, xz)), Some((cw, w, wz))) = (unshift(da)?, unshift(dw)?) else {
        return Ok(None);
    };
    let (xt, wt) = (
        g.output_type(x)?.element_type,
        g.output_type(w)?.element_type,
    );
    let x_zero = match xz {
        Some(z) => scalar(g, z)?,
        None => Some(0.0),
    };
    let m = g.output_type(w)?.shape.dims()[0];
    let shape = g.output_type(cw)?.shape.clone();
    let w_zero: Option<Vec<f64>> = match wz {
        None => Some(vec![0.0; m]),
        Some(z) => spread(g, z, &shape)?.and_then(|all| {
            let per = all.len() / m.max(1);
            let firsts: Vec<f64> = all.chunks_exact(per.max(1)).map(|c| c[0]).collect();
            let uniform = all
                .chunks_exact(per.max(1))
                .all(|c| c.iter().all(|&v| v == c[0]));
            (uniform && firsts.len() == m).then_some(firsts)
        }),
    };
    let fits = |t: ElementType, v: f64| match t {
        ElementType::U8 => (0.0..=255.0).contains(&v) && v.fract() == 0.0,
        ElementType::I8 => (-128.0..=127.0).contains(&v) && v.fract() == 0.0,
        _ => false,
    };
    let (Some(x_zero), Some(w_zero)) = (x_zero, w_zero) else {
        return Ok(None);
    };
    if !fits(xt, x_zero) || !w_zero.iter().all(|&v| fits(wt, v)) {
        return Ok(None);
    }
    Ok(Some(IntegerConvolution {
        x,
        x_zero_point: TensorData::from_f64(xt, &[x_zero]),
        w,
        w_zero_point: TensorData::from_f64(wt, &w_zero),
    }))
}

/// A dequantized constant convolution filter `(Convert<f32>(W) [- zp]) * s` with `W` an
/// 8-bit Constant `[M, C / groups, K..]` and `s` constant within each output channel (per
/// tensor or per channel, axis 0): the integer-valued difference and the scale of each of
/// the `M` output channels.
pub(super) fn dequantized_filter(
    g: &Function,
    o: Output,
) -> Result<Option<(Output, Vec<f64>)>, PassError> {
    let Some((&Op::Binary(BinaryOp::Multiply), ins)) = op_of(g, o)? else {
        return Ok(None);
    };
    let shape = g.output_type(o)?.shape.clone();
    let Some(&m) = shape.dims().first() else {
        return Ok(None);
    };
    let (d, s) = match spread(g, ins[1], &shape)? {
        Some(s) => (ins[0], s),
        None => match spread(g, ins[0], &shape)? {
            Some(s) => (ins[1], s),
            None => return Ok(None),
        },
    };
    let per = s.len().checked_div(m).unwrap_or(0);
    if per == 0 || s.chunks_exact(per).any(|c| c.iter().any(|&v| v != c[0])) {
        return Ok(None);
    }
    let c = match op_of(g, d)? {
        Some((&Op::Binary(BinaryOp::Subtract), ins)) if integral(g, ins[1], 4)? => ins[0],
        _ => d,
    };
    let Some((&Op::Convert(ElementType::F32), ins)) = op_of(g, c)? else {
        return Ok(None);
    };
    let Some((Op::Constant(data), _)) = op_of(g, ins[0])? else {
        return Ok(None);
    };
    if !matches!(**data, TensorData::I8(_) | TensorData::U8(_)) {
        return Ok(None);
    }
    Ok(Some((d, s.chunks_exact(per).map(|c| c[0]).collect())))
}
