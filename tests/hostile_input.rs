//! Hostile input through the public API: shapes whose element count overflows, buffers that
//! do not fill their shape, calls with the wrong tensors, values taken from another builder,
//! a fused kernel with a broken body. Each is an error that names what is wrong and where
//! (op, node, parameter, shape), never a panic, and a failed call writes no output: outputs
//! are pre-filled with a sentinel and compared after the error, on INTERPRETER and CPU-JIT.
//!
//! A failure in the middle of a run cannot be provoked: once a call's tensors match the
//! Executable (count, element type, shape and data length, all checked before anything
//! runs), no op fails at run time (integer division by zero gives 0, conversions saturate,
//! ...), and a fused kernel body that would fail is rejected when the Function validates, at
//! compile time (`broken_fused_kernel_bodies_are_rejected_at_compile_time`). ONNX models
//! built to be hostile are tested in `crates/onnx/src/tests.rs` (they use its model helpers).

use std::sync::Arc;

use graphlift::ir::{FusedKernel, Output, UnaryOp};
use graphlift::jit::{JitError, JitKernel};
use graphlift::{
    select, Backend,
    ElementType::{Bool, F32, F64, I32, I64},
    Executable, Function, FunctionBuilder, IrError, Op, RuntimeError, Shape, Tensor, TensorData,
};

const BACKENDS: [&str; 2] = ["INTERPRETER", "CPU-JIT"];

/// An extent that fits in `usize` but overflows it when doubled.
const HUGE: usize = usize::MAX / 2 + 1;

/// This file, as creation sites name it.
const HERE: &str = "tests/hostile_input.rs:";

fn backend(name: &str) -> Arc<dyn graphlift::runtime::Backend> {
    Backend::create(name).unwrap()
}

// ----- shapes whose element count overflows usize -----

#[test]
fn overflowing_parameter_and_constant_shapes_name_the_node() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [HUGE, 2]);
    let e = b.finish(&[x.relu()]).unwrap_err();
    assert!(
        matches!(&e, IrError::ShapeOverflow { at, shape } if at.starts_with("Parameter `x` (created at tests/hostile_input.rs:") && shape.dims() == [HUGE, 2]),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .ends_with(&format!("shape [{HUGE}, 2]: element count overflows usize")),
        "{e}"
    );

    let b = FunctionBuilder::new("g");
    let ok = b.parameter("ok", F32, [2]);
    let c = b.constant(TensorData::F32(vec![1.0]), [2, HUGE, 3]);
    let e = b.finish(&[ok + c]).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("Constant `Constant_1` (created at {HERE}"))
            && e.contains(&format!("shape [2, {HUGE}, 3]: element count overflows")),
        "{e}"
    );

    // The Function API says the same.
    let mut f = Function::new("h");
    let e = f
        .add_parameter("p", I64, [HUGE, 4])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("Parameter `p` (created at {HERE}")),
        "{e}"
    );
    let e = f
        .add_constant(TensorData::Bool(vec![]), [HUGE, HUGE])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("Constant `Constant_0` (created at {HERE}")),
        "{e}"
    );
    assert_eq!(f.node_count(), 0, "nothing was added");
}

#[test]
fn broadcasts_to_an_overflowing_shape_name_the_op_and_operands() {
    // Explicitly.
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [1]);
    let e = b.finish(&[x.broadcast_to([3, HUGE])]).unwrap_err();
    assert!(matches!(e, IrError::Inference(_)), "{e:?}");
    let e = e.to_string();
    assert!(
        e.starts_with(&format!(
            "Broadcast<[3, {HUGE}]> `Broadcast_1` (created at {HERE}"
        )) && e.contains("element count overflows usize")
            && e.ends_with("operands: f32[1]"),
        "{e}"
    );
    // Implicitly: two shapes that each fit, whose numpy broadcast does not.
    let b = FunctionBuilder::new("g");
    let tall = b.parameter("tall", F32, [HUGE, 1]);
    let wide = b.parameter("wide", F32, [1, 4]);
    let e = b.finish(&[tall * wide]).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("Broadcast<[{HUGE}, 4]>"))
            && e.contains("overflows")
            && e.ends_with(&format!("operands: f32[{HUGE}, 1]")),
        "{e}"
    );
    // Through the Function API.
    let mut f = Function::new("h");
    let p = f.add_parameter("p", I32, []).unwrap();
    let e = f
        .add_node(Op::Broadcast(Shape::new([HUGE, 2])), &[p.into()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("target shape invalid") && e.contains(HERE),
        "{e}"
    );
}

