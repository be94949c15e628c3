//! `LpPool` and `GlobalLpPool` (`p`-norms of windows, padding adding nothing), `MaxPool`'s
//! `Indices` in both storage orders and `MaxUnpool`; named errors.

use super::tests::{one_node, x};
use crate::tests::{attr_i, attr_ints, err, f32s, run};

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{got:?} {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{got:?} {want:?}");
    }
}

#[test]
fn lp_norms_of_windows_and_of_whole_planes() {
    let input = || vec![x(&[1., -2., 3., -4.], &[1, 1, 4])];
    for (p, want) in [
        (1, vec![1., 3., 5., 7., 4.]),
        (2, vec![1., 5f32.sqrt(), 13f32.sqrt(), 5., 4.]),
        (3, vec![1., 9f32.cbrt(), 35f32.cbrt(), 91f32.cbrt(), 4.]),
    ] {
        let attrs = vec![
            attr_ints("kernel_shape", &[2]),
            attr_ints("pads", &[1, 1]),
            attr_i("p", p),
        ];
        let m = one_node("LpPool", &["x"], attrs, &[1, 1, 4], vec![], 18);
        close(&f32s(&run(&m, input())[0]), &want);
        let m = one_node(
            "GlobalLpPool",
            &["x"],
            vec![attr_i("p", p)],
            &[1, 1, 4],
            vec![],
            2,
        );
        let total = [1f32, 2., 3., 4.]
            .iter()
            .map(|v| v.powi(p as i32))
            .sum::<f32>();
        close(&f32s(&run(&m, input())[0]), &[total.powf(1.0 / p as f32)]);
    }
}

#[test]
fn a_non_positive_order_is_an_error_naming_the_node() {
    let attrs = vec![attr_ints("kernel_shape", &[2]), attr_i("p", 0)];
    let m = one_node("LpPool", &["x"], attrs, &[1, 1, 4], vec![], 18);
    let e = err(&m).to_string();
    assert!(e.contains("LpPool `n0`") && e.contains("positive"), "{e}");
}

#[test]
fn max_pool_indices_in_both_storage_orders_and_unpooling() {
    use crate::proto::*;
    use crate::tests::{model_opset, node, vi};
    // x [1, 1, 2, 4]: windows 2 x 2, stride 2; maxima 6 (at (1, 1)) and 4 (at (0, 3)).
    let pooled = |order: i64| {
        let mut m = model_opset(
            vec![node(
                "MaxPool",
                "mp",
                &["x"],
                &["y", "i"],
                vec![
                    attr_ints("kernel_shape", &[2, 2]),
                    attr_ints("strides", &[2, 2]),
                    attr_i("storage_order", order),
                ],
            )],
            vec![vi("x", data_type::FLOAT, &[1, 1, 2, 4])],
            vec![],
            12,
        );
        m.graph.as_mut().unwrap().output = ["y", "i"]
            .iter()
            .map(|n| ValueInfoProto {
                name: (*n).into(),
                ..Default::default()
            })
            .collect();
        m
    };
    let input = || vec![x(&[1., 2., 3., 4., 5., 6., 0., -1.], &[1, 1, 2, 4])];
    let out = run(&pooled(0), input());
    assert_eq!(f32s(&out[0]), [6., 4.]);
    assert_eq!(out[1].read::<i64>().unwrap(), [5, 3]);
    // Column-major over (h, w): (1, 1) is 1 + 1 * 2 = 3, (0, 3) is 0 + 3 * 2 = 6.
    let out = run(&pooled(1), input());
    assert_eq!(out[1].read::<i64>().unwrap(), [3, 6]);
    // MaxPool then MaxUnpool: the maxima back in place, zeros elsewhere; an output_shape
    // one larger pads the end.
    let mut m = pooled(0);
    let g = m.graph.as_mut().unwrap();
    let unpool_attrs = vec![
        attr_ints("kernel_shape", &[2, 2]),
        attr_ints("strides", &[2, 2]),
    ];
    g.node.push(node(
        "MaxUnpool",
        "up",
        &["y", "i", "shape"],
        &["z"],
        unpool_attrs,
    ));
    g.initializer = vec![super::tests::ints_init("shape", &[1, 1, 3, 4])];
    g.output.push(ValueInfoProto {
        name: "z".into(),
        ..Default::default()
    });
    let out = run(&m, input());
    assert_eq!(out[2].shape().dims(), [1, 1, 3, 4]);
    assert_eq!(
        f32s(&out[2]),
        [0., 0., 0., 4., 0., 6., 0., 0., 0., 0., 0., 0.]
    );
    // An output_shape smaller than the unpooled one is an error naming the node.
    m.graph.as_mut().unwrap().initializer = vec![super::tests::ints_init("shape", &[1, 1, 1, 4])];
    let e = err(&m).to_string();
    assert!(
        e.contains("MaxUnpool `up`") && e.contains("unpooled shape"),
        "{e}"
    );
}
