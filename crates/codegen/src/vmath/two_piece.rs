//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::two_piece`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
pub use graphlift_kernels::vmath::two_piece::*;

/// Emits `form`'s `f(x)` for the `f32` value `x`; `small(e, a, a²)` emits the small-argument
/// piece on the clamped `a = |x|`.
pub fn emit(
    form: &TwoPiece,
    e: &mut Emit,
    x: Value,
    small: impl FnOnce(&mut Emit, Value, Value) -> Value,
) -> Value {
    let a = e.b.ins().fabs(x);
    let clamp = e.f32(form.clamp);
    let over = e.fcmp(FloatCC::GreaterThan, a, clamp);
    let a = e.select(over, clamp, a);
    let t = e.b.ins().fmul(a, a);
    let small = small(e, a, t);
    // Large |x|: 1 − G(a − mid)⁴, as fma(−g², g², 1) with g = G².
    let mid = e.f32(form.mid);
    let u = e.b.ins().fsub(a, mid);
    let g = e.horner(u, form.g);
    let g2 = e.b.ins().fmul(g, g);
    let neg_g2 = e.b.ins().fneg(g2);
    let one = e.f32(1.0);
    let large = e.b.ins().fma(neg_g2, g2, one);
    let split = e.f32(form.split);
    let is_small = e.fcmp(FloatCC::LessThan, a, split);
    let y = e.select(is_small, small, large);
    e.copysign(y, x)
}
