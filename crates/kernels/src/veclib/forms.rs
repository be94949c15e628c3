//! Activation forms: whole `f32` expressions of one value, such as GELU and SiLU as exporters
//! and builders write them, computed by the library in one call so that every operation runs
//! at its width, as onnxruntime's fused `Gelu` and oneDNN's `eltwise_gelu_tanh` do.

use graphlift_ir::{BinaryOp, UnaryOp};

use super::functions as f;

/// The most scalar parameters of a form.
pub const MAX_PARAMS: usize = 4;

/// A node of a form's expression.
///
/// A strip-mined kernel (`graphlift_codegen::strip`) that calls `tanh` for GELU would still
/// compute the cubic before the call and the products after it in its own four-lane loops,
/// which take about as long as the sixteen-lane `tanh` itself (figures in `BENCHMARKS.md`).
/// A form is such an expression, in full, as one library function: the kernel passes `x`
/// and gets the result, and every operation runs at the library's width, as onnxruntime's
/// fused `Gelu`/`FastGelu` kernels and oneDNN's `eltwise_gelu_tanh` and `eltwise_swish` do.
///
/// Each form is given by its pattern, the tree of operations it stands for, with its scalar
/// constants as parameters; `codegen::calls` finds the pattern among a kernel's slots (an
/// `Add` or `Multiply` with its operands either way round, which IEEE arithmetic does not
/// tell apart) and its function (head and tail in `functions`, written once for one lane
/// and sixteen) performs exactly the pattern's operations in their order. So a call
/// gives the inline kernel's result bit for bit, as the single functions do;
/// `crates/codegen/tests/kernels/veclib.rs` checks every form against the inline code.
#[derive(Debug)]
pub enum Pattern {
    /// The form's argument: one per-element `f32` value, the same at every occurrence.
    X,
    /// A scalar `f32` constant, passed to the library as parameter `i` (each parameter
    /// occurs once).
    Param(usize),
    /// A unary op of the operand.
    Unary(UnaryOp, &'static Pattern),
    /// A binary op of the operands (either order for `Add` and `Multiply`).
    Binary(BinaryOp, &'static Pattern, &'static Pattern),
}

use Pattern::{Binary, Param, Unary, X};

const fn mul(a: &'static Pattern, b: &'static Pattern) -> Pattern {
    Binary(BinaryOp::Multiply, a, b)
}

const fn add(a: &'static Pattern, b: &'static Pattern) -> Pattern {
    Binary(BinaryOp::Add, a, b)
}

/// GELU, tanh form: `(x·c0)·(tanh((x + x·x·x·c1)·c2) + c3)` (`c0 = 0.5`, `c1 = 0.044715`,
/// `c2 = √(2/π)`, `c3 = 1`): Hendrycks and Gimpel's approximation as the ONNX importer's
/// `Gelu(approximate="tanh")`, the peers' E2 and Hugging Face's `gelu_new` write it.
pub const GELU_TANH: Pattern = mul(
    &mul(&X, &Param(0)),
    &add(
        &Unary(
            UnaryOp::Tanh,
            &mul(&add(&X, &mul(&mul(&mul(&X, &X), &X), &Param(1))), &Param(2)),
        ),
        &Param(3),
    ),
);

/// GELU, erf form: `(x·c0)·(erf(x·c1) + c2)` (`c0 = 0.5`, `c1 = 1/√2`, `c2 = 1`): the ONNX
/// importer's `Gelu`.
pub const GELU_ERF: Pattern = mul(
    &mul(&X, &Param(0)),
    &add(&Unary(UnaryOp::Erf, &mul(&X, &Param(1))), &Param(2)),
);

/// GELU, erf form with a division: `(x·(erf(x / c0) + c1))·c2` (`c0 = √2`, `c1 = 1`,
/// `c2 = 0.5`): BERT's `x * 0.5 * (1 + erf(x / sqrt(2)))` as PyTorch exports it (MiniLM).
pub const GELU_ERF_DIVIDE: Pattern = mul(
    &mul(
        &X,
        &add(
            &Unary(UnaryOp::Erf, &Binary(BinaryOp::Divide, &X, &Param(0))),
            &Param(1),
        ),
    ),
    &Param(2),
);

/// SiLU (swish): `x·sigmoid(x)`, as PyTorch exports `SiLU`.
pub const SILU: Pattern = mul(&X, &Unary(UnaryOp::Sigmoid, &X));

/// SiLU written with `exp`: `x / (e^−x + c0)` (`c0 = 1`): the peers' E3.
pub const SILU_EXP: Pattern = Binary(
    BinaryOp::Divide,
    &X,
    &add(
        &Unary(UnaryOp::Exp, &Unary(UnaryOp::Negative, &X)),
        &Param(0),
    ),
);

/// Swish with a slope, written with `exp`: `x / (e^−(x·c1) + c0)` (`c0 = 1`, `c1 = β`):
/// `x·sigmoid(β·x)` (Ramachandran et al.'s Swish; CLIP's QuickGELU has `β = 1.702`) in the
/// normal form of the `canonical_forms` pass.
pub const SWISH: Pattern = Binary(
    BinaryOp::Divide,
    &X,
    &add(
        &Unary(UnaryOp::Exp, &Unary(UnaryOp::Negative, &mul(&X, &Param(1)))),
        &Param(0),
    ),
);

/// [`GELU_TANH`], one element.
#[inline(always)]
pub fn gelu_tanh(x: f32, c: [f32; MAX_PARAMS]) -> f32 {
    f::gelu_tanh_tail(f::gelu_tanh_head(x, &c), &c)
}

/// [`GELU_ERF`], one element.
#[inline(always)]
pub fn gelu_erf(x: f32, c: [f32; MAX_PARAMS]) -> f32 {
    f::gelu_erf_tail(f::gelu_erf_head(x, &c), &c)
}

/// [`GELU_ERF_DIVIDE`], one element.
#[inline(always)]
pub fn gelu_erf_divide(x: f32, c: [f32; MAX_PARAMS]) -> f32 {
    f::gelu_erf_divide_tail(f::gelu_erf_divide_head(x, &c), &c)
}

/// [`SILU`], one element.
#[inline(always)]
pub fn silu(x: f32, _: [f32; MAX_PARAMS]) -> f32 {
    f::silu_tail(f::sigmoid_head(x))
}

/// [`SILU_EXP`], one element.
#[inline(always)]
pub fn silu_exp(x: f32, c: [f32; MAX_PARAMS]) -> f32 {
    f::silu_exp_tail(f::silu_exp_head(x), c[0])
}

/// [`SWISH`], one element.
#[inline(always)]
pub fn swish(x: f32, c: [f32; MAX_PARAMS]) -> f32 {
    f::silu_exp_tail(f::swish_head(x, c[1]), c[0])
}
