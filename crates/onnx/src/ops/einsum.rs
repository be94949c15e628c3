//! `Einsum` (opset 12): the equation parsed (explicit or implicit output, `...`), then
//! lowered to IR ops: a diagonal (`ii`) as a `Select` against a constant identity mask
//! summed over one of its axes, `ReduceSum` for labels summed within one operand, and for
//! each next
//! operand one batched `MatMul` (both sides transposed and reshaped to `[batch.., M, K]` and
//! `[batch.., K, N]`), a final `Transpose` to the output's order.

use std::collections::BTreeSet;

use graphlift_ir::{Op, Output, ReduceOp, Reduction, Shape, TensorData};

use super::layout::{dims, reshape_to};
use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// A subscript: a letter's code point, or [`ELLIPSIS`] + k for the k-th axis the ellipsis
/// stands for (right-aligned across operands, as numpy broadcasts them).
type Label = u32;

/// The first label of the ellipsis axes (above every letter).
const ELLIPSIS: Label = 0x1_0000;

/// A parsed equation: one label list per input (one label per axis) and the output's.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Equation {
    pub inputs: Vec<Vec<Label>>,
    pub output: Vec<Label>,
}

/// What is wrong with a malformed equation.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ParseError(String);

/// The labels of one term (`ij`, `...ij`, `i...j`); `rank` is the operand's rank (`None`
/// for the output, whose ellipsis is all `ellipsis` axes).
fn term(text: &str, rank: Option<usize>, ellipsis: usize) -> Result<Vec<Label>, ParseError> {
    let bad = ParseError;
    let (before, after) = match text.split_once("...") {
        Some((_, a)) if a.contains('.') => return Err(bad(format!("`{text}` has a stray '.'"))),
        Some((b, a)) => (b, Some(a)),
        None => (text, None),
    };
    let letters = |s: &str| -> Result<Vec<Label>, ParseError> {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphabetic() {
                    Ok(Label::from(c))
                } else {
                    Err(bad(format!("`{text}`: '{c}' is not a letter")))
                }
            })
            .collect()
    };
    let mut labels = letters(before)?;
    if let Some(after) = after {
        let tail = letters(after)?;
        let k = match rank {
            Some(r) => r.checked_sub(labels.len() + tail.len()).ok_or_else(|| {
                bad(format!(
                    "`{text}` names more axes than the operand's rank {r}"
                ))
            })?,
            None => ellipsis,
        };
        labels.extend((ellipsis - k..ellipsis).map(|i| ELLIPSIS + i as Label));
        labels.extend(tail);
    }
    if let Some(r) = rank {
        if labels.len() != r {
            return Err(bad(format!(
                "`{text}` names {} axes for an operand of rank {r}",
                labels.len()
            )));
        }
    }
    Ok(labels)
}

/// Parses `equation` (whitespace ignored) for operands of `ranks`. Without `->`, the output
/// is the ellipsis axes followed by the letters that occur once, in alphabetical order
/// (ONNX, numpy).
///
/// # Errors
/// [`ParseError`] for a wrong operand count, a character other than letters,
/// `,`, `->` and one `...` per term, a rank that does not match, an output letter that no
/// input has or that repeats. A letter repeated within one input (a diagonal) is allowed.
pub(super) fn parse(equation: &str, ranks: &[usize]) -> Result<Equation, ParseError> {
    let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != ranks.len() {
        return Err(ParseError(format!(
            "{} terms for {} inputs",
            terms.len(),
            ranks.len()
        )));
    }
    // The ellipsis spans the most axes any operand gives it.
    let mut ellipsis = 0;
    for (t, &r) in terms.iter().zip(ranks) {
        if t.contains("...") {
            let letters = t.chars().filter(char::is_ascii_alphabetic).count();
            ellipsis = ellipsis.max(r.saturating_sub(letters));
        }
    }
    let inputs = terms
        .iter()
        .zip(ranks)
        .map(|(t, &r)| term(t, Some(r), ellipsis))
        .collect::<Result<Vec<_>, _>>()?;
    let output = match rhs {
        Some(r) => term(r, None, ellipsis)?,
        None => {
            let all: Vec<Label> = inputs.iter().flatten().copied().collect();
            let mut out: Vec<Label> = (0..ellipsis).map(|i| ELLIPSIS + i as Label).collect();
            let once: BTreeSet<Label> = all
                .iter()
                .copied()
                .filter(|&l| l < ELLIPSIS && all.iter().filter(|&&m| m == l).count() == 1)
                .collect();
            out.extend(once);
            out
        }
    };
    let known: BTreeSet<Label> = inputs.iter().flatten().copied().collect();
    let distinct: BTreeSet<Label> = output.iter().copied().collect();
    if distinct.len() != output.len() || !distinct.is_subset(&known) {
        return Err(ParseError(format!(
            "the output `{}` repeats a subscript or names one no input has",
            rhs.unwrap_or_default()
        )));
    }
    Ok(Equation { inputs, output })
}