#[test]
fn tensors_of_overflowing_shapes_are_errors_on_both_backends() {
    for name in BACKENDS {
        let be = backend(name);
        let e = be.create_tensor(F32, Shape::new([HUGE, 2])).unwrap_err();
        assert!(
            matches!(&e, RuntimeError::Ir(IrError::ShapeOverflow { at, .. }) if at == "f32 tensor"),
            "{name}: {e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!("f32 tensor: shape [{HUGE}, 2]: element count overflows usize")
        );
        // The count fits, the bytes do not.
        let e = be.create_tensor(F64, Shape::new([1 << 61])).unwrap_err();
        assert!(matches!(e, RuntimeError::Data(_)), "{name}: {e:?}");
        assert_eq!(
            e.to_string(),
            "tensor data: f64 tensor of shape [2305843009213693952]: 2305843009213693952 \
             elements of 8 bytes exceed isize::MAX bytes"
        );
    }
    let e = Tensor::from_vec(vec![true], [HUGE, 3]).unwrap_err();
    assert!(e.to_string().starts_with("bool tensor: shape"), "{e}");
}

#[test]
fn functions_too_large_for_memory_compile_and_fail_to_run_cleanly() {
    // Element counts that fit in usize (usize::MAX itself among them) but no allocation
    // can hold: both backends compile them (the JIT's loop bounds and traffic estimate do
    // not overflow), and running fails allocating the outputs, naming type and shape.
    for n in [usize::MAX, 1 << 62, (1 << 61) + 3] {
        let b = FunctionBuilder::new("big");
        let x = b.parameter("x", F32, [n]);
        let s = b.parameter("s", F32, []);
        let k = b.parameter("k", Bool, [n]);
        let f = b.finish(&[(x + s).relu() * 2.0, k.convert(F64)]).unwrap();
        for name in BACKENDS {
            let exe = backend(name).compile(&f).unwrap();
            let small = [
                Tensor::zeros(F32, [1]).unwrap(),
                Tensor::zeros(F32, []).unwrap(),
                Tensor::zeros(Bool, [1]).unwrap(),
            ];
            let e = exe.run(&small).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "tensor data: f32 tensor of shape [{n}]: {n} elements of 4 bytes exceed \
                     isize::MAX bytes"
                ),
                "{name}"
            );
        }
    }
}

#[test]
fn zero_size_shapes_with_huge_extents_are_legal_and_run_on_both_backends() {
    // [0, HUGE] holds no element: legal, and nothing is read or written.
    let b = FunctionBuilder::new("empty");
    let x = b.parameter("x", F32, [0, HUGE]);
    let s = b.parameter("s", F32, []);
    let f = b.finish(&[(x + s).relu(), x.gt(s)]).unwrap();
    for name in BACKENDS {
        let exe = backend(name).compile(&f).unwrap();
        let out = exe
            .run(&[
                Tensor::zeros(F32, [0, HUGE]).unwrap(),
                Tensor::from_vec(vec![1.0f32], []).unwrap(),
            ])
            .unwrap();
        assert_eq!(out[0].tensor_type().to_string(), format!("f32[0, {HUGE}]"));
        assert!(out[0].is_empty() && out[1].is_empty(), "{name}");
    }
}

