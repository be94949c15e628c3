//! Errors of the `graphlift` command.

use std::path::PathBuf;

/// Everything `graphlift` reports before exiting non-zero.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A tensor file whose format or element type is not supported.
    #[error("{path}: {message}")]
    TensorFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The ONNX importer failed.
    #[error(transparent)]
    Onnx(#[from] graphlift::onnx::OnnxError),
    /// The backend failed to compile or run.
    #[error(transparent)]
    Runtime(#[from] graphlift::RuntimeError),
    /// A model run in stages through a Session failed.
    #[error(transparent)]
    Session(#[from] graphlift::onnx::SessionError),
    /// A Function could not be built.
    #[error(transparent)]
    Ir(#[from] graphlift::IrError),
    /// Rendering through Graphviz failed (`dot` missing or failing).
    #[error("graphviz: {0}")]
    Graphviz(String),
    /// `graphlift accuracy` found functions past their documented error bound.
    #[error("past the documented error bound: {0}")]
    Accuracy(String),
    /// Wrong number of inputs or expected outputs.
    #[error("{0}")]
    Usage(String),
    /// Outputs differ from `--expect`.
    #[error("{failed} of {total} output(s) differ from the expected values")]
    Mismatch {
        /// Outputs that differ.
        failed: usize,
        /// Outputs compared.
        total: usize,
    },
}
