//! Division by a constant in assembled kernels as the product form of an
//! [`ExactReciprocal`]: `vmulps` by `1/c` for a power of two, else `vmulps` by `lo` and
//! `vfmadd231ps` by `hi`, for dividends that `direct` has shown need no division.

use iced_x86::code_asm::*;

use graphlift_kernels::target::VectorIsa;

use super::emit::{Fail, Writer};
use super::inst::{broadcast, Src, YMM, ZMM};
use crate::reciprocal::ExactReciprocal;

/// The pool constants of dividing by `r`: `hi`, then `lo` unless it is zero.
pub(super) fn constants(r: &ExactReciprocal) -> Vec<u32> {
    let mut bits = vec![r.hi.to_bits()];
    if r.lo != 0.0 {
        bits.push(r.lo.to_bits());
    }
    bits
}

impl Writer<'_> {
    /// `d = x / c` (registers, `d` not `x`'s) as `fma(x, hi, x · lo)`, or `x · hi`.
    pub(super) fn divide_exact(
        &mut self,
        d: usize,
        x: usize,
        r: &ExactReciprocal,
    ) -> Result<(), Fail> {
        let pool: Vec<CodeLabel> = constants(r)
            .into_iter()
            .map(|b| self.constant(u64::from(b), false))
            .collect::<Result<_, _>>()?;
        let hi = pool[0];
        let Some(&lo) = pool.get(1) else {
            return self.vmulps(d, x, Src::Const(hi, false));
        };
        self.vmulps(d, x, Src::Const(lo, false))?;
        match self.lay.isa {
            VectorIsa::Avx512 => self.a.vfmadd231ps(ZMM[d], ZMM[x], broadcast(hi, false))?,
            VectorIsa::Avx2 => self.a.vfmadd231ps(YMM[d], YMM[x], ymmword_ptr(hi))?,
        }
        Ok(())
    }
}
