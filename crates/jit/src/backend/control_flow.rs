//! Control-flow steps (`If`, `Loop`, `Scan`): each body compiled once by this backend into
//! an executable (a specialised loop body once per specialisation, cached), run by the
//! shared executor of [`graphlift_runtime::control_flow`], so an iteration is one call of a
//! compiled body.

use std::sync::Arc;

use graphlift_ir::{ControlFlow, Node, Op};
use graphlift_runtime::control_flow::{execute, CompileFn, CompiledBodies};
use graphlift_runtime::{Backend, RuntimeError, Tensor};

use super::executable::ExecutablePlan;
use super::{CpuJitBackend, CpuJitExecutable};

/// Compiles the static bodies of `cf` with `backend` (sharing its kernel cache and thread
/// pool); specialisations compile on first use. The bodies bypass the executable cache:
/// [`CompiledBodies`] keeps each compiled body itself, and the specialisations of one body
/// differ only in constants, so they share a fingerprint and every lookup would compare a
/// new one with all before it (quadratic in the iteration count: SLANet's 501). The
/// specialisations of a body share one set of recycled temporaries
/// ([`CpuJitBackend::with_shared_buffers`]): each runs once per call of the loop, so
/// buffers of its own would be held between calls (SLANet's 501 kept about 0.7 GB) or
/// allocated and freed at every iteration.
pub(super) fn compile_bodies(
    backend: &CpuJitBackend,
    cf: &ControlFlow,
) -> Result<CompiledBodies, RuntimeError> {
    let be = backend.clone().with_executable_cache(false);
    let once = be.clone().with_shared_buffers();
    let compile: CompileFn = Arc::new(move |f| be.compile(f));
    let specialize: CompileFn = Arc::new(move |f| once.compile(f));
    CompiledBodies::new(cf, &compile, specialize)
}

impl CpuJitExecutable {
    /// Runs control-flow step `c` of `node` on its inputs.
    pub(super) fn run_control_flow(
        &self,
        node: &Node,
        c: usize,
        ins: &[&Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let Op::ControlFlow(cf) = node.op() else {
            return Err(Self::execution_error(
                node,
                "not a control-flow node".into(),
            ));
        };
        let bodies = self
            .plan
            .control_flow
            .get(c)
            .ok_or_else(|| Self::execution_error(node, format!("no control-flow plan {c}")))?;
        execute(cf, node, ins, bodies)
    }
}

impl ExecutablePlan {
    /// What control-flow step `c` of `node` runs, for `explain`: each compiled body's steps
    /// and kernels.
    pub(super) fn control_flow_info(&self, node: &Node, c: usize) -> Option<String> {
        let Op::ControlFlow(cf) = node.op() else {
            return None;
        };
        let bodies = self.control_flow.get(c)?;
        let mut parts = vec![format!("control-flow step `{cf}`")];
        for ((what, f), exe) in cf.bodies().into_iter().zip(bodies.statics()) {
            let kernels: Vec<String> = exe.kernels().into_iter().map(|k| k.name).collect();
            let steps: Vec<String> = exe
                .steps()
                .into_iter()
                .map(|s| format!("{} ({})", s.node, s.op))
                .collect();
            parts.push(format!(
                "{what} `{}` compiled once: {} step(s) [{}], {} fused kernel(s) [{}]",
                f.name(),
                steps.len(),
                steps.join(", "),
                kernels.len(),
                kernels.join(", ")
            ));
        }
        if let ControlFlow::Loop(graphlift_ir::control_flow::Loop {
            body: graphlift_ir::control_flow::Body::Specialized(s),
            ..
        }) = &**cf
        {
            parts.push(format!(
                "body `{}` specialised per iteration for its parameters {:?}, each \
                 specialisation compiled once ({} compiled so far)",
                s.name,
                s.bound,
                bodies.specializations()
            ));
        }
        Some(parts.join("; "))
    }
}
