//! The activation functions of the recurrent operators (`activations`, `activation_alpha`,
//! `activation_beta`), parsed per direction and applied.

use super::*;

/// An activation function of the recurrent operators, with its alpha and beta.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(super) enum Activation {
    Relu,
    Tanh,
    Sigmoid,
    /// `alpha * x + beta`.
    Affine(f64, f64),
    LeakyRelu(f64),
    ThresholdedRelu(f64),
    /// `alpha * tanh(beta * x)`.
    ScaledTanh(f64, f64),
    HardSigmoid(f64, f64),
    Elu(f64),
    Softsign,
    Softplus,
}

/// The node's activations: `per` for each of `directions`, names matched case-insensitively.
pub(super) fn activations(
    e: &NodeEmitter<'_>,
    cell: Cell,
    directions: usize,
) -> Result<Vec<Activation>, OnnxError> {
    let defaults = cell.default_activations();
    let names = match e.attr_strings("activations")? {
        Some(n) => n,
        None => (0..directions)
            .flat_map(|_| defaults.iter().map(|s| s.to_string()))
            .collect(),
    };
    if names.len() != defaults.len() * directions {
        return Err(e.attribute_error(
            "activations",
            format!(
                "has {} names; {:?} with {directions} direction(s) takes {}",
                names.len(),
                cell,
                defaults.len() * directions
            ),
        ));
    }
    let alphas = e.attr_floats("activation_alpha")?.unwrap_or_default();
    let betas = e.attr_floats("activation_beta")?.unwrap_or_default();
    let (mut alphas, mut betas) = (alphas.into_iter(), betas.into_iter());
    let mut alpha = |d: f64| alphas.next().map_or(d, f64::from);
    let mut beta = |d: f64| betas.next().map_or(d, f64::from);
    names
        .iter()
        .map(|name| {
            Ok(match name.to_ascii_lowercase().as_str() {
                "relu" => Activation::Relu,
                "tanh" => Activation::Tanh,
                "sigmoid" => Activation::Sigmoid,
                "affine" => Activation::Affine(alpha(1.0), beta(0.0)),
                "leakyrelu" => Activation::LeakyRelu(alpha(0.01)),
                "thresholdedrelu" => Activation::ThresholdedRelu(alpha(1.0)),
                "scaledtanh" => Activation::ScaledTanh(alpha(1.0), beta(1.0)),
                "hardsigmoid" => Activation::HardSigmoid(alpha(0.2), beta(0.5)),
                "elu" => Activation::Elu(alpha(1.0)),
                "softsign" => Activation::Softsign,
                "softplus" => Activation::Softplus,
                _ => {
                    return Err(
                        e.attribute_error("activations", format!("unknown activation {name:?}"))
                    )
                }
            })
        })
        .collect()
}

/// `act(x)`.
pub(super) fn activate(
    e: &mut NodeEmitter<'_>,
    act: Activation,
    x: Output,
) -> Result<Output, OnnxError> {
    match act {
        Activation::Relu => e.unary(UnaryOp::Relu, x),
        Activation::Tanh => e.unary(UnaryOp::Tanh, x),
        Activation::Sigmoid => e.unary(UnaryOp::Sigmoid, x),
        Activation::Affine(a, b) => {
            let ax = e.mul_scalar(x, a)?;
            e.add_scalar(ax, b)
        }
        Activation::LeakyRelu(a) => leaky_relu_of(e, x, a),
        Activation::ThresholdedRelu(a) => thresholded_relu_of(e, x, a),
        Activation::ScaledTanh(a, b) => {
            let bx = e.mul_scalar(x, b)?;
            let t = e.unary(UnaryOp::Tanh, bx)?;
            e.mul_scalar(t, a)
        }
        Activation::HardSigmoid(a, b) => hard_sigmoid(e, x, a, b),
        Activation::Elu(a) => elu_of(e, x, a),
        Activation::Softsign => softsign(e, x),
        Activation::Softplus => softplus(e, x),
    }
}
