//! The activation functions of the recurrent operators (`activations`, `activation_alpha`,
//! `activation_beta`), parsed per direction into the op's [`RecurrentActivation`]s.

use super::*;

/// The default activations of one direction.
fn default_activations(cell: Cell) -> &'static [&'static str] {
    match cell {
        Cell::Rnn => &["Tanh"],
        Cell::Gru => &["Sigmoid", "Tanh"],
        Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
    }
}

/// The node's activations: `per` for each of `directions`, names matched case-insensitively.
pub(super) fn activations(
    e: &NodeEmitter<'_>,
    cell: Cell,
    directions: usize,
) -> Result<Vec<RecurrentActivation>, OnnxError> {
    let defaults = default_activations(cell);
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
                "relu" => RecurrentActivation::Relu,
                "tanh" => RecurrentActivation::Tanh,
                "sigmoid" => RecurrentActivation::Sigmoid,
                "affine" => RecurrentActivation::Affine(alpha(1.0), beta(0.0)),
                "leakyrelu" => RecurrentActivation::LeakyRelu(alpha(0.01)),
                "thresholdedrelu" => RecurrentActivation::ThresholdedRelu(alpha(1.0)),
                "scaledtanh" => RecurrentActivation::ScaledTanh(alpha(1.0), beta(1.0)),
                "hardsigmoid" => RecurrentActivation::HardSigmoid(alpha(0.2), beta(0.5)),
                "elu" => RecurrentActivation::Elu(alpha(1.0)),
                "softsign" => RecurrentActivation::Softsign,
                "softplus" => RecurrentActivation::Softplus,
                _ => {
                    return Err(
                        e.attribute_error("activations", format!("unknown activation {name:?}"))
                    )
                }
            })
        })
        .collect()
}
