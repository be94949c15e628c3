//! Malformed `If`, `Loop` and `Scan` nodes (the table of `malformed_tests.rs`, run by its
//! [`check`]): missing or mistyped subgraph attributes, bodies of the wrong arity, operands
//! of the wrong type or rank, axes and counts out of range. Each must be an `Err` naming
//! the node and saying what is wrong, never a panic.

use crate::malformed_tests::{case, check, says, Case, Class, Class::*, F, I, V::*};
use crate::proto::*;
use crate::tests::{attr_f, attr_g, attr_i, attr_ints, node, vi};

const B: i32 = data_type::BOOL;

/// A subgraph named `name`.
fn graph(
    name: &str,
    input: Vec<ValueInfoProto>,
    node: Vec<NodeProto>,
    output: Vec<ValueInfoProto>,
) -> GraphProto {
    GraphProto {
        name: name.into(),
        node,
        input,
        output,
        ..Default::default()
    }
}

/// An `If` branch of `n` outputs `o<k>`, each a FLOAT `[2]` constant.
fn branch(n: usize) -> GraphProto {
    let (nodes, outputs) = (0..n)
        .map(|k| {
            let o = format!("o{k}");
            let value = TensorProto {
                dims: vec![2],
                data_type: F,
                float_data: vec![k as f32; 2],
                ..Default::default()
            };
            let attr = AttributeProto {
                name: "value".into(),
                r#type: attribute_type::TENSOR,
                t: Some(value),
                ..Default::default()
            };
            (
                node("Constant", &o, &[], &[&o], vec![attr]),
                vi(&o, F, &[2]),
            )
        })
        .unzip();
    graph("branch", vec![], nodes, outputs)
}

/// Both branches of an `If`, of `then` and `otherwise` outputs.
fn branches(then: usize, otherwise: usize) -> Vec<AttributeProto> {
    vec![
        attr_g("then_branch", branch(then)),
        attr_g("else_branch", branch(otherwise)),
    ]
}

/// A `Loop` body `(i, c, a) -> (c, a + a)` over one carried FLOAT `[2]` value, with
/// `extra` more FLOAT `[2]` inputs; `outputs` picks its outputs among `c`, `a2` and its
/// copy `a2b` (FLOAT `[2]`) and `a4` (FLOAT `[4]`, `a` concatenated with itself).
fn loop_body(extra: usize, outputs: &[&str]) -> AttributeProto {
    let mut inputs = vec![vi("i", I, &[]), vi("c", B, &[]), vi("a", F, &[2])];
    inputs.extend((0..extra).map(|k| vi(&format!("e{k}"), F, &[2])));
    let nodes = vec![
        node("Add", "double", &["a", "a"], &["a2"], vec![]),
        node("Identity", "copy", &["a2"], &["a2b"], vec![]),
        node(
            "Concat",
            "twice",
            &["a", "a"],
            &["a4"],
            vec![attr_i("axis", 0)],
        ),
    ];
    let outputs = outputs
        .iter()
        .map(|&o| match o {
            "c" => vi(o, B, &[]),
            "a4" => vi(o, F, &[4]),
            _ => vi(o, F, &[2]),
        })
        .collect();
    attr_g("body", graph("loop_body", inputs, nodes, outputs))
}

/// A `Scan` body of `inputs` FLOAT `[2]` inputs `s, x, ..`: `(s, x) -> (t, u)`, both
/// `s + x` (one state, one scan output), its outputs the first `outputs` of those two.
fn scan_body(inputs: usize, outputs: usize) -> AttributeProto {
    let inputs = ["s", "x", "z"][..inputs]
        .iter()
        .map(|n| vi(n, F, &[2]))
        .collect();
    let nodes = vec![
        node("Add", "sum", &["s", "x"], &["t"], vec![]),
        node("Identity", "copy", &["t"], &["u"], vec![]),
    ];
    let outputs = ["t", "u"][..outputs]
        .iter()
        .map(|n| vi(n, F, &[2]))
        .collect();
    attr_g("body", graph("scan_body", inputs, nodes, outputs))
}

/// A well-formed `Scan` of one state and one scan input `[3, 2]`, with `attrs` replacing
/// its `num_scan_inputs` and body where they name the same attribute.
fn scan(class: Class, what: &'static str, attrs: Vec<AttributeProto>) -> Case {
    let mut all = vec![attr_i("num_scan_inputs", 1), scan_body(2, 2)];
    for a in attrs {
        all.retain(|b| b.name != a.name);
        all.push(a);
    }
    case("Scan", class, what, vec![In(F, &[2]), In(F, &[3, 2])], all)
}