// ----- buffers that do not fill their shape -----

#[test]
fn data_that_does_not_fill_its_shape_is_rejected_by_every_constructor() {
    let e = Tensor::from_vec(vec![1.0f32; 3], [2, 2]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tensor data: 3 f32 elements given for shape [2, 2], which holds 4"
    );
    let e = Tensor::from_vec(vec![1i64; 5], [2, 2]).unwrap_err();
    assert!(e.to_string().contains("5 i64 elements"), "{e}");
    let e = Tensor::from_data(TensorData::Bool(vec![true]), [0]).unwrap_err();
    assert!(
        e.to_string().contains("for shape [0], which holds 0"),
        "{e}"
    );
    let e = Tensor::from_data(TensorData::F64(vec![]), Shape::scalar()).unwrap_err();
    assert!(e.to_string().contains("for shape [], which holds 1"), "{e}");
    let mut t = Tensor::zeros(I32, [3]).unwrap();
    let e = t.write(&[1i32, 2]).unwrap_err();
    assert!(e
        .to_string()
        .contains("write of 2 elements into a tensor of 3"));
    assert_eq!(t.read::<i32>().unwrap(), &[0, 0, 0], "nothing was written");

    // Constants: the builder and the Function API name the constant and its shape.
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [2, 3]);
    let c = b.constant(vec![1.0f32, 2.0], [3]);
    let e = b.finish(&[x + c]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "constant `Constant_1`: 2 elements given for shape [3], which holds 3"
    );
    let mut f = Function::new("g");
    assert!(matches!(
        f.add_constant(TensorData::I32(vec![1, 2, 3]), [2]),
        Err(IrError::ConstantLength {
            len: 3,
            expected: 2,
            ..
        })
    ));
}

/// `y = relu(x + bias)` on f32 `[4, 3]` and `n = -k` on i32 `[4]`: two results, three
/// parameters, a broadcast and (on CPU-JIT) two kernels.
fn two_results() -> Function {
    let b = FunctionBuilder::new("two_results");
    let x = b.parameter("x", F32, [4, 3]);
    let bias = b.parameter("bias", F32, [3]);
    let k = b.parameter("k", I32, [4]);
    b.finish(&[(x + bias).relu(), -k]).unwrap()
}

fn good_inputs() -> Vec<Tensor> {
    vec![
        Tensor::from_vec((0..12).map(|i| i as f32 - 6.0).collect(), [4, 3]).unwrap(),
        Tensor::from_vec(vec![0.5f32, -1.0, 2.0], [3]).unwrap(),
        Tensor::from_vec(vec![1i32, -2, i32::MIN, 7], [4]).unwrap(),
    ]
}

/// Outputs of the right types, filled with values no call computes.
fn sentinels() -> Vec<Tensor> {
    vec![
        Tensor::from_vec(vec![-1234.5f32; 12], [4, 3]).unwrap(),
        Tensor::from_vec(vec![-777i32; 4], [4]).unwrap(),
    ]
}

/// Calls `exe` with `outputs` and `inputs` through `call` and `call_with_validate`; both
/// must fail, leave every output as it was, and give the same error, which is returned.
fn failing_call(exe: &dyn Executable, outputs: &[Tensor], inputs: &[Tensor]) -> RuntimeError {
    let mut outs = outputs.to_vec();
    let e1 = exe.call(&mut outs, inputs).unwrap_err();
    assert_eq!(outs, outputs, "call wrote an output before failing: {e1}");
    let e2 = exe.call_with_validate(&mut outs, inputs).unwrap_err();
    assert_eq!(outs, outputs, "call_with_validate wrote an output: {e2}");
    assert_eq!(e1, e2);
    e1
}

