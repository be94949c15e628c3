//! Errors of the passes crate.

use graphlift_ir::IrError;

/// Everything that can go wrong while running a pass.
///
/// A pass that returns an error leaves the function it was given unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PassError {
    /// An IR operation failed (a bad input function, e.g. one with a cycle).
    #[error(transparent)]
    Ir(#[from] IrError),
    /// The pass reached an inconsistent state or would have produced an invalid function.
    /// This is a bug in the pass; the function is left as it was.
    #[error("pass `{pass}` failed: {message}")]
    Broken {
        /// The pass's name.
        pass: &'static str,
        /// What went wrong.
        message: String,
    },
}
