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

mod algebraic_simplification;
mod constant_folding;
mod cse;
mod dce;
mod error;
mod extraction;
mod fused_op_expansion;
mod pass;
mod rewrite;

#[cfg(test)]
mod testing;

pub use algebraic_simplification::AlgebraicSimplification;
pub use constant_folding::ConstantFolding;
pub use cse::CommonSubexpressionElimination;
pub use dce::DeadCodeElimination;
pub use error::PassError;
pub use extraction::{
    extract_subgraphs, ExtractionConfig, ExtractionReport, KernelReport, SubgraphExtraction,
    FUSED_NODES_KEY, STOP_FUSION_KEY,
};
pub use fused_op_expansion::FusedOpExpansion;
pub use pass::Pass;
