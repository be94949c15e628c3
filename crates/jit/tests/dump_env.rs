//! `GRAPHLIFT_DUMP` makes the backend write the plan after each compile stage, beside the pass
//! pipeline's dumps (its own test binary: the variable is process-wide).

use graphlift_ir::{ElementType::F32, FunctionBuilder, Op};
use graphlift_jit::CpuJitBackend;

#[test]
fn each_compile_stage_is_dumped_in_order() {
    let dir = std::env::temp_dir().join(format!("graphlift-stage-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::env::set_var("GRAPHLIFT_DUMP", &dir);
    let b = FunctionBuilder::new("mm_bias_relu");
    let x = b.parameter("x", F32, [4, 8]);
    let w = b.parameter("w", F32, [8, 16]);
    let bias = b.parameter("bias", F32, [16]);
    let y = b.op(Op::MatMul, &[x, w]);
    let f = b.finish(&[(y + bias).relu()]).unwrap();
    CpuJitBackend::new().compile_executable(&f).unwrap();
    std::env::remove_var("GRAPHLIFT_DUMP");

    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    assert!(read("00-input.txt").contains("MatMul"));
    let steps = read("cpu-jit-01-steps.txt");
    assert!(steps.contains("(MatMul) Native"), "{steps}");
    assert!(steps.contains("(FusedKernel) Kernel(0)"), "{steps}");
    let fused = read("cpu-jit-02-epilogue_fusion.txt");
    assert!(fused.contains("epilogue Kernel(0)"), "{fused}");
    assert!(read("cpu-jit-03-code_paths.txt").contains("streams false"));
    assert!(read("cpu-jit-04-state.txt").contains("(MatMul) Native"));
    assert!(read("cpu-jit-05-liveness.txt").contains("frees"));
    assert!(read("cpu-jit-06-buffers.txt").contains("buffers:"));
    assert!(read("cpu-jit-07-kernels.txt").contains(" bytes"));
    assert!(read("cpu-jit-08-packing.txt").contains("(MatMul) Native"));
    let _ = std::fs::remove_dir_all(&dir);
}
