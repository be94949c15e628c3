//! Storage types (`f16`, `bf16`, `i8`, `u8`, `i16`, `u16`): every bit pattern through
//! loads and stores, rounding at every boundary, and wrapping, against the interpreter.

use super::{assert_exact, run_both};
use graphlift_ir::ElementType::{self, BF16, F16, F32, F64, I16, I32, I8, U16, U32, U8};
use graphlift_ir::{bf16, f16, FunctionBuilder, TensorData};
use graphlift_runtime::Tensor;

fn tensor(d: TensorData) -> Tensor {
    let n = d.len();
    Tensor::from_data(d, [n]).unwrap()
}

/// Every bit pattern of the 16-bit float `t`, NaNs included.
fn every_pattern(t: ElementType) -> TensorData {
    match t {
        F16 => TensorData::F16((0..=u16::MAX).map(f16::from_bits).collect()),
        _ => TensorData::BF16((0..=u16::MAX).map(bf16::from_bits).collect()),
    }
}

/// The raw bits of every element, NaN payloads included (the comparison of
/// [`assert_exact`] lets any NaN match any NaN).
fn raw_bits(d: &TensorData) -> Vec<u32> {
    match d {
        TensorData::F32(v) => v.iter().map(|x| x.to_bits()).collect(),
        TensorData::F16(v) => v.iter().map(|x| u32::from(x.to_bits())).collect(),
        TensorData::BF16(v) => v.iter().map(|x| u32::from(x.to_bits())).collect(),
        other => panic!("not a float: {}", other.element_type()),
    }
}

/// Asserts equal raw bits, naming the first element that differs.
fn assert_same_bits(what: &str, got: &TensorData, want: &TensorData) {
    let (g, w) = (raw_bits(got), raw_bits(want));
    assert_eq!(g.len(), w.len(), "{what}: lengths");
    if let Some(i) = (0..g.len()).find(|&i| g[i] != w[i]) {
        panic!(
            "{what}: element {i}: bits {:#x}, reference {:#x}",
            g[i], w[i]
        );
    }
}

#[test]
fn every_16_bit_float_pattern_widens_and_rounds_back_exactly() {
    for t in [F16, BF16] {
        let ins = [tensor(every_pattern(t))];
        let b = FunctionBuilder::new("widen");
        let x = b.parameter("x", t, [65536]);
        let wide = x.convert(F32);
        // Through an op, so that the round trip is computed, not a copy; through ops that
        // keep the values (no rounding needed) and one that does not (0.1 is no 16-bit
        // float, so the maximum must be rounded).
        let tenth = b.scalar(F32, 0.1).broadcast_to([65536]);
        let body = b
            .finish(&[
                wide,
                (wide * 1.0).convert(t),
                (-wide.relu()).convert(t),
                wide.max(tenth).convert(t),
            ])
            .unwrap();
        let (got, want) = run_both(&body, &ins);
        assert_exact(&format!("{t} <-> f32"), &ins, &got, &want);
        // NaN payloads and quiet bits of the conversions too: the `half` crate's bits.
        for (o, (g, w)) in got.iter().zip(&want).take(2).enumerate() {
            assert_same_bits(&format!("{t} output {o}"), g.data(), w.data());
        }
    }
}

/// `f32` values at and around every rounding boundary of `t`: each value of `t`, the
/// midpoints to its neighbours (ties), one `f32` ulp either side of them, and the overflow
/// and subnormal edges.
fn boundaries(t: ElementType) -> Vec<f32> {
    let value = |h: u16| match t {
        F16 => f16::from_bits(h).to_f32(),
        _ => bf16::from_bits(h).to_f32(),
    };
    let mut v = Vec::new();
    for h in (0..0x7c00u16).step_by(7).chain(0x7bf0..0x7c00) {
        let (a, c) = (value(h), value(h + 1));
        if !a.is_finite() || !c.is_finite() {
            continue;
        }
        let mid = (f64::from(a) + f64::from(c)) / 2.0;
        let m = mid as f32;
        for x in [
            a,
            m,
            f32::from_bits(m.to_bits() + 1),
            f32::from_bits(m.to_bits() - 1),
        ] {
            v.extend([x, -x]);
        }
    }
    v.extend([
        65504.0,
        65519.996,
        65520.0,
        f32::MAX,
        f32::INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(0x7fc0_1234),
        2.0f32.powi(-25),
        2.0f32.powi(-25) * 1.0000001,
        2.0f32.powi(-24) * 1.5,
        f32::MIN_POSITIVE,
        1e-45,
        0.0,
        -0.0,
    ]);
    v
}

