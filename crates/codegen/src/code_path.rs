//! The one place a kernel plan's code path is decided from the [`Target`]: library calls,
//! assembled code (AVX2 or AVX-512), non-temporal stores.

use graphlift_kernels::target::Target;

use crate::cost::call_traffic;
use crate::plan::KernelPlan;

/// Chooses `plan`'s code path for `target`: library calls and assembled code for the
/// target's vector instruction set ([`Target::vector_isa`]) as the target allows (whether
/// the plan qualifies is decided when it is compiled: [`crate::calls`],
/// [`crate::asm::Layout::of`]), and non-temporal stores for a
/// `standalone` kernel (not an epilogue, whose blocks are in cache) whose call moves more
/// than twice the target's last-level cache ([`graphlift_kernels::stream::streams`]).
pub fn choose_code_path(plan: &mut KernelPlan, target: &Target, standalone: bool) {
    plan.veclib = target.veclib();
    plan.isa = target.vector_isa();
    plan.stream = standalone
        && target.streaming_stores()
        && graphlift_kernels::stream::streams(call_traffic(plan), target.last_level_cache_bytes());
}
