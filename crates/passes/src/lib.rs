//! graphlift-passes: rewrites of a [`graphlift_ir::Function`] ([`Pass`]; each leaves a function
//! that validates) run by a [`PassManager`]. The central one, [`SubgraphExtraction`], generalises
//! nGraph's `HalideSubgraphExtraction`: it fuses each elementwise region into a kernel for the JIT.

#![warn(missing_docs)]

mod algebraic_simplification;
mod batch_norm_folding;
mod batch_split;
mod canonical_forms;
mod constant_folding;
mod cse;
mod dce;
mod error;
mod extraction;
mod fused_op_expansion;
mod half_widening;
mod pass;
mod pass_manager;
mod qdq_lowering;
mod rewrite;
pub mod scope_fusion;

#[cfg(test)]
mod pipeline_proptests;
#[cfg(test)]
mod state_tests;
#[cfg(test)]
mod testing;

pub use algebraic_simplification::AlgebraicSimplification;
pub use batch_norm_folding::BatchNormFolding;
pub use batch_split::{per_sample, PerSample};
pub use canonical_forms::CanonicalForms;
pub use constant_folding::ConstantFolding;
pub use cse::CommonSubexpressionElimination;
pub use dce::DeadCodeElimination;
pub use error::PassError;
pub use extraction::{
    extract_subgraphs, ExtractionConfig, ExtractionReport, KernelReport, OutsideNode,
    OutsideReason, SubgraphExtraction, FUSED_NODES_KEY, STOP_FUSION_KEY,
};
pub use fused_op_expansion::FusedOpExpansion;
pub use half_widening::HalfWidening;
pub use pass::{Pass, PassOutcome};
pub use pass_manager::{PassManager, PassRecord, PassRunReport, DISABLE_PASSES_ENV, DUMP_ENV};
pub use qdq_lowering::{QdqLowering, QdqReport};
pub use scope_fusion::{
    ScopeFusion, ScopeFusionRegistry, ScopeFusionReport, DISABLE_SCOPE_PASSES_ENV,
};
