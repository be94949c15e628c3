//! Property test: the JSON round trip of random functions is exact.
//!
//! The functions come from [`common::random`]: elementwise ops with broadcasting, constants
//! of every element type with special float values, nested fused kernels, random names,
//! metadata, tags, pass histories, control dependencies and arena holes; and stateful
//! computations of the builder ([`common::random::stateful`]): variables with computed
//! initializers, reads, main-stream and guarded assigns, sinks.

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

/// Random functions, stateless or stateful.
fn any_function() -> impl Strategy<Value = Function> {
    prop_oneof![
        common::random::function(),
        common::random::stateful().prop_map(|s| s.function.expect("the builder's function")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn stateful_json_round_trip_is_exact(s in common::random::stateful()) {
        let f = s.function.expect("the builder's function");
        let text = f.to_json();
        let h = Function::from_json(&text).unwrap();
        if let Err(e) = same_structure(&f, &h) {
            prop_assert!(false, "{e}");
        }
        prop_assert_eq!(&h, &f);
        prop_assert_eq!(h.to_json(), text);
    }
}

/// Every path (as a JSON pointer) to a value inside `v`.
fn pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(x, p, out);
            }
        }
        _ => {}
    }
}

/// Replacement values for a mutated field.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::json;
    prop_oneof![
        Just(json!(null)),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(u64::MAX)),
        Just(json!(1.5)),
        Just(json!([])),
        Just(json!({})),
        Just(json!("0x7fc00000")),
        Just(json!("Result_1")),
        Just(json!("p0")),
        Just(json!("f32")),
        Just(json!("bool")),
        Just(json!("FusedKernel")),
        Just(json!("Variable")),
        Just(json!("ReadVariable")),
        Just(json!("Assign")),
        Just(json!("v0")),
        Just(json!(["a0"])),
        Just(json!([1, 2])),
        Just(json!([{"node": "p0", "output": 0}])),
        Just(json!({"element_type": "f32", "shape": [4, 2, 3]})),
        "[a-z0-9_]{0,6}".prop_map(serde_json::Value::from),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A document with one field replaced or removed loads or fails with an error, never a
    /// panic; what loads is a valid function that round-trips again.
    #[test]
    fn mutated_documents_never_panic(
        f in any_function(),
        which in any::<usize>(),
        remove in any::<bool>(),
        value in json_value(),
    ) {
        let mut doc: serde_json::Value = serde_json::from_str(&f.to_json()).unwrap();
        let mut paths = Vec::new();
        pointers(&doc, String::new(), &mut paths);
        let path = &paths[which % paths.len()];
        let (parent, key) = path.rsplit_once('/').unwrap();
        let removed = remove
            && match doc.pointer_mut(parent) {
                Some(serde_json::Value::Object(m)) => m.remove(key).is_some(),
                Some(serde_json::Value::Array(a)) => {
                    a.remove(key.parse::<usize>().unwrap());
                    true
                }
                _ => false,
            };
        if !removed {
            *doc.pointer_mut(path).unwrap() = value;
        }
        if let Ok(g) = Function::from_json(&doc.to_string()) {
            g.validate().unwrap();
            let again = Function::from_json(&g.to_json()).unwrap();
            if let Err(e) = same_structure(&g, &again) {
                prop_assert!(false, "{e}");
            }
        }
    }
}
