//! `NodeEmitter`'s attribute readers: each typed read of one attribute of the node, with
//! the ONNX attribute type checked and errors that name the node and attribute.

use graphlift_ir::ElementType;

use super::{check_attribute_type, NodeEmitter};
use crate::error::OnnxError;
use crate::proto::{attribute_type, AttributeProto, NodeProto};

impl<'a> NodeEmitter<'a> {
    /// The attribute `name`, if the node has it.
    ///
    /// # Errors
    /// [`OnnxError::BadAttribute`] for a reference to a function attribute (`ref_attr_name`),
    /// which is only valid inside a function body.
    pub(crate) fn attr(&self, name: &str) -> Result<Option<&'a AttributeProto>, OnnxError> {
        let node: &'a NodeProto = self.node;
        let Some(a) = node.attribute.iter().find(|a| a.name == name) else {
            return Ok(None);
        };
        if !a.ref_attr_name.is_empty() {
            return Err(self.attribute_error(
                name,
                format!(
                    "refers to function attribute `{}`, which is only valid inside a function body",
                    a.ref_attr_name
                ),
            ));
        }
        Ok(Some(a))
    }

    /// The attribute `name` when the node has it, its declared type checked to be `want`
    /// ([`check_attribute_type`]).
    ///
    /// # Errors
    /// As [`NodeEmitter::attr`], and [`OnnxError::BadAttribute`] for another type.
    fn typed(&self, name: &str, want: i32) -> Result<Option<&'a AttributeProto>, OnnxError> {
        let a = self.attr(name)?;
        if let Some(a) = a {
            check_attribute_type(a, want, true, &self.at)?;
        }
        Ok(a)
    }

    /// A FLOAT attribute, or `default` when absent.
    pub(crate) fn attr_f32(&self, name: &str, default: f32) -> Result<f32, OnnxError> {
        Ok(self.attr_f32_opt(name)?.unwrap_or(default))
    }

    /// An optional FLOAT attribute.
    pub(crate) fn attr_f32_opt(&self, name: &str) -> Result<Option<f32>, OnnxError> {
        Ok(self.typed(name, attribute_type::FLOAT)?.map(|a| a.f))
    }

    /// An optional INT attribute.
    pub(crate) fn attr_i64(&self, name: &str) -> Result<Option<i64>, OnnxError> {
        Ok(self.typed(name, attribute_type::INT)?.map(|a| a.i))
    }

    /// An optional INT attribute that holds an ONNX `data_type` code of a float type
    /// (`stash_type`, `softmax_precision`): FLOAT16, FLOAT, DOUBLE or BFLOAT16.
    ///
    /// # Errors
    /// [`OnnxError::BadAttribute`] naming the attribute for any other code.
    pub(crate) fn attr_float_type(&self, name: &str) -> Result<Option<ElementType>, OnnxError> {
        let Some(code) = self.attr_i64(name)? else {
            return Ok(None);
        };
        i32::try_from(code)
            .ok()
            .and_then(|c| crate::tensor::element_type(c, &self.at).ok())
            .filter(|t| t.is_float())
            .map(Some)
            .ok_or_else(|| {
                self.attribute_error(
                    name,
                    format!(
                        "{code} is not the data_type of a float type (FLOAT 1, FLOAT16 10, \
                         DOUBLE 11, BFLOAT16 16)"
                    ),
                )
            })
    }

    /// An optional INTS attribute.
    pub(crate) fn attr_ints(&self, name: &str) -> Result<Option<Vec<i64>>, OnnxError> {
        Ok(self
            .typed(name, attribute_type::INTS)?
            .map(|a| a.ints.clone()))
    }

    /// An optional FLOATS attribute.
    pub(crate) fn attr_floats(&self, name: &str) -> Result<Option<Vec<f32>>, OnnxError> {
        Ok(self
            .typed(name, attribute_type::FLOATS)?
            .map(|a| a.floats.clone()))
    }

    /// An optional STRINGS attribute, each string as UTF-8.
    pub(crate) fn attr_strings(&self, name: &str) -> Result<Option<Vec<String>>, OnnxError> {
        let Some(a) = self.typed(name, attribute_type::STRINGS)? else {
            return Ok(None);
        };
        a.strings
            .iter()
            .map(|s| self.utf8(name, s))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An optional STRING attribute, as UTF-8.
    pub(crate) fn attr_string(&self, name: &str) -> Result<Option<String>, OnnxError> {
        self.typed(name, attribute_type::STRING)?
            .map(|a| self.utf8(name, &a.s))
            .transpose()
    }

    /// The bytes of a string of attribute `name` as UTF-8.
    ///
    /// # Errors
    /// [`OnnxError::BadAttribute`] naming the attribute when they are not valid UTF-8.
    fn utf8(&self, name: &str, bytes: &[u8]) -> Result<String, OnnxError> {
        String::from_utf8(bytes.to_vec())
            .map_err(|_| self.attribute_error(name, "is not valid UTF-8".into()))
    }

    /// A STRING attribute that names one of `options` (`default` when absent).
    ///
    /// # Errors
    /// [`OnnxError::BadAttribute`] listing the allowed values for any other value.
    pub(crate) fn attr_choice<T: Copy>(
        &self,
        name: &str,
        default: &str,
        options: &[(&str, T)],
    ) -> Result<T, OnnxError> {
        let value = self
            .attr_string(name)?
            .unwrap_or_else(|| default.to_string());
        options
            .iter()
            .find(|(n, _)| *n == value)
            .map(|&(_, t)| t)
            .ok_or_else(|| {
                let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
                self.attribute_error(
                    name,
                    format!(
                        "unknown value {value:?} (expected one of {})",
                        names.join(", ")
                    ),
                )
            })
    }
}
