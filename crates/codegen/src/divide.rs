//! Unsigned division of element indices by compile-time constants without a divide
//! instruction ([`ConstDivisor`]): broadcast addressing divides by extents on every vector,
//! and a hardware `div` takes tens of cycles on x86-64.

use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;

/// A divisor known at compile time, for dividends below a known bound.
///
/// Broadcast addressing divides the element index by extents and strides known when the
/// kernel is compiled (`i mod len` for a row vector, `(i / div) mod m` in general), once per
/// vector or per lane, and the kernels are compiled without Cranelift's mid-end optimizer,
/// which would otherwise rewrite such divisions (see [`crate::isa::host_isa`]). So:
/// - a power of two `d = 2^k`: a shift (`x >> k`) and a mask (`x & (d − 1)`);
/// - any other `d`, for dividends `x < 2^N`: `q = (x · m) >> s` with `s = N + ⌈log2 d⌉` and
///   `m = ⌈2^s / d⌉`, the "round-up" method of Granlund and Montgomery ("Division by
///   Invariant Integers using Multiplication", PLDI 1994, section 4). It is exact for every
///   `x < 2^N` because `e = m·d − 2^s < d ≤ 2^(s − N)`, so `x·e / 2^s < 1` cannot carry
///   `x·m / 2^s = x/d + x·e/(d·2^s)` past the next integer. It is used when `x·m` fits in 64
///   bits for every such `x` (iteration spaces below about 2^31 elements); larger ones keep
///   the `udiv` instruction;
/// - the remainder is `x − q·d`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstDivisor {
    d: u64,
    method: Method,
}

/// How a [`ConstDivisor`] divides (for code generators other than Cranelift's:
/// [`super::asm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `d = 2^shift`.
    Shift(u32),
    /// `q = (x · m) >> s`.
    Multiply {
        /// The magic multiplier.
        m: u64,
        /// The shift after the high product.
        s: u32,
    },
    /// The `udiv` instruction.
    Divide,
}

impl ConstDivisor {
    /// The divisor `d ≥ 1` (0 is taken as 1) for dividends `x < bound`.
    pub fn new(d: usize, bound: usize) -> ConstDivisor {
        let d = (d as u64).max(1);
        let method = if d.is_power_of_two() {
            Method::Shift(d.trailing_zeros())
        } else {
            let n = u64::BITS - (bound.max(1) as u64 - 1).leading_zeros();
            let l = u64::BITS - (d - 1).leading_zeros();
            let s = n + l;
            let m = (1u128 << s).div_ceil(u128::from(d));
            let largest = (1u128 << n) - 1;
            // The product must fit the (64-bit) index and the shift stay below 64 (a divisor
            // far above the bound could ask for more).
            match u64::try_from(m) {
                Ok(m) if s < 64 && m as u128 * largest <= u128::from(u64::MAX) => {
                    Method::Multiply { m, s }
                }
                _ => Method::Divide,
            }
        };
        ConstDivisor { d, method }
    }

    /// The divisor.
    pub fn divisor(&self) -> u64 {
        self.d
    }

    /// How it divides: the quotient is `x >> k`, `(x · m mod 2^64) >> s` (the product does
    /// not wrap below the bound), or a `div` instruction.
    pub fn method(&self) -> Method {
        self.method
    }

    /// `x / d` for the pointer-sized integer `x` (below the bound).
    pub fn quotient(&self, b: &mut FunctionBuilder, x: Value) -> Value {
        match self.method {
            Method::Shift(0) => x,
            Method::Shift(k) => b.ins().ushr_imm_u(x, i64::from(k)),
            Method::Multiply { m, s } => {
                let p = b.ins().imul_imm_u(x, m as i64);
                b.ins().ushr_imm_u(p, i64::from(s))
            }
            Method::Divide => {
                let ty = b.func.dfg.value_type(x);
                let d = b.ins().iconst(ty, self.d as i64);
                b.ins().udiv(x, d)
            }
        }
    }

    /// `x mod d` for the pointer-sized integer `x` (below the bound).
    pub fn remainder(&self, b: &mut FunctionBuilder, x: Value) -> Value {
        match self.method {
            Method::Shift(k) => b.ins().band_imm_u(x, ((1u64 << k) - 1) as i64),
            Method::Multiply { .. } => {
                let q = self.quotient(b, x);
                let qd = b.ins().imul_imm_u(q, self.d as i64);
                b.ins().isub(x, qd)
            }
            Method::Divide => {
                let ty = b.func.dfg.value_type(x);
                let d = b.ins().iconst(ty, self.d as i64);
                b.ins().urem(x, d)
            }
        }
    }

    /// What [`ConstDivisor::quotient`] computes, in Rust (for the tests).
    #[cfg(test)]
    fn eval_quotient(&self, x: u64) -> u64 {
        match self.method {
            Method::Shift(k) => x >> k,
            Method::Multiply { m, s } => x.wrapping_mul(m) >> s,
            Method::Divide => x / self.d,
        }
    }

    /// What [`ConstDivisor::remainder`] computes, in Rust (for the tests).
    #[cfg(test)]
    fn eval_remainder(&self, x: u64) -> u64 {
        match self.method {
            Method::Shift(k) => x & ((1u64 << k) - 1),
            Method::Multiply { .. } => x.wrapping_sub(self.eval_quotient(x).wrapping_mul(self.d)),
            Method::Divide => x % self.d,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks quotient and remainder of every `x` against Rust's.
    fn check(d: usize, bound: usize, xs: impl Iterator<Item = u64>) {
        let c = ConstDivisor::new(d, bound);
        for x in xs {
            assert_eq!(
                c.eval_quotient(x),
                x / d as u64,
                "d {d} bound {bound} x {x}"
            );
            assert_eq!(
                c.eval_remainder(x),
                x % d as u64,
                "d {d} bound {bound} x {x}"
            );
        }
    }

    #[test]
    fn multiply_and_shift_divides_exactly_below_the_bound() {
        // Every divisor up to 300 and a few extents, every dividend below small bounds,
        // then the largest dividends and a sample across large bounds.
        for d in (1..=300).chain([1000, 1023, 1025, 3 * 1024, 49_152, 65_535, 1 << 20]) {
            for bound in [1usize, 2, 7, 64, 1000, 4096] {
                check(d, bound, 0..bound as u64);
            }
            for bound in [1usize << 20, 1 << 24, (1 << 31) - 1, 1 << 31] {
                let top = bound as u64 - 1;
                let sample = (0..4096u64).map(|k| k * 524_309 % bound as u64);
                check(d, bound, sample.chain(top.saturating_sub(4096)..=top));
            }
        }
    }

    #[test]
    fn the_method_follows_the_divisor_and_the_bound() {
        assert_eq!(ConstDivisor::new(1024, 1 << 40).method, Method::Shift(10));
        assert_eq!(ConstDivisor::new(1, 5).method, Method::Shift(0));
        assert!(matches!(
            ConstDivisor::new(1000, 1 << 24).method,
            Method::Multiply { .. }
        ));
        // Products past 64 bits, or a shift of 64 or more: the divide instruction.
        assert_eq!(ConstDivisor::new(1000, 1 << 40).method, Method::Divide);
        assert_eq!(ConstDivisor::new((1 << 62) + 1, 2).method, Method::Divide);
    }
}
