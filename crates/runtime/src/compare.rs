//! Comparing tensors within a tolerance (numpy's `allclose` rule), for tests, the CLI's
//! `--expect` and the conformance harness.

use crate::Tensor;

/// The outcome of comparing `actual` against `expected` with [`compare`].
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Elements compared.
    pub count: usize,
    /// Elements outside the tolerance.
    pub mismatches: usize,
    /// Largest `|actual - expected|` over elements where both are finite.
    pub max_abs_diff: f64,
    /// The first mismatch: (flat index, actual, expected).
    pub first_mismatch: Option<(usize, f64, f64)>,
    /// For `String` tensors, which compare exactly: the first mismatch (flat index, actual,
    /// expected).
    pub first_string_mismatch: Option<(usize, String, String)>,
    /// Set when types or shapes differ; then no element was compared.
    pub type_mismatch: Option<String>,
}

impl Comparison {
    /// `true` when types and shapes agree and every element is within the tolerance.
    pub fn passed(&self) -> bool {
        self.type_mismatch.is_none() && self.mismatches == 0
    }
}

impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(m) = &self.type_mismatch {
            return write!(f, "type mismatch: {m}");
        }
        write!(
            f,
            "{}/{} elements differ, max |diff| = {:e}",
            self.mismatches, self.count, self.max_abs_diff
        )?;
        if let Some((i, a, e)) = self.first_mismatch {
            write!(f, "; first at index {i}: got {a}, expected {e}")?;
        }
        if let Some((i, a, e)) = &self.first_string_mismatch {
            write!(f, "; first at index {i}: got {a:?}, expected {e:?}")?;
        }
        Ok(())
    }
}

/// Compares elementwise with numpy's rule `|actual - expected| <= atol + rtol * |expected|`.
///
/// NaN matches NaN; infinities must be equal; integers and bools are compared through `f64`
/// (so exactly for |values| < 2^53); strings exactly (byte for byte, the tolerances unused).
/// Element types and shapes must be equal.
pub fn compare(actual: &Tensor, expected: &Tensor, rtol: f64, atol: f64) -> Comparison {
    let mut c = Comparison {
        count: expected.len(),
        mismatches: 0,
        max_abs_diff: 0.0,
        first_mismatch: None,
        first_string_mismatch: None,
        type_mismatch: None,
    };
    if actual.tensor_type() != expected.tensor_type() {
        c.type_mismatch = Some(format!(
            "got {}, expected {}",
            actual.tensor_type(),
            expected.tensor_type()
        ));
        return c;
    }
    if let (Some(got), Some(want)) = (actual.data().as_strings(), expected.data().as_strings()) {
        for (i, (a, e)) in got
            .iter()
            .zip(want)
            .enumerate()
            .filter(|(_, (a, e))| a != e)
        {
            c.mismatches += 1;
            c.first_string_mismatch
                .get_or_insert_with(|| (i, a.clone(), e.clone()));
        }
        return c;
    }
    for i in 0..expected.len() {
        let (Some(a), Some(e)) = (actual.data().get_f64(i), expected.data().get_f64(i)) else {
            continue;
        };
        let ok = if a.is_nan() || e.is_nan() {
            a.is_nan() && e.is_nan()
        } else if a.is_infinite() || e.is_infinite() {
            a == e
        } else {
            let d = (a - e).abs();
            c.max_abs_diff = c.max_abs_diff.max(d);
            d <= atol + rtol * e.abs()
        };
        if !ok {
            c.mismatches += 1;
            c.first_mismatch.get_or_insert((i, a, e));
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allclose_rule() {
        let t = |v: Vec<f32>| Tensor::from_vec(v, [3]).unwrap();
        let e = t(vec![1.0, f32::NAN, f32::INFINITY]);
        assert!(compare(
            &t(vec![1.0 + 1e-6, f32::NAN, f32::INFINITY]),
            &e,
            1e-5,
            1e-6
        )
        .passed());
        let c = compare(&t(vec![1.1, 0.0, f32::INFINITY]), &e, 1e-5, 1e-6);
        assert_eq!(c.mismatches, 2);
        assert_eq!(c.first_mismatch.map(|m| m.0), Some(0));
        let i = Tensor::from_vec(vec![1i32, 2, 3], [3]).unwrap();
        assert!(compare(&i, &e, 1.0, 1.0).type_mismatch.is_some());
    }

    #[test]
    fn strings_compare_exactly() {
        let s = |v: &[&str]| {
            let data = graphlift_ir::TensorData::String(v.iter().map(|x| x.to_string()).collect());
            Tensor::from_data(data, [v.len()]).unwrap()
        };
        let want = s(&["a", "1.0", "x"]);
        assert!(compare(&s(&["a", "1.0", "x"]), &want, 1.0, 1.0).passed());
        let c = compare(&s(&["a", "1", "y"]), &want, 1.0, 1.0);
        assert_eq!(c.mismatches, 2);
        assert_eq!(c.first_string_mismatch, Some((1, "1".into(), "1.0".into())));
        assert!(c.to_string().contains("got \"1\", expected \"1.0\""), "{c}");
    }
}
