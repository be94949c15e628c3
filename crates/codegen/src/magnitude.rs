//! The least nonzero magnitude of each `f32` slot's values, a value-range analysis for the
//! division by a constant ([`crate::reciprocal`]): its product form is exact for every
//! dividend but those of magnitude below a threshold, and a dividend that is `0` or at
//! least that (a `relu6(x + 3)` is `0` or at least `2^-23`) needs no test for them. And the
//! magnitudes below which a value's uses cannot tell it from another (`x / 6 + 0.5` is
//! `0.5` for every tiny `x / 6`), so that its last bits there need not be exact.

use graphlift_ir::{BinaryOp, ElementType, UnaryOp};

use crate::lower::float_constant;
use crate::plan::{operands, KernelPlan, SlotId, SlotOp};

/// Relative rounding of one `f32` operation, `2^-24`, with room: a bound `m` on the exact
/// result bounds the rounded one by `m · (1 − 2^-23)` (rounding is monotonic and moves a
/// result by less than that), less `2^-150` below the normal range.
const ROUNDING: f64 = 1.0 - 1.0 / (1u64 << 23) as f64;
/// Half the smallest positive subnormal `f32`: the most a subnormal result is rounded by.
const HALF_SUBNORMAL: f64 = f32::from_bits(1) as f64 / 2.0;

/// For each slot of `plan`, `m ≥ 0` such that every finite nonzero value `v` it takes has
/// `|v| ≥ m` (`∞`: none but zeros; `0`: nothing known). Infinities and NaN are not bounded.
///
/// The rules (`f32` slots held as `f32`; every other gets `0`):
/// - a constant `c`: `|c|` (zero: `∞`);
/// - `x ± c` for a constant normal `c` with `2^e ≤ |c| < 2^(e+1)`: `2^(e−24)`. An `x` below
///   `2^(e−1)` leaves more than `2^(e−1)`; any other `x` and `c` are multiples of
///   `2^(e−24)`, so a nonzero sum is at least that, and rounding keeps it (a float);
/// - `x · y`, `x / c`, `√x`: the bound of the exact result, rounded down;
/// - `max`, `min`, `relu`, `−x`, `|x|`: the smaller of the operands' (the result is one of
///   them, or a sign flip);
/// - `floor`, `ceil`, `round`: `1` (an integer);
/// - loads, other ops: `0`.
pub fn least_magnitudes(plan: &KernelPlan) -> Vec<f64> {
    let mut m: Vec<f64> = Vec::with_capacity(plan.slots.len());
    for slot in &plan.slots {
        let constant = |k: SlotId| f32_constant(plan, k);
        let rounded = |exact: f64| (exact * ROUNDING - HALF_SUBNORMAL).max(0.0);
        let least = match (&slot.op, slot.ty) {
            // (A value of a storage type is rounded to it: no bound kept.)
            (_, t) if t != ElementType::F32 || slot.storage != t => 0.0,
            (SlotOp::Const(bits), _) => match f64::from(f32::from_bits(*bits as u32)).abs() {
                0.0 => f64::INFINITY,
                c if c.is_finite() => c,
                _ => 0.0,
            },
            (SlotOp::Binary(BinaryOp::Add | BinaryOp::Subtract, a, b), _) => {
                match constant(*b).or_else(|| constant(*a)) {
                    Some(c) if c.is_normal() => 2f64.powi(exponent(c) - 24),
                    _ => 0.0,
                }
            }
            (SlotOp::Binary(BinaryOp::Multiply, a, b), _) => rounded(m[*a] * m[*b]),
            (SlotOp::Binary(BinaryOp::Divide, a, b), _) => match constant(*b) {
                Some(c) if c.is_finite() && c != 0.0 => rounded(m[*a] / f64::from(c).abs()),
                _ => 0.0,
            },
            (SlotOp::Binary(BinaryOp::Maximum | BinaryOp::Minimum, a, b), _) => m[*a].min(m[*b]),
            (SlotOp::Unary(u, x), _) => match u {
                UnaryOp::Negative | UnaryOp::Abs | UnaryOp::Relu => m[*x],
                UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => 1.0,
                UnaryOp::Sqrt => rounded(m[*x].sqrt()),
                _ => 0.0,
            },
            _ => 0.0,
        };
        m.push(least);
    }
    m
}

