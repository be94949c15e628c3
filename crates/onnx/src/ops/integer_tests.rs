//! `ConvInteger`, `QLinearConv` and `MatMulInteger` end to end: models over many shapes,
//! windows, groups, 8-bit types and zero points (constant or, as `DynamicQuantizeLinear`
//! gives them, computed at run time) imported and run on CPU-JIT (the native integer kernel)
//! against the INTERPRETER (the reference's definition), bit for bit, and against the
//! integer sums computed here; and malformed zero points as errors naming the node.

use graphlift_ir::{Shape, TensorData};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Backend, Executable, InterpreterBackend, Tensor};
use prost::Message;

use crate::proto::*;
use crate::tests::{attr_ints, err, model_opset, node, vi};
use crate::{import_model_bytes, onnx_data_type, tensor_to_proto, OnnxError};

/// An initializer: name, values and shape.
type Init<'a> = (&'a str, TensorData, Vec<usize>);

/// A small deterministic generator of bytes.
struct Lcg(u64);

impl Lcg {
    fn byte(&mut self) -> u8 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 56) as u8
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

fn eight_bit(signed: bool, v: Vec<u8>) -> TensorData {
    if signed {
        TensorData::I8(v.into_iter().map(|b| b as i8).collect())
    } else {
        TensorData::U8(v)
    }
}

/// One node `n0` of `op` with graph inputs `inputs` (name, value) and initializers `inits`
/// (`""` for an omitted input), in the order `order` names them, output `y`.
fn model(
    op: &str,
    order: &[&str],
    inputs: &[(&str, &Tensor)],
    inits: &[Init<'_>],
    attrs: Vec<AttributeProto>,
) -> ModelProto {
    let info = inputs
        .iter()
        .map(|(n, t)| {
            let dims: Vec<i64> = t.shape().dims().iter().map(|&d| d as i64).collect();
            vi(n, onnx_data_type(t.element_type()), &dims)
        })
        .collect();
    let mut m = model_opset(vec![node(op, "n0", order, &["y"], attrs)], info, vec![], 21);
    if let Some(g) = m.graph.as_mut() {
        g.initializer = inits
            .iter()
            .map(|(n, d, s)| tensor_to_proto(n, d, &Shape::new(s.clone())))
            .collect();
        g.output = vec![ValueInfoProto {
            name: "y".into(),
            ..Default::default()
        }];
    }
    m
}

/// `m` run on CPU-JIT and on the INTERPRETER, which must agree exactly; the result.
fn both(m: &ModelProto, inputs: &[Tensor]) -> TensorData {
    let imported = import_model_bytes(&m.encode_to_vec()).unwrap();
    let jit = CpuJitBackend::new()
        .compile_executable(&imported.function)
        .unwrap();
    let got = jit.run(inputs).unwrap();
    let reference = InterpreterBackend.compile(&imported.function).unwrap();
    let want = reference.run(inputs).unwrap();
    assert_eq!(got[0].data(), want[0].data());
    want[0].data().clone()
}

/// The integer value of an 8-bit tensor's element `i`.
fn at(d: &TensorData, i: usize) -> i64 {
    d.get_f64(i).unwrap() as i64
}

/// One 2-D convolution case.
#[derive(Debug, Clone, Copy)]
struct Conv {
    n: usize,
    groups: usize,
    cg: usize,
    mg: usize,
    hw: [usize; 2],
    k: [usize; 2],
    stride: usize,
    dilation: usize,
    pad: usize,
    x_signed: bool,
    w_signed: bool,
    per_channel: bool,
    /// The data zero point a graph input (computed at run time), else an initializer.
    dynamic_zero_point: bool,
    seed: u64,
}

/// The convolution of `c` summed here in `i64`: `[N, M, oH, oW]` and its output extents.
fn expected(c: &Conv, x: &TensorData, xz: i64, w: &TensorData, wz: &TensorData) -> Vec<i64> {
    let (cc, m) = (c.groups * c.cg, c.groups * c.mg);
    let out = |i: usize| (c.hw[i] + 2 * c.pad - c.dilation * (c.k[i] - 1) - 1) / c.stride + 1;
    let (oh, ow) = (out(0), out(1));
    let mut y = Vec::new();
    for b in 0..c.n {
        for f in 0..m {
            let g = f / c.mg;
            let z = at(wz, if wz.len() == 1 { 0 } else { f });
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut s = 0;
                    for ci in 0..c.cg {
                        for ky in 0..c.k[0] {
                            for kx in 0..c.k[1] {
                                let iy = (oy * c.stride + ky * c.dilation) as i64 - c.pad as i64;
                                let ix = (ox * c.stride + kx * c.dilation) as i64 - c.pad as i64;
                                if iy < 0 || ix < 0 || iy >= c.hw[0] as i64 || ix >= c.hw[1] as i64
                                {
                                    continue;
                                }
                                let xi = ((b * cc + g * c.cg + ci) * c.hw[0] + iy as usize)
                                    * c.hw[1]
                                    + ix as usize;
                                let wi = ((f * c.cg + ci) * c.k[0] + ky) * c.k[1] + kx;
                                s += (at(x, xi) - xz) * (at(w, wi) - z);
                            }
                        }
                    }
                    y.push(s);
                }
            }
        }
    }
    y
}

