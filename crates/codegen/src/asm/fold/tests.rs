use super::*;

fn inst(op: Op, args: &[Arg]) -> Inst {
    Inst {
        op,
        args: args.iter().copied().collect(),
        wide: false,
    }
}

fn c(x: f32) -> Arg {
    Arg::Const(u64::from(x.to_bits()))
}

/// Folds `insts` with the last operation's value as the one root, and returns what the
/// program keeps and what the root became.
fn folded(insts: Vec<Inst>) -> (Vec<Inst>, Arg) {
    let mut roots = [Some(Arg::Value(insts.len() - 1))];
    let kept = fold(insts, &mut roots);
    (kept, roots[0].unwrap())
}

#[test]
fn operations_on_constants_become_constants() {
    let (kept, root) = folded(vec![
        inst(Op::FMul, &[c(3.0), c(0.5)]),
        inst(Op::Fma, &[Arg::Value(0), c(2.0), c(-1.0)]),
        inst(Op::FCmp(0x1E), &[Arg::Value(1), c(1.5)]),
        inst(Op::Select, &[Arg::Value(2), Arg::Input(0), Arg::Input(1)]),
    ]);
    assert!(kept.is_empty(), "{kept:?}");
    assert_eq!(root, Arg::Input(0));
}

#[test]
fn identities_keep_the_other_operand() {
    let zero = Arg::Const(0);
    let ones = Arg::Const(u64::from(u32::MAX));
    for (op, k, want) in [
        (Op::And, ones, Arg::Input(0)),
        (Op::And, zero, zero),
        (Op::Or, zero, Arg::Input(0)),
        (Op::Or, ones, ones),
        (Op::Xor, zero, Arg::Input(0)),
    ] {
        for args in [[Arg::Input(0), k], [k, Arg::Input(0)]] {
            let (kept, root) = folded(vec![inst(op, &args)]);
            assert!(kept.is_empty(), "{op:?} {args:?}");
            assert_eq!(root, want, "{op:?} {args:?}");
        }
    }
    // A select on a mask that is neither all ones nor zero is left alone.
    let (kept, _) = folded(vec![inst(
        Op::Select,
        &[Arg::Const(1), Arg::Input(0), Arg::Input(1)],
    )]);
    assert_eq!(kept.len(), 1);
}

#[test]
fn nans_and_wide_lanes_are_left_to_the_instruction() {
    let (kept, _) = folded(vec![inst(Op::FAdd, &[c(f32::NAN), c(1.0)])]);
    assert_eq!(kept.len(), 1);
    // ∞ − ∞ is a NaN.
    let (kept, _) = folded(vec![inst(Op::FSub, &[c(f32::INFINITY), c(f32::INFINITY)])]);
    assert_eq!(kept.len(), 1);
    let mut wide = inst(Op::FAdd, &[Arg::Const(1.0f64.to_bits()), Arg::Const(0)]);
    wide.wide = true;
    let (kept, _) = folded(vec![wide]);
    assert_eq!(kept.len(), 1);
}

#[test]
fn a_multiply_add_keeps_one_constant_factor() {
    let (kept, root) = folded(vec![
        inst(Op::FAdd, &[c(1.0), c(2.0)]),
        inst(Op::Fma, &[Arg::Value(0), c(4.0), Arg::Input(0)]),
    ]);
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(kept[0], inst(Op::Copy, &[c(3.0)]));
    assert_eq!(
        kept[1].args.as_slice(),
        &[Arg::Value(0), c(4.0), Arg::Input(0)]
    );
    assert_eq!(root, Arg::Value(1));
}

