//! The range ABI, unaligned buffers, and buffer checks.

use super::{data, first_difference};
use graphlift_codegen::{JitError, JitKernel};
use graphlift_ir::{ElementType, FunctionBuilder, TensorData};
use graphlift_runtime::reference::evaluate_function;
use graphlift_runtime::Tensor;

fn bytes_of(d: &TensorData) -> Vec<u8> {
    match d {
        TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
        other => panic!("fused kernels do not lower {}", other.element_type()),
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
        other => panic!("fused kernels do not lower {other}"),
    }
}

/// Bytes placed `offset` bytes past a 16-byte boundary, between guard bytes of `GUARD`.
struct Placed {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

const GUARD: u8 = 0xA5;

impl Placed {
    fn new(bytes: &[u8], offset: usize) -> Placed {
        let mut buf = vec![GUARD; bytes.len() + 64];
        // At least 16 guard bytes before, at least 17 after.
        let start = buf.as_ptr().align_offset(16) + 16 + offset;
        buf[start..start + bytes.len()].copy_from_slice(bytes);
        let p = Placed {
            buf,
            start,
            len: bytes.len(),
        };
        assert_eq!(p.ptr() as usize % 16, offset);
        p
    }

    fn ptr(&self) -> *const u8 {
        self.buf[self.start..].as_ptr()
    }

    fn mut_ptr(&mut self) -> *mut u8 {
        self.buf[self.start..].as_mut_ptr()
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    /// `true` when nothing was written outside the placed bytes.
    fn guards_intact(&self) -> bool {
        self.buf[..self.start]
            .iter()
            .chain(&self.buf[self.start + self.len..])
            .all(|&b| b == GUARD)
    }
}

/// A kernel over `[rows, cols]` with every input addressing: `x` and `y` contiguous, `b`
/// broadcast along rows (`[cols]`), `s` a scalar (stride 0); two outputs of different
/// element types (`t` and bool).
fn addressing_body(t: ElementType, rows: usize, cols: usize) -> graphlift_ir::Function {
    let b = FunctionBuilder::new("unaligned");
    let x = b.parameter("x", t, [rows, cols]);
    let y = b.parameter("y", t, [rows, cols]);
    let bias = b.parameter("b", t, [cols]);
    let s = b.parameter("s", t, []);
    let r = if t == ElementType::Bool {
        x.or(y).xor(bias).and(s)
    } else {
        (x.max(y) - y + bias) * s
    };
    b.finish(&[r, x.lt(y)]).unwrap()
}

#[test]
fn unaligned_buffers_at_every_offset() {
    // Every input and output starts at every byte offset 0..16 from a 16-byte boundary,
    // inputs and outputs at independent offsets; sizes with and without a vector main loop
    // and tail; nothing is written outside the outputs.
    for t in [
        ElementType::F32,
        ElementType::I32,
        ElementType::F64,
        ElementType::I64,
        ElementType::Bool,
    ] {
        for (rows, cols) in [(1, 3), (3, 7), (5, 8)] {
            let n = rows * cols;
            let body = addressing_body(t, rows, cols);
            let k = JitKernel::compile(&body).unwrap();
            assert_eq!(k.info().live_ins, 4);
            let ins = [
                Tensor::from_data(data(t, n, 0), [rows, cols]).unwrap(),
                Tensor::from_data(data(t, n, 9), [rows, cols]).unwrap(),
                Tensor::from_data(data(t, cols, 3), [cols]).unwrap(),
                // A scalar that keeps the first output informative (not 0, NaN or false).
                Tensor::from_data(
                    match t {
                        ElementType::F32 => TensorData::F32(vec![1.5]),
                        ElementType::F64 => TensorData::F64(vec![-2.25]),
                        ElementType::I32 => TensorData::I32(vec![3]),
                        ElementType::I64 => TensorData::I64(vec![-7]),
                        ElementType::Bool => TensorData::Bool(vec![true]),
                        other => panic!("fused kernels do not lower {other}"),
                    },
                    [],
                )
                .unwrap(),
            ];
            let want = evaluate_function(&body, &ins).unwrap();
            let in_bytes: Vec<Vec<u8>> = ins.iter().map(|x| bytes_of(x.data())).collect();
            for a in 0..16 {
                let placed: Vec<Placed> = in_bytes
                    .iter()
                    .enumerate()
                    .map(|(j, b)| Placed::new(b, (a + 5 * j) % 16))
                    .collect();
                let in_ptrs: Vec<*const u8> = placed.iter().map(Placed::ptr).collect();
                for o in 0..16 {
                    let mut outs = [
                        Placed::new(&vec![0; n * t.size_bytes()], o),
                        Placed::new(&vec![0; n], (o + 9) % 16),
                    ];
                    let out_ptrs = [outs[0].mut_ptr(), outs[1].mut_ptr()];
                    // SAFETY: each input pointer is to the bytes of an `ins` tensor (n, n,
                    // cols and 1 elements of `t`, the kernel's live-in lengths) and each
                    // output pointer to n writable elements of its type, deliberately
                    // unaligned; no buffer overlaps another; the kernel has no hidden
                    // constants (4 live-ins, checked above), and 0..n is its iteration space.
                    unsafe { k.compiled().call_unchecked(&in_ptrs, &out_ptrs, 0, n) };
                    let where_ = format!("{t} [{rows}, {cols}], inputs at {a}, outputs at {o}");
                    for (j, out) in outs.iter().enumerate() {
                        let ty = if j == 0 { t } else { ElementType::Bool };
                        let got = from_bytes(ty, out.bytes());
                        assert_eq!(
                            first_difference(&got, want[j].data()),
                            None,
                            "{where_}: output {j}"
                        );
                        assert!(out.guards_intact(), "{where_}: wrote outside output {j}");
                    }
                }
                assert!(placed.iter().all(Placed::guards_intact));
                for (p, b) in placed.iter().zip(&in_bytes) {
                    assert_eq!(p.bytes(), b.as_slice(), "{t}: an input was written");
                }
            }
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

#[test]
fn bodies_of_types_fused_kernels_do_not_lower_are_refused() {
    for t in ElementType::ALL {
        let b = FunctionBuilder::new("narrow");
        let x = b.parameter("x", t, [5]);
        // The storage-only types and strings accept no arithmetic: a conversion reads them.
        let y = if t == ElementType::Bool {
            !x
        } else if t.is_storage_only() || t == ElementType::String {
            x.convert(ElementType::F32)
        } else {
            x.abs()
        };
        let body = b.finish(&[y]).unwrap();
        match JitKernel::compile(&body) {
            Ok(_) => assert!(graphlift_codegen::lowers(t), "{t} compiled"),
            Err(JitError::Unsupported { message, .. }) => {
                assert!(!graphlift_codegen::lowers(t), "{t}: {message}");
                assert!(message.contains(t.name()), "{message}");
            }
            Err(e) => panic!("{t}: {e}"),
        }
    }
}
