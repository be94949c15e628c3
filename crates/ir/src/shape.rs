//! Static tensor shapes and numpy broadcasting rules.

use std::fmt;

use smallvec::SmallVec;

use crate::IrError;

/// Extents held inline: shapes of rank 4 or less (nearly all of them) cost no allocation to
/// make or copy, which matters because every node's type holds one and inference, validation
/// and planning copy them.
type Dims = SmallVec<[usize; 4]>;

/// A static, row-major tensor shape: one extent per axis, outermost first.
///
/// A 0-d shape (`[]`) holds one element (a scalar); a shape with a zero extent holds none.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Shape(Dims);

impl Shape {
    /// A shape from its extents.
    pub fn new(dims: impl AsRef<[usize]>) -> Shape {
        Shape(Dims::from_slice(dims.as_ref()))
    }

    /// The 0-d shape of a scalar.
    pub fn scalar() -> Shape {
        Shape(Dims::new())
    }

    /// Number of axes.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// The extents, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// Number of elements (product of extents; 1 for a 0-d shape).
    ///
    /// # Errors
    /// [`IrError::ShapeOverflow`] when the product does not fit in `usize`.
    pub fn element_count(&self) -> Result<usize, IrError> {
        self.0.iter().try_fold(1usize, |acc, &d| {
            acc.checked_mul(d).ok_or_else(|| IrError::ShapeOverflow {
                at: String::new(),
                shape: self.clone(),
            })
        })
    }

    /// Row-major strides in elements (the last axis has stride 1).
    ///
    /// Only meaningful for shapes whose element count fits in `usize`; saturates otherwise.
    pub fn strides(&self) -> Vec<usize> {
        let mut strides = vec![1usize; self.rank()];
        for i in (0..self.rank().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1].saturating_mul(self.0[i + 1]);
        }
        strides
    }

    /// `true` when `self` broadcasts to `target` under numpy's rules: axes are aligned at the
    /// right, and each axis of `self` is either equal to the target's or 1.
    pub fn broadcasts_to(&self, target: &Shape) -> bool {
        if self.rank() > target.rank() {
            return false;
        }
        let offset = target.rank() - self.rank();
        self.0
            .iter()
            .zip(&target.0[offset..])
            .all(|(&s, &t)| s == t || s == 1)
    }

    /// The numpy broadcast of two shapes, or `None` if they are incompatible.
    ///
    /// Follows numpy's rules (and ONNX's multidirectional broadcasting): align at the right;
    /// two extents are compatible when equal or when one of them is 1.
    pub fn broadcast(a: &Shape, b: &Shape) -> Option<Shape> {
        let rank = a.rank().max(b.rank());
        let mut out = Dims::from_elem(0, rank);
        for (i, o) in out.iter_mut().enumerate() {
            let da = dim_from_right(a, rank - 1 - i);
            let db = dim_from_right(b, rank - 1 - i);
            *o = match (da, db) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => return None,
            };
        }
        Some(Shape(out))
    }
}

fn dim_from_right(s: &Shape, k: usize) -> usize {
    if k < s.rank() {
        s.0[s.rank() - 1 - k]
    } else {
        1
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "]")
    }
}

impl From<Vec<usize>> for Shape {
    fn from(v: Vec<usize>) -> Shape {
        Shape(Dims::from_vec(v))
    }
}

impl From<&[usize]> for Shape {
    fn from(v: &[usize]) -> Shape {
        Shape::new(v)
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(v: [usize; N]) -> Shape {
        Shape::new(v)
    }
}

impl FromIterator<usize> for Shape {
    fn from_iter<I: IntoIterator<Item = usize>>(dims: I) -> Shape {
        Shape(dims.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_count_and_overflow() {
        assert_eq!(Shape::scalar().element_count().unwrap(), 1);
        assert_eq!(Shape::new([2, 0, 3]).element_count().unwrap(), 0);
        assert_eq!(Shape::new([2, 3, 4]).element_count().unwrap(), 24);
        assert!(Shape::new([usize::MAX, 2]).element_count().is_err());
    }

    #[test]
    fn numpy_broadcast() {
        let s = |v: &[usize]| Shape::from(v);
        assert_eq!(Shape::broadcast(&s(&[3, 1]), &s(&[4])), Some(s(&[3, 4])));
        assert_eq!(Shape::broadcast(&s(&[]), &s(&[2, 5])), Some(s(&[2, 5])));
        assert_eq!(Shape::broadcast(&s(&[0]), &s(&[1])), Some(s(&[0])));
        assert_eq!(Shape::broadcast(&s(&[3]), &s(&[4])), None);
        assert!(s(&[1, 4]).broadcasts_to(&s(&[2, 3, 4])));
        assert!(!s(&[2, 4]).broadcasts_to(&s(&[4])));
        assert_eq!(s(&[2, 3, 4]).strides(), vec![12, 4, 1]);
    }
}
