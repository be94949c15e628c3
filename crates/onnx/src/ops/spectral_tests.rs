//! `DFT`, `STFT`, the windows and `MelWeightMatrix` against transforms computed here by
//! their definitions, on both backends; inverses that undo the forward transform; named
//! errors.

use graphlift_ir::{Shape, TensorData};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};
use prost::Message;

use crate::proto::*;
use crate::tests::{attr_i, err, model_opset, node, vi};
use crate::{import_model_bytes, tensor_to_proto};

/// A model of `nodes` at opset 20 reading FLOAT `x` of `dims` and the initializers
/// `inits`, giving output `y`.
fn model(nodes: Vec<NodeProto>, dims: &[i64], inits: Vec<TensorProto>) -> ModelProto {
    let mut m = model_opset(nodes, vec![vi("x", data_type::FLOAT, dims)], vec![], 20);
    let g = m.graph.as_mut().unwrap();
    g.initializer = inits;
    g.output = vec![ValueInfoProto {
        name: "y".into(),
        ..Default::default()
    }];
    m
}

fn scalar(name: &str, v: i64) -> TensorProto {
    tensor_to_proto(name, &TensorData::I64(vec![v]), &Shape::scalar())
}

/// `m` on `x` on both backends (which must agree within `1e-6`): output `y`'s values and
/// extents.
fn both(m: &ModelProto, x: &[f32], dims: &[usize]) -> (Vec<f32>, Vec<usize>) {
    let imported = import_model_bytes(&m.encode_to_vec()).unwrap();
    let x = Tensor::from_vec(x.to_vec(), dims).unwrap();
    let backends: [Box<dyn Backend>; 2] =
        [Box::new(InterpreterBackend), Box::new(CpuJitBackend::new())];
    let outs: Vec<Tensor> = backends
        .iter()
        .map(|b| {
            let exe = b.compile(&imported.function).unwrap();
            exe.run(std::slice::from_ref(&x)).unwrap().remove(0)
        })
        .collect();
    let (a, b) = (
        outs[0].read::<f32>().unwrap(),
        outs[1].read::<f32>().unwrap(),
    );
    for (p, q) in a.iter().zip(b) {
        assert!((p - q).abs() <= 1e-6 * (1.0 + p.abs()), "{a:?} {b:?}");
    }
    (a.to_vec(), outs[0].shape().dims().to_vec())
}

/// The DFT of the real `x` of length `n` (zero-padded or truncated), by its definition:
/// `(re, im)` per bin.
fn naive(x: &[f64], n: usize) -> Vec<(f64, f64)> {
    (0..n)
        .map(|k| {
            (0..n.min(x.len())).fold((0.0, 0.0), |(re, im), t| {
                let a = -2.0 * std::f64::consts::PI * (k * t) as f64 / n as f64;
                (re + x[t] * a.cos(), im + x[t] * a.sin())
            })
        })
        .collect()
}

fn close(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((f64::from(*g) - w).abs() <= tol, "{got:?}\n{want:?}");
    }
}

#[test]
fn dft_of_real_signals_along_a_middle_axis_padded_truncated_and_one_sided() {
    // x [2, 5, 3, 1]: signals of 5 along axis 1, for each of 2 x 3.
    let x: Vec<f32> = (0..30).map(|v| ((v * 7) % 11) as f32 - 5.0).collect();
    for (n, onesided) in [(5, false), (8, false), (3, false), (8, true), (5, true)] {
        let m = model(
            vec![node(
                "DFT",
                "dft",
                &["x", "n", "axis"],
                &["y"],
                vec![attr_i("onesided", i64::from(onesided))],
            )],
            &[2, 5, 3, 1],
            vec![scalar("n", n as i64), scalar("axis", 1)],
        );
        let (y, dims) = both(&m, &x, &[2, 5, 3, 1]);
        let bins = if onesided { n / 2 + 1 } else { n };
        assert_eq!(dims, [2, bins, 3, 2]);
        let mut want = vec![0.0; y.len()];
        for b in 0..2 {
            for c in 0..3 {
                let signal: Vec<f64> = (0..5).map(|t| f64::from(x[(b * 5 + t) * 3 + c])).collect();
                for (k, (re, im)) in naive(&signal, n).into_iter().take(bins).enumerate() {
                    want[((b * bins + k) * 3 + c) * 2] = re;
                    want[((b * bins + k) * 3 + c) * 2 + 1] = im;
                }
            }
        }
        close(&y, &want, 1e-4);
    }
}

#[test]
fn inverse_transforms_undo_the_forward_one() {
    // Complex round trip: DFT then inverse DFT of a [1, 6, 2] signal.
    let x: Vec<f32> = (0..12).map(|v| (v as f32 * 0.37).sin()).collect();
    let m = model(
        vec![
            node("DFT", "f", &["x"], &["s"], vec![]),
            node("DFT", "i", &["s"], &["y"], vec![attr_i("inverse", 1)]),
        ],
        &[1, 6, 2],
        vec![],
    );
    let (y, _) = both(&m, &x, &[1, 6, 2]);
    close(
        &y,
        &x.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
        1e-5,
    );
    // One-sided: rfft then irfft of real signals of even and odd length.
    for len in [6i64, 7] {
        let x: Vec<f32> = (0..len).map(|v| (v as f32 * 0.61).cos() + 0.1).collect();
        let onesided = || vec![attr_i("onesided", 1)];
        let mut inverse = onesided();
        inverse.push(attr_i("inverse", 1));
        let m = model(
            vec![
                node("DFT", "f", &["x"], &["s"], onesided()),
                node("DFT", "i", &["s", "n"], &["y"], inverse),
            ],
            &[1, len, 1],
            vec![scalar("n", len)],
        );
        let (y, dims) = both(&m, &x, &[1, len as usize, 1]);
        assert_eq!(dims, [1, len as usize, 1]);
        close(
            &y,
            &x.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
            1e-5,
        );
    }
}

