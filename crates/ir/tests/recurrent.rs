//! The recurrent sequence ops in the IR: inference names a bad operand, the JSON form keeps
//! the attributes (and refuses a type name that disagrees with them), and the unrolled
//! decomposition has the op's output types.

use graphlift_ir::{
    unroll, ElementType, Function, Op, Output, RecurrentActivation as A, RecurrentCell,
    RecurrentDirection, RecurrentSequence, Shape, TensorType,
};

fn lstm() -> RecurrentSequence {
    RecurrentSequence {
        cell: RecurrentCell::Lstm,
        direction: RecurrentDirection::Bidirectional,
        hidden_size: 3,
        activations: vec![
            A::Sigmoid,
            A::Tanh,
            A::Tanh,
            A::HardSigmoid(0.2, 0.5),
            A::Elu(1.0),
            A::Tanh,
        ],
        clip: Some(2.5),
        input_forget: true,
        linear_before_reset: false,
        batch_major: true,
    }
}

/// The operand types of `lstm()` for `[batch 2, seq 4, input 5]`.
fn operand_types() -> Vec<TensorType> {
    let f = |d: &[usize]| TensorType::new(ElementType::F32, Shape::new(d));
    vec![
        f(&[2, 4, 5]),
        f(&[2, 12, 5]),
        f(&[2, 12, 3]),
        f(&[2, 24]),
        TensorType::new(ElementType::I32, Shape::new([2])),
        f(&[2, 2, 3]),
        f(&[2, 2, 3]),
        f(&[2, 9]),
    ]
}

fn lstm_function() -> (Function, Vec<Output>) {
    let mut f = Function::new("lstm");
    let params: Vec<Output> = operand_types()
        .into_iter()
        .enumerate()
        .map(|(k, t)| {
            Output::from(
                f.add_parameter(format!("p{k}"), t.element_type, t.shape)
                    .unwrap(),
            )
        })
        .collect();
    let id = f.add_node(Op::Recurrent(lstm().into()), &params).unwrap();
    for k in 0..3 {
        f.add_result(Output::new(id, k), None).unwrap();
    }
    (f, params)
}

#[test]
fn inference_gives_the_outputs_and_names_bad_operands() {
    let (f, _) = lstm_function();
    let types: Vec<String> = f.result_types().iter().map(ToString::to_string).collect();
    assert_eq!(types, ["f32[2, 4, 2, 3]", "f32[2, 2, 3]", "f32[2, 2, 3]"]);
    let op = Op::Recurrent(lstm().into());
    let mut bad = operand_types();
    bad[2] = TensorType::new(ElementType::F32, Shape::new([2, 12, 4]));
    let e = graphlift_ir::infer_output_types(&op, &bad).unwrap_err();
    assert!(e.contains('R') && e.contains("[2, 12, 3]"), "{e}");
    let mut bad = operand_types();
    bad[4] = TensorType::new(ElementType::F32, Shape::new([2]));
    let e = graphlift_ir::infer_output_types(&op, &bad).unwrap_err();
    assert!(e.contains("sequence_lens"), "{e}");
    let mut r = lstm();
    r.activations.pop();
    let e =
        graphlift_ir::infer_output_types(&Op::Recurrent(r.into()), &operand_types()).unwrap_err();
    assert!(e.contains("activations"), "{e}");
}

#[test]
fn json_keeps_the_attributes() {
    let (f, _) = lstm_function();
    let text = f.to_json();
    assert!(text.contains("LSTMSequence"), "{text}");
    let loaded = Function::from_json(&text).unwrap();
    assert_eq!(loaded.to_json(), text);
    let renamed = text.replacen("\"LSTMSequence\"", "\"GRUSequence\"", 1);
    let e = Function::from_json(&renamed).unwrap_err().to_string();
    assert!(
        e.contains("GRUSequence") && e.contains("LSTMSequence"),
        "{e}"
    );
}

#[test]
fn the_decomposition_has_the_op_types() {
    let (f, _) = lstm_function();
    let body = unroll::decomposition(&lstm(), &operand_types(), Some(vec![4, 2])).unwrap();
    assert_eq!(body.result_types(), f.result_types());
    assert!(
        body.nodes().any(|n| matches!(n.op(), Op::Gather(_))),
        "ragged reverse permutes"
    );
    let e = unroll::decomposition(&lstm(), &operand_types(), Some(vec![5, 2])).unwrap_err();
    assert!(e.to_string().contains("sequence_lens"), "{e}");
}