/// A value with one label per axis.
#[derive(Clone)]
struct Labelled {
    v: Output,
    labels: Vec<Label>,
}

impl Labelled {
    fn extent(&self, e: &NodeEmitter<'_>, l: Label) -> Result<Option<usize>, OnnxError> {
        let d = dims(e, self.v)?;
        Ok(self.labels.iter().position(|&m| m == l).map(|k| d[k]))
    }

    /// The diagonals of the axes that share a label (`ii` in `ii->i`), one axis left per
    /// label: `x` where the coordinates agree, else 0, summed over the later axis.
    fn diagonals(mut self, e: &mut NodeEmitter<'_>) -> Result<Self, OnnxError> {
        while let Some((p, q)) = (0..self.labels.len())
            .flat_map(|q| (0..q).map(move |p| (p, q)))
            .find(|&(p, q)| self.labels[p] == self.labels[q])
        {
            let d = dims(e, self.v)?;
            if d[p] != d[q] {
                return Err(e.shape_error(format!(
                    "a repeated subscript spans {} and {} elements of one operand",
                    d[p], d[q]
                )));
            }
            let mut at = vec![1; d.len()];
            (at[p], at[q]) = (d[p], d[q]);
            let eye = (0..d[p] * d[q]).map(|k| k / d[q] == k % d[q]).collect();
            let eye = e.constant(TensorData::Bool(eye), Shape::new(at))?;
            let zero = e.scalar_like(self.v, 0.0)?;
            let masked = e.select(eye, self.v, zero)?;
            let sum = Reduction {
                op: ReduceOp::Sum,
                axes: vec![q],
                keep_dims: false,
            };
            self.v = e.op(Op::Reduce(sum), &[masked])?;
            self.labels.remove(q);
        }
        Ok(self)
    }

    /// The sum over the axes whose labels `drop` picks.
    fn sum_out(
        self,
        e: &mut NodeEmitter<'_>,
        drop: impl Fn(Label) -> bool,
    ) -> Result<Self, OnnxError> {
        let axes: Vec<usize> = (0..self.labels.len())
            .filter(|&k| drop(self.labels[k]))
            .collect();
        if axes.is_empty() {
            return Ok(self);
        }
        let sum = Reduction {
            op: ReduceOp::Sum,
            axes,
            keep_dims: false,
        };
        let v = e.op(Op::Reduce(sum), &[self.v])?;
        let labels = self.labels.into_iter().filter(|&l| !drop(l)).collect();
        Ok(Labelled { v, labels })
    }

    /// The axes of extent 1 whose labels `drop` picks, removed (a reshape).
    fn squeeze(self, e: &mut NodeEmitter<'_>, drop: &BTreeSet<Label>) -> Result<Self, OnnxError> {
        let d = dims(e, self.v)?;
        let keep: Vec<usize> = (0..d.len())
            .filter(|&k| !drop.contains(&self.labels[k]))
            .collect();
        let v = reshape_to(e, self.v, keep.iter().map(|&k| d[k]).collect())?;
        let labels = keep.iter().map(|&k| self.labels[k]).collect();
        Ok(Labelled { v, labels })
    }

