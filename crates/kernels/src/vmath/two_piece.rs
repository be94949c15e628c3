//! The two-piece form of the `f32` [`super::erf`]: a small-argument polynomial, then
//! `1 − G(a − mid)⁴`, with no division and no exponential.

/// The constants of one two-piece function: an odd function that rises from 0 to 1,
/// computed on `a = min(|x|, clamp)` as a small-argument polynomial below `split` and
/// `1 − G(a − mid)⁴` above it (`G` approximates the fourth root of `1 − f(a)`, smooth where
/// `1 − f` itself spans many decades), with the sign of `x` put back.
pub struct TwoPiece {
    /// `|x|` is clamped to this: where `1 − G⁴` is exactly `1.0`. A compare and select, so
    /// NaN stays NaN and `±inf` gives `±1`.
    pub clamp: f32,
    /// Below this `a` the small-argument piece is used.
    pub split: f32,
    /// Centre of the large-argument piece (`a − mid` is exact there).
    pub mid: f32,
    /// `G`, ascending, in `a − mid`.
    pub g: &'static [f32],
}