#[test]
fn f32_rounds_to_16_bit_floats_at_every_boundary() {
    for t in [F16, BF16] {
        let data = boundaries(t);
        let n = data.len();
        let ins = [tensor(TensorData::F32(data))];
        let b = FunctionBuilder::new("round");
        let x = b.parameter("x", F32, [n]);
        let body = b.finish(&[x.convert(t)]).unwrap();
        let (got, want) = run_both(&body, &ins);
        assert_exact(&format!("f32 -> {t}"), &ins, &got, &want);
        assert_same_bits(&format!("f32 -> {t}"), got[0].data(), want[0].data());
    }
}

#[test]
fn f64_to_16_bit_floats_converts_as_the_interpreter() {
    // Ties of the 16-bit type broken only by bits an `f32` does not hold (the host's
    // conversion decides; the kernel calls it), and values in every range.
    let mut v = vec![
        1.0 + 2f64.powi(-11) + 2f64.powi(-40),
        1.0 + 2f64.powi(-11) - 2f64.powi(-40),
        1.0 + 2f64.powi(-8) + 2f64.powi(-40),
        1.0 + 2f64.powi(-8) - 2f64.powi(-40),
        65519.99999,
        65520.0,
        1e300,
        -1e-300,
        f64::NAN,
        f64::INFINITY,
        2f64.powi(-134) + 2f64.powi(-160),
    ];
    v.extend((0..500).map(|i| (f64::from(i) - 250.0) * 1.337e-3));
    let n = v.len();
    let ins = [tensor(TensorData::F64(v))];
    for t in [F16, BF16] {
        let b = FunctionBuilder::new("demote");
        let x = b.parameter("x", F64, [n]);
        let body = b.finish(&[x.convert(t), (x * 2.0).convert(t)]).unwrap();
        let (got, want) = run_both(&body, &ins);
        assert_exact(&format!("f64 -> {t}"), &ins, &got, &want);
    }
}

#[test]
fn narrow_integers_wrap_and_saturate_as_the_interpreter() {
    for t in [I8, U8, I16, U16, U32] {
        let n = 1003;
        let b = FunctionBuilder::new("wrap");
        let x = b.parameter("x", I32, [n]);
        let y = b.parameter("y", F32, [n]);
        let a = x.convert(t);
        let c = y.convert(t);
        // Wrapping in the narrow width, then widened again; floats saturate to its range.
        let body = b
            .finish(&[a * a + c, -a, a / c, (a - c).convert(I32), c])
            .unwrap();
        let xs: Vec<i32> = (0..n as i32)
            .map(|i| i.wrapping_mul(40_503) - 20_000_000)
            .collect();
        let ys: Vec<f32> = (0..n).map(|i| (i as f32 - 500.0) * 91.7).collect();
        let ins = [tensor(TensorData::I32(xs)), tensor(TensorData::F32(ys))];
        let (got, want) = run_both(&body, &ins);
        assert_exact(&format!("{t} wrapping"), &ins, &got, &want);
    }
}

#[test]
fn conversions_through_every_narrow_type_keep_or_wrap_as_the_interpreter() {
    // `s -> m -> t` for every triple: a round trip through a narrower or differently signed
    // type must wrap (or round) in the middle, one through a wider type must not.
    let narrow = [I8, U8, I16, U16, U32, F16, BF16];
    for s in narrow {
        let n = 3 * super::specials(s).len() + 37;
        let b = FunctionBuilder::new("through");
        let x = b.parameter("x", s, [n]);
        let mut results = Vec::new();
        for m in narrow {
            for t in narrow {
                // Stored as `t`, and computed on as `t` (widened to `f32`, exact).
                results.push(x.convert(m).convert(t));
                results.push(x.convert(m).convert(t).convert(F32));
                results.push(x.convert(m).convert(F32).convert(t));
            }
        }
        let body = b.finish(&results).unwrap();
        let ins = [tensor(super::data(s, n, 3))];
        let (got, want) = run_both(&body, &ins);
        assert_exact(&format!("from {s}"), &ins, &got, &want);
    }
}
