//! The two-piece form of the `f32` [`super::erf`] (and of `tanh` before its rational form):
//! odd functions that rise from 0 to 1, computed on `a = min(|x|, clamp)` as a small-argument polynomial
//! below `split` and `1 − G(a − mid)⁴` above it (`G` approximates the fourth root of
//! `1 − f(a)`, smooth where `1 − f` itself spans many decades), with the sign of `x` put back.
//! No division and no exponential.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::codegen::lanes::Emit;

/// The constants of one two-piece function.
pub(crate) struct TwoPiece {
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

impl TwoPiece {
    /// Emits `f(x)` for the `f32` value `x`; `small(e, a, a²)` emits the small-argument
    /// piece on the clamped `a = |x|`.
    pub(super) fn emit(
        &self,
        e: &mut Emit,
        x: Value,
        small: impl FnOnce(&mut Emit, Value, Value) -> Value,
    ) -> Value {
        let a = e.b.ins().fabs(x);
        let clamp = e.f32(self.clamp);
        let over = e.fcmp(FloatCC::GreaterThan, a, clamp);
        let a = e.select(over, clamp, a);
        let t = e.b.ins().fmul(a, a);
        let small = small(e, a, t);
        // Large |x|: 1 − G(a − mid)⁴, as fma(−g², g², 1) with g = G².
        let mid = e.f32(self.mid);
        let u = e.b.ins().fsub(a, mid);
        let g = e.horner(u, self.g);
        let g2 = e.b.ins().fmul(g, g);
        let neg_g2 = e.b.ins().fneg(g2);
        let one = e.f32(1.0);
        let large = e.b.ins().fma(neg_g2, g2, one);
        let split = e.f32(self.split);
        let is_small = e.fcmp(FloatCC::LessThan, a, split);
        let y = e.select(is_small, small, large);
        e.copysign(y, x)
    }
}
