//! Property test: the JSON round trip of random functions is exact.
//!
//! The functions come from [`common::random`]: elementwise ops with broadcasting, constants
//! of every element type with special float values, nested fused kernels, random names,
//! metadata, tags, pass histories, control dependencies and arena holes.

mod common;

use common::same_structure;
use graphlift_ir::Function;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn json_round_trip_is_exact(f in common::random::function()) {
        let text = f.to_json();
        let loaded = Function::from_json(&text);
        prop_assert!(loaded.is_ok(), "{:?}\n{text}", loaded.err());
        let h = loaded.unwrap();
        if let Err(e) = same_structure(&f, &h) {
            prop_assert!(false, "{e}");
        }
        h.validate().unwrap();
        prop_assert_eq!(h.to_json(), text);
        // Without arena holes the ids are kept too.
        let dense = f.nodes().enumerate().all(|(i, n)| n.id().index() == i);
        if dense {
            for (a, b) in f.nodes().zip(h.nodes()) {
                prop_assert_eq!(a.id(), b.id());
                prop_assert_eq!(a.inputs(), b.inputs());
            }
        }
    }
}
