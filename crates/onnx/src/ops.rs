//! The operator table: each supported ONNX operator (every opset up to 25) decomposed into
//! graphlift IR ops, following the ONNX operator specification.

use graphlift_ir::{BinaryOp, CompareOp, ElementType, Output, Shape, TensorData, UnaryOp};

mod activation;
#[cfg(test)]
mod activation_tests;
mod attention;
mod attention_bias;
#[cfg(test)]
mod attention_tests;
mod bitwise;
#[cfg(test)]
mod bitwise_tests;
mod cast;
mod center_crop_pad;
#[cfg(test)]
mod center_crop_pad_tests;
mod classify;
mod compress;
#[cfg(test)]
mod compress_tests;
mod conv;
#[cfg(test)]
mod cum_sum_tests;
mod dropout;
#[cfg(test)]
mod dropout_tests;
mod einsum;
mod eye_like;
#[cfg(test)]
mod eye_like_tests;
mod gather;
#[cfg(test)]
mod gather_tests;
mod grid_sample;
#[cfg(test)]
mod grid_sample_tests;
#[cfg(test)]
mod half_tests;
mod integer;
#[cfg(test)]
mod integer_tests;
mod layout;
mod lp_norm;
mod lrn;
mod mvn;
mod nn;
#[cfg(test)]
mod normalization_tests;
mod normalize;
#[cfg(test)]
mod one_node;
mod pad;
mod pooling;
#[cfg(test)]
mod pooling_tests;
#[cfg(test)]
mod qdq_tests;
mod quantize;
#[cfg(test)]
mod quantize_tests;
mod random;
mod rearrange;
mod reduce;
#[cfg(test)]
mod reduce_tests;
mod resize;
mod reverse_sequence;
#[cfg(test)]
mod reverse_sequence_tests;
mod rms_norm;
#[cfg(test)]
mod rms_norm_tests;
mod rnn;
#[cfg(test)]
mod rnn_tests;
mod rotary;
#[cfg(test)]
mod rotary_tests;
mod scatter;
#[cfg(test)]
mod scatter_tests;
mod spectral;
mod spectral_tables;
#[cfg(test)]
mod spectral_tests;
mod supported;
mod suppression;
#[cfg(test)]
mod suppression_tests;
#[cfg(test)]
mod tests;
mod topk;
#[cfg(test)]
mod topk_tests;
mod unpool;
mod upsample;
#[cfg(test)]
mod upsample_tests;

use activation::{
    celu, clip, elu, gelu, hard_sigmoid, leaky_relu, mean, pow, prelu, reciprocal, selu, shrink,
    softplus, softsign, swish, thresholded_relu, variadic,
};

use graphlift_ir::{ArgOp, ReduceOp};
use reduce::{reduce, Reducer};

use crate::emit::NodeEmitter;
use crate::error::OnnxError;
use crate::proto::attribute_type;
use crate::tensor::tensor_from_proto;

pub use supported::{MICROSOFT_DOMAIN, SUPPORTED_CONTRIB_OPS, SUPPORTED_OPS};

type In<'x> = &'x [Option<Output>];

fn numeric(t: ElementType) -> bool {
    t.is_numeric()
}
fn float(t: ElementType) -> bool {
    t.is_float()
}
fn boolean(t: ElementType) -> bool {
    t == ElementType::Bool
}