/// For each slot of `plan`, `a ≥ 0` such that replacing any of its values of magnitude
/// below `a` by any other value below `a` changes no result of the kernel (`0`: no such
/// `a` is known). That holds where every use adds the value to a constant `k`, or
/// subtracts one from the other: a nonzero `k` with `2^e ≤ |k|` has floats `2^(e−24)` apart
/// or more around it, so `k ± v` rounds to `k` for every `|v| < 2^(e−25)`. A slot that is a
/// kernel output, held in another storage type or read by anything else gets `0`.
pub fn absorbed_below(plan: &KernelPlan) -> Vec<f64> {
    let mut a = vec![f64::INFINITY; plan.slots.len()];
    for &(out, _) in &plan.outputs {
        a[out] = 0.0;
    }
    let constant = |k: SlotId| f32_constant(plan, k).filter(|c| c.is_normal());
    for (k, slot) in plan.slots.iter().enumerate() {
        if slot.ty != ElementType::F32 || slot.storage != slot.ty {
            a[k] = 0.0;
        }
        let sum_with = match slot.op {
            SlotOp::Binary(BinaryOp::Add | BinaryOp::Subtract, x, y) if slot.storage == slot.ty => {
                match (constant(x), constant(y)) {
                    (None, Some(c)) => Some((x, c)),
                    (Some(c), None) => Some((y, c)),
                    _ => None,
                }
            }
            _ => None,
        };
        for used in operands(&slot.op) {
            a[used] = match sum_with {
                Some((v, c)) if v == used && slot.ty == ElementType::F32 => {
                    a[used].min(2f64.powi(exponent(c) - 25))
                }
                _ => 0.0,
            };
        }
    }
    a.iter()
        .map(|&v| if v.is_finite() { v } else { 0.0 })
        .collect()
}

/// The value of slot `k` when it is an `f32` constant (not NaN).
fn f32_constant(plan: &KernelPlan, k: SlotId) -> Option<f32> {
    let slot = &plan.slots[k];
    (slot.ty == ElementType::F32)
        .then(|| float_constant(slot, ElementType::F32))
        .flatten()
        .map(|c| c as f32)
}

