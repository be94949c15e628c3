//! The backend streams the outputs of large standalone kernels only.

use graphlift_ir::{ElementType, Function, FunctionBuilder};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Executable, Tensor};

#[test]
fn the_backend_streams_large_standalone_kernels_only() {
    let e1 = |n: usize| {
        let b = FunctionBuilder::new("e1");
        let p: Vec<_> = (0..4)
            .map(|k| b.parameter(&format!("p{k}"), ElementType::F32, [n]))
            .collect();
        b.finish(&[((p[0] + p[1]) * p[2]).relu() + p[3]]).unwrap()
    };
    let streams = |backend: &CpuJitBackend, f: &Function| {
        let exe = backend.compile_executable(f).unwrap();
        let kernels = exe.kernels();
        // Strip-mined to stream, it still calls no library function.
        assert_eq!(exe.kernel_calls_library(&kernels[0].name), Some(false));
        exe.kernel_streams(&kernels[0].name).unwrap()
    };
    // Without assembled kernels: where AVX2 kernels are assembled, their plain stores
    // supersede streaming (`Target::stream_off`).
    let on = CpuJitBackend::new()
        .with_assembler(false)
        .with_streaming_stores(true);
    let off = CpuJitBackend::new().with_streaming_stores(false);
    assert!(!off.streaming_stores());
    assert_eq!(on.streaming_stores(), cfg!(target_arch = "x86_64"));
    // 20 bytes per element: in cache, no streaming.
    assert!(!streams(&on, &e1(1 << 12)));
    // Above twice the last-level cache (on hosts whose cache keeps the test small).
    let llc = graphlift_kernels::stream::last_level_cache_bytes();
    if llc <= 64 << 20 {
        let n = llc / 10 + 4096;
        let f = e1(n);
        assert_eq!(streams(&on, &f), cfg!(target_arch = "x86_64"));
        assert!(!streams(&off, &f));
        // The results are the plain kernel's.
        let ins: Vec<Tensor> = (0..4)
            .map(|k| Tensor::from_vec(super::uniform(n, 10 + k), [n]).unwrap())
            .collect();
        let out = |backend: &CpuJitBackend| {
            let exe = backend.compile_executable(&f).unwrap();
            let mut o = [Tensor::zeros(ElementType::F32, [n]).unwrap()];
            exe.call(&mut o, &ins).unwrap();
            super::bits(&o)
        };
        assert_eq!(out(&on.clone().with_threads(2)), out(&off));
    }
}
