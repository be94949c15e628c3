//! Bit-level conversions of the ONNX 8-bit and 4-bit floats to and from `f64`, as ONNX's
//! `Cast` defines them (docs/Operators.md, `Cast`, opsets 19, 23, 24, 25): one description
//! of a small binary float ([`MiniFloat`]) serves FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2,
//! FLOAT8E5M2FNUZ and FLOAT4E2M1; FLOAT8E8M0, an exponent-only scale, has its own pair
//! ([`e8m0_decode`], [`e8m0_encode`]).
//!
//! Written here rather than taken from the `float8` crate: it covers two of the six formats
//! (E4M3FN, E5M2) and rounds with saturation only, while ONNX needs all six and the
//! non-saturating mode. Every bit pattern's value, and the rounding of the values between
//! them, are table-tested against `ml_dtypes` (which the ONNX reference uses).

/// Which special values a [`MiniFloat`] format has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Specials {
    /// IEEE 754 style (E5M2): the all-ones exponent holds ±infinity (mantissa 0) and NaNs.
    Ieee,
    /// E4M3FN: no infinity; `S.1111.111` is NaN, every other pattern is finite, `-0` exists.
    FiniteNan,
    /// The FNUZ formats: no infinity, one NaN (`0x80`, the pattern of `-0`), no `-0`.
    Fnuz,
    /// FLOAT4E2M1: every pattern is finite; no NaN, no infinity.
    None,
}

/// A small binary float: sign, `exponent_bits` of exponent with `bias`, `mantissa_bits` of
/// fraction (subnormals when the exponent field is 0), and its [`Specials`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MiniFloat {
    /// Width of the exponent field.
    pub exponent_bits: u32,
    /// Width of the fraction field.
    pub mantissa_bits: u32,
    /// Exponent bias: a normal number is `1.f × 2^(e - bias)`.
    pub bias: i32,
    /// The format's special values.
    pub specials: Specials,
}

/// `2^n` for `n` in binary64's normal exponent range (exact).
fn pow2(n: i32) -> f64 {
    f64::from_bits(((n + 1023) as u64) << 52)
}

impl MiniFloat {
    /// FLOAT8E4M3FN: bias 7, largest finite 448.
    pub const E4M3FN: MiniFloat = MiniFloat::new(4, 3, 7, Specials::FiniteNan);
    /// FLOAT8E4M3FNUZ: bias 8, largest finite 240.
    pub const E4M3FNUZ: MiniFloat = MiniFloat::new(4, 3, 8, Specials::Fnuz);
    /// FLOAT8E5M2: bias 15, largest finite 57344, infinities.
    pub const E5M2: MiniFloat = MiniFloat::new(5, 2, 15, Specials::Ieee);
    /// FLOAT8E5M2FNUZ: bias 16, largest finite 57344.
    pub const E5M2FNUZ: MiniFloat = MiniFloat::new(5, 2, 16, Specials::Fnuz);
    /// FLOAT4E2M1: bias 1, largest finite 6 (values 0, 0.5, 1, 1.5, 2, 3, 4, 6).
    pub const E2M1: MiniFloat = MiniFloat::new(2, 1, 1, Specials::None);

    const fn new(exponent_bits: u32, mantissa_bits: u32, bias: i32, specials: Specials) -> Self {
        MiniFloat {
            exponent_bits,
            mantissa_bits,
            bias,
            specials,
        }
    }

    fn sign_bit(self) -> u8 {
        1 << (self.exponent_bits + self.mantissa_bits)
    }

    fn top_exponent(self) -> u8 {
        (1 << self.exponent_bits) - 1
    }

    /// The largest finite value.
    pub fn max_finite(self) -> f64 {
        let e = match self.specials {
            Specials::Ieee => self.top_exponent() - 1,
            _ => self.top_exponent(),
        };
        let fraction = match self.specials {
            Specials::FiniteNan => (1u32 << self.mantissa_bits) - 2,
            _ => (1u32 << self.mantissa_bits) - 1,
        };
        let units = f64::from(fraction + (1 << self.mantissa_bits));
        units * pow2(i32::from(e) - self.bias - self.mantissa_bits as i32)
    }

    /// The value of the pattern in the low bits of `bits` (exact in `f64`).
    pub fn decode(self, bits: u8) -> f64 {
        let sign = self.sign_bit();
        let magnitude = bits & (sign - 1);
        let m = self.mantissa_bits;
        let (e, f) = (magnitude >> m, magnitude & ((1 << m) - 1));
        let nan = match self.specials {
            Specials::Ieee => e == self.top_exponent() && f != 0,
            Specials::FiniteNan => magnitude == sign - 1,
            Specials::Fnuz => magnitude == 0 && bits & sign != 0,
            Specials::None => false,
        };
        if nan {
            return f64::NAN;
        }
        let v = if self.specials == Specials::Ieee && e == self.top_exponent() {
            f64::INFINITY
        } else if e == 0 {
            f64::from(f) * pow2(1 - self.bias - m as i32)
        } else {
            f64::from(f + (1 << m)) * pow2(i32::from(e) - self.bias - m as i32)
        };
        if bits & sign != 0 {
            -v
        } else {
            v
        }
    }