/// `e` with `2^e ≤ |c| < 2^(e+1)`, for a normal `c`.
fn exponent(c: f32) -> i32 {
    ((c.to_bits() >> 23) & 0xFF) as i32 - 127
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::plan_kernel;
    use graphlift_ir::{Function, FunctionBuilder};

    const F32: ElementType = ElementType::F32;

    /// The least magnitude of `body`'s only output.
    fn least_of(body: &Function) -> f64 {
        let plan = plan_kernel("t", body).unwrap();
        least_magnitudes(&plan)[plan.outputs[0].0]
    }

    #[test]
    fn a_sum_with_a_constant_is_zero_or_at_least_its_bound() {
        for c in [3.0f32, -3.0, 0.5, 6.0, 1e-30, 3e20] {
            let b = FunctionBuilder::new("sum");
            let x = b.parameter("x", F32, [4]);
            let least = least_of(&b.finish(&[x + f64::from(c)]).unwrap());
            assert!(least > 0.0, "{c}");
            // Dividends near -c, where the sum is smallest, and a sweep.
            let near = (-2000..2000).map(|i| f32::from_bits((-c).to_bits().wrapping_add_signed(i)));
            let sweep = (0..1 << 16).map(|i: u32| f32::from_bits(i.wrapping_mul(0x9E37_79B9)));
            for x in near.chain(sweep) {
                let s = x + c;
                assert!(
                    s == 0.0 || !s.is_finite() || f64::from(s.abs()) >= least,
                    "{x} + {c}"
                );
            }
        }
    }

    #[test]
    fn clips_products_and_integers_keep_their_bounds() {
        let b = FunctionBuilder::new("hard");
        let x = b.parameter("x", F32, [4]);
        let relu6 = (x + 3.0).max(x.scalar_like(0.0)).min(x.scalar_like(6.0));
        assert_eq!(least_of(&b.finish(&[relu6]).unwrap()), 2f64.powi(-23));
        let b = FunctionBuilder::new("scaled");
        let x = b.parameter("x", F32, [4]);
        let scaled = least_of(&b.finish(&[(x + 3.0) * 0.5]).unwrap());
        assert!(scaled < 2f64.powi(-24) && scaled > 2f64.powi(-24) * 0.999_999);
        let b = FunctionBuilder::new("floor");
        let x = b.parameter("x", F32, [4]);
        assert_eq!(least_of(&b.finish(&[x.floor().abs()]).unwrap()), 1.0);
        let b = FunctionBuilder::new("unknown");
        let x = b.parameter("x", F32, [4]);
        let y = b.parameter("y", F32, [4]);
        assert_eq!(least_of(&b.finish(&[(x + 3.0) * y]).unwrap()), 0.0);
        let b = FunctionBuilder::new("call");
        let x = b.parameter("x", F32, [4]);
        assert_eq!(least_of(&b.finish(&[x.exp() + x]).unwrap()), 0.0);
    }

    /// The bound `absorbed_below` gives the value of `body`'s slot made by node `name`.
    fn absorbed_at(body: &Function, name: &str) -> f64 {
        let plan = plan_kernel("t", body).unwrap();
        let k = plan.slots.iter().position(|s| &*s.node == name).unwrap();
        absorbed_below(&plan)[k]
    }

    #[test]
    fn sums_with_a_constant_absorb_tiny_values() {
        // `x / 6 + 0.5`: values below 2^-26 leave 0.5, and the bound is tight.
        let b = FunctionBuilder::new("hard_sigmoid");
        let x = b.parameter("x", F32, [4]);
        let q = (x / 6.0).named("q");
        let body = b.finish(&[(q + 0.5).max(x.scalar_like(0.0))]).unwrap();
        let a = absorbed_at(&body, "q");
        assert_eq!(a, 2f64.powi(-26));
        for v in [a * 0.999, -a * 0.999, 1e-30, -1e-45] {
            assert_eq!(0.5f32 + v as f32, 0.5, "{v}");
            assert_eq!(0.5f32 - v as f32, 0.5, "{v}");
        }
        assert_ne!(0.5f32 - (a * 1.01) as f32, 0.5);
        // Two sums: the smaller constant's bound; `k − x` as well.
        let b = FunctionBuilder::new("two");
        let x = b.parameter("x", F32, [4]);
        let q = (x / 6.0).named("q");
        let body = b.finish(&[q + 1024.0, x.scalar_like(3.0) - q]).unwrap();
        assert_eq!(absorbed_at(&body, "q"), 2f64.powi(1 - 25));
        // A product reads it too, or it is an output: nothing.
        let b = FunctionBuilder::new("read");
        let x = b.parameter("x", F32, [4]);
        let q = (x / 6.0).named("q");
        let body = b.finish(&[(q + 0.5) * q]).unwrap();
        assert_eq!(absorbed_at(&body, "q"), 0.0);
        let b = FunctionBuilder::new("output");
        let x = b.parameter("x", F32, [4]);
        let q = (x / 6.0).named("q");
        let body = b.finish(&[q + 0.5, q]).unwrap();
        assert_eq!(absorbed_at(&body, "q"), 0.0);
        // A sum with a value that may be zero: nothing.
        let b = FunctionBuilder::new("variable");
        let x = b.parameter("x", F32, [4]);
        let y = b.parameter("y", F32, [4]);
        let q = (x / 6.0).named("q");
        let body = b.finish(&[q + y]).unwrap();
        assert_eq!(absorbed_at(&body, "q"), 0.0);
    }
}
