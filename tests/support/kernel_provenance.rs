//! The kernel provenance check of the ONNX node tests: every fused kernel of a CPU-JIT
//! executable names, in its provenance, the ONNX nodes of all the ops it contains, and only
//! those.

use std::collections::BTreeSet;
use std::path::Path;

use graphlift::jit::CpuJitBackend;
use graphlift::onnx::prost::Message;
use graphlift::onnx::proto::ModelProto;
use graphlift::{Function, KernelInfo, Op};

/// The tags the importer gives the nodes of `model`: `onnx:<op_type>:<node name>` (the
/// first output's name, or the op type, for an unnamed node).
fn onnx_node_tags(model: &Path) -> Result<BTreeSet<String>, String> {
    let bytes = std::fs::read(model).map_err(|e| format!("{}: {e}", model.display()))?;
    let m = ModelProto::decode(bytes.as_slice()).map_err(|e| e.to_string())?;
    Ok(m.graph
        .map(|g| {
            g.node
                .into_iter()
                .map(|n| {
                    let base = if n.name.is_empty() {
                        n.output
                            .iter()
                            .find(|o| !o.is_empty())
                            .cloned()
                            .unwrap_or_else(|| n.op_type.clone())
                    } else {
                        n.name.clone()
                    };
                    format!("onnx:{}:{}", n.op_type, base)
                })
                .collect()
        })
        .unwrap_or_default())
}

/// Tags of the Constants copied into the body of the kernel `name` (a folded constant
/// carries the tags of the computation it replaced), compiling `function` again to reach it.
fn copied_constant_tags(function: &Function, name: &str) -> Result<BTreeSet<String>, String> {
    let exe = CpuJitBackend::new()
        .compile_executable(function)
        .map_err(|e| e.to_string())?;
    let node = exe
        .function()
        .node_by_name(name)
        .ok_or_else(|| format!("kernel `{name}` not in the compiled function"))?;
    let Op::FusedKernel(k) = node.op() else {
        return Err(format!("`{name}` is not a fused kernel"));
    };
    Ok(k.body
        .nodes()
        .filter(|n| matches!(n.op(), Op::Constant(_)))
        .flat_map(|n| n.tags().iter().map(str::to_string))
        .collect())
}

/// Checks the kernels of `function` (imported from `model`) compiled as `kernels`: each
/// fused node carries at least one ONNX node tag, all of them real nodes of the model; the
/// kernel's provenance holds every one of its fused nodes' ONNX tags; and every ONNX node
/// tag of the kernel belongs to a fused node or to a Constant copied into it.
pub fn check(model: &Path, function: &Function, kernels: &[KernelInfo]) -> Result<(), String> {
    if kernels.is_empty() {
        return Ok(());
    }
    let known = onnx_node_tags(model)?;
    for k in kernels {
        let mut contained = BTreeSet::new();
        for (i, n) in k.fused_nodes.iter().enumerate() {
            let tags = k.node_tags.get(i).cloned().unwrap_or_default();
            let onnx: Vec<&String> = tags.iter().filter(|t| known.contains(*t)).collect();
            if onnx.is_empty() {
                return Err(format!(
                    "kernel `{}`: fused node `{n}` names no ONNX node (tags {tags:?})",
                    k.name
                ));
            }
            contained.extend(onnx.into_iter().cloned());
        }
        let kernel_onnx: BTreeSet<String> = k
            .tags
            .iter()
            .filter(|t| known.contains(*t))
            .cloned()
            .collect();
        if let Some(missing) = contained.difference(&kernel_onnx).next() {
            return Err(format!(
                "kernel `{}`: provenance {:?} lacks `{missing}` of a fused node",
                k.name, k.tags
            ));
        }
        let extra: Vec<&String> = kernel_onnx.difference(&contained).collect();
        if !extra.is_empty() {
            let constants = copied_constant_tags(function, &k.name)?;
            if let Some(t) = extra.iter().find(|t| !constants.contains(**t)) {
                return Err(format!(
                    "kernel `{}`: provenance names `{t}`, which none of its ops comes from",
                    k.name
                ));
            }
        }
        for t in k.tags.iter().filter(|t| t.starts_with("onnx:")) {
            let other = [
                "onnx:initializer:",
                "onnx:graph_input:",
                "onnx:graph_output:",
            ];
            if !known.contains(t) && !other.iter().any(|p| t.starts_with(p)) {
                return Err(format!(
                    "kernel `{}`: tag `{t}` names no node of the model",
                    k.name
                ));
            }
        }
    }
    Ok(())
}
