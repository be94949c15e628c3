//! The conversions against tables computed by `ml_dtypes` and `onnx.numpy_helper`
//! (testdata/gen_minifloat.py), and their documented edge cases.

use super::*;

const TABLE: &str = include_str!("testdata/minifloat.txt");

fn format(name: &str) -> Option<MiniFloat> {
    match name {
        "e4m3fn" => Some(MiniFloat::E4M3FN),
        "e4m3fnuz" => Some(MiniFloat::E4M3FNUZ),
        "e5m2" => Some(MiniFloat::E5M2),
        "e5m2fnuz" => Some(MiniFloat::E5M2FNUZ),
        "e2m1" => Some(MiniFloat::E2M1),
        _ => None,
    }
}

fn hex(s: &str) -> u32 {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).expect("table holds hex numbers")
}

fn decode(name: &str, bits: u8) -> f64 {
    format(name).map_or_else(|| e8m0_decode(bits), |f| f.decode(bits))
}

fn encode(name: &str, x: f64, saturate: bool) -> u8 {
    format(name).map_or_else(|| e8m0_encode(x, saturate), |f| f.encode(x, saturate))
}

#[test]
fn every_pattern_decodes_as_ml_dtypes_and_every_value_round_trips() {
    let mut count = 0;
    for line in TABLE.lines().filter(|l| l.starts_with("decode")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let bits = hex(f[2]) as u8;
        let want = f32::from_bits(hex(f[3]));
        let got = decode(f[1], bits);
        if want.is_nan() {
            assert!(got.is_nan(), "{line}: got {got}");
            continue;
        }
        assert_eq!(got as f32, want, "{line}");
        assert_eq!(
            got.to_bits(),
            f64::from(want).to_bits(),
            "{line}: sign of zero"
        );
        // Each value converts back to its own pattern (infinity too, when not saturating),
        // but for E8M0's 2^-127: an f32 subnormal, which rounding up takes to 2^-126.
        if f[1] == "e8m0" && bits == 0 {
            assert_eq!(encode(f[1], got, true), 1);
            continue;
        }
        assert_eq!(encode(f[1], got, false), bits, "{line}");
        if got.is_finite() {
            assert_eq!(encode(f[1], got, true), bits, "{line}");
        }
        count += 1;
    }
    // 254 + 255 + 252 + 255 + 16 + 255 values (the NaNs and infinities excluded).
    assert!(count > 1280, "{count}");
}

#[test]
fn rounding_and_saturation_match_the_onnx_reference() {
    let mut count = 0;
    for line in TABLE.lines().filter(|l| l.starts_with("encode")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let x = f32::from_bits(hex(f[3]));
        let want = hex(f[4]) as u8;
        let got = encode(f[1], f64::from(x), f[2] == "1");
        assert_eq!(got, want, "{line}: {x:e} -> {got:#04x}");
        count += 1;
    }
    assert!(count > 10_000, "{count}");
}

#[test]
fn documented_edge_cases() {
    let e4 = MiniFloat::E4M3FN;
    assert_eq!(e4.max_finite(), 448.0);
    assert_eq!(MiniFloat::E4M3FNUZ.max_finite(), 240.0);
    assert_eq!(MiniFloat::E5M2.max_finite(), 57344.0);
    assert_eq!(MiniFloat::E5M2FNUZ.max_finite(), 57344.0);
    assert_eq!(MiniFloat::E2M1.max_finite(), 6.0);
    // 464 lies halfway between 448 (fraction 110, even) and 480: ties to even, finite.
    assert_eq!(e4.encode(464.0, false), 0x7e);
    assert_eq!(e4.encode(464.5, false), 0x7f);
    assert_eq!(e4.encode(464.5, true), 0x7e);
    assert_eq!(e4.encode(f64::NEG_INFINITY, false), 0xff);
    assert_eq!(e4.encode(f64::NEG_INFINITY, true), 0xfe);
    assert_eq!(e4.encode(-0.0, true), 0x80);
    // 2.5 and 3.5 are ties: to 2 (fraction 0) and 4 in E2M1.
    assert_eq!(
        MiniFloat::E2M1.decode(MiniFloat::E2M1.encode(2.5, true)),
        2.0
    );
    assert_eq!(
        MiniFloat::E2M1.decode(MiniFloat::E2M1.encode(3.5, true)),
        4.0
    );
    assert_eq!(MiniFloat::E2M1.encode(f64::INFINITY, false), 0x7);
    // E5M2 overflows to infinity, the FNUZ formats to their one NaN; no -0 in FNUZ.
    assert_eq!(MiniFloat::E5M2.encode(1e6, false), 0x7c);
    assert_eq!(MiniFloat::E5M2.encode(-1e6, true), 0xfb);
    assert_eq!(MiniFloat::E5M2FNUZ.encode(-1e6, false), 0x80);
    assert_eq!(MiniFloat::E4M3FNUZ.encode(-1e-9, true), 0x00);
    assert!(MiniFloat::E4M3FNUZ.decode(0x80).is_nan());
    // E8M0 rounds up, saturating at 2^127.
    assert_eq!(e8m0_encode(0.124, true), 124);
    assert_eq!(e8m0_encode(1.0, true), 127);
    assert_eq!(e8m0_encode(f64::from(f32::MAX), true), 254);
    assert_eq!(e8m0_encode(f64::from(f32::MAX), false), 255);
    assert_eq!(e8m0_decode(127), 1.0);
}