/// Runs `c` as `ConvInteger` and as `QLinearConv` (scales of 1, output zero point 0, INT32
/// bias 0 and an INT8 output saturating the sums): both backends agree with each other and
/// with the sums computed here.
fn check_conv(c: Conv) {
    let mut rng = Lcg(c.seed);
    let (cc, m) = (c.groups * c.cg, c.groups * c.mg);
    let sx = [c.n, cc, c.hw[0], c.hw[1]];
    let sw = [m, c.cg, c.k[0], c.k[1]];
    let x = eight_bit(c.x_signed, rng.bytes(sx.iter().product()));
    let w = eight_bit(c.w_signed, rng.bytes(sw.iter().product()));
    let xz = eight_bit(c.x_signed, rng.bytes(1));
    let wz_len = if c.per_channel { m } else { 1 };
    let wz = eight_bit(c.w_signed, rng.bytes(wz_len));
    let want = expected(&c, &x, at(&xz, 0), &w, &wz);
    let xt = Tensor::from_data(x.clone(), Shape::new(sx)).unwrap();
    let xzt = Tensor::from_data(xz.clone(), Shape::scalar()).unwrap();
    let wz_shape = if c.per_channel { vec![m] } else { vec![] };
    let p = c.pad as i64;
    let attrs = || {
        vec![
            attr_ints("strides", &[c.stride as i64; 2]),
            attr_ints("dilations", &[c.dilation as i64; 2]),
            attr_ints("pads", &[p; 4]),
            crate::tests::attr_i("group", c.groups as i64),
        ]
    };
    let mut inputs = vec![("x", &xt)];
    let mut inits = vec![
        ("w", w.clone(), sw.to_vec()),
        ("zw", wz.clone(), wz_shape.clone()),
    ];
    if c.dynamic_zero_point {
        inputs.push(("zx", &xzt));
    } else {
        inits.push(("zx", xz.clone(), vec![]));
    }
    let mut feed = vec![xt.clone()];
    if c.dynamic_zero_point {
        feed.push(xzt.clone());
    }
    let integer = model(
        "ConvInteger",
        &["x", "w", "zx", "zw"],
        &inputs,
        &inits,
        attrs(),
    );
    let TensorData::I32(got) = both(&integer, &feed) else {
        panic!("ConvInteger gives INT32")
    };
    let got: Vec<i64> = got.iter().map(|&v| i64::from(v)).collect();
    assert_eq!(got, want, "{c:?}");
    inits.extend([
        ("sx", TensorData::F32(vec![1.0]), vec![]),
        ("sw", TensorData::F32(vec![1.0; wz_len]), wz_shape),
        ("sy", TensorData::F32(vec![1.0]), vec![]),
        ("zy", TensorData::I8(vec![0]), vec![]),
        ("b", TensorData::I32(vec![0; m]), vec![m]),
    ]);
    let order = ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"];
    let linear = model("QLinearConv", &order, &inputs, &inits, attrs());
    let TensorData::I8(got) = both(&linear, &feed) else {
        panic!("QLinearConv gives the output zero point's INT8")
    };
    let want: Vec<i8> = want.iter().map(|&v| v.clamp(-128, 127) as i8).collect();
    assert_eq!(got, want, "{c:?}");
}

#[test]
fn integer_convolutions_equal_the_sums_on_both_backends() {
    let base = Conv {
        n: 1,
        groups: 1,
        cg: 3,
        mg: 5,
        hw: [9, 11],
        k: [3, 3],
        stride: 1,
        dilation: 1,
        pad: 1,
        x_signed: false,
        w_signed: false,
        per_channel: false,
        dynamic_zero_point: true,
        seed: 1,
    };
    let mut cases = vec![base];
    for (i, signs) in [(false, true), (true, false), (true, true)]
        .into_iter()
        .enumerate()
    {
        cases.push(Conv {
            x_signed: signs.0,
            w_signed: signs.1,
            per_channel: i != 1,
            seed: 10 + i as u64,
            ..base
        });
    }
    cases.extend([
        Conv {
            stride: 2,
            pad: 2,
            dilation: 2,
            dynamic_zero_point: false,
            seed: 20,
            ..base
        },
        Conv {
            n: 2,
            groups: 2,
            cg: 4,
            mg: 3,
            k: [1, 2],
            pad: 0,
            per_channel: true,
            seed: 21,
            ..base
        },
        // Depthwise, and a problem large enough to split over threads with pixel tails.
        Conv {
            groups: 8,
            cg: 1,
            mg: 1,
            hw: [13, 7],
            w_signed: true,
            seed: 22,
            ..base
        },
        Conv {
            cg: 32,
            mg: 40,
            hw: [21, 35],
            seed: 23,
            ..base
        },
    ]);
    for c in cases {
        check_conv(c);
    }
}