#[test]
fn tensors_resized_through_data_mut_are_rejected_before_anything_runs() {
    for name in BACKENDS {
        let exe = backend(name).compile(&two_results()).unwrap();
        // An input whose data is shorter than its shape.
        let mut inputs = good_inputs();
        if let TensorData::F32(v) = inputs[1].data_mut() {
            v.pop();
        }
        assert_eq!(inputs[1].tensor_type().to_string(), "f32[3]");
        let e = failing_call(exe.as_ref(), &sentinels(), &inputs);
        assert!(matches!(e, RuntimeError::Data(_)), "{name}: {e:?}");
        assert_eq!(
            e.to_string(),
            "tensor data: input 1 (`bias`): the f32[3] tensor holds 2 elements, its shape needs 3",
            "{name}"
        );
        // An output whose data is longer than its shape.
        let mut outputs = sentinels();
        if let TensorData::I32(v) = outputs[1].data_mut() {
            v.push(5);
        }
        let e = failing_call(exe.as_ref(), &outputs, &good_inputs());
        let result = &exe.results()[1].name;
        assert!(
            e.to_string()
                .contains(&format!("output 1 (`{result}`): the i32[4] tensor holds 5")),
            "{name}: {e}"
        );
        assert!(exe.run(&inputs).is_err());
    }
    // A JIT kernel called directly checks its buffers too.
    let b = FunctionBuilder::new("kernel");
    let x = b.parameter("x", F32, [8]);
    let k = JitKernel::compile(&b.finish(&[x * 2.0]).unwrap()).unwrap();
    let mut input = Tensor::zeros(F32, [8]).unwrap();
    if let TensorData::F32(v) = input.data_mut() {
        v.truncate(3);
    }
    let mut out = [Tensor::from_vec(vec![9.0f32; 8], [8]).unwrap()];
    let e = k.call(&[&input], &mut out).unwrap_err();
    assert!(matches!(e, JitError::Buffer { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "kernel `kernel`: input 0 holds 3 f32, the kernel needs 8 f32"
    );
    assert_eq!(out[0].read::<f32>().unwrap(), &[9.0; 8]);
}

// ----- wrong tensors given to a call -----

#[test]
fn wrong_arguments_name_the_parameter_on_both_backends_and_write_no_output() {
    for name in BACKENDS {
        let exe = backend(name).compile(&two_results()).unwrap();
        let mut ok = sentinels();
        exe.call_with_validate(&mut ok, &good_inputs()).unwrap();
        assert_ne!(ok, sentinels(), "{name}: a good call writes the outputs");

        // Wrong element type.
        let mut inputs = good_inputs();
        inputs[1] = Tensor::from_vec(vec![0.5f64, -1.0, 2.0], [3]).unwrap();
        let e = failing_call(exe.as_ref(), &sentinels(), &inputs);
        assert!(
            matches!(&e, RuntimeError::ArgumentType { what: "input", index: 1, name, .. } if name == "bias"),
            "{name}: {e:?}"
        );
        assert_eq!(
            e.to_string(),
            "input 1 (`bias`): expected f32[3], got f64[3]"
        );
        // Wrong shape (same element count).
        let mut inputs = good_inputs();
        inputs[0] = Tensor::zeros(F32, [3, 4]).unwrap();
        let e = failing_call(exe.as_ref(), &sentinels(), &inputs);
        assert_eq!(
            e.to_string(),
            "input 0 (`x`): expected f32[4, 3], got f32[3, 4]"
        );
        // Wrong rank.
        let mut inputs = good_inputs();
        inputs[2] = Tensor::zeros(I32, [4, 1]).unwrap();
        let e = failing_call(exe.as_ref(), &sentinels(), &inputs);
        assert_eq!(
            e.to_string(),
            "input 2 (`k`): expected i32[4], got i32[4, 1]"
        );

        // Wrong number of inputs: too few, too many, none.
        let e = failing_call(exe.as_ref(), &sentinels(), &good_inputs()[..2]);
        assert_eq!(e.to_string(), "inputs: expected 3 tensor(s), got 2");
        let mut more = good_inputs();
        more.push(Tensor::zeros(F32, [1]).unwrap());
        let e = failing_call(exe.as_ref(), &sentinels(), &more);
        assert_eq!(e.to_string(), "inputs: expected 3 tensor(s), got 4");
        assert!(matches!(
            exe.run(&[]),
            Err(RuntimeError::ArgumentCount {
                expected: 3,
                got: 0,
                ..
            })
        ));

        // Wrong outputs: too few, too many, a wrong type (named after its Result).
        let e = failing_call(exe.as_ref(), &sentinels()[..1], &good_inputs());
        assert_eq!(e.to_string(), "outputs: expected 2 tensor(s), got 1");
        let mut outs = sentinels();
        outs.push(Tensor::zeros(F32, [1]).unwrap());
        let e = failing_call(exe.as_ref(), &outs, &good_inputs());
        assert_eq!(e.to_string(), "outputs: expected 2 tensor(s), got 3");
        let mut outs = sentinels();
        outs[1] = Tensor::from_vec(vec![-777i64; 4], [4]).unwrap();
        let e = failing_call(exe.as_ref(), &outs, &good_inputs());
        let result = &exe.results()[1].name;
        assert_eq!(
            e.to_string(),
            format!("output 1 (`{result}`): expected i32[4], got i64[4]")
        );
        // Bad inputs and bad outputs: inputs are reported first.
        let mut inputs = good_inputs();
        inputs[2] = Tensor::zeros(F32, [4]).unwrap();
        let e = failing_call(exe.as_ref(), &outs, &inputs);
        assert!(e.to_string().starts_with("input 2 (`k`)"), "{e}");
    }
}

// ----- values from another builder -----

#[test]
fn values_from_another_builder_are_errors_naming_them() {
    // `q` is node #1 of `two`; node #1 of `one` is `c`, of the same type: before the check,
    // `a + q` silently built `a + c`.
    let one = FunctionBuilder::new("one");
    let two = FunctionBuilder::new("two");
    let a = one.parameter("a", F32, [2, 3]);
    let _c = one.parameter("c", F32, [2, 3]);
    let _p = two.parameter("p", F32, [3]);
    let q = two.parameter("q", F32, [3]);
    let e = one.finish(&[(a + q).relu()]).unwrap_err();
    assert!(
        matches!(&e, IrError::ForeignValue { at, index: 1, .. } if at.starts_with("Add in function `one`")),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("Add in function `one` (created at {HERE}"))
            && msg.ends_with(
                "operand 1 is node `q` of function `two` (made by another FunctionBuilder), \
                 which is not a value of this function"
            ),
        "{msg}"
    );
    // The other builder was not touched (no Broadcast of `q` was added to it), and still
    // builds its own function.
    let g = two.finish(&[q]).unwrap();
    assert_eq!(g.node_count(), 3, "{g}");

    // `select` adds to the condition's builder, which reports the foreign `a`.
    let one = FunctionBuilder::new("one");
    let two = FunctionBuilder::new("two");
    let a = one.parameter("a", F32, [2]);
    let q = two.parameter("q", F32, [2]);
    let cond = two.parameter("cond", Bool, [2]);
    let s = select(cond, a, a);
    let e = two.error().unwrap().to_string();
    assert!(
        e.starts_with("Select in function `two`")
            && e.contains("operand 1 is node `a` of function `one`"),
        "{e}"
    );
    // A foreign result.
    let e = one.finish(&[a, q]).unwrap_err().to_string();
    assert!(
        e.starts_with("Result in function `one`") && e.contains("operand 1 is node `q`"),
        "{e}"
    );
    // A poisoned value of `two` is still foreign to `one`: `one` must not drop it silently.
    let e = one.finish(&[s]).unwrap_err().to_string();
    assert!(
        e.starts_with("Result in function `one`")
            && e.contains("operand 0 is a value (made by another FunctionBuilder)"),
        "{e}"
    );
    // A value of a function the other builder has finished.
    assert!(two.finish(&[]).is_err());
    let e = one.finish(&[q]).unwrap_err().to_string();
    assert!(
        e.contains(
            "operand 0 is a value of a function another FunctionBuilder has already finished"
        ),
        "{e}"
    );
}

#[test]
fn values_of_a_finished_function_are_errors() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [4]);
    let first = b.finish(&[x.relu()]).unwrap();
    assert_eq!(first.parameters().len(), 1);
    // The builder starts over: `y` is node #0 now, as `x` was. Using `x` must not mean `y`.
    let y = b.parameter("y", F32, [4]);
    assert_eq!(x.tensor_type(), None);
    let e = b.finish(&[y + x.exp()]).unwrap_err();
    assert!(matches!(e, IrError::ForeignValue { index: 0, .. }), "{e:?}");
    assert!(
        e.to_string().starts_with("Exp in function `f`")
            && e.to_string()
                .contains("operand 0 is a value of a function this builder has already finished"),
        "{e}"
    );
    let b = FunctionBuilder::new("g");
    let x = b.parameter("x", F32, [4]);
    b.finish(&[x]).unwrap();
    let _ = x.named("renamed").tagged("t");
    let e = b.finish(&[]).unwrap_err().to_string();
    assert!(e.starts_with("named in function `g`"), "{e}");
    // A finish that fails ends the function too: a value poisoned before it is not
    // silently dropped from the next function's results.
    let b = FunctionBuilder::new("h");
    let x = b.parameter("x", F32, [2]);
    let bad = x.convert(I32) + x;
    assert!(matches!(b.finish(&[bad]), Err(IrError::Inference(_))));
    let y = b.parameter("y", F32, [2]);
    let e = b.finish(&[y, bad]).unwrap_err();
    assert!(
        matches!(&e, IrError::ForeignValue { at, index: 1, .. } if at.starts_with("Result in function `h`")),
        "{e:?}"
    );
    let _ = x.scalar_like(1.0);
    assert!(
        b.error().is_some(),
        "scalar_like of a finished value is an error"
    );
}

