//! Rewriting: one region becomes one `FusedKernel` node whose body is a small `Function`.

use std::sync::Arc;

use foldhash::{HashMap, HashSet};
use graphlift_ir::{Function, FusedKernel, NodeId, Op, Output};
use smallvec::SmallVec;

use super::region::Region;
use super::{KernelReport, SubgraphExtraction, FUSED_NODES_KEY};
use crate::PassError;

fn broken(message: String) -> PassError {
    PassError::Broken {
        pass: SubgraphExtraction::NAME,
        message,
    }
}

/// Replaces regions by fused kernels, one at a time, in a topological order of the
/// rewritten graph, remembering where the values of earlier regions went.
#[derive(Debug, Default)]
pub(super) struct Rewriter {
    /// Values of fused nodes -> the fused kernel output that now carries them.
    remap: HashMap<Output, Output>,
    /// Fused nodes -> their kernel node.
    fused_of: HashMap<NodeId, NodeId>,
    /// The next `k` to try for the name `FusedKernel_<k>`.
    next_index: usize,
}

impl Rewriter {
    /// Adds the kernel of `region` to `g` and points every outside use of the region at it.
    /// `src` is the function as it was before any rewrite (`g` started as its copy); the
    /// replaced nodes stay in `g` until the caller removes dead nodes.
    pub(super) fn fuse(
        &mut self,
        src: &Function,
        g: &mut Function,
        region: &Region,
    ) -> Result<KernelReport, PassError> {
        let name = self.kernel_name(g);
        let body = build_body(src, region, &name)?;
        let inputs = region
            .live_ins
            .iter()
            .map(|&o| self.current(o))
            .collect::<Result<Vec<_>, _>>()?;
        let site = src.node(region.seed)?.creation_site().clone();
        let kernel = Op::FusedKernel(Arc::new(FusedKernel { body }));
        let fused = g.add_node_at(kernel, &inputs, site)?;
        g.set_name(fused, name.clone())?;
        let mut fused_names = Vec::with_capacity(region.members.len());
        for &m in &region.members {
            let node = src.node(m)?;
            g.propagate_tags(fused, node.tags())?;
            fused_names.push(node.name().to_string());
        }
        // Copied Constants are part of the kernel too: a folded constant carries the tags
        // of the computation it replaced.
        for &c in &region.constants {
            g.propagate_tags(fused, src.node(c)?.tags())?;
        }
        g.record_pass(fused, SubgraphExtraction::NAME)?;
        g.set_metadata(fused, FUSED_NODES_KEY, fused_names.join(","))?;

        let mut deps = Vec::new();
        for &d in &region.ext_deps {
            let d = self.fused_of.get(&d).copied().unwrap_or(d);
            if !deps.contains(&d) {
                deps.push(d);
            }
        }
        for d in deps {
            g.add_control_dependency(fused, d)?;
        }
        for &m in &region.ctrl_targets {
            g.redirect_control_dependencies(m, fused)?;
        }
        for &m in &region.members {
            self.fused_of.insert(m, fused);
        }
        for (j, &o) in region.outputs.iter().enumerate() {
            let new = Output::new(fused, j);
            g.replace_output(o, new)?;
            self.remap.insert(o, new);
        }

        let copied_constants = region
            .constants
            .iter()
            .map(|&c| src.node(c).map(|n| n.name().to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(KernelReport {
            node: fused,
            name,
            fused_nodes: fused_names,
            copied_constants,
            live_ins: region.live_ins.len(),
            outputs: region.outputs.len(),
        })
    }

    /// Where the value `o` of the original function lives now.
    fn current(&self, o: Output) -> Result<Output, PassError> {
        match self.remap.get(&o) {
            Some(&new) => Ok(new),
            None if self.fused_of.contains_key(&o.node) => Err(broken(format!(
                "value {}:{} was fused but is not a kernel output",
                o.node, o.index
            ))),
            None => Ok(o),
        }
    }

    /// `FusedKernel_<k>` for the first `k` not yet tried whose name is free in `g`.
    fn kernel_name(&mut self, g: &Function) -> String {
        loop {
            let name = format!("FusedKernel_{}", self.next_index);
            self.next_index += 1;
            if g.node_by_name(&name).is_none() {
                return name;
            }
        }
    }
}

/// The body of the kernel of `region`: parameters for the live-ins (named after the values
/// they carry), copies of the copied constants and of the members, results for the outputs.
fn build_body(src: &Function, region: &Region, name: &str) -> Result<Function, PassError> {
    let mut body = Function::new(name);
    let nodes = region.live_ins.len()
        + region.constants.len()
        + region.members.len()
        + region.outputs.len();
    body.reserve(nodes);
    let mut map: HashMap<Output, Output> =
        HashMap::with_capacity_and_hasher(nodes, Default::default());
    for &o in &region.live_ins {
        let producer = src.node(o.node)?;
        let base = if producer.outputs().len() == 1 {
            producer.name().to_string()
        } else {
            format!("{}:{}", producer.name(), o.index)
        };
        let t = src.output_type(o)?;
        let p = body.add_parameter(free_name(&body, &base), t.element_type, t.shape.clone())?;
        map.insert(o, Output::from(p));
    }
    let constants: HashSet<NodeId> = region.constants.iter().copied().collect();
    for &m in &region.members {
        let node = src.node(m)?;
        let mut inputs: SmallVec<[Output; 2]> = SmallVec::new();
        for &o in node.inputs() {
            if !map.contains_key(&o) && constants.contains(&o.node) {
                let c = body.import_node_from(src, o.node, &[])?;
                map.insert(o, Output::from(c));
            }
            let mapped = map.get(&o).copied().ok_or_else(|| {
                broken(format!("input of `{}` is not in its region", node.name()))
            })?;
            inputs.push(mapped);
        }
        let id = body.import_node_from(src, m, &inputs)?;
        for i in 0..node.outputs().len() {
            map.insert(Output::new(m, i), Output::new(id, i));
        }
    }
    for &o in &region.outputs {
        let mapped = map.get(&o).copied().ok_or_else(|| {
            broken(format!(
                "kernel output {}:{} is not in the body",
                o.node, o.index
            ))
        })?;
        body.add_result(mapped, None)?;
    }
    body.validate()
        .map_err(|e| broken(format!("the body of `{name}` does not validate: {e}")))?;
    Ok(body)
}

/// `base`, or `base_<k>` for the first `k` that makes it free in `f`.
fn free_name(f: &Function, base: &str) -> String {
    if f.node_by_name(base).is_none() {
        return base.to_string();
    }
    let mut k = 1usize;
    loop {
        let name = format!("{base}_{k}");
        if f.node_by_name(&name).is_none() {
            return name;
        }
        k += 1;
    }
}
