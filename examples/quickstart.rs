//! nGraph's `halide_subgraph` test on CPU-JIT: relu((A+B)*C)+D over shape {8}.
//!
//! Run with `cargo run --release --example quickstart`.

use graphlift::{Backend, ElementType, FunctionBuilder, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let b = FunctionBuilder::new("halide_subgraph");
    let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, ElementType::F32, [8]));
    let f = b.finish(&[((a + bb) * c).relu() + d])?;
    let ops = f.nodes().filter(|n| n.op().is_elementwise()).count();

    let exe = Backend::create("CPU-JIT")?.compile(&f)?;
    let data = Tensor::from_vec(vec![-1.0f32, 4.0, -2.0, 5.0, 1.0, 5.0, 7.0, 9.0], [8])?;
    let out = exe.run(&[data.clone(), data.clone(), data.clone(), data])?;
    let got = out[0].read::<f32>()?;
    println!("relu((A+B)*C)+D = {got:?}");

    let expected = [1.0f32, 36.0, 6.0, 55.0, 3.0, 55.0, 105.0, 171.0];
    if got != expected {
        return Err(format!("expected {expected:?}").into());
    }
    let kernels = exe.kernels();
    for k in &kernels {
        println!(
            "{} ops became {} kernel(s): {} fuses [{}]",
            ops,
            kernels.len(),
            k.name,
            k.fused_nodes.join(", ")
        );
    }
    if kernels.len() != 1 || kernels[0].fused_nodes.len() != ops {
        return Err("expected the four ops in one kernel".into());
    }
    Ok(())
}