    /// The pattern of a NaN of sign `negative`. FLOAT4E2M1 has none: a NaN becomes a zero
    /// of the opposite sign, as `ml_dtypes` (the ONNX reference) converts it.
    fn nan(self, negative: bool) -> u8 {
        let sign = if negative { self.sign_bit() } else { 0 };
        match self.specials {
            Specials::Ieee => {
                sign | (self.top_exponent() << self.mantissa_bits) | (1 << (self.mantissa_bits - 1))
            }
            Specials::FiniteNan => sign | (self.sign_bit() - 1),
            Specials::Fnuz => self.sign_bit(),
            Specials::None => self.sign_bit() ^ sign,
        }
    }

    /// The pattern for a value beyond the largest finite one: that value when `saturate`
    /// (always for FLOAT4E2M1), else infinity (E5M2) or NaN (the others).
    fn overflow(self, negative: bool, saturate: bool) -> u8 {
        let sign = if negative { self.sign_bit() } else { 0 };
        match self.specials {
            _ if saturate || self.specials == Specials::None => {
                sign | self.encode_magnitude(self.max_finite())
            }
            Specials::Ieee => sign | (self.top_exponent() << self.mantissa_bits),
            _ => self.nan(negative),
        }
    }

    /// The pattern (without sign) of a representable magnitude `r`.
    fn encode_magnitude(self, r: f64) -> u8 {
        let m = self.mantissa_bits as i32;
        let emin = 1 - self.bias;
        if r < pow2(emin) {
            return (r / pow2(emin - m)) as u8;
        }
        let e = ((r.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let fraction = (r / pow2(e - m)) as u8 - (1 << m);
        (((e + self.bias) as u8) << m) | fraction
    }

    /// `x` rounded to the nearest representable value, ties to even, as ONNX's `Cast`
    /// defines it: NaN stays NaN; beyond the largest finite value (after rounding) and
    /// ±infinity give ±the largest finite value when `saturate`, else infinity (E5M2) or NaN
    /// (E4M3FN keeps the sign; the FNUZ formats have the one NaN); FLOAT4E2M1 always
    /// saturates. A negative value that rounds to zero is `-0`, or `+0` in the FNUZ formats.
    pub fn encode(self, x: f64, saturate: bool) -> u8 {
        let negative = x.is_sign_negative();
        if x.is_nan() {
            return self.nan(negative);
        }
        let a = x.abs();
        if a.is_infinite() {
            return self.overflow(negative, saturate);
        }
        let m = self.mantissa_bits as i32;
        let emin = 1 - self.bias;
        // Binary64's exponent of `a` (subnormal `a` are far below `emin`).
        let e = (((a.to_bits() >> 52) & 0x7ff) as i32 - 1023).max(emin);
        let quantum = pow2(e - m);
        let r = (a / quantum).round_ties_even() * quantum;
        if r > self.max_finite() {
            return self.overflow(negative, saturate);
        }
        let sign = if negative && !(r == 0.0 && self.specials == Specials::Fnuz) {
            self.sign_bit()
        } else {
            0
        };
        sign | self.encode_magnitude(r)
    }
}

/// The value of a FLOAT8E8M0 pattern: `2^(bits - 127)`, NaN for `0xFF`.
pub fn e8m0_decode(bits: u8) -> f64 {
    if bits == 0xff {
        f64::NAN
    } else {
        pow2(i32::from(bits) - 127)
    }
}

/// `x` (rounded to `f32` first, as the ONNX reference does) to FLOAT8E8M0 with ONNX's
/// default `round_mode = "up"`: the `f32` exponent field, plus one when the fraction is not
/// zero; past the largest (`2^127`) that is NaN, or `2^127` when `saturate`. NaN and
/// ±infinity give NaN (`0xFF`); zero gives `2^-127` (`0x00`). The sign is ignored (negative
/// inputs are unspecified in ONNX).
pub fn e8m0_encode(x: f64, saturate: bool) -> u8 {
    let bits = (x as f32).to_bits();
    let e = (bits >> 23) & 0xff;
    if e == 0xff {
        return 0xff;
    }
    let up = bits & 0x7f_ffff != 0 && !(saturate && e == 0xfe);
    (e + u32::from(up)) as u8
}

#[cfg(test)]
#[path = "minifloat_tests.rs"]
mod tests;