#[test]
fn stft_frames_a_tone_and_windows_are_their_formulas() {
    // A tone at bin 2 of 8-sample frames (a period of 4 samples), hopping by 4 over 20
    // samples: 4 equal frames, their energy at bin 2 (a periodic Hann window spreads it to
    // bins 1 and 3).
    let x: Vec<f32> = (0..20)
        .map(|t| (2.0 * std::f32::consts::PI * 2.0 * t as f32 / 8.0).cos())
        .collect();
    let m = model(
        vec![
            node("HannWindow", "w", &["len"], &["window"], vec![]),
            node("STFT", "stft", &["x", "step", "window"], &["y"], vec![]),
        ],
        &[1, 20, 1],
        vec![scalar("len", 8), scalar("step", 4)],
    );
    let (y, dims) = both(&m, &x, &[1, 20, 1]);
    assert_eq!(dims, [1, 4, 5, 2]);
    for frame in 0..4 {
        let re = |k: usize| f64::from(y[(frame * 5 + k) * 2]);
        // Hann (0.5 - 0.5 cos) times the tone: 2 at bin 2, -1 at bins 1 and 3.
        let want = [0.0, -1.0, 2.0, -1.0, 0.0];
        for (k, w) in want.iter().enumerate() {
            assert!((re(k) - w).abs() < 1e-5, "{y:?}");
        }
    }
    let window = |op: &str, size: i64, periodic: i64| {
        let mut m = model_opset(
            vec![node(
                op,
                "w",
                &["size"],
                &["y"],
                vec![attr_i("periodic", periodic)],
            )],
            vec![],
            vec![],
            17,
        );
        let g = m.graph.as_mut().unwrap();
        g.initializer = vec![scalar("size", size)];
        g.output = vec![ValueInfoProto {
            name: "y".into(),
            ..Default::default()
        }];
        let f = import_model_bytes(&m.encode_to_vec()).unwrap();
        let out = InterpreterBackend
            .compile(&f.function)
            .unwrap()
            .run(&[])
            .unwrap();
        out[0].read::<f32>().unwrap().to_vec()
    };
    close(&window("HannWindow", 4, 1), &[0.0, 0.5, 1.0, 0.5], 1e-7);
    close(&window("HannWindow", 3, 0), &[0.0, 1.0, 0.0], 1e-7);
    close(&window("HammingWindow", 2, 1), &[4.0 / 46.0, 1.0], 1e-7);
    close(&window("BlackmanWindow", 3, 0), &[0.0, 1.0, 0.0], 1e-7);
}

#[test]
fn mel_bands_and_malformed_nodes() {
    let mel = |mels: i64, dft: i64, rate: i64, low: f32, high: f32| {
        let mut m = model_opset(
            vec![node(
                "MelWeightMatrix",
                "mel",
                &["m", "d", "r", "lo", "hi"],
                &["y"],
                vec![],
            )],
            vec![],
            vec![],
            17,
        );
        let g = m.graph.as_mut().unwrap();
        let f = |n: &str, v: f32| tensor_to_proto(n, &TensorData::F32(vec![v]), &Shape::scalar());
        g.initializer = vec![
            scalar("m", mels),
            scalar("d", dft),
            scalar("r", rate),
            f("lo", low),
            f("hi", high),
        ];
        g.output = vec![ValueInfoProto {
            name: "y".into(),
            ..Default::default()
        }];
        m
    };
    let m = mel(4, 16, 8000, 0.0, 4000.0);
    let f = import_model_bytes(&m.encode_to_vec()).unwrap();
    let w = InterpreterBackend
        .compile(&f.function)
        .unwrap()
        .run(&[])
        .unwrap();
    assert_eq!(w[0].shape().dims(), [9, 4]);
    // Every band is a triangle that peaks at 1.
    let w = w[0].read::<f32>().unwrap();
    for band in 0..4 {
        let peak = (0..9).map(|k| w[k * 4 + band]).fold(0.0f32, f32::max);
        assert_eq!(peak, 1.0, "{w:?}");
    }
    let e = err(&mel(4, 16, 0, 0.0, 4000.0)).to_string();
    assert!(
        e.contains("MelWeightMatrix `mel`") && e.contains("sample_rate"),
        "{e}"
    );
    let e = err(&mel(4, 16, 8000, 0.0, 16000.0)).to_string();
    assert!(e.contains("outside"), "{e}");
    // DFT on the complex axis; STFT with a window of the wrong length.
    let m = model(
        vec![node("DFT", "dft", &["x", "", "axis"], &["y"], vec![])],
        &[1, 4, 1],
        vec![scalar("axis", -1)],
    );
    let e = err(&m).to_string();
    assert!(e.contains("DFT `dft`") && e.contains("axis"), "{e}");
    let m = model(
        vec![
            node("HannWindow", "w", &["len"], &["window"], vec![]),
            node(
                "STFT",
                "stft",
                &["x", "step", "window", "len2"],
                &["y"],
                vec![],
            ),
        ],
        &[1, 20, 1],
        vec![scalar("len", 8), scalar("step", 4), scalar("len2", 6)],
    );
    let e = err(&m).to_string();
    assert!(
        e.contains("STFT `stft`") && e.contains("window of 8"),
        "{e}"
    );
}
