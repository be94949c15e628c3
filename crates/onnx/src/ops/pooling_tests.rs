//! `LpPool` and `GlobalLpPool`: `p`-norms of windows, padding adding nothing; named errors.

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
