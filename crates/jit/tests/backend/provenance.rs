//! Kernel provenance of the CPU-JIT backend: fused nodes with their tags and pass
//! histories, IR, code ranges per node, steps, and the pass and extraction reports.

use graphlift_ir::{ElementType::F32, FunctionBuilder};
use graphlift_jit::{CpuJitBackend, JitKernel};
use graphlift_passes::{ExtractionConfig, OutsideReason};
use graphlift_runtime::Executable;

fn model() -> graphlift_ir::Function {
    let b = FunctionBuilder::new("model");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [16]));
    let add = (x + y).named("add").tagged("onnx:Add:add");
    let e1 = add.exp().named("e1").tagged("onnx:Exp:e1");
    let e2 = add.exp().named("e2").tagged("onnx:Exp:e2");
    let out = (e1 * e2).named("mul").tagged("onnx:Mul:mul");
    let small = b.parameter("s", F32, [4]).relu().named("lonely");
    b.finish(&[out, small]).unwrap()
}

/// The backend without single-op kernels: a lone op stays outside, as nGraph leaves it.
fn without_single_op_kernels() -> CpuJitBackend {
    CpuJitBackend::with_config(ExtractionConfig::default())
}

/// The default backend runs a lone elementwise op as a kernel of its own (JIT code, not
/// the reference kernel).
#[test]
fn a_lone_op_is_a_kernel_by_default() {
    let exe = CpuJitBackend::new().compile_executable(&model()).unwrap();
    let ks = exe.kernels();
    assert_eq!(ks.len(), 2, "{ks:?}");
    assert!(ks.iter().any(|k| k.fused_nodes == ["lonely"]), "{ks:?}");
    assert!(exe.steps().iter().all(|s| s.fused));
    assert!(exe.extraction_report().unwrap().outside.is_empty());
}

#[test]
fn kernel_info_lists_nodes_tags_histories_ir_and_code_ranges() {
    let exe = without_single_op_kernels()
        .compile_executable(&model())
        .unwrap();
    let ks = exe.kernels();
    assert_eq!(ks.len(), 1);
    let k = &ks[0];
    assert_eq!(k.fused_nodes.len(), 3, "{:?}", k.fused_nodes);
    assert_eq!(k.node_tags.len(), 3);
    assert_eq!(k.pass_history.len(), 3);
    let exp = k.fused_nodes.iter().position(|n| n == "e1").unwrap();
    assert_eq!(k.node_tags[exp], ["onnx:Exp:e1", "onnx:Exp:e2"]);
    assert_eq!(k.pass_history[exp], ["common_subexpression_elimination"]);
    for t in ["onnx:Add:add", "onnx:Exp:e1", "onnx:Exp:e2", "onnx:Mul:mul"] {
        assert!(
            k.tags.iter().any(|x| x == t),
            "{t} missing from {:?}",
            k.tags
        );
    }
    assert_eq!(Some(&*k.ir), exe.kernel_ir(&k.name));
    assert!(k.ir.contains("function"), "{}", k.ir);
    assert!(k.code_size > 0);

    // Every code range lies inside the code and names a fused node or the live-in a load
    // reads; each fused node has one.
    assert!(!k.code_ranges.is_empty());
    for r in k.code_ranges.iter() {
        assert!(r.start < r.end && r.end as usize <= k.code_size, "{r:?}");
        let live_in = ["x", "y"].contains(&r.node.as_str());
        assert!(k.fused_nodes.contains(&r.node) || live_in, "{r:?}");
    }
    for n in &k.fused_nodes {
        assert!(
            k.code_ranges.iter().any(|r| &r.node == n),
            "no code for {n}"
        );
    }
    assert!(k.code_ranges.windows(2).all(|w| w[0].end <= w[1].start));
}

#[test]
fn executable_lists_steps_and_keeps_the_pass_and_extraction_reports() {
    let exe = without_single_op_kernels()
        .compile_executable(&model())
        .unwrap();
    let steps = exe.steps();
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(steps.iter().any(|s| s.fused && s.op == "FusedKernel"));
    let lonely = steps.iter().find(|s| s.node == "lonely").unwrap();
    assert!(!lonely.fused);
    assert_eq!(lonely.op, "Relu");

    let names: Vec<&str> = exe.pass_report().passes.iter().map(|p| p.name).collect();
    assert_eq!(names.last(), Some(&"subgraph_extraction"));
    let ex = exe.extraction_report().unwrap();
    assert_eq!(ex.kernels.len(), 1);
    assert_eq!(ex.outside.len(), 1);
    assert_eq!(ex.outside[0].name, "lonely");
    assert_eq!(ex.outside[0].reason, OutsideReason::Alone);
}

#[test]
fn jit_kernel_info_has_ir_and_ranges() {
    let b = FunctionBuilder::new("k");
    let x = b.parameter("x", F32, [8]);
    let body = b.finish(&[(x.abs() + x).named("sum")]).unwrap();
    let k = JitKernel::compile(&body).unwrap();
    let info = k.info();
    assert_eq!(&*info.ir, k.ir());
    assert!(info.code_ranges.iter().any(|r| r.node == "sum"));
    assert_eq!(info.pass_history.len(), info.fused_nodes.len());
}
