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

    /// Checks an attribute's declared type ([`check_attribute_type`]).
    fn check_type(&self, a: &AttributeProto, want: i32, present: bool) -> Result<(), OnnxError> {
        check_attribute_type(a, want, present, &self.at)
    }

    /// A FLOAT attribute, or `default` when absent.
    pub(crate) fn attr_f32(&self, name: &str, default: f32) -> Result<f32, OnnxError> {
        match self.attr(name)? {
            None => Ok(default),
            Some(a) => {
                self.check_type(a, attribute_type::FLOAT, true)?;
                Ok(a.f)
            }
        }
    }

    /// An optional FLOAT attribute.
    pub(crate) fn attr_f32_opt(&self, name: &str) -> Result<Option<f32>, OnnxError> {
        match self.attr(name)? {
            None => Ok(None),
            Some(a) => {
                self.check_type(a, attribute_type::FLOAT, true)?;
                Ok(Some(a.f))
            }
        }
    }

    /// An optional INT attribute.
    pub(crate) fn attr_i64(&self, name: &str) -> Result<Option<i64>, OnnxError> {
        match self.attr(name)? {
            None => Ok(None),
            Some(a) => {
                self.check_type(a, attribute_type::INT, true)?;
                Ok(Some(a.i))
            }
        }
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
        match self.attr(name)? {
            None => Ok(None),
            Some(a) => {
                self.check_type(a, attribute_type::INTS, true)?;
                Ok(Some(a.ints.clone()))
            }
        }
    }

    /// An optional FLOATS attribute.
    pub(crate) fn attr_floats(&self, name: &str) -> Result<Option<Vec<f32>>, OnnxError> {
        match self.attr(name)? {
            None => Ok(None),
            Some(a) => {
                self.check_type(a, attribute_type::FLOATS, true)?;
                Ok(Some(a.floats.clone()))
            }
        }
    }

    /// An optional STRINGS attribute, each string as UTF-8.
    pub(crate) fn attr_strings(&self, name: &str) -> Result<Option<Vec<String>>, OnnxError> {
        match self.attr(name)? {
            None => Ok(None),
            Some(a) => {
                self.check_type(a, attribute_type::STRINGS, true)?;
                a.strings
                    .iter()
                    .map(|s| {
                        String::from_utf8(s.clone())
                            .map_err(|_| self.attribute_error(name, "is not valid UTF-8".into()))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            }
        }
    }

    /// An optional STRING attribute, as UTF-8.
    pub(crate) fn attr_string(&self, name: &str) -> Result<Option<String>, OnnxError> {
        match self.attr(name)? {
            None => Ok(None),
            Some(a) => {
                self.check_type(a, attribute_type::STRING, true)?;
                String::from_utf8(a.s.clone())
                    .map(Some)
                    .map_err(|_| self.attribute_error(name, "is not valid UTF-8".into()))
            }
        }
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
