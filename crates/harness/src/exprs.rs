//! The peers benchmark's expressions E1–E4 as Functions, with their input shapes and an
//! `f64` reference, so `graphlift bench-expr` computes exactly what the peers compute.

use graphlift_ir::{ElementType, Function, FunctionBuilder, IrError, Shape};

/// The names of the expressions:
///
/// | expr | inputs | per output element |
/// |---|---|---|
/// | E1 | a, b, c, d: `f32[N]` | `max((a + b) * c, 0) + d` |
/// | E2 | x: `f32[N]` | `0.5 x (1 + tanh(0.7978845608 (x + 0.044715 x^3)))` (GELU, tanh form) |
/// | E3 | x: `f32[N]` | `x / (1 + exp(-x))` (SiLU) |
/// | E4 | X: `f32[N/1024, 1024]`, b: `f32[1024]` | `max(X + b, 0)` (bias add + relu) |
pub const PEER_EXPRESSIONS: [&str; 4] = ["E1", "E2", "E3", "E4"];

/// Row length of E4's matrix.
const E4_ROW: usize = 1024;

/// The input shapes of expression `name` with `n` output elements, or `None` for an unknown
/// name (or an E4 whose `n` is not a multiple of 1024).
pub fn peer_expression_inputs(name: &str, n: usize) -> Option<Vec<Shape>> {
    match name {
        "E1" => Some(vec![Shape::new([n]); 4]),
        "E2" | "E3" => Some(vec![Shape::new([n])]),
        "E4" if n.is_multiple_of(E4_ROW) => {
            Some(vec![Shape::new([n / E4_ROW, E4_ROW]), Shape::new([E4_ROW])])
        }
        _ => None,
    }
}

/// Expression `name` over `n` f32 output elements.
///
/// # Errors
/// [`IrError::Invalid`] for an unknown name or an E4 whose `n` is not a multiple of 1024.
pub fn peer_expression(name: &str, n: usize) -> Result<Function, IrError> {
    let shapes = peer_expression_inputs(name, n).ok_or_else(|| IrError::Invalid {
        function: name.to_string(),
        message: format!(
            "unknown peer expression `{name}` for N = {n} (E1-E4; E4 needs N % 1024 == 0)"
        ),
    })?;
    let b = FunctionBuilder::new(name);
    let p: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| b.parameter(&format!("in{i}"), ElementType::F32, s.clone()))
        .collect();
    let out = match name {
        "E1" => ((p[0] + p[1]) * p[2]).relu() + p[3],
        "E2" => {
            let x = p[0];
            let inner = (x + x * x * x * 0.044715) * 0.797_884_560_8;
            x * 0.5 * (inner.tanh() + 1.0)
        }
        "E3" => p[0] / ((-p[0]).exp() + 1.0),
        _ => (p[0] + p[1]).relu(),
    };
    b.finish(&[out])
}

/// Output element `i` of expression `name` computed in f64 from the f32 inputs (E4's row
/// length is 1024). Returns NaN for an unknown name.
pub fn peer_expression_reference(name: &str, inputs: &[&[f32]], i: usize) -> f64 {
    let at = |k: usize, j: usize| f64::from(inputs[k][j]);
    match name {
        "E1" => ((at(0, i) + at(1, i)) * at(2, i)).max(0.0) + at(3, i),
        "E2" => {
            let x = at(0, i);
            0.5 * x * (1.0 + (0.797_884_560_8 * (x + 0.044715 * x * x * x)).tanh())
        }
        "E3" => {
            let x = at(0, i);
            x / (1.0 + (-x).exp())
        }
        "E4" => (at(0, i) + at(1, i % E4_ROW)).max(0.0),
        _ => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_build_with_the_documented_shapes() {
        for e in PEER_EXPRESSIONS {
            let f = peer_expression(e, 2048).unwrap();
            assert_eq!(f.result_types()[0].shape.element_count().unwrap(), 2048);
        }
        assert!(peer_expression("E4", 1000).is_err());
        assert!(peer_expression("E9", 1024).is_err());
    }
}
