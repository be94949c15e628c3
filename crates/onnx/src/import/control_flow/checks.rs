//! Reading a control-flow node's attributes (typed: a subgraph, an INT, INTS) and checking
//! its one-element operands, each error naming the node.

use graphlift_ir::{ElementType, Output};

use super::Importer;
use crate::emit::check_attribute_type;
use crate::error::{NodeRef, OnnxError};
use crate::proto::{attribute_type, GraphProto, NodeProto};

/// A subgraph attribute of `node` (at `at`).
///
/// # Errors
/// [`OnnxError::BadAttribute`] for one that is missing, not of type GRAPH, or empty.
pub(super) fn graph_attr<'n>(
    node: &'n NodeProto,
    name: &str,
    at: &NodeRef,
) -> Result<&'n GraphProto, OnnxError> {
    let bad = |message: &str| OnnxError::BadAttribute {
        at: at.clone(),
        attribute: name.to_string(),
        message: message.into(),
    };
    let a = node
        .attribute
        .iter()
        .find(|a| a.name == name)
        .ok_or_else(|| bad("the subgraph attribute is missing"))?;
    check_attribute_type(a, attribute_type::GRAPH, a.g.is_some(), at)?;
    a.g.as_ref().ok_or_else(|| bad("holds no graph"))
}

/// An optional INTS attribute of `node` (at `at`).
///
/// # Errors
/// [`OnnxError::BadAttribute`] for one of another type.
pub(super) fn ints_attr(
    node: &NodeProto,
    name: &str,
    at: &NodeRef,
) -> Result<Option<Vec<i64>>, OnnxError> {
    let Some(a) = node.attribute.iter().find(|a| a.name == name) else {
        return Ok(None);
    };
    check_attribute_type(a, attribute_type::INTS, true, at)?;
    Ok(Some(a.ints.clone()))
}

/// An optional INT attribute of `node` (at `at`).
///
/// # Errors
/// [`OnnxError::BadAttribute`] for one of another type.
pub(super) fn int_attr(
    node: &NodeProto,
    name: &str,
    at: &NodeRef,
) -> Result<Option<i64>, OnnxError> {
    let Some(a) = node.attribute.iter().find(|a| a.name == name) else {
        return Ok(None);
    };
    check_attribute_type(a, attribute_type::INT, true, at)?;
    Ok(Some(a.i))
}

impl Importer<'_> {
    /// Checks that operand `o` of the node at `at` (`what`: `the condition`) is one
    /// element of type `et`, as `If`'s condition and `Loop`'s `M` and `cond` are.
    ///
    /// # Errors
    /// [`OnnxError::TypeMismatch`] naming the node, the operand and its type.
    pub(super) fn check_one_element(
        &self,
        o: Output,
        et: ElementType,
        what: &str,
        at: &NodeRef,
    ) -> Result<(), OnnxError> {
        let t = self.function.output_type(o).map_err(|e| OnnxError::Ir {
            at: at.clone(),
            source: Box::new(e),
        })?;
        if t.element_type == et && t.shape.element_count().ok() == Some(1) {
            return Ok(());
        }
        Err(OnnxError::TypeMismatch {
            at: at.clone(),
            message: format!("{what} must be one {et} element, is {t}"),
        })
    }
}
