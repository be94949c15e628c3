//! The `Pass` trait: one rewrite of a function.

use graphlift_ir::Function;

use crate::{ExtractionReport, PassError, QdqReport, ScopeFusionReport};

/// A rewrite of a [`Function`], run in place.
///
/// Like nGraph's `FunctionPass`: a pass has a stable name (recorded in the pass history of
/// every node it creates or rewrites) and reports whether it changed the function.
pub trait Pass {
    /// The pass's name, e.g. `"subgraph_extraction"`.
    fn name(&self) -> &'static str;

    /// Rewrites `f`; returns `true` when anything changed.
    ///
    /// # Errors
    /// A [`PassError`]; `f` is then left unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError>;

    /// Rewrites `f` as [`Pass::run`] does and returns what the pass has to report besides
    /// whether it changed `f` (subgraph extraction returns its [`ExtractionReport`]). The
    /// default runs [`Pass::run`] and reports nothing more.
    ///
    /// # Errors
    /// As [`Pass::run`].
    fn run_with_report(&self, f: &mut Function) -> Result<PassOutcome, PassError> {
        Ok(PassOutcome {
            changed: self.run(f)?,
            ..PassOutcome::default()
        })
    }
}

/// What one run of a pass reports ([`Pass::run_with_report`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PassOutcome {
    /// Whether the pass changed the function.
    pub changed: bool,
    /// The extraction report, from subgraph extraction.
    pub extraction: Option<ExtractionReport>,
    /// The scope fusion report, from scope fusion.
    pub scope_fusion: Option<ScopeFusionReport>,
    /// The QDQ lowering report, from QDQ lowering.
    pub qdq: Option<QdqReport>,
}
