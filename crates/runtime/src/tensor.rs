//! Host tensors: an element type, a static shape and row-major data.

use graphlift_ir::{Element, ElementType, Shape, TensorData, TensorType};

use crate::RuntimeError;

/// A dense, row-major host tensor (nGraph's `runtime::Tensor`).
///
/// The data always holds exactly `shape.element_count()` elements of `element_type`; every
/// constructor checks it, and so does every call of an Executable (the one way to break it
/// is resizing the data through [`Tensor::data_mut`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    shape: Shape,
    data: TensorData,
}

impl Tensor {
    /// A zero-filled tensor.
    ///
    /// # Errors
    /// [`RuntimeError::Ir`] (`ShapeOverflow`) when the element count overflows `usize`;
    /// [`RuntimeError::Data`] when its byte size exceeds `isize::MAX` (no allocation can
    /// hold it). Both name the element type and the shape.
    pub fn zeros(
        element_type: ElementType,
        shape: impl Into<Shape>,
    ) -> Result<Tensor, RuntimeError> {
        let shape = shape.into();
        let n = element_count(element_type, &shape)?;
        let size = element_type.size_bytes();
        if !allocatable(element_type, n) {
            return Err(RuntimeError::Data(format!(
                "{element_type} tensor of shape {shape}: {n} elements of {size} bytes \
                 exceed isize::MAX bytes"
            )));
        }
        Ok(Tensor {
            data: TensorData::zeros(element_type, n),
            shape,
        })
    }

    /// A tensor owning `data` in `shape`.
    ///
    /// # Errors
    /// [`RuntimeError::Data`] if the data's length is not the shape's element count (the
    /// message gives the element type, both counts and the shape); [`RuntimeError::Ir`]
    /// (`ShapeOverflow`) when the element count overflows `usize`.
    pub fn from_data(
        data: impl Into<TensorData>,
        shape: impl Into<Shape>,
    ) -> Result<Tensor, RuntimeError> {
        let (data, shape) = (data.into(), shape.into());
        let n = element_count(data.element_type(), &shape)?;
        if data.len() != n {
            return Err(RuntimeError::Data(format!(
                "{} {} elements given for shape {shape}, which holds {n}",
                data.len(),
                data.element_type()
            )));
        }
        Ok(Tensor { shape, data })
    }

    /// A tensor from a typed vector.
    ///
    /// # Errors
    /// As [`Tensor::from_data`].
    pub fn from_vec<T: Element>(
        values: Vec<T>,
        shape: impl Into<Shape>,
    ) -> Result<Tensor, RuntimeError> {
        Tensor::from_data(T::into_data(values), shape)
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.data.element_type()
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Element type and shape.
    pub fn tensor_type(&self) -> TensorType {
        TensorType::new(self.element_type(), self.shape.clone())
    }

    /// Whether the tensor has type `t` (element type and shape), compared in place: the
    /// per-call argument and buffer checks use it, where building a [`TensorType`] per
    /// tensor would cost a copy of its shape.
    pub fn has_type(&self, t: &TensorType) -> bool {
        self.element_type() == t.element_type && self.shape == t.shape
    }

    /// This tensor's allocation as a tensor of type `t`, its elements unspecified (this
    /// tensor's leading ones, then zeros): how a recycled buffer takes a value of another
    /// shape without a new allocation. `None` (the tensor dropped) when the element types
    /// differ or `t` could not be allocated (its byte size overflows).
    pub fn refit(self, t: &TensorType) -> Option<Tensor> {
        if self.has_type(t) {
            return Some(self);
        }
        let n = t.shape.element_count().ok()?;
        let mut data = self.data;
        (allocatable(t.element_type, n) && data.element_type() == t.element_type).then(|| {
            data.resize(n);
            Tensor {
                shape: t.shape.clone(),
                data,
            }
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// `true` when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The data.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// The data, mutably, for writing elements in place.
    ///
    /// Do not change its length or element type through this borrow: the tensor would no
    /// longer match its shape. Executables check every tensor they are called with and
    /// reject such a one ([`RuntimeError::Data`] naming it) before running.
    pub fn data_mut(&mut self) -> &mut TensorData {
        &mut self.data
    }

    /// Unwraps into the data.
    pub fn into_data(self) -> TensorData {
        self.data
    }

    /// The elements as a typed slice.
    ///
    /// # Errors
    /// [`RuntimeError::Data`] if `T` is not the tensor's element type.
    pub fn read<T: Element>(&self) -> Result<&[T], RuntimeError> {
        self.data
            .as_slice::<T>()
            .ok_or_else(|| self.type_error::<T>())
    }

    /// Copies `values` into the tensor.
    ///
    /// # Errors
    /// [`RuntimeError::Data`] if `T` is not the element type or the length differs.
    pub fn write<T: Element>(&mut self, values: &[T]) -> Result<(), RuntimeError> {
        let err = self.type_error::<T>();
        let n = self.len();
        let dst = self.data.as_mut_slice::<T>().ok_or(err)?;
        if values.len() != n {
            return Err(RuntimeError::Data(format!(
                "write of {} elements into a tensor of {n}",
                values.len()
            )));
        }
        dst.copy_from_slice(values);
        Ok(())
    }

    fn type_error<T: Element>(&self) -> RuntimeError {
        RuntimeError::Data(format!(
            "tensor holds {}, accessed as {}",
            self.element_type(),
            T::ELEMENT_TYPE
        ))
    }
}

/// Whether `n` elements of `element_type` fit in one allocation (at most `isize::MAX`
/// bytes).
fn allocatable(element_type: ElementType, n: usize) -> bool {
    n.checked_mul(element_type.size_bytes())
        .is_some_and(|b| b <= isize::MAX as usize)
}

/// The element count of a tensor's shape; an overflow names the element type.
fn element_count(element_type: ElementType, shape: &Shape) -> Result<usize, RuntimeError> {
    shape.element_count().map_err(|_| {
        graphlift_ir::IrError::ShapeOverflow {
            at: format!("{element_type} tensor"),
            shape: shape.clone(),
        }
        .into()
    })
}