// ----- a fused kernel whose body is broken -----

#[test]
fn broken_fused_kernel_bodies_are_rejected_at_compile_time() {
    // A body whose Relu was redirected to the Exp that uses it: a cycle, which only
    // validating the body finds. The INTERPRETER used to accept the function and fail in
    // the middle of the call.
    let bb = FunctionBuilder::new("body");
    let p = bb.parameter("p", F32, [4]);
    let mut body = bb.finish(&[p.relu().exp()]).unwrap();
    let id = |op: &str| {
        body.nodes()
            .find(|n| n.op().type_name() == op)
            .unwrap()
            .id()
    };
    let (relu, exp) = (id("Relu"), id("Exp"));
    body.replace_output(Output::from(relu), Output::from(exp))
        .unwrap();
    let mut f = Function::new("outer");
    let x = f.add_parameter("x", F32, [4]).unwrap();
    let n = f
        .add_node(Op::Unary(UnaryOp::Negative), &[x.into()])
        .unwrap();
    let k = f
        .add_node(Op::FusedKernel(Arc::new(FusedKernel { body })), &[x.into()])
        .unwrap();
    f.add_result(n.into(), None).unwrap();
    f.add_result(k.into(), None).unwrap();
    let e = f.validate().unwrap_err().to_string();
    assert_eq!(
        e,
        "function `outer` is invalid: fused kernel `FusedKernel_2`: body: function `body`: \
         cycle through node `Exp_2`"
    );
    for name in BACKENDS {
        let e = backend(name).compile(&f).err().unwrap();
        assert!(
            e.to_string().contains("cycle through node `Exp_2`"),
            "{name}: {e}"
        );
    }
}