    /// The value with its axes in the order `order` (a permutation of its labels).
    fn ordered(&self, e: &mut NodeEmitter<'_>, order: &[Label]) -> Result<Output, OnnxError> {
        let perm: Vec<usize> = order
            .iter()
            .filter_map(|l| self.labels.iter().position(|m| m == l))
            .collect();
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(self.v);
        }
        e.op(Op::Transpose(perm), &[self.v])
    }
}

/// The product of `a` and `b` summed over their common labels that `keep` lacks; labels of
/// one side only that `keep` lacks are summed first, an axis of extent 1 against a longer
/// one broadcasts.
fn contract(
    e: &mut NodeEmitter<'_>,
    a: Labelled,
    b: Labelled,
    keep: &BTreeSet<Label>,
) -> Result<Labelled, OnnxError> {
    // Broadcasting: an extent-1 axis against a longer one is dropped from its side.
    let (mut squeeze_a, mut squeeze_b) = (BTreeSet::new(), BTreeSet::new());
    for &l in &a.labels {
        if let (Some(x), Some(y)) = (a.extent(e, l)?, b.extent(e, l)?) {
            match (x, y) {
                _ if x == y => {}
                (1, _) => {
                    squeeze_a.insert(l);
                }
                (_, 1) => {
                    squeeze_b.insert(l);
                }
                _ => {
                    return Err(e.shape_error(format!(
                        "a subscript spans {x} elements in one operand and {y} in another"
                    )))
                }
            }
        }
    }
    let a = a.squeeze(e, &squeeze_a)?;
    let b = b.squeeze(e, &squeeze_b)?;
    let (in_a, in_b): (BTreeSet<Label>, BTreeSet<Label>) = (
        a.labels.iter().copied().collect(),
        b.labels.iter().copied().collect(),
    );
    let a = a.sum_out(e, |l| !in_b.contains(&l) && !keep.contains(&l))?;
    let b = b.sum_out(e, |l| !in_a.contains(&l) && !keep.contains(&l))?;
    let pick = |from: &Labelled, f: &dyn Fn(Label) -> bool| -> Vec<Label> {
        from.labels.iter().copied().filter(|&l| f(l)).collect()
    };
    let batch = pick(&a, &|l| in_b.contains(&l) && keep.contains(&l));
    let summed = pick(&a, &|l| in_b.contains(&l) && !keep.contains(&l));
    let only_a = pick(&a, &|l| !in_b.contains(&l));
    let only_b = pick(&b, &|l| !in_a.contains(&l));
    let extents =
        |from: &Labelled, e: &NodeEmitter<'_>, ls: &[Label]| -> Result<Vec<usize>, OnnxError> {
            ls.iter()
                .map(|&l| Ok(from.extent(e, l)?.unwrap_or(1)))
                .collect()
        };
    let batch_dims = extents(&a, e, &batch)?;
    let (m, k, n) = (
        extents(&a, e, &only_a)?,
        extents(&a, e, &summed)?,
        extents(&b, e, &only_b)?,
    );
    let product = |d: &[usize]| d.iter().product::<usize>();
    let matrix = |rows: &[usize], cols: &[usize]| {
        let mut s = batch_dims.clone();
        s.extend([product(rows), product(cols)]);
        s
    };
    let order_a: Vec<Label> = [&batch[..], &only_a, &summed].concat();
    let order_b: Vec<Label> = [&batch[..], &summed, &only_b].concat();
    let va = a.ordered(e, &order_a)?;
    let va = reshape_to(e, va, matrix(&m, &k))?;
    let vb = b.ordered(e, &order_b)?;
    let vb = reshape_to(e, vb, matrix(&k, &n))?;
    let p = e.op(Op::MatMul, &[va, vb])?;
    let out_dims = [&batch_dims[..], &m, &n].concat();
    let v = reshape_to(e, p, out_dims)?;
    Ok(Labelled {
        v,
        labels: [&batch[..], &only_a, &only_b].concat(),
    })
}

