//! graphlift-passes: rewrites of a [`graphlift_ir::Function`].
//!
//! A pass implements [`Pass`]: it rewrites a function in place and says whether it changed
//! anything. Every pass that creates or rewrites a node appends its name to that node's pass
//! history, and the function it leaves behind passes [`graphlift_ir::Function::validate`].
//!
//! The central pass is [`SubgraphExtraction`] (also callable as [`extract_subgraphs`]): the
//! generalisation of nGraph's `HalideSubgraphExtraction`. It gathers every maximal convex
//! region of elementwise ops of one iteration space into a `FusedKernel` node whose body is a
//! small `Function`, ready for the JIT. Growth is greedy and rejects merges that would create
//! a cycle, as OpenVINO's snippets do; the size bound and the `stop_fusion` barrier come from
//! TVM.
//!
//! ```
//! use graphlift_ir::{ElementType::F32, FunctionBuilder, Op};
//! use graphlift_passes::{extract_subgraphs, ExtractionConfig};
//!
//! // nGraph's halide_subgraph test: relu((A + B) * C) + D over f32[8].
//! let b = FunctionBuilder::new("halide_subgraph");
//! let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
//! let mut f = b.finish(&[((a + bb) * c).relu() + d])?;
//! let report = extract_subgraphs(&mut f, &ExtractionConfig::default())?;
//! assert_eq!(report.kernels.len(), 1);
//! assert_eq!((report.kernels[0].live_ins, report.kernels[0].outputs), (4, 1));
//! let kernel = f.node(report.kernels[0].node)?;
//! assert!(matches!(kernel.op(), Op::FusedKernel(_)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The rewrites that prepare a function for extraction, each in its own module:
//! [`ConstantFolding`] (with the runtime's reference kernels, under a size cap),
//! [`CommonSubexpressionElimination`], [`AlgebraicSimplification`] (exact identities only:
//! signed zeros, NaN and infinities are respected), [`DeadCodeElimination`], and
//! [`FusedOpExpansion`], the inverse of extraction. They follow nGraph's provenance rule (a
//! replacement takes the tags of what it replaces, see
//! [`graphlift_ir::Function::replace_node`]), work on a copy so that an error leaves the
//! function unchanged, and remove the dead nodes of a function they change.
//!
//! A [`PassManager`] runs an ordered list of passes, validates after each one (naming the
//! pass that broke the function), times them, can disable any pass by name and dumps the
//! function as text after each pass (`GRAPHLIFT_DUMP=dir` with [`PassManager::from_env`]).
//!
//! ```
//! use graphlift_ir::{ElementType::F32, FunctionBuilder};
//! use graphlift_passes::{ExtractionConfig, PassManager};
//!
//! let b = FunctionBuilder::new("f");
//! let x = b.parameter("x", F32, [4]);
//! let mut f = b.finish(&[((x.exp() + x.exp()) * 1.0).relu()])?;
//! let mut pm = PassManager::default_pipeline(ExtractionConfig::default());
//! pm.disable("subgraph_extraction")?;
//! let report = pm.run(&mut f)?;
//! assert!(report.get("algebraic_simplification").is_some_and(|p| p.changed));
//! assert!(report.get("subgraph_extraction").is_some_and(|p| !p.enabled));
//! assert_eq!(f.nodes().filter(|n| n.op().type_name() == "Exp").count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod algebraic_simplification;
mod batch_norm_folding;
mod constant_folding;
mod cse;
mod dce;
mod error;
mod extraction;
mod fused_op_expansion;
mod pass;
mod pass_manager;
mod rewrite;

#[cfg(test)]
mod pipeline_proptests;
#[cfg(test)]
mod testing;

pub use algebraic_simplification::AlgebraicSimplification;
pub use batch_norm_folding::BatchNormFolding;
pub use constant_folding::ConstantFolding;
pub use cse::CommonSubexpressionElimination;
pub use dce::DeadCodeElimination;
pub use error::PassError;
pub use extraction::{
    extract_subgraphs, ExtractionConfig, ExtractionReport, KernelReport, OutsideNode,
    OutsideReason, SubgraphExtraction, FUSED_NODES_KEY, STOP_FUSION_KEY,
};
pub use fused_op_expansion::FusedOpExpansion;
pub use pass::{Pass, PassOutcome};
pub use pass_manager::{PassManager, PassRecord, PassRunReport, DUMP_ENV};
