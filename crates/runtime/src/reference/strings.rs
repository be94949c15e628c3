//! `Convert` to and from ONNX STRING tensors, as ONNX `Cast` defines it: numbers are read
//! from their plain or scientific decimal spellings (`"3.14"`, `"1e-5"`, `"1E8"`, `"-7"`),
//! with `"INF"`, `"+INF"`, `"-INF"` and `"NaN"` in any case for the special values, and are
//! written in plain decimal (`"314.15926"`). The spec leaves every other string undefined;
//! here it is an error that names the element.

use graphlift_ir::{float_text, is_storage_integer, match_data, Element, ElementType, TensorData};

/// Every element of `x` written as text: integers in decimal; floats as the shortest plain
/// decimal that reads back to the same value of their type (`"0.1"`, `"-2.5"`,
/// `"100000000000000000000"`), NaN as `"NaN"`, infinities as `"INF"` and `"-INF"`; booleans as
/// `"True"` and `"False"` (as numpy's `str`, which the ONNX reference uses); the
/// storage-only types through their value; strings unchanged.
pub(super) fn to_strings(x: &TensorData) -> Vec<String> {
    fn each<T: Copy>(v: &[T], f: impl Fn(T) -> String) -> Vec<String> {
        v.iter().map(|&x| f(x)).collect()
    }
    match x {
        TensorData::F32(v) => each(v, |x| float_text(x.into(), x)),
        TensorData::F64(v) => each(v, |x| float_text(x, x)),
        TensorData::F16(v) => each(v, |x| float_text(x.to_f64(), x)),
        TensorData::BF16(v) => each(v, |x| float_text(x.to_f64(), x)),
        TensorData::Bool(v) => each(v, |b| if b { "True" } else { "False" }.to_string()),
        TensorData::String(v) => v.clone(),
        // `Debug` of an integer is its decimal spelling.
        other if other.element_type().is_integer() => {
            match_data!(other, v => each(v, |x| format!("{x:?}")), String(v) => v.clone())
        }
        // The storage-only types: through their exact value, which the shortest `f64`
        // spelling reads back to (FLOAT8E8M0 rounds up, so nearly is not enough).
        other => match_data!(other, v => each(v, |x| {
            let value = x.to_f64();
            float_text(value, value)
        }), String(v) => v.clone()),
    }
}

/// A number as a string spells it, read three ways from the text, each rounded once: as an
/// integer when it has no fraction or exponent and fits 128 bits, as `f64` and as `f32`.
/// `"true"` and `"false"` (as `Bool` is written) are 1 and 0.
#[derive(Clone, Copy)]
struct Number {
    int: Option<i128>,
    wide: f64,
    single: f32,
}

fn parse(s: &str) -> Option<Number> {
    let t = s.trim();
    let t = if t.eq_ignore_ascii_case("true") {
        "1"
    } else if t.eq_ignore_ascii_case("false") {
        "0"
    } else {
        t
    };
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    let int = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten();
    // Rust's float grammar: decimal and scientific forms, and `inf`, `infinity`, `nan` in
    // any case with an optional sign (ONNX's `INF`, `+INF`, `-INF`, `NaN`).
    Some(Number {
        int,
        wide: t.parse().ok()?,
        single: t.parse().ok()?,
    })
}

