//! The operations the library's functions are written in ([`F32x`]), so that each function
//! is written once ([`super::functions`]) for one `f32` lane and for sixteen (AVX-512).

/// A vector of `f32` lanes with the IEEE operations the vector math uses, each with one
/// rounding (a fused multiply-add rounds once) and the NaN rules the inline Cranelift code
/// has, so that every implementation gives the same bits. Constants are made with
/// [`F32x::splat`] on a value of the type (a value proves the host runs the type's code).
pub(super) trait F32x: Copy {
    /// `k` in every lane.
    fn splat(self, k: f32) -> Self;
    /// `self + b`.
    fn add(self, b: Self) -> Self;
    /// `self − b`.
    fn sub(self, b: Self) -> Self;
    /// `self · b`.
    fn mul(self, b: Self) -> Self;
    /// `self / b`.
    fn div(self, b: Self) -> Self;
    /// `self · b + c`, rounded once.
    fn mul_add(self, b: Self, c: Self) -> Self;
    /// `−(self · b) + c`, rounded once.
    fn neg_mul_add(self, b: Self, c: Self) -> Self;
    /// `self · b − c`, rounded once.
    fn mul_sub(self, b: Self, c: Self) -> Self;
    /// `|self|` (the sign bit cleared).
    fn abs(self) -> Self;
    /// `hi` where `self > hi`, else `self` (a compare and select: NaN stays NaN).
    fn clamp_above(self, hi: f32) -> Self;
    /// `lo` where `self < lo`, else `self` (a compare and select: NaN stays NaN).
    fn clamp_below(self, lo: f32) -> Self;
    /// `if_lt` where `self < b`, else `otherwise` (ordered: false for NaN).
    fn select_lt(self, b: Self, if_lt: Self, otherwise: Self) -> Self;
    /// `if_ge` where `self ≥ b`, else `otherwise` (ordered: false for NaN).
    fn select_ge(self, b: Self, if_ge: Self, otherwise: Self) -> Self;
    /// `|self|` with the sign bit of `sign`.
    fn copysign(self, sign: Self) -> Self;
    /// `self · 2^n`, where `n` is the integer `nf` holds and `t = nf + MAGIC` (the
    /// Cody–Waite reduction's rounding sum, whose low mantissa bits are `n`), for
    /// `|self| < 2` and `n` in `[-150, 128]`: exact, or rounded once into the subnormals or
    /// to `+inf`.
    fn scale_pow2(self, t: Self, nf: Self) -> Self;
}

/// `2^n` for `n` in `[-126, 127]`, from exponent bits.
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// One lane: plain Rust arithmetic, which LLVM vectorizes in the library's slice loops (a
/// fused multiply-add is `f32::mul_add`; Rust never contracts `a * b + c`).
impl F32x for f32 {
    #[inline(always)]
    fn splat(self, k: f32) -> f32 {
        k
    }
    #[inline(always)]
    fn add(self, b: f32) -> f32 {
        self + b
    }
    #[inline(always)]
    fn sub(self, b: f32) -> f32 {
        self - b
    }
    #[inline(always)]
    fn mul(self, b: f32) -> f32 {
        self * b
    }
    #[inline(always)]
    fn div(self, b: f32) -> f32 {
        self / b
    }
    #[inline(always)]
    fn mul_add(self, b: f32, c: f32) -> f32 {
        f32::mul_add(self, b, c)
    }
    #[inline(always)]
    fn neg_mul_add(self, b: f32, c: f32) -> f32 {
        f32::mul_add(-self, b, c)
    }
    #[inline(always)]
    fn mul_sub(self, b: f32, c: f32) -> f32 {
        f32::mul_add(self, b, -c)
    }
    #[inline(always)]
    fn abs(self) -> f32 {
        f32::abs(self)
    }
    #[inline(always)]
    fn clamp_above(self, hi: f32) -> f32 {
        if self > hi {
            hi
        } else {
            self
        }
    }
    #[inline(always)]
    fn clamp_below(self, lo: f32) -> f32 {
        if self < lo {
            lo
        } else {
            self
        }
    }
    #[inline(always)]
    fn select_lt(self, b: f32, if_lt: f32, otherwise: f32) -> f32 {
        if self < b {
            if_lt
        } else {
            otherwise
        }
    }
    #[inline(always)]
    fn select_ge(self, b: f32, if_ge: f32, otherwise: f32) -> f32 {
        if self >= b {
            if_ge
        } else {
            otherwise
        }
    }
    #[inline(always)]
    fn copysign(self, sign: f32) -> f32 {
        f32::from_bits((self.to_bits() & 0x7fff_ffff) | (sign.to_bits() & 0x8000_0000))
    }
    /// In two exact steps, `self · 2^(n>>1) · 2^(n − (n>>1))`, so that `n` down to `-150`
    /// and up to `128` needs no special case.
    #[inline(always)]
    fn scale_pow2(self, t: f32, _nf: f32) -> f32 {
        let n = (t.to_bits() as i32).wrapping_sub(crate::vmath::exp::MAGIC.to_bits() as i32);
        let n1 = n >> 1;
        self * pow2(n1) * pow2(n.wrapping_sub(n1))
    }
}
