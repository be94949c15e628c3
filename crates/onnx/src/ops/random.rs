//! `RandomUniform`, `RandomNormal` and their `Like` forms as [`Op::Random`]: seeded,
//! reproducible fills ([`RandomFill`]).

use graphlift_ir::{Distribution, ElementType, Op, Output, RandomFill, Shape};

use super::In;
use crate::emit::NodeEmitter;
use crate::tensor::element_type;
use crate::OnnxError;

/// `RandomUniform` (`uniform`) or `RandomNormal`, of the `shape` attribute, or (`like`) of
/// input 0's shape. The element type is `dtype`, else input 0's (`like`), else FLOAT; only
/// `f32` and `f64` draw. The `seed` (a float in ONNX) seeds the generator through its bits;
/// without one, ONNX leaves the values to the implementation and graphlift uses seed 0, so
/// an import always computes the same values.
///
/// # Errors
/// A missing or negative `shape`, a non-float `dtype`, `low >= high` or a negative `scale`
/// ([`RandomFill::check`]), named by the node.
pub(super) fn random(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    uniform: bool,
    like: bool,
) -> Result<Output, OnnxError> {
    let (shape, input_type) = if like {
        e.arity(ins, 1, 1)?;
        let t = e.ty(e.input(ins, 0)?)?;
        (t.shape, Some(t.element_type))
    } else {
        e.arity(ins, 0, 0)?;
        let dims = e
            .attr_ints("shape")?
            .ok_or_else(|| e.attribute_error("shape", "is required".into()))?;
        let dims = dims
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| e.attribute_error("shape", format!("{dims:?} has a negative extent")))?;
        (Shape::new(dims), None)
    };
    let element_type = match (e.attr_i64("dtype")?, input_type) {
        (Some(code), _) => element_type(code as i32, &e.at())?,
        (None, Some(t)) => t,
        (None, None) => ElementType::F32,
    };
    let distribution = if uniform {
        Distribution::Uniform {
            low: f64::from(e.attr_f32("low", 0.0)?),
            high: f64::from(e.attr_f32("high", 1.0)?),
        }
    } else {
        Distribution::Normal {
            mean: f64::from(e.attr_f32("mean", 0.0)?),
            scale: f64::from(e.attr_f32("scale", 1.0)?),
        }
    };
    let seed = e
        .attr_f32_opt("seed")?
        .map_or(0, |s| u64::from(s.to_bits()));
    let fill = RandomFill {
        distribution,
        element_type,
        shape,
        seed,
    };
    fill.check()
        .map_err(|m| e.attribute_error("dtype/shape/distribution", m))?;
    e.op(Op::Random(std::sync::Arc::new(fill)), &[])
}
