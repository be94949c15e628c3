//! The bitwise operators (opset 18: `BitwiseAnd`, `BitwiseOr`, `BitwiseXor`, `BitwiseNot`;
//! opset 11: `BitShift`) on integer tensors. The first four are the IR's `And`, `Or`, `Xor`
//! and `Not`, which are bitwise on integers; a shift is a product or quotient by a power of
//! two in wrapping unsigned arithmetic.

use graphlift_ir::{BinaryOp, ElementType, Output, UnaryOp};

use super::In;
use crate::emit::NodeEmitter;
use crate::error::OnnxError;

/// `BitwiseAnd`, `BitwiseOr`, `BitwiseXor` (`op`), or with `op` = `None` `BitwiseNot`: on
/// integer tensors of one type (numpy broadcasting for the binary ones).
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for a BOOL or float operand or operands of different types.
pub(super) fn bitwise(
    e: &mut NodeEmitter<'_>,
    ins: In<'_>,
    op: Option<BinaryOp>,
) -> Result<Output, OnnxError> {
    let Some(op) = op else {
        e.arity(ins, 1, 1)?;
        let x = e.input(ins, 0)?;
        e.require(x, ElementType::is_integer, "an integer")?;
        return e.unary(UnaryOp::Not, x);
    };
    e.arity(ins, 2, 2)?;
    let (a, b) = (e.input(ins, 0)?, e.input(ins, 1)?);
    e.require(a, ElementType::is_integer, "an integer")?;
    e.binary(op, a, b)
}

/// `BitShift` (opset 11): `X` shifted by `Y` bits (`direction` `LEFT` or `RIGHT`), both of one
/// unsigned integer type, broadcast: `X · 2^Y` wrapping, or `X / 2^Y` truncated. A shift by
/// the type's width or more gives 0 (`2^Y` wraps to 0, and the IR's division by 0 is 0),
/// as numpy's shifts of unsigned integers do.
///
/// # Errors
/// [`OnnxError::TypeMismatch`] for a signed, float or BOOL operand;
/// [`OnnxError::BadAttribute`] for a missing or unknown `direction`.
pub(super) fn bit_shift(e: &mut NodeEmitter<'_>, ins: In<'_>) -> Result<Output, OnnxError> {
    e.arity(ins, 2, 2)?;
    let (x, y) = (e.input(ins, 0)?, e.input(ins, 1)?);
    let unsigned = |t: ElementType| t.is_integer() && !t.is_signed_integer();
    e.require(x, unsigned, "an unsigned integer")?;
    if e.attr_string("direction")?.is_none() {
        return Err(e.attribute_error("direction", "is required".into()));
    }
    let op = e.attr_choice(
        "direction",
        "LEFT",
        &[("LEFT", BinaryOp::Multiply), ("RIGHT", BinaryOp::Divide)],
    )?;
    let two = e.scalar_like(x, 2.0)?;
    let factor = e.binary(BinaryOp::Power, two, y)?;
    e.binary(op, x, factor)
}
