//! The storage-only element types (float8, FLOAT4E2M1, INT4, ...) on CPU-JIT: fused kernels
//! do not lower them, so their conversions run on reference kernels beside the fused
//! arithmetic, with the INTERPRETER's results; layout ops move them; arithmetic on them is
//! refused when the node is built.

use graphlift_ir::ElementType::{F32, F8E4M3FN, F8E5M2, I4};
use graphlift_ir::{FunctionBuilder, Op, Shape, SliceAxis, TensorData};
use graphlift_jit::CpuJitBackend;
use graphlift_passes::OutsideReason;
use graphlift_runtime::{Backend, Executable, InterpreterBackend, Tensor};

#[test]
fn conversions_through_float8_run_outside_kernels_and_match_the_interpreter() {
    let b = FunctionBuilder::new("f8");
    let x = b.parameter("x", F32, [6]);
    let q = x.convert(F8E4M3FN).named("to_f8");
    let y = q.convert(F32).named("from_f8") * 2.0;
    let body = b.finish(&[y, q]).unwrap();
    let x = Tensor::from_vec(vec![0.3f32, -1e6, f32::NAN, 464.0, -0.0, 17.0], [6]).unwrap();
    let exe = CpuJitBackend::new().compile_executable(&body).unwrap();
    let got = exe.run(std::slice::from_ref(&x)).unwrap();
    let want = InterpreterBackend
        .compile(&body)
        .unwrap()
        .run(&[x])
        .unwrap();
    assert!(got[0].data().same_bits(want[0].data()));
    assert_eq!(got[1].data(), want[1].data());
    let doubled = got[0].read::<f32>().unwrap();
    assert_eq!(doubled[..2], [0.3125 * 2.0, -448.0 * 2.0]);
    assert!(doubled[2].is_nan());
    assert_eq!(doubled[3..], [896.0, -0.0, 32.0]);
    let report = exe.extraction_report().unwrap();
    for name in ["to_f8", "from_f8"] {
        let outside = report.outside.iter().find(|o| o.name == name).unwrap();
        assert_eq!(
            outside.reason,
            OutsideReason::ElementType {
                element_type: F8E4M3FN
            }
        );
    }
}

#[test]
fn layout_ops_move_int4_elements() {
    let b = FunctionBuilder::new("i4");
    let x = b.parameter("x", I4, [2, 3]);
    let t = b.op(Op::Transpose(vec![1, 0]), &[x]);
    let r = b.op(Op::Reshape(Shape::from([6])), &[t]);
    // Concat, Slice (reversed) and Gather: [r, r] -> every other element backwards -> [5, 0].
    let c = b.op(Op::Concat(0), &[r, r]);
    let s = b.op(
        Op::Slice(vec![SliceAxis {
            start: 11,
            step: -2,
            len: 6,
        }]),
        &[c],
    );
    let g = b.op(Op::Gather(0), &[s, b.constant(vec![5i64, 0], [2])]);
    let body = b.finish(&[r, g]).unwrap();
    let values = [-8i8, -1, 0, 1, 6, 7].map(graphlift_ir::I4);
    let x = Tensor::from_data(TensorData::I4(values.to_vec()), Shape::from([2, 3])).unwrap();
    let want = TensorData::I4([-8i8, 1, -1, 6, 0, 7].map(graphlift_ir::I4).to_vec());
    for backend in [
        Box::new(CpuJitBackend::new()) as Box<dyn Backend>,
        Box::new(InterpreterBackend),
    ] {
        let out = backend
            .compile(&body)
            .unwrap()
            .run(std::slice::from_ref(&x))
            .unwrap();
        assert_eq!(out[0].data(), &want);
    }
}

#[test]
fn arithmetic_on_a_storage_type_is_an_error_naming_the_op_and_type() {
    let b = FunctionBuilder::new("bad");
    let x = b.parameter("x", F8E5M2, [4]);
    let y = b.parameter("y", F8E5M2, [4]);
    let err = b.finish(&[(x + y).named("sum")]).unwrap_err().to_string();
    assert!(err.contains("Add") && err.contains("f8e5m2"), "{err}");
    let b = FunctionBuilder::new("bad_compare");
    let x = b.parameter("x", F8E5M2, [4]);
    let err = b.finish(&[x.gt(x)]).unwrap_err().to_string();
    assert!(err.contains("Greater") && err.contains("f8e5m2"), "{err}");
}