/// `Einsum` (opset 12): `Output = einsum(equation, Inputs..)` as numpy computes it, one or
/// more inputs of one float type, contracted left to right.
///
/// # Errors
/// [`OnnxError::BadAttribute`] for a missing or malformed `equation`;
/// [`OnnxError::ShapeMismatch`] for a subscript whose extents differ between inputs (other
/// than 1, which broadcasts) or within one (a diagonal); [`OnnxError::TypeMismatch`] for inputs of different types.
pub(super) fn einsum(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 1, usize::MAX)?;
    let values = (0..ins.len())
        .map(|i| e.input(ins, i))
        .collect::<Result<Vec<_>, _>>()?;
    e.same_type(&values)?;
    let equation = e
        .attr_string("equation")?
        .ok_or_else(|| e.attribute_error("equation", "is required".into()))?;
    let ranks = values
        .iter()
        .map(|&v| Ok(e.ty(v)?.shape.rank()))
        .collect::<Result<Vec<_>, OnnxError>>()?;
    let eq = parse(&equation, &ranks)
        .map_err(|ParseError(m)| e.attribute_error("equation", format!("{equation:?}: {m}")))?;
    let output: BTreeSet<Label> = eq.output.iter().copied().collect();
    let mut operands = Vec::with_capacity(values.len());
    for (&v, labels) in values.iter().zip(eq.inputs) {
        operands.push(Labelled { v, labels }.diagonals(e)?);
    }
    let mut operands = operands.into_iter();
    let Some(first) = operands.next() else {
        return Err(e.attribute_error("equation", "no inputs".into()));
    };
    let rest: Vec<Labelled> = operands.collect();
    // Labels still needed after each step: the output's and those of the operands to come.
    let needed = |from: usize| -> BTreeSet<Label> {
        let mut s = output.clone();
        s.extend(rest[from..].iter().flat_map(|o| o.labels.iter().copied()));
        s
    };
    let keep = needed(0);
    let mut acc = first.sum_out(e, |l| !keep.contains(&l))?;
    for (i, next) in rest.iter().enumerate() {
        acc = contract(e, acc, next.clone(), &needed(i + 1))?;
    }
    let acc = acc.sum_out(e, |l| !output.contains(&l))?;
    acc.ordered(e, &eq.output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::*;
    use crate::tests::{attr_s, err, f32s, model_opset, node, run, vi};
    use crate::OnnxError;
    use graphlift_ir::{Shape, TensorData};
    use graphlift_runtime::Tensor;

    /// `Einsum(equation)` of FLOAT inputs `x0, x1, ..` of `dims`, output `y`.
    fn model(equation: &str, dims: &[&[i64]]) -> ModelProto {
        let names: Vec<String> = (0..dims.len()).map(|i| format!("x{i}")).collect();
        let inputs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut m = model_opset(
            vec![node(
                "Einsum",
                "ein",
                &inputs,
                &["y"],
                vec![attr_s("equation", equation)],
            )],
            names
                .iter()
                .zip(dims)
                .map(|(n, d)| vi(n, data_type::FLOAT, d))
                .collect(),
            vec![],
            12,
        );
        if let Some(g) = m.graph.as_mut() {
            g.output = vec![ValueInfoProto {
                name: "y".into(),
                ..Default::default()
            }];
        }
        m
    }

    fn t(v: &[f32], dims: &[usize]) -> Tensor {
        Tensor::from_data(TensorData::F32(v.to_vec()), Shape::new(dims)).unwrap()
    }

    #[test]
    fn contracts_like_numpy() {
        let a = t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
        let b = t(&[1., 0., 0., 1., 1., 1.], &[3, 2]);
        // Matrix product, implicit output: [[1+3, 2+3], [4+6, 5+6]].
        let y = run(
            &model("ij,jk", &[&[2, 3], &[3, 2]]),
            vec![a.clone(), b.clone()],
        );
        assert_eq!(f32s(&y[0]), [4., 5., 10., 11.]);
        // Transposed product and a row sum, then a three-operand chain.
        let y = run(
            &model("ij,jk->ki", &[&[2, 3], &[3, 2]]),
            vec![a.clone(), b.clone()],
        );
        assert_eq!(f32s(&y[0]), [4., 10., 5., 11.]);
        let y = run(&model("ij->i", &[&[2, 3]]), vec![a.clone()]);
        assert_eq!(f32s(&y[0]), [6., 15.]);
        let v = t(&[1., -1.], &[2]);
        let y = run(
            &model("ij,jk,k", &[&[2, 3], &[3, 2], &[2]]),
            vec![a.clone(), b, v.clone()],
        );
        assert_eq!(f32s(&y[0]), [-1., -1.]);
        // Outer product, and an ellipsis broadcasting an extent-1 batch axis.
        let y = run(&model("i,j->ij", &[&[2], &[2]]), vec![v.clone(), v.clone()]);
        assert_eq!(f32s(&y[0]), [1., -1., -1., 1.]);
        let y = run(
            &model("...j,...j->...", &[&[2, 3], &[1, 3]]),
            vec![a, t(&[1., 1., 1.], &[1, 3])],
        );
        assert_eq!(f32s(&y[0]), [6., 15.]);
        // Diagonals: the trace of [[1, 2], [3, 4]], and per batch `...ii->...i`.
        let m = t(&[1., 2., 3., 4.], &[2, 2]);
        assert_eq!(
            f32s(&run(&model("ii", &[&[2, 2]]), vec![m.clone()])[0]),
            [5.]
        );
        let y = run(
            &model("...ii->...i", &[&[1, 2, 2]]),
            vec![t(&[1., 2., 3., 4.], &[1, 2, 2])],
        );
        assert_eq!(f32s(&y[0]), [1., 4.]);
        // Scalars: `,->` multiplies two 0-d inputs.
        let y = run(
            &model(",->", &[&[], &[]]),
            vec![t(&[3.], &[]), t(&[4.], &[])],
        );
        assert_eq!(f32s(&y[0]), [12.]);
    }

    #[test]
    fn einsum_errors_name_the_node() {
        let e = err(&model("ii->i", &[&[2, 3]]));
        assert!(matches!(e, OnnxError::ShapeMismatch { .. }), "{e}");
        let e = err(&model("ij,jk", &[&[2, 3]]));
        assert!(matches!(e, OnnxError::BadAttribute { .. }), "{e}");
        assert!(e.to_string().contains("ein"), "{e}");
        let e = err(&model("i,i", &[&[2], &[3]]));
        assert!(matches!(e, OnnxError::ShapeMismatch { .. }), "{e}");
    }

    fn labels(s: &str) -> Vec<Label> {
        s.chars().map(Label::from).collect()
    }

    #[test]
    fn parses_explicit_implicit_and_ellipsis() {
        let eq = parse("bij, bjk -> bik", &[3, 3]).unwrap();
        assert_eq!(eq.inputs, [labels("bij"), labels("bjk")]);
        assert_eq!(eq.output, labels("bik"));
        // Implicit: letters occurring once, alphabetically.
        let eq = parse("ij,jk", &[2, 2]).unwrap();
        assert_eq!(eq.output, labels("ik"));
        assert!(parse("i,i", &[1, 1]).unwrap().output.is_empty());
        // Ellipses right-aligned: `...` of ranks 2 and 1 for the two operands.
        let eq = parse("...ij,...j->...i", &[4, 2]).unwrap();
        let (e0, e1) = (ELLIPSIS, ELLIPSIS + 1);
        assert_eq!(eq.inputs[0], [e0, e1, 'i' as Label, 'j' as Label]);
        assert_eq!(eq.inputs[1], [e1, 'j' as Label]);
        assert_eq!(eq.output, [e0, e1, 'i' as Label]);
        assert_eq!(
            parse("...ij", &[3]).unwrap().output,
            [ELLIPSIS, 'i' as Label, 'j' as Label]
        );
        assert!(parse(",->", &[0, 0]).unwrap().output.is_empty());
    }

    #[test]
    fn rejects_malformed_equations() {
        let malformed = |eq: &str, ranks: &[usize]| parse(eq, ranks).is_err();
        assert!(malformed("ij,jk", &[2]));
        assert!(malformed("ij", &[3]));
        assert!(malformed("i1", &[2]));
        assert!(malformed("ij->k", &[2]));
        assert!(malformed("ij->ii", &[2]));
        assert!(malformed("ij....", &[4]));
        assert_eq!(parse("ii->i", &[2]).unwrap().inputs, [labels("ii")]);
    }
}
