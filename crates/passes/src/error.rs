//! Errors of the passes crate.

use std::path::PathBuf;

use graphlift_ir::IrError;

/// Everything that can go wrong while running a pass or a [`crate::PassManager`].
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
    /// A pass run by a [`crate::PassManager`] returned an error other than
    /// [`PassError::Broken`] (which names its pass already).
    #[error("pass `{pass}`: {source}")]
    InPass {
        /// The pass's name.
        pass: &'static str,
        /// The pass's error.
        source: Box<PassError>,
    },
    /// The function given to a [`crate::PassManager`] does not validate, before any pass ran.
    #[error("the input function does not validate: {source}")]
    InvalidInput {
        /// What [`graphlift_ir::Function::validate`] reported.
        source: IrError,
    },
    /// A pass left a function that does not validate (tract's lesson: the culprit is named,
    /// so a bad rewrite can be bisected).
    #[error("the function does not validate after pass `{pass}` (pass {position} of the pipeline): {source}")]
    Validation {
        /// The pass that broke the function.
        pass: &'static str,
        /// Its 1-based position in the pipeline.
        position: usize,
        /// What [`graphlift_ir::Function::validate`] reported.
        source: IrError,
    },
    /// A pass name that no pass of the pipeline has.
    #[error("unknown pass `{name}`; known passes: {known}")]
    UnknownPass {
        /// The name asked for.
        name: String,
        /// The names of the pipeline's passes, comma-separated, in order.
        known: String,
    },
    /// Writing a dump of the function failed.
    #[error("writing the dump `{}`: {message}", path.display())]
    Dump {
        /// The file (or directory) that could not be written.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },
}
