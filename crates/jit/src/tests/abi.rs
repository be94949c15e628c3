//! The range ABI, unaligned buffers, and buffer checks.

use graphlift_ir::{ElementType, FunctionBuilder, TensorData};
use graphlift_runtime::reference::evaluate_function;
use graphlift_runtime::Tensor;

use super::{data, first_difference};
use crate::{JitError, JitKernel};

fn bytes_of(d: &TensorData) -> Vec<u8> {
    match d {
        TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
    }
}

fn from_bytes(t: ElementType, b: &[u8]) -> TensorData {
    match t {
        ElementType::F32 => TensorData::F32(
            b.chunks(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        ElementType::F64 => TensorData::F64(
            b.chunks(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        ElementType::I32 => TensorData::I32(
            b.chunks(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        ElementType::I64 => TensorData::I64(
            b.chunks(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        ElementType::Bool => TensorData::Bool(b.iter().map(|&x| x != 0).collect()),
    }
}

#[test]
fn unaligned_buffers_at_every_offset() {
    for t in [
        ElementType::F32,
        ElementType::I32,
        ElementType::F64,
        ElementType::I64,
        ElementType::Bool,
    ] {
        let n = 37;
        let b = FunctionBuilder::new("unaligned");
        let x = b.parameter("x", t, [n]);
        let y = b.parameter("y", t, [n]);
        let r = if t == ElementType::Bool {
            x.or(y)
        } else {
            x.max(y) - y
        };
        let body = b.finish(&[r]).unwrap();
        let k = JitKernel::compile(&body).unwrap();
        let xs = data(t, n, 0);
        let ys = data(t, n, 9);
        let want = evaluate_function(
            &body,
            &[
                Tensor::from_data(xs.clone(), [n]).unwrap(),
                Tensor::from_data(ys.clone(), [n]).unwrap(),
            ],
        )
        .unwrap();
        let size = t.size_bytes();
        for offset in 0..size.max(2) {
            let mut xb = vec![0u8; offset];
            xb.extend(bytes_of(&xs));
            let mut yb = vec![0u8; offset + 1];
            yb.extend(bytes_of(&ys));
            let mut ob = vec![0u8; n * size + offset + 3];
            let ins = [xb[offset..].as_ptr(), yb[offset + 1..].as_ptr()];
            let outs = [ob[offset + 3..].as_mut_ptr()];
            // SAFETY: the buffers hold n elements of the kernel's types from the given
            // (deliberately unaligned) addresses; the output does not overlap the inputs;
            // the kernel has no hidden constants, and 0..n is its iteration space.
            unsafe { k.compiled().call_unchecked(&ins, &outs, 0, n) };
            let got = from_bytes(t, &ob[offset + 3..]);
            assert_eq!(
                first_difference(&got, want[0].data()),
                None,
                "{t} offset {offset}"
            );
            assert!(
                ob[..offset + 3].iter().all(|&b| b == 0),
                "{t}: wrote before the buffer"
            );
        }
    }
}

#[test]
fn buffers_are_checked_before_the_call() {
    let b = FunctionBuilder::new("checked");
    let x = b.parameter("x", ElementType::F32, [10]);
    let y = b.parameter("y", ElementType::F32, [5]);
    let two = x.scalar_like(2.0);
    let body = b.finish(&[x * 2.0, x.gt(two)]).unwrap();
    let k = JitKernel::compile(&body).unwrap();
    let _ = y;
    let good = Tensor::zeros(ElementType::F32, [10]).unwrap();
    let short = Tensor::zeros(ElementType::F32, [9]).unwrap();
    let wrong = Tensor::zeros(ElementType::I32, [10]).unwrap();
    let y = Tensor::zeros(ElementType::F32, [5]).unwrap();
    let outs = || {
        vec![
            Tensor::zeros(ElementType::F32, [10]).unwrap(),
            Tensor::zeros(ElementType::Bool, [10]).unwrap(),
        ]
    };
    let is_buffer = |r: Result<(), JitError>| matches!(r, Err(JitError::Buffer { .. }));
    assert!(k.call(&[&good, &y], &mut outs()).is_ok());
    assert!(is_buffer(k.call(&[&short, &y], &mut outs())));
    assert!(is_buffer(k.call(&[&wrong, &y], &mut outs())));
    assert!(is_buffer(k.call(&[&good], &mut outs())));
    assert!(is_buffer(k.call(&[&good, &y], &mut outs()[..1].to_vec())));
    let mut bad_out = vec![
        Tensor::zeros(ElementType::F32, [10]).unwrap(),
        Tensor::zeros(ElementType::F32, [10]).unwrap(),
    ];
    assert!(is_buffer(k.call(&[&good, &y], &mut bad_out)));
    assert!(is_buffer(k.call_range(&[&good, &y], &mut outs(), 3, 11)));
    assert!(is_buffer(k.call_range(&[&good, &y], &mut outs(), 4, 3)));
    let err = k.call(&[&short, &y], &mut outs()).unwrap_err().to_string();
    assert!(err.contains("input 0") && err.contains("checked"), "{err}");
}

#[test]
fn empty_ranges_write_nothing() {
    let b = FunctionBuilder::new("empty");
    let x = b.parameter("x", ElementType::F32, [10]);
    let body = b.finish(&[x + 1.0]).unwrap();
    let k = JitKernel::compile(&body).unwrap();
    let input = Tensor::zeros(ElementType::F32, [10]).unwrap();
    for (b, e) in [(0, 0), (5, 5), (10, 10)] {
        let mut out = [Tensor::from_vec(vec![7.0f32; 10], [10]).unwrap()];
        k.call_range(&[&input], &mut out, b, e).unwrap();
        assert!(out[0].read::<f32>().unwrap().iter().all(|&v| v == 7.0));
    }
}

#[test]
fn bodies_outside_the_kernel_form_are_rejected() {
    let b = FunctionBuilder::new("two_spaces");
    let x = b.parameter("x", ElementType::F32, [10]);
    let y = b.parameter("y", ElementType::F32, [5]);
    let body = b.finish(&[x * 2.0, y * 2.0]).unwrap();
    let err = JitKernel::compile(&body).unwrap_err();
    assert!(matches!(err, JitError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("two_spaces"), "{err}");
    let b = FunctionBuilder::new("no_results");
    let _ = b.parameter("x", ElementType::F32, [10]);
    let body = b.finish(&[]).unwrap();
    assert!(matches!(
        JitKernel::compile(&body),
        Err(JitError::Unsupported { .. })
    ));
}

#[test]
fn kernels_release_their_memory_on_drop() {
    let b = FunctionBuilder::new("leak");
    let x = b.parameter("x", ElementType::F32, [16]);
    let body = b.finish(&[x.exp() + 1.0]).unwrap();
    let mut watches = Vec::new();
    for _ in 0..64 {
        let k = JitKernel::compile(&body).unwrap();
        let w = k.memory_watch();
        assert!(!w.is_released());
        watches.push(w);
    }
    assert!(watches.iter().all(|w| w.is_released()));
}