/// The strings of `v` read as numbers of type `to` (`String` copies them; what
/// [`to_strings`] writes reads back exactly): to the floats, the text rounded once (`f32`
/// and `f64` directly, the others through `f64`); to the integers, integer spellings keep
/// their low bits and other spellings truncate toward zero and saturate, as a float does;
/// to `Bool`, true when not zero.
///
/// # Errors
/// A message naming the first element that is not a number.
pub(super) fn from_strings(v: &[String], to: ElementType) -> Result<TensorData, String> {
    if to == ElementType::String {
        return Ok(TensorData::String(v.to_vec()));
    }
    let numbers = v
        .iter()
        .enumerate()
        .map(|(k, s)| {
            parse(s).ok_or_else(|| {
                format!("element {k} ({s:?}) is not a number, cannot convert to {to}")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let wide = || TensorData::F64(numbers.iter().map(|n| n.wide).collect());
    match to {
        ElementType::F32 => Ok(TensorData::F32(numbers.iter().map(|n| n.single).collect())),
        ElementType::Bool => Ok(TensorData::Bool(
            numbers.iter().map(|n| n.wide != 0.0).collect(),
        )),
        t if t.is_integer() || is_storage_integer(t) => {
            // Integer spellings through the low 64 bits (a conversion between integers keeps
            // low bits), the others through `f64`, element by element.
            let spelled = |n: &Number| n.int.is_some();
            let ints = numbers
                .iter()
                .map(|n| n.int.map_or(0, |i| i as i64))
                .collect();
            super::select(
                &TensorData::Bool(numbers.iter().map(spelled).collect()),
                &super::convert(&TensorData::I64(ints), to)?,
                &super::convert(&wide(), to)?,
            )
        }
        _ => super::convert(&wide(), to),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn numbers_read_in_every_spelling_the_spec_names() {
        let v = strings(&[
            "2.75", "1e-5", "1E8", "-7", "INF", "+inf", "-INF", "NaN", " 2 ",
        ]);
        let TensorData::F64(got) = from_strings(&v, ElementType::F64).unwrap() else {
            panic!("not f64");
        };
        assert_eq!(&got[..4], &[2.75, 1e-5, 1e8, -7.0]);
        assert_eq!(got[4], f64::INFINITY);
        assert_eq!(got[5], f64::INFINITY);
        assert_eq!(got[6], f64::NEG_INFINITY);
        assert!(got[7].is_nan());
        assert_eq!(got[8], 2.0);
        let f32s = from_strings(&strings(&["0.1", "16777217"]), ElementType::F32).unwrap();
        assert_eq!(f32s, TensorData::F32(vec![0.1, 16777216.0]));
    }

    #[test]
    fn integers_are_exact_and_fractions_truncate() {
        let v = strings(&["9007199254740993", "-1", "100.5", "-2.7"]);
        let got = from_strings(&v, ElementType::I64).unwrap();
        assert_eq!(got, TensorData::I64(vec![9007199254740993, -1, 100, -2]));
        let u = from_strings(&strings(&["18446744073709551615", "256"]), ElementType::U64);
        assert_eq!(u.unwrap(), TensorData::U64(vec![u64::MAX, 256]));
        let narrowed = from_strings(&strings(&["257", "-1"]), ElementType::U8).unwrap();
        assert_eq!(narrowed, TensorData::U8(vec![1, 255]));
        let b = from_strings(&strings(&["TRUE", "false", "0", "2.5"]), ElementType::Bool);
        assert_eq!(b.unwrap(), TensorData::Bool(vec![true, false, false, true]));
        let words = from_strings(&strings(&["True", "False"]), ElementType::F32);
        assert_eq!(words.unwrap(), TensorData::F32(vec![1.0, 0.0]));
    }

    #[test]
    fn a_word_is_an_error_that_names_the_element() {
        let err = from_strings(&strings(&["1", "one"]), ElementType::I32).unwrap_err();
        assert!(
            err.contains("element 1") && err.contains("\"one\""),
            "{err}"
        );
        assert!(from_strings(&strings(&[""]), ElementType::F32).is_err());
    }

    /// The text carries each value exactly: reading it back equals converting the value
    /// itself (which is `x` again for every type but FLOAT8E8M0, whose ONNX rounding takes
    /// its smallest value, 2^-127, up to 2^-126).
    #[test]
    fn every_type_reads_back_what_it_writes() {
        let values = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1,
            -2.5,
            3e9,
            1e-40,
            f64::INFINITY,
            -7e300,
        ];
        let convert = |x: &TensorData, t| super::super::convert(x, t).unwrap();
        for t in ElementType::ALL
            .into_iter()
            .filter(|&t| t != ElementType::String)
        {
            let x = convert(&TensorData::F64(values.to_vec()), t);
            let text = to_strings(&x);
            let back = from_strings(&text, t).unwrap();
            let want = convert(&convert(&x, ElementType::F64), t);
            assert!(back.same_bits(&want), "{t}: {x:?} -> {text:?} -> {back:?}");
            if t != ElementType::F8E8M0 {
                assert!(back.same_bits(&x), "{t}");
            }
        }
    }

    #[test]
    fn numbers_write_plain_and_read_back() {
        let f = TensorData::F32(vec![0.1, -2.5, 1e20, f32::NAN, f32::NEG_INFINITY, 3.0]);
        let text = to_strings(&f);
        assert_eq!(
            text,
            strings(&["0.1", "-2.5", "100000000000000000000", "NaN", "-INF", "3"])
        );
        assert!(from_strings(&text, ElementType::F32)
            .unwrap()
            .same_bits(&TensorData::F32(vec![
                0.1,
                -2.5,
                1e20,
                f32::NAN,
                f32::NEG_INFINITY,
                3.0
            ])));
        let i = TensorData::I64(vec![i64::MIN, 0, 9007199254740993]);
        let text = to_strings(&i);
        assert_eq!(
            text,
            strings(&["-9223372036854775808", "0", "9007199254740993"])
        );
        assert_eq!(from_strings(&text, ElementType::I64).unwrap(), i);
        assert_eq!(
            to_strings(&TensorData::Bool(vec![true, false])),
            strings(&["True", "False"])
        );
        assert_eq!(
            to_strings(&TensorData::U64(vec![u64::MAX])),
            strings(&["18446744073709551615"])
        );
    }
}