#[test]
fn lanes_follow_the_x86_rules() {
    let eval = |op, a: f32, b: f32| evaluate(op, [a.to_bits(), b.to_bits(), 0]);
    // `vmaxps` / `vminps` give the second operand on equal zeros.
    assert_eq!(eval(Op::XMax, 0.0, -0.0), Some((-0.0f32).to_bits()));
    assert_eq!(eval(Op::XMin, -0.0, 0.0), Some(0.0f32.to_bits()));
    // Ties to even, and the other three directions.
    assert_eq!(
        eval(Op::Round(ROUND_NEAREST), 2.5, 0.0),
        Some(2.0f32.to_bits())
    );
    assert_eq!(
        eval(Op::Round(ROUND_DOWN), -2.5, 0.0),
        Some((-3.0f32).to_bits())
    );
    assert_eq!(
        eval(Op::Round(ROUND_UP), -2.5, 0.0),
        Some((-2.0f32).to_bits())
    );
    assert_eq!(
        eval(Op::Round(ROUND_TRUNCATE), -2.5, 0.0),
        Some((-2.0f32).to_bits())
    );
    // `vcvttps2dq`: out of range and NaN give `i32::MIN`.
    for x in [2_147_483_648.0f32, -3e9, f32::NAN, f32::INFINITY] {
        assert_eq!(
            eval(Op::ToIntTruncate, x, 0.0),
            Some(i32::MIN as u32),
            "{x}"
        );
    }
    assert_eq!(eval(Op::ToIntTruncate, -7.9, 0.0), Some(-7i32 as u32));
    // Ordered and unordered predicates on a NaN.
    let nan = f32::NAN;
    assert_eq!(eval(Op::FCmp(0x11), nan, 1.0), Some(0));
    assert_eq!(eval(Op::FCmp(0x19), nan, 1.0), Some(u32::MAX));
    assert_eq!(eval(Op::FCmp(0x04), nan, nan), Some(u32::MAX));
    assert_eq!(eval(Op::FCmp(0x0C), nan, nan), Some(0));
    // Signed and unsigned integer comparisons.
    let (minus_one, one) = (u32::MAX, 1u32);
    let cmp = |pred, unsigned| evaluate(Op::ICmp { pred, unsigned }, [minus_one, one, 0]);
    assert_eq!(cmp(1, false), Some(u32::MAX));
    assert_eq!(cmp(1, true), Some(0));
    // Shifts past the lane's width give zero (or the sign).
    assert_eq!(evaluate(Op::Sshr(31), [minus_one, 0, 0]), Some(u32::MAX));
    assert_eq!(evaluate(Op::Ushr(31), [minus_one, 0, 0]), Some(1));
    // The multiply-add rounds once.
    let (a, b) = (1.0 + f32::EPSILON, 1.0 - f32::EPSILON);
    let fma = evaluate(Op::Fma, [a.to_bits(), b.to_bits(), (-1.0f32).to_bits()]);
    assert_eq!(fma, Some((-f32::EPSILON * f32::EPSILON).to_bits()));
}

#[test]
fn exponents_and_mantissas_of_constants() {
    let eval = |op, x: f32| evaluate(op, [x.to_bits(), 0, 0]).map(f32::from_bits);
    for (x, e, m) in [
        (10.0f32, 3.0, 1.25),
        (-0.75, -1.0, -1.5),
        (1.0, 0.0, 1.0),
        (f32::MAX, 127.0, f32::MAX / 2f32.powi(127)),
        // Subnormals: the exponent of the value, the mantissa normalized.
        (f32::from_bits(1), -149.0, 1.0),
        (f32::from_bits(0x0060_0000), -127.0, 1.5),
    ] {
        assert_eq!(eval(Op::GetExp, x), Some(e), "{x:e}");
        assert_eq!(eval(Op::GetMant, x), Some(m), "{x:e}");
    }
    for x in [0.0f32, -0.0, f32::INFINITY, f32::NAN] {
        assert_eq!(eval(Op::GetExp, x), None);
        assert_eq!(eval(Op::GetMant, x), None);
    }
}

#[test]
fn a_fixup_by_a_constant_is_the_result_or_the_special_value() {
    // log's table: NaN stays NaN, zeros −inf, +1 keeps, −inf NaN, +inf +inf, negative NaN,
    // positive keeps.
    let table = Arg::Const(0x0353_0422);
    let fixed = |x: f32| {
        let (kept, root) = folded(vec![inst(Op::Fixup, &[Arg::Input(0), c(x), table])]);
        assert!(kept.is_empty(), "{x}");
        root
    };
    assert_eq!(fixed(2.5), Arg::Input(0));
    assert_eq!(fixed(1.0), Arg::Input(0));
    assert_eq!(fixed(-0.0), c(f32::NEG_INFINITY));
    assert_eq!(fixed(f32::INFINITY), c(f32::INFINITY));
    assert_eq!(fixed(-3.0), Arg::Const(0xFFC0_0000));
    assert_eq!(fixed(f32::NEG_INFINITY), Arg::Const(0xFFC0_0000));
    assert_eq!(fixed(f32::NAN), c(f32::NAN));
    // A signalling NaN comes out quieted.
    assert_eq!(fixed(f32::from_bits(0x7F80_0001)), Arg::Const(0x7FC0_0001));
    // A subnormal is a positive value.
    assert_eq!(fixed(f32::from_bits(1)), Arg::Input(0));
}
