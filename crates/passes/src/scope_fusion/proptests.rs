//! Scope paths a user can write never panic: random names (slashes, empty components,
//! unicode, digits) through the tree and the whole scope fusion pass.

use graphlift_ir::{ElementType::F32, FunctionBuilder};
use proptest::prelude::*;

use super::*;

fn name() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof!["", "/", "a", "LayerNorm", "_1", ".0", "ü", "x y"],
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_names_never_panic(names in proptest::collection::vec(name(), 1..8)) {
        let b = FunctionBuilder::new("p");
        let x = b.parameter("x", F32, [3]);
        let mut v = x;
        let mut used = std::collections::HashSet::new();
        for (i, n) in names.iter().enumerate() {
            // A function's names are unique (the IR refuses a second node of a name), so
            // names shared by two nodes go through the raw tree below.
            v = if i % 2 == 0 && used.insert(n.clone()) { (v * 2.0).named(n) } else { v.exp() };
        }
        let f = b.finish(&[v]).unwrap();
        let ids: Vec<_> = f.nodes().map(|n| n.id()).collect();
        let tree = ScopeTree::from_names(
            names.iter().zip(ids.iter().cycle()).map(|(n, &id)| (id, n.as_str(), "Multiply")),
        );
        for s in tree.scopes() {
            prop_assert!(tree.find(s.name()).is_some());
            let _ = tree.all_nodes(s.id());
        }
        let mut g = f.clone();
        ScopeFusion::default().fuse(&mut g).unwrap();
        prop_assert_eq!(g, f);
    }
}