#[test]
fn matmul_integer_equals_the_sums_on_both_backends() {
    // `a` [lead.., K] x `b` [K, N], UINT8 or INT8 weights with a per-column or per-tensor
    // zero point, `a`'s zero point at run time: 6 rows (the integer kernel), and 2, 1 and 3
    // rows (the plain INT32 product).
    // (leading extents of `a`, K, N, INT8 weights, per-column zero point, seed)
    type Product = (&'static [usize], usize, usize, bool, bool, u64);
    let cases: [Product; 6] = [
        (&[2, 3], 7, 5, false, true, 1),
        (&[2, 3], 64, 70, true, false, 2),
        (&[2, 3], 33, 130, true, true, 3),
        (&[1, 2], 40, 70, true, false, 4),
        (&[1], 9, 200, false, false, 5),
        (&[3], 12, 20, true, true, 6),
    ];
    for (lead, k, n, signed, per_column, seed) in cases {
        let rows: usize = lead.iter().product();
        let mut rng = Lcg(seed);
        let a = eight_bit(false, rng.bytes(rows * k));
        let b = eight_bit(signed, rng.bytes(k * n));
        let za = eight_bit(false, rng.bytes(1));
        let zb = eight_bit(signed, rng.bytes(if per_column { n } else { 1 }));
        let zb_shape = if per_column { vec![n] } else { vec![] };
        let mut sa = lead.to_vec();
        sa.push(k);
        let at_ = Tensor::from_data(a.clone(), Shape::new(sa)).unwrap();
        let zat = Tensor::from_data(za.clone(), Shape::scalar()).unwrap();
        let inits = [("b", b.clone(), vec![k, n]), ("zb", zb.clone(), zb_shape)];
        let m = model(
            "MatMulInteger",
            &["a", "b", "za", "zb"],
            &[("a", &at_), ("za", &zat)],
            &inits,
            vec![],
        );
        let TensorData::I32(got) = both(&m, &[at_.clone(), zat.clone()]) else {
            panic!("MatMulInteger gives INT32")
        };
        for r in 0..rows {
            for c in 0..n {
                let z = at(&zb, if per_column { c } else { 0 });
                let s: i64 = (0..k)
                    .map(|i| (at(&a, r * k + i) - at(&za, 0)) * (at(&b, i * n + c) - z))
                    .sum();
                assert_eq!(
                    i64::from(got[r * n + c]),
                    s,
                    "{lead:?} k {k} n {n}: ({r}, {c})"
                );
            }
        }
    }
}

#[test]
fn malformed_zero_points_of_integer_convolutions_name_the_node() {
    let x = Tensor::from_data(TensorData::U8(vec![1; 9]), Shape::new([1, 1, 3, 3])).unwrap();
    let w = ("w", TensorData::U8(vec![1; 8]), vec![2, 1, 2, 2]);
    let cases: [(Vec<Init<'_>>, &str); 4] = [
        (
            vec![w.clone(), ("zx", TensorData::I8(vec![0]), vec![])],
            "zero point (input 2) is i8",
        ),
        (
            vec![w.clone(), ("zx", TensorData::U8(vec![0, 1]), vec![2])],
            "one element",
        ),
        (
            vec![
                w.clone(),
                ("zx", TensorData::U8(vec![0]), vec![]),
                ("zw", TensorData::U8(vec![0, 1, 2]), vec![3]),
            ],
            "does not fit operand 1",
        ),
        (
            vec![
                w.clone(),
                ("zx", TensorData::U8(vec![0]), vec![]),
                ("zw", TensorData::I8(vec![0, 1]), vec![2]),
            ],
            "zero point (input 3) is i8",
        ),
    ];
    for (inits, says) in cases {
        let names: Vec<&str> = ["x", "w", "zx", "zw"][..inits.len() + 1].to_vec();
        let m = model("ConvInteger", &names, &[("x", &x)], &inits, vec![]);
        let e = err(&m);
        let text = e.to_string();
        assert!(text.contains("n0") && text.contains(says), "{text}");
        assert!(
            matches!(
                e,
                OnnxError::TypeMismatch { .. } | OnnxError::ShapeMismatch { .. }
            ),
            "{e}"
        );
    }
}
