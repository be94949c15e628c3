//! Input addressing ([`Addressing`], [`classify`]): how a kernel reads a live-in that is
//! broadcast to its iteration space, without materializing it at the iteration space's size.

use graphlift_ir::Shape;

/// One kept axis group of a general broadcast: contributes `((i / div) mod modulo) * stride`
/// to the source index (`modulo == 0` means no modulo: the group is outermost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Term {
    /// Product of the target extents inside this group.
    pub div: usize,
    /// The group's extent, or 0 when no reduction is needed.
    pub modulo: usize,
    /// Product of the kept source extents inside this group.
    pub stride: usize,
}

/// How a live-in of shape `S` is indexed from the kernel's element index `i` over shape `T`.
///
/// A fused kernel iterates over the linear (row-major) element index `i` of its output
/// shape `T`. A value of shape `S` that numpy-broadcasts to `T` is read at source index
/// `j(i)`; it is never materialized at `T`'s size. [`classify`] picks the cheapest exact
/// form of `j`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Addressing {
    /// `j = i` (`S` and `T` hold as many elements).
    Contiguous,
    /// `j = 0` (`S` holds one element): loaded and splat once, before the loop.
    Splat,
    /// `j = i mod len` (`len > 1`): a row vector `b[K]` over `X[M, K]` (every kept axis is
    /// innermost).
    Row {
        /// Row length `K`.
        len: usize,
    },
    /// `j = Σ term(i)`: `Σ ((i / div) mod modulo) · stride` over the kept axis groups
    /// (column vectors `c[M, 1]`, channels `[C, 1, 1]`, mixed patterns). When the innermost
    /// group repeats over a run of at least one vector (`c[M, 1]` over `[M, K ≥ 4]`), a
    /// vector whose lanes lie in one run loads one element and splats it; others gather.
    General {
        /// Kept axis groups, outermost first.
        terms: Vec<Term>,
    },
}

/// The addressing of a value of shape `src` read over the iteration shape `dst`.
///
/// `src` must broadcast to `dst` (numpy rules); the caller checks it. Axes of extent 1 in
/// `dst` are ignored, adjacent axes of the same kind (kept or repeated) are merged.
pub fn classify(src: &Shape, dst: &Shape) -> Addressing {
    let offset = dst.rank().saturating_sub(src.rank());
    // (kept, extent) groups, outermost first.
    let mut groups: Vec<(bool, usize)> = Vec::new();
    for (a, &t) in dst.dims().iter().enumerate() {
        if t == 1 {
            continue;
        }
        let kept = a >= offset && src.dims().get(a - offset).copied() == Some(t);
        match groups.last_mut() {
            Some((k, e)) if *k == kept => *e = e.saturating_mul(t),
            _ => groups.push((kept, t)),
        }
    }
    if dst.dims().contains(&0) {
        // Nothing is read from an empty iteration space.
        return Addressing::Contiguous;
    }
    match groups.as_slice() {
        [] | [(false, _)] => Addressing::Splat,
        [(true, _)] => Addressing::Contiguous,
        [(false, _), (true, k)] => Addressing::Row { len: *k },
        _ => {
            let mut terms = Vec::new();
            let (mut div, mut stride) = (1usize, 1usize);
            for (g, &(kept, extent)) in groups.iter().enumerate().rev() {
                if kept {
                    let modulo = if g == 0 { 0 } else { extent };
                    terms.push(Term {
                        div,
                        modulo,
                        stride,
                    });
                    stride = stride.saturating_mul(extent);
                }
                div = div.saturating_mul(extent);
            }
            terms.reverse();
            Addressing::General { terms }
        }
    }
}

impl Addressing {
    /// The source index of element `i` (the Rust model of what the kernel emits).
    pub fn source_index(&self, i: usize) -> usize {
        match self {
            Addressing::Contiguous => i,
            Addressing::Splat => 0,
            Addressing::Row { len } => i % len,
            Addressing::General { terms } => terms
                .iter()
                .map(|t| {
                    let q = i / t.div;
                    let q = if t.modulo == 0 { q } else { q % t.modulo };
                    q * t.stride
                })
                .sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::TensorData;
    use graphlift_runtime::reference::broadcast;

    fn check(src: &[usize], dst: &[usize]) -> Addressing {
        let (s, d) = (Shape::from(src), Shape::from(dst));
        let n_src = s.element_count().unwrap();
        let n = d.element_count().unwrap();
        let data = TensorData::I64((0..n_src as i64).collect());
        let want = broadcast(&data, &s, &d).unwrap();
        let addr = classify(&s, &d);
        let got: Vec<i64> = (0..n).map(|i| addr.source_index(i) as i64).collect();
        assert_eq!(TensorData::I64(got), want, "{src:?} -> {dst:?} as {addr:?}");
        addr
    }

    #[test]
    fn every_pattern_matches_the_reference_broadcast() {
        assert_eq!(check(&[], &[3, 4]), Addressing::Splat);
        assert_eq!(check(&[1, 1], &[3, 4]), Addressing::Splat);
        assert_eq!(check(&[4], &[3, 4]), Addressing::Row { len: 4 });
        assert_eq!(check(&[1, 4], &[3, 4]), Addressing::Row { len: 4 });
        assert_eq!(check(&[3, 4], &[2, 3, 4]), Addressing::Row { len: 12 });
        assert_eq!(check(&[3, 4], &[1, 3, 4]), Addressing::Contiguous);
        assert!(matches!(
            check(&[3, 1], &[3, 4]),
            Addressing::General { .. }
        ));
        assert!(matches!(
            check(&[2, 1, 1], &[2, 3, 4]),
            Addressing::General { .. }
        ));
        assert!(matches!(
            check(&[2, 1, 4], &[2, 3, 4]),
            Addressing::General { .. }
        ));
        assert!(matches!(
            check(&[3, 1], &[2, 3, 4]),
            Addressing::General { .. }
        ));
        assert!(matches!(
            check(&[1, 3, 1, 5], &[2, 3, 4, 5]),
            Addressing::General { .. }
        ));
        check(&[5, 1, 1, 1], &[5, 1, 2, 3]);
        check(&[1], &[1]);
        check(&[7], &[7]);
        check(&[2, 1], &[2, 1]);
        assert_eq!(
            classify(&Shape::from([3]), &Shape::from([0, 3])),
            Addressing::Contiguous
        );
    }
}