/// The cases, one a line (kept unformatted so that each stays one).
#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let cond = || In(B, &[]);
    let carried = |m| vec![m, Skip, In(F, &[2])];
    let m3 = || I64(&[], &[3]);
    vec![
        says("`then_branch`: the subgraph attribute is missing", case("If", Attribute, "no then_branch", vec![cond()], vec![attr_g("else_branch", branch(1))])),
        says("`else_branch`: the subgraph attribute is missing", case("If", Attribute, "no else_branch", vec![cond()], vec![attr_g("then_branch", branch(1))])),
        says("`then_branch`: expected GRAPH, got INT", case("If", Attribute, "then_branch of type INT", vec![cond()], vec![attr_i("then_branch", 1), attr_g("else_branch", branch(1))])),
        says("the branches disagree: then has 1 output(s), else 2", case("If", Rank, "branches of 1 and 2 outputs", vec![cond()], branches(1, 2))),
        says("the branches disagree: then has 2 output(s), else 1", case("If", Rank, "branches of 2 and 1 outputs, a constant condition", vec![Bool(&[], &[true])], branches(2, 1))),
        says("has 2 outputs; graphlift's If produces 1", Case { outputs: 2, ..case("If", Rank, "more outputs than its branches", vec![cond()], branches(1, 1)) }),
        says("the condition must be one bool element, is f32[]", case("If", Attribute, "a float condition", vec![In(F, &[])], branches(1, 1))),
        says("the condition must be one bool element, is f32[]", case("If", Attribute, "a constant float condition", vec![F32(&[], &[1.0])], branches(1, 1))),
        says("the condition must be one bool element, is bool[2]", case("If", Rank, "a condition of two elements", vec![In(B, &[2])], branches(1, 1))),
        says("the condition must be one bool element, is bool[0]", case("If", Index, "a constant empty condition", vec![Bool(&[0], &[])], branches(1, 1))),
        says("If needs its condition input", case("If", Rank, "no condition", vec![], branches(1, 1))),
        says("`body`: the subgraph attribute is missing", case("Loop", Attribute, "no body", carried(m3()), vec![])),
        says("`body`: expected GRAPH, got FLOAT", case("Loop", Attribute, "body of type FLOAT", carried(m3()), vec![attr_f("body", 1.0)])),
        says("the body has 4 inputs, needs 3", case("Loop", Rank, "a body of 4 inputs for 1 carried value", carried(m3()), vec![loop_body(1, &["c", "a2"])])),
        says("the body has 3 inputs, needs 2", case("Loop", Rank, "a body of 3 inputs for no carried value", vec![m3(), Skip], vec![loop_body(0, &["c"])])),
        says("the body has 1 outputs, needs at least 2", case("Loop", Rank, "a body without the condition output", carried(m3()), vec![loop_body(0, &["a2"])])),
        says("the body's condition result must be one bool element", case("Loop", Attribute, "a float condition output", carried(m3()), vec![loop_body(0, &["a2b", "a2"])])),
        says("the trip count M must be one i64 element, is f32[]", case("Loop", Attribute, "M of type float", carried(F32(&[], &[3.0])), vec![loop_body(0, &["c", "a2"])])),
        says("the trip count M must be one i64 element, is i64[2]", case("Loop", Rank, "M of two elements", carried(I64(&[2], &[3, 3])), vec![loop_body(0, &["c", "a2"])])),
        says("the trip count M must be one i64 element, is f32[]", case("Loop", Attribute, "M a float graph input, with a scan output", carried(In(F, &[])), vec![loop_body(0, &["c", "a2", "a2b"])])),
        says("Loop `bad` body `loop_body`: graph output `a2`: two graph outputs have this name", case("Loop", Rank, "a body with two outputs of one name", carried(m3()), vec![loop_body(0, &["c", "a2", "a2"])])),
        says("`nope` is not defined by any graph input", case("Loop", Index, "a body output naming no value", carried(m3()), vec![loop_body(0, &["c", "nope"])])),
        says("the condition cond must be one bool element, is i64[]", case("Loop", Attribute, "cond of type int64", vec![m3(), I64(&[], &[1]), In(F, &[2])], vec![loop_body(0, &["c", "a2"])])),
        says("changes from f32[2] to f32[4]", case("Loop", Rank, "a carried value that changes shape", carried(m3()), vec![loop_body(0, &["c", "a4"])])),
        says("has 2 outputs; its body gives 1 carried values and 0 scan outputs", Case { outputs: 2, ..case("Loop", Index, "more outputs than its body gives", carried(m3()), vec![loop_body(0, &["c", "a2"])]) }),
        says("needs the inputs M and cond", case("Loop", Rank, "one input", vec![m3()], vec![loop_body(0, &["c"])])),
        says("loop-carried input 2 is empty", case("Loop", Rank, "an empty carried input", vec![m3(), Skip, Skip], vec![loop_body(0, &["c", "a2"])])),
        says("`body`: the subgraph attribute is missing", case("Scan", Attribute, "no body", vec![In(F, &[2]), In(F, &[3, 2])], vec![attr_i("num_scan_inputs", 1)])),
        says("`num_scan_inputs`: is required", case("Scan", Attribute, "no num_scan_inputs", vec![In(F, &[2]), In(F, &[3, 2])], vec![scan_body(2, 2)])),
        says("`num_scan_inputs`: expected INT, got FLOAT", scan(Attribute, "num_scan_inputs of type FLOAT", vec![attr_f("num_scan_inputs", 1.0)])),
        says("`num_scan_inputs`: 0 for 2 inputs", scan(Index, "num_scan_inputs 0", vec![attr_i("num_scan_inputs", 0)])),
        says("`num_scan_inputs`: 3 for 2 inputs", scan(Index, "num_scan_inputs past the inputs", vec![attr_i("num_scan_inputs", 3)])),
        says("`num_scan_inputs`: -1 for 2 inputs", scan(Index, "a negative num_scan_inputs", vec![attr_i("num_scan_inputs", -1)])),
        says("`scan_input_axes`: axis 2 out of range for rank 2", scan(Index, "scan_input_axes out of range", vec![attr_ints("scan_input_axes", &[2])])),
        says("`scan_input_axes`: axis -3 out of range for rank 2", scan(Index, "negative scan_input_axes out of range", vec![attr_ints("scan_input_axes", &[-3])])),
        says("`scan_input_axes`: has 2 entries for 1 values", scan(Rank, "scan_input_axes of two entries", vec![attr_ints("scan_input_axes", &[0, 1])])),
        says("`scan_input_axes`: expected INTS, got INT", scan(Attribute, "scan_input_axes of type INT", vec![attr_i("scan_input_axes", 0)])),
        says("`scan_output_axes`: axis 2 out of range for rank 2", scan(Index, "scan_output_axes out of range", vec![attr_ints("scan_output_axes", &[2])])),
        says("`scan_input_directions`: has 2 entries for 1 values", scan(Rank, "scan_input_directions of two entries", vec![attr_ints("scan_input_directions", &[0, 1])])),
        says("`scan_output_directions`: has 0 entries for 1 values", scan(Rank, "scan_output_directions of no entries", vec![attr_ints("scan_output_directions", &[])])),
        says("`scan_input_directions`: 2 is neither 0 (forward) nor 1 (reverse)", scan(Attribute, "a scan_input_directions of 2", vec![attr_ints("scan_input_directions", &[2])])),
        says("the body has 3 inputs, needs 2 (1 state, 1 scan)", scan(Rank, "a body of 3 inputs for 2", vec![scan_body(3, 2)])),
        says("the body has 1 inputs, needs 2 (1 state, 1 scan)", scan(Rank, "a body of 1 input for 2", vec![scan_body(1, 2)])),
        says("the body has 0 outputs, fewer than its 1 state values", scan(Rank, "a body of no outputs", vec![scan_body(2, 0)])),
        says("`scan_input_axes`: axis 0 out of range for rank 0", case("Scan", Rank, "a scan input of rank 0", vec![In(F, &[2]), In(F, &[])], vec![attr_i("num_scan_inputs", 1), scan_body(2, 2)])),
        says("scan input 1 (f32[4, 2]) has 4 slices along axis 0, scan input 0 has 3", case("Scan", Rank, "scan inputs of two lengths", vec![In(F, &[2]), In(F, &[3, 2]), In(F, &[4, 2])], vec![attr_i("num_scan_inputs", 2), scan_body(3, 2)])),
        says("input 1 is empty", case("Scan", Rank, "an empty scan input", vec![In(F, &[2]), Skip], vec![attr_i("num_scan_inputs", 1), scan_body(2, 2)])),
    ]
}

#[test]
fn malformed_control_flow_nodes_are_errors_naming_the_node() {
    check(&cases());
}