/// Converts one ONNX node; returns its output values in order.
///
/// Semantics follow the ONNX operator specification (onnx 1.22, `docs/Operators.md`) for
/// every opset version up to 25; where a definition changed across versions the branch says
/// so. Broadcasting is ONNX's multidirectional (numpy) broadcasting, made explicit with
/// `Broadcast` nodes; `PRelu` slopes and `Clip` bounds broadcast unidirectionally to the
/// input. Element types are FLOAT, DOUBLE, INT32, INT64 and BOOL; an op gets the types ONNX
/// allows it among those (integer variants of `Abs`, `Neg`, `Sign`, `Relu`, `Max`, `Min`,
/// `Sum`, `Clip`, `Pow`, `PRelu`, ...).
pub(crate) fn convert(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Vec<Output>, OnnxError> {
    let op_type = e.node().op_type.clone();
    if e.node().domain == MICROSOFT_DOMAIN {
        return match op_type.as_str() {
            "DynamicQuantizeLSTM" => {
                rnn::recurrent(e, ins, rnn::Cell::Lstm, rnn::Form::DynamicQuantized)
            }
            _ => Err(OnnxError::UnsupportedOp {
                at: e.at(),
                op_type,
                domain: MICROSOFT_DOMAIN.into(),
                opset: e.opset(),
            }),
        };
    }
    let float_rnn = rnn::Form::Float;
    match op_type.as_str() {
        "Split" => return rearrange::split(e, ins),
        "RNN" => return rnn::recurrent(e, ins, rnn::Cell::Rnn, float_rnn),
        "GRU" => return rnn::recurrent(e, ins, rnn::Cell::Gru, float_rnn),
        "LSTM" => return rnn::recurrent(e, ins, rnn::Cell::Lstm, float_rnn),
        "TopK" => return topk::top_k(e, ins),
        "MaxPool" => return pooling::max_pool(e, ins),
        "DynamicQuantizeLinear" => return quantize::dynamic_quantize_linear(e, ins),
        "LayerNormalization" => return nn::layer_norm(e, ins),
        "Dropout" => return dropout::dropout(e, ins),
        "Attention" => return attention::attention(e, ins),
        _ => {}
    }
    let y = match op_type.as_str() {
        "Add" => arithmetic(e, ins, BinaryOp::Add)?,
        "Sub" => arithmetic(e, ins, BinaryOp::Subtract)?,
        "Mul" => arithmetic(e, ins, BinaryOp::Multiply)?,
        "Div" => arithmetic(e, ins, BinaryOp::Divide)?,
        "Mod" => modulo(e, ins)?,
        "BitwiseAnd" => bitwise::bitwise(e, ins, Some(BinaryOp::And))?,
        "BitwiseOr" => bitwise::bitwise(e, ins, Some(BinaryOp::Or))?,
        "BitwiseXor" => bitwise::bitwise(e, ins, Some(BinaryOp::Xor))?,
        "BitwiseNot" => bitwise::bitwise(e, ins, None)?,
        "BitShift" => bitwise::bit_shift(e, ins)?,
        "CenterCropPad" => center_crop_pad::center_crop_pad(e, ins)?,
        "Compress" => compress::compress(e, ins)?,
        "And" => logical(e, ins, BinaryOp::And)?,
        "Or" => logical(e, ins, BinaryOp::Or)?,
        "Xor" => logical(e, ins, BinaryOp::Xor)?,
        "Equal" => comparison(e, ins, CompareOp::Equal)?,
        "Less" => comparison(e, ins, CompareOp::Less)?,
        "Greater" => comparison(e, ins, CompareOp::Greater)?,
        "LessOrEqual" => comparison(e, ins, CompareOp::LessEq)?,
        "GreaterOrEqual" => comparison(e, ins, CompareOp::GreaterEq)?,
        "Neg" => simple_unary(e, ins, UnaryOp::Negative, numeric, "a numeric")?,
        "Abs" => simple_unary(e, ins, UnaryOp::Abs, numeric, "a numeric")?,
        "Relu" => simple_unary(e, ins, UnaryOp::Relu, numeric, "a numeric")?,
        "Exp" => simple_unary(e, ins, UnaryOp::Exp, float, "a float")?,
        "Log" => simple_unary(e, ins, UnaryOp::Log, float, "a float")?,
        "Sqrt" => simple_unary(e, ins, UnaryOp::Sqrt, float, "a float")?,
        "Tanh" => simple_unary(e, ins, UnaryOp::Tanh, float, "a float")?,
        "Sigmoid" => simple_unary(e, ins, UnaryOp::Sigmoid, float, "a float")?,
        "Erf" => simple_unary(e, ins, UnaryOp::Erf, float, "a float")?,
        // Sin … Atan since opset 7, Sinh … Atanh since opset 9; unchanged since.
        "Sin" => simple_unary(e, ins, UnaryOp::Sin, float, "a float")?,
        "Cos" => simple_unary(e, ins, UnaryOp::Cos, float, "a float")?,
        "Tan" => simple_unary(e, ins, UnaryOp::Tan, float, "a float")?,
        "Asin" => simple_unary(e, ins, UnaryOp::Asin, float, "a float")?,
        "Acos" => simple_unary(e, ins, UnaryOp::Acos, float, "a float")?,
        "Atan" => simple_unary(e, ins, UnaryOp::Atan, float, "a float")?,
        "Sinh" => simple_unary(e, ins, UnaryOp::Sinh, float, "a float")?,
        "Cosh" => simple_unary(e, ins, UnaryOp::Cosh, float, "a float")?,
        "Asinh" => simple_unary(e, ins, UnaryOp::Asinh, float, "a float")?,
        "Acosh" => simple_unary(e, ins, UnaryOp::Acosh, float, "a float")?,
        "Atanh" => simple_unary(e, ins, UnaryOp::Atanh, float, "a float")?,
        "Floor" => simple_unary(e, ins, UnaryOp::Floor, numeric, "a numeric")?,
        "Ceil" => simple_unary(e, ins, UnaryOp::Ceil, numeric, "a numeric")?,
        "Round" => simple_unary(e, ins, UnaryOp::Round, numeric, "a numeric")?,
        "Sign" => simple_unary(e, ins, UnaryOp::Sign, numeric, "a numeric")?,
        "Not" => simple_unary(e, ins, UnaryOp::Not, boolean, "a BOOL")?,
        "Identity" => {
            e.arity(ins, 1, 1)?;
            e.input(ins, 0)?
        }
        "Reciprocal" => reciprocal(e, ins)?,
        "LeakyRelu" => leaky_relu(e, ins)?,
        "PRelu" => prelu(e, ins)?,
        "ThresholdedRelu" => thresholded_relu(e, ins)?,
        "Elu" => elu(e, ins)?,
        "Selu" => selu(e, ins)?,
        "Celu" => celu(e, ins)?,
        "HardSigmoid" => {
            let x = float_input(e, ins)?;
            let alpha = e.attr_f32("alpha", 0.2)?;
            let beta = e.attr_f32("beta", 0.5)?;
            hard_sigmoid(e, x, f64::from(alpha), f64::from(beta))?
        }
        "HardSwish" => {
            let x = float_input(e, ins)?;
            let h = hard_sigmoid(e, x, 1.0 / 6.0, 0.5)?;
            e.binary(BinaryOp::Multiply, x, h)?
        }
        "Softplus" => {
            let x = float_input(e, ins)?;
            softplus(e, x)?
        }
        "Softsign" => {
            let x = float_input(e, ins)?;
            softsign(e, x)?
        }
        "Mish" => {
            let x = float_input(e, ins)?;
            let s = softplus(e, x)?;
            let t = e.unary(UnaryOp::Tanh, s)?;
            e.binary(BinaryOp::Multiply, x, t)?
        }
        "Gelu" => gelu(e, ins)?,
        "Pow" => pow(e, ins)?,
        "Max" => variadic(e, ins, BinaryOp::Maximum)?,
        "Min" => variadic(e, ins, BinaryOp::Minimum)?,
        "Sum" => variadic(e, ins, BinaryOp::Add)?,
        "Mean" => mean(e, ins)?,
        "Clip" => clip(e, ins)?,
        "Where" => {
            e.arity(ins, 3, 3)?;
            let (c, a, b) = (e.input(ins, 0)?, e.input(ins, 1)?, e.input(ins, 2)?);
            e.select(c, a, b)?
        }
        "Cast" => cast::cast(e, ins)?,
        "CastLike" => cast::cast_like(e, ins)?,
        "Constant" => constant(e, ins)?,
        "Shape" => layout::shape(e, ins)?,
        "Reshape" => layout::reshape(e, ins)?,
        "Flatten" => layout::flatten(e, ins)?,
        "Squeeze" => layout::squeeze(e, ins)?,
        "Unsqueeze" => layout::unsqueeze(e, ins)?,
        "Transpose" => layout::transpose(e, ins)?,
        "Concat" => layout::concat(e, ins)?,
        "Slice" => layout::slice(e, ins)?,
        "Gather" => layout::gather(e, ins)?,
        "Expand" => layout::expand(e, ins)?,
        "ConstantOfShape" => layout::constant_of_shape(e, ins)?,
        "RandomUniform" => random::random(e, ins, true, false)?,
        "RandomUniformLike" => random::random(e, ins, true, true)?,
        "RandomNormal" => random::random(e, ins, false, false)?,
        "RandomNormalLike" => random::random(e, ins, false, true)?,
        "Pad" => pad::pad(e, ins)?,
        "Gemm" => nn::gemm(e, ins)?,
        "DFT" => spectral::dft(e, ins)?,
        "STFT" => spectral::stft(e, ins)?,
        "HannWindow" => spectral_tables::window(e, ins, spectral_tables::Window::Hann)?,
        "HammingWindow" => spectral_tables::window(e, ins, spectral_tables::Window::Hamming)?,
        "BlackmanWindow" => spectral_tables::window(e, ins, spectral_tables::Window::Blackman)?,
        "MelWeightMatrix" => spectral_tables::mel_weight_matrix(e, ins)?,
        "GridSample" => grid_sample::grid_sample(e, ins)?,
        "AffineGrid" => grid_sample::affine_grid(e, ins)?,
        "LogSoftmax" => nn::log_softmax(e, ins)?,
        "ArgMax" => nn::arg_reduce(e, ins, ArgOp::Max)?,
        "ArgMin" => nn::arg_reduce(e, ins, ArgOp::Min)?,
        "CumSum" => nn::cum_sum(e, ins)?,
        "Tile" => rearrange::tile(e, ins)?,
        "DepthToSpace" => rearrange::depth_to_space(e, ins)?,
        "SpaceToDepth" => rearrange::space_to_depth(e, ins)?,
        "Trilu" => rearrange::trilu(e, ins)?,
        "Range" => layout::range(e, ins)?,
        "Size" => layout::size(e, ins)?,
        "NonMaxSuppression" => suppression::non_max_suppression(e, ins)?,
        "NonZero" => layout::non_zero(e, ins)?,
        "IsNaN" => classify::is_nan(e, ins)?,
        "IsInf" => classify::is_inf(e, ins)?,
        "Resize" => resize::resize(e, ins)?,
        "Upsample" => upsample::upsample(e, ins)?,
        "InstanceNormalization" => normalize::instance_norm(e, ins)?,
        "GroupNormalization" => normalize::group_norm(e, ins)?,
        "GatherElements" => gather::gather_elements(e, ins)?,
        "GatherND" => gather::gather_nd(e, ins)?,
        "OneHot" => gather::one_hot(e, ins)?,
        "Einsum" => einsum::einsum(e, ins)?,
        "ScatterND" => scatter::scatter_nd(e, ins)?,
        "ScatterElements" | "Scatter" => scatter::scatter_elements(e, ins)?,
        "MatMul" => nn::matmul(e, ins)?,
        "Conv" => conv::conv(e, ins)?,
        "ConvInteger" => integer::conv_integer(e, ins)?,
        "MatMulInteger" => integer::matmul_integer(e, ins)?,
        "QLinearConv" => integer::qlinear_conv(e, ins)?,
        "QLinearMatMul" => integer::qlinear_matmul(e, ins)?,
        "QuantizeLinear" => quantize::quantize_linear(e, ins)?,
        "DequantizeLinear" => quantize::dequantize_linear(e, ins)?,
        "ConvTranspose" => conv::conv_transpose(e, ins)?,
        "BatchNormalization" => nn::batch_norm(e, ins)?,
        "AveragePool" => pooling::average_pool(e, ins)?,
        "MaxUnpool" => unpool::max_unpool(e, ins)?,
        "LpPool" => pooling::lp_pool(e, ins)?,
        "ReverseSequence" => reverse_sequence::reverse_sequence(e, ins)?,
        "GlobalLpPool" => pooling::global_lp_pool(e, ins)?,
        "GlobalAveragePool" => pooling::global_average_pool(e, ins)?,
        "GlobalMaxPool" => pooling::global_max_pool(e, ins)?,
        "Softmax" => nn::softmax(e, ins)?,
        "ReduceSum" => reduce(e, ins, Reducer::Plain(ReduceOp::Sum))?,
        "ReduceMean" => reduce(e, ins, Reducer::Plain(ReduceOp::Mean))?,
        "ReduceMax" => reduce(e, ins, Reducer::Plain(ReduceOp::Max))?,
        "ReduceMin" => reduce(e, ins, Reducer::Plain(ReduceOp::Min))?,
        "ReduceProd" => reduce(e, ins, Reducer::Plain(ReduceOp::Prod))?,
        "ReduceL1" => reduce(e, ins, Reducer::L1)?,
        "ReduceL2" => reduce(e, ins, Reducer::L2)?,
        "ReduceSumSquare" => reduce(e, ins, Reducer::SumSquare)?,
        "ReduceLogSum" => reduce(e, ins, Reducer::LogSum)?,
        "ReduceLogSumExp" => reduce(e, ins, Reducer::LogSumExp)?,
        "Hardmax" => nn::hardmax(e, ins)?,
        "LpNormalization" => lp_norm::lp_normalization(e, ins)?,
        "MeanVarianceNormalization" => mvn::mean_variance_normalization(e, ins)?,
        "LRN" => lrn::lrn(e, ins)?,
        "EyeLike" => eye_like::eye_like(e, ins)?,
        "Shrink" => shrink(e, ins)?,
        "Swish" => swish(e, ins)?,
        "RMSNormalization" => rms_norm::rms_normalization(e, ins)?,
        "RotaryEmbedding" => rotary::rotary_embedding(e, ins)?,
        _ => {
            return Err(OnnxError::UnsupportedOp {
                at: e.at(),
                op_type,
                domain: "ai.onnx".into(),
                opset: e.opset(),
            })
        }
    };
    Ok(vec![y])
}

/// The one input of a float-only unary op.
fn float_input(e: &NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    e.require(x, float, "a float")?;
    Ok(x)
}

/// `f(v)` for a float `v`; for an integer one `f` in DOUBLE, converted back (truncated
/// toward zero, saturated, NaN to 0: the IR's `Convert`), as the ONNX function bodies that
/// compute in floats `CastLike` their result back.
fn in_float(
    e: &mut NodeEmitter<'_>,
    v: Output,
    f: impl FnOnce(&mut NodeEmitter<'_>, Output) -> Result<Output, OnnxError>,
) -> Result<Output, OnnxError> {
    let t = e.et(v)?;
    if t.is_float() {
        return f(e, v);
    }
    let wide = e.convert(v, ElementType::F64)?;
    let y = f(e, wide)?;
    e.convert(y, t)
}

fn simple_unary(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    u: UnaryOp,
    ok: fn(ElementType) -> bool,
    what: &str,
) -> Result<Output, OnnxError> {
    e.arity(ins, 1, 1)?;
    let x = e.input(ins, 0)?;
    e.require(x, ok, what)?;
    e.unary(u, x)
}

/// Before opset 7, binary ops broadcast only with `broadcast=1`, the second operand
/// aligned at `axis` (default: at the right).
fn legacy_broadcast(e: &NodeEmitter<'_>, a: Output, b: Output) -> Result<(), OnnxError> {
    if e.opset() >= 7 {
        return Ok(());
    }
    let (sa, sb) = (e.ty(a)?.shape, e.ty(b)?.shape);
    if e.attr_i64("broadcast")?.unwrap_or(0) == 0 {
        if sa != sb {
            return Err(e.shape_error(format!(
                "shapes {sa} and {sb} differ and `broadcast` is not set (opset {} < 7)",
                e.opset()
            )));
        }
        return Ok(());
    }
    if let Some(axis) = e.attr_i64("axis")? {
        let rank = i64::try_from(sa.rank()).unwrap_or(i64::MAX);
        let brank = i64::try_from(sb.rank()).unwrap_or(i64::MAX);
        let axis = if axis < 0 { axis + rank } else { axis };
        if axis != rank - brank {
            return Err(e.attribute_error(
                "axis",
                format!(
                    "legacy broadcasting of {sb} into {sa} at axis {axis} is not supported \
                     (only trailing alignment, axis {})",
                    rank - brank
                ),
            ));
        }
    }
    if !sb.broadcasts_to(&sa) {
        return Err(e.shape_error(format!("shape {sb} does not broadcast to {sa}")));
    }
    Ok(())
}

fn two_inputs(e: &NodeEmitter<'_>, ins: In<'_>) -> Result<(Output, Output), OnnxError> {
    e.arity(ins, 2, 2)?;
    let (a, b) = (e.input(ins, 0)?, e.input(ins, 1)?);
    legacy_broadcast(e, a, b)?;
    Ok((a, b))
}

fn arithmetic(e: &mut NodeEmitter<'_>, ins: In<'_>, op: BinaryOp) -> Result<Output, OnnxError> {
    let (a, b) = two_inputs(e, ins)?;
    e.require(a, numeric, "a numeric")?;
    e.binary(op, a, b)
}

/// `Mod` (opsets 10, 13): with `fmod = 1` the remainder with the dividend's sign (C
/// `fmod`: [`BinaryOp::Mod`]), with `fmod = 0` (the default) the one with the divisor's sign
/// (Python's `%`: [`BinaryOp::FloorMod`]), which ONNX allows for integers only; broadcast.
/// An integer `x mod 0` is 0 (ONNX leaves it undefined; numpy's answer).
///
/// # Errors
/// [`OnnxError::BadAttribute`] for `fmod = 0` on floats or an `fmod` other than 0 or 1;
/// [`OnnxError::TypeMismatch`] for BOOL operands or operands of two types.
fn modulo(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    let (a, b) = two_inputs(e, ins)?;
    let t = e.require(a, numeric, "a numeric")?;
    let op = match e.attr_i64("fmod")?.unwrap_or(0) {
        1 => BinaryOp::Mod,
        0 if t.is_float() => {
            return Err(e.attribute_error(
                "fmod",
                format!("must be 1 for floating-point operands ({t}), is 0"),
            ))
        }
        0 => BinaryOp::FloorMod,
        other => return Err(e.attribute_error("fmod", format!("must be 0 or 1, is {other}"))),
    };
    e.binary(op, a, b)
}

fn logical(e: &mut NodeEmitter<'_>, ins: In<'_>, op: BinaryOp) -> Result<Output, OnnxError> {
    let (a, b) = two_inputs(e, ins)?;
    e.require(a, boolean, "a BOOL")?;
    e.binary(op, a, b)
}

fn comparison(e: &mut NodeEmitter<'_>, ins: In<'_>, op: CompareOp) -> Result<Output, OnnxError> {
    let (a, b) = two_inputs(e, ins)?;
    e.compare(op, a, b)
}

/// `Constant`: exactly one of `value` (a tensor), `value_float`, `value_floats`,
/// `value_int`, `value_ints` (FLOAT scalars and vectors, INT64 scalars and vectors).
fn constant(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 0, 0)?;
    let node = e.node();
    let values: Vec<&str> = node
        .attribute
        .iter()
        .map(|a| a.name.as_str())
        .filter(|n| n.starts_with("value") || *n == "sparse_value")
        .collect();
    if values.len() != 1 {
        return Err(e.attribute_error(
            "value",
            format!(
                "a Constant needs exactly one of value, value_float(s), value_int(s), \
                 value_string(s), sparse_value; it has {}",
                if values.is_empty() {
                    "none".to_string()
                } else {
                    values.join(", ")
                }
            ),
        ));
    }
    let name = values[0].to_string();
    let Some(a) = e.attr(&name)? else {
        return Err(e.attribute_error(&name, "is missing".into()));
    };
    let expect = |want: i32, present: bool| -> Result<(), OnnxError> {
        if a.r#type == want || (a.r#type == attribute_type::UNDEFINED && present) {
            Ok(())
        } else {
            Err(e.attribute_error(
                &name,
                format!(
                    "expected {}, got {}",
                    attribute_type::name(want),
                    attribute_type::name(a.r#type)
                ),
            ))
        }
    };
    let (data, shape) = match name.as_str() {
        "value" => {
            expect(attribute_type::TENSOR, a.t.is_some())?;
            let Some(t) = &a.t else {
                return Err(e.attribute_error(&name, "has no tensor".into()));
            };
            tensor_from_proto(t, &e.at())?
        }
        "value_float" => {
            expect(attribute_type::FLOAT, true)?;
            (TensorData::F32(vec![a.f]), Shape::scalar())
        }
        "value_floats" => {
            expect(attribute_type::FLOATS, true)?;
            (
                TensorData::F32(a.floats.clone()),
                Shape::new([a.floats.len()]),
            )
        }
        "value_int" => {
            expect(attribute_type::INT, true)?;
            (TensorData::I64(vec![a.i]), Shape::scalar())
        }
        "value_ints" => {
            expect(attribute_type::INTS, true)?;
            (TensorData::I64(a.ints.clone()), Shape::new([a.ints.len()]))
        }
        "value_string" | "value_strings" => {
            return Err(OnnxError::UnsupportedElementType {
                at: e.at(),
                data_type: "STRING".into(),
            })
        }
        "sparse_value" => {
            return Err(OnnxError::UnsupportedType {
                at: e.at(),
                message: "sparse tensor constant".into(),
            })
        }
        other => {
            return Err(e.attribute_error(other, "is not an attribute of Constant".into()));
        }
    };
    e.constant(data, shape)
}
