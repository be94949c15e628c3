use graphlift::Executable;
use graphlift::exprs::peer_expression;
use graphlift_jit::CpuJitBackend;
fn main() {
    let f = peer_expression("E4", 16384).unwrap();
    let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
    for k in exe.kernels() {
        println!("{}", exe.kernel_ir(&k.name).unwrap());
    }
}
