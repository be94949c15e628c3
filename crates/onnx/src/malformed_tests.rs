//! Malformed nodes of the operators added to the importer recently (and the trigonometric
//! and hyperbolic ones), one table: per operator at least one case of each class that
//! applies — a wrong attribute (bad value or type), a wrong rank, an out-of-range index or
//! axis. Each must be an `Err` naming the node (`<Op> `bad``), at import or, where the
//! problem is in run-time data, when the model runs on either backend; never a panic.
//! [`check`] runs a table; `If`, `Loop` and `Scan` have theirs in
//! `malformed_control_flow_tests.rs`.

use graphlift_runtime::{Backend, InterpreterBackend, Tensor};

use crate::import_model;
use crate::proto::*;
use crate::tests::{attr_f, attr_i, attr_ints, attr_s, model_opset, node, vi};

/// An input of the one node: a graph input, an initializer, or an omitted optional input.
pub(crate) enum V {
    /// A graph input `x<k>` of an element type (`data_type`) and shape.
    In(i32, &'static [i64]),
    /// An INT64 initializer of a shape.
    I64(&'static [i64], &'static [i64]),
    /// A FLOAT initializer of a shape.
    F32(&'static [i64], &'static [f32]),
    /// A UINT8 initializer of a shape.
    U8(&'static [i64], &'static [u8]),
    /// A BOOL initializer of a shape.
    Bool(&'static [i64], &'static [bool]),
    /// An omitted optional input (`""`).
    Skip,
}
use V::*;

pub(crate) const F: i32 = data_type::FLOAT;
pub(crate) const I: i32 = data_type::INT64;
const U: i32 = data_type::UINT8;

/// What goes wrong, for the failure messages.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Class {
    Attribute,
    Rank,
    Index,
}
use Class::*;

/// One malformed node: its op, what is wrong with it, its inputs, outputs and attributes.
pub(crate) struct Case {
    pub(crate) op: &'static str,
    pub(crate) class: Class,
    pub(crate) what: &'static str,
    pub(crate) inputs: Vec<V>,
    pub(crate) outputs: usize,
    pub(crate) attrs: Vec<AttributeProto>,
    /// Run-time data of the graph inputs (INT64 ones as `i64`, others `f32`), for a problem
    /// that only the data shows; `None`: the import must fail.
    pub(crate) run: Option<Vec<Vec<f64>>>,
    /// A part of the message that says the error is the one meant (not another problem
    /// of the test's model); `None`: naming the node is enough.
    pub(crate) says: Option<&'static str>,
}

/// A case of one output whose import must fail.
pub(crate) fn case(
    op: &'static str,
    class: Class,
    what: &'static str,
    inputs: Vec<V>,
    attrs: Vec<AttributeProto>,
) -> Case {
    Case {
        op,
        class,
        what,
        inputs,
        outputs: 1,
        attrs,
        run: None,
        says: None,
    }
}

/// The one-node model of `c`: node `bad`, its graph inputs `x<k>`, initializers `c<k>`,
/// outputs `y<k>` without declared types, opset 21.
fn one_node(c: &Case) -> ModelProto {
    let mut names = Vec::new();
    let mut graph_inputs = Vec::new();
    let mut inits = Vec::new();
    for (k, v) in c.inputs.iter().enumerate() {
        let init = |dims: &[i64], data_type| TensorProto {
            name: format!("c{k}"),
            dims: dims.to_vec(),
            data_type,
            ..Default::default()
        };
        let tensor = match v {
            In(t, dims) => {
                graph_inputs.push(vi(&format!("x{k}"), *t, dims));
                names.push(format!("x{k}"));
                continue;
            }
            Skip => {
                names.push(String::new());
                continue;
            }
            I64(dims, d) => TensorProto {
                int64_data: d.to_vec(),
                ..init(dims, I)
            },
            F32(dims, d) => TensorProto {
                float_data: d.to_vec(),
                ..init(dims, F)
            },
            U8(dims, d) => TensorProto {
                raw_data: d.to_vec(),
                ..init(dims, U)
            },
            Bool(dims, d) => TensorProto {
                int32_data: d.iter().map(|&b| i32::from(b)).collect(),
                ..init(dims, data_type::BOOL)
            },
        };
        names.push(tensor.name.clone());
        inits.push(tensor);
    }
    let outputs: Vec<String> = (0..c.outputs).map(|k| format!("y{k}")).collect();
    let ins: Vec<&str> = names.iter().map(String::as_str).collect();
    let outs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let mut m = model_opset(
        vec![node(c.op, "bad", &ins, &outs, c.attrs.clone())],
        graph_inputs,
        outputs
            .iter()
            .map(|n| ValueInfoProto {
                name: n.clone(),
                ..Default::default()
            })
            .collect(),
        21,
    );
    m.ir_version = 10;
    if let Some(g) = m.graph.as_mut() {
        g.initializer = inits;
    }
    m
}

/// The error of `c`: from the import, or (for a case with run-time data) from running it on
/// INTERPRETER and CPU-JIT, both of which must fail.
fn errors_of(c: &Case) -> Result<Vec<String>, String> {
    let m = one_node(c);
    let imported = match import_model(&m) {
        Err(e) => return Ok(vec![e.to_string()]),
        Ok(imported) => imported,
    };
    let Some(data) = &c.run else {
        return Err("imported without an error".into());
    };
    let inputs: Vec<Tensor> = imported
        .function
        .parameter_types()
        .iter()
        .zip(data)
        .map(|(t, d)| {
            let data = graphlift_ir::TensorData::from_f64(t.element_type, d);
            Tensor::from_data(data, t.shape.clone()).map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let mut errors = Vec::new();
    let backends: [Box<dyn Backend>; 2] = [
        Box::new(InterpreterBackend),
        Box::new(graphlift_jit::CpuJitBackend::new()),
    ];
    for b in backends {
        let outcome = b
            .compile(&imported.function)
            .and_then(|exe| exe.run(&inputs));
        match outcome {
            Err(e) => errors.push(e.to_string()),
            Ok(_) => return Err(format!("{} ran it without an error", b.name())),
        }
    }
    Ok(errors)
}

/// The table: one line a case (kept unformatted so that it stays one).
#[rustfmt::skip]
fn cases() -> Vec<Case> {
    let x4: &'static [i64] = &[1, 2, 3, 3];
    let mut v = vec![
        case("Resize", Attribute, "unknown mode", vec![In(F, x4), Skip, F32(&[4], &[1., 1., 2., 2.])], vec![attr_s("mode", "bogus")]),
        case("Resize", Attribute, "unknown coordinate mode", vec![In(F, x4), Skip, F32(&[4], &[1., 1., 2., 2.])], vec![attr_s("coordinate_transformation_mode", "nope")]),
        case("Resize", Rank, "scales of the wrong length", vec![In(F, x4), Skip, F32(&[2], &[2., 2.])], vec![]),
        case("Resize", Index, "axes out of range", vec![In(F, x4), Skip, F32(&[2], &[2., 2.])], vec![attr_ints("axes", &[2, 7])]),
        case("Pad", Attribute, "unknown mode", vec![In(F, &[2, 3]), I64(&[4], &[1, 1, 1, 1])], vec![attr_s("mode", "bogus")]),
        case("Pad", Rank, "pads of the wrong length", vec![In(F, &[2, 3]), I64(&[3], &[1, 1, 1])], vec![]),
        case("Pad", Index, "axes out of range", vec![In(F, &[2, 3]), I64(&[2], &[1, 1]), Skip, I64(&[1], &[4])], vec![]),
        case("ConvTranspose", Attribute, "zero stride", vec![In(F, x4), F32(&[2, 1, 2, 2], &[0.5; 8])], vec![attr_ints("strides", &[0, 0])]),
        case("ConvTranspose", Attribute, "group not dividing the channels", vec![In(F, x4), F32(&[2, 1, 2, 2], &[0.5; 8])], vec![attr_i("group", 3)]),
        case("ConvTranspose", Rank, "weight of rank 3", vec![In(F, x4), F32(&[2, 1, 2], &[0.5; 4])], vec![]),
        case("ConvTranspose", Index, "pads of the wrong length", vec![In(F, x4), F32(&[2, 1, 2, 2], &[0.5; 8])], vec![attr_ints("pads", &[1, 1, 1])]),
        case("Gemm", Attribute, "alpha of type string", vec![In(F, &[2, 3]), In(F, &[3, 4])], vec![attr_s("alpha", "2")]),
        case("Gemm", Rank, "A of rank 3", vec![In(F, &[2, 3, 1]), In(F, &[3, 4])], vec![]),
        case("Gemm", Index, "inner extents differ", vec![In(F, &[2, 3]), In(F, &[4, 4])], vec![]),
        case("Split", Index, "axis out of range", vec![In(F, &[4, 2])], vec![attr_i("axis", 5), attr_i("num_outputs", 2)]),
        case("Split", Attribute, "split sizes not summing to the extent", vec![In(F, &[4, 2]), I64(&[2], &[1, 1])], vec![]),
        case("Split", Attribute, "zero num_outputs", vec![In(F, &[4, 2])], vec![attr_i("num_outputs", 0)]),
        case("Split", Rank, "split of rank 2", vec![In(F, &[4, 2]), I64(&[1, 2], &[1, 3])], vec![]),
        case("LogSoftmax", Index, "axis out of range", vec![In(F, &[2, 3])], vec![attr_i("axis", 3)]),
        case("LogSoftmax", Attribute, "axis of type float", vec![In(F, &[2, 3])], vec![attr_f("axis", 1.0)]),
        case("LogSoftmax", Rank, "a scalar", vec![In(F, &[])], vec![attr_i("axis", 0)]),
        case("AveragePool", Attribute, "no kernel_shape", vec![In(F, x4)], vec![]),
        case("AveragePool", Attribute, "zero stride", vec![In(F, x4)], vec![attr_ints("kernel_shape", &[2, 2]), attr_ints("strides", &[0, 1])]),
        case("AveragePool", Rank, "kernel_shape of the wrong length", vec![In(F, x4)], vec![attr_ints("kernel_shape", &[2])]),
        case("AveragePool", Index, "a window larger than the padded input", vec![In(F, x4)], vec![attr_ints("kernel_shape", &[9, 9])]),
        case("GlobalMaxPool", Rank, "rank 2", vec![In(F, &[2, 3])], vec![]),
        case("ArgMax", Index, "axis out of range", vec![In(F, &[2, 3])], vec![attr_i("axis", 2)]),
        case("ArgMax", Attribute, "keepdims of type string", vec![In(F, &[2, 3])], vec![attr_s("keepdims", "yes")]),
        case("ArgMax", Rank, "a scalar", vec![In(F, &[])], vec![attr_i("axis", 1)]),
        case("ArgMin", Index, "negative axis out of range", vec![In(F, &[2, 3])], vec![attr_i("axis", -3)]),
        case("ArgMin", Attribute, "select_last_index of type float", vec![In(F, &[2, 3])], vec![attr_f("select_last_index", 1.0)]),
        case("Tile", Rank, "repeats of the wrong length", vec![In(F, &[2, 3]), I64(&[1], &[2])], vec![]),
        case("Tile", Attribute, "a negative repeat", vec![In(F, &[2, 3]), I64(&[2], &[-1, 1])], vec![]),
        case("Range", Attribute, "zero delta", vec![F32(&[], &[0.]), F32(&[], &[2.]), F32(&[], &[0.])], vec![]),
        case("Range", Rank, "start of rank 1", vec![F32(&[2], &[0., 1.]), F32(&[], &[2.]), F32(&[], &[0.5])], vec![]),
        case("Range", Index, "an output too long", vec![F32(&[], &[0.]), F32(&[], &[1e30]), F32(&[], &[1e-30])], vec![]),
        case("Size", Rank, "no input", vec![], vec![]),
        case("DepthToSpace", Attribute, "zero blocksize", vec![In(F, &[1, 4, 2, 2])], vec![attr_i("blocksize", 0)]),
        case("DepthToSpace", Attribute, "unknown mode", vec![In(F, &[1, 4, 2, 2])], vec![attr_i("blocksize", 2), attr_s("mode", "XYZ")]),
        case("DepthToSpace", Index, "blocksize not dividing the channels", vec![In(F, &[1, 4, 2, 2])], vec![attr_i("blocksize", 3)]),
        case("DepthToSpace", Rank, "rank 3", vec![In(F, &[4, 2, 2])], vec![attr_i("blocksize", 2)]),
        case("SpaceToDepth", Index, "blocksize not dividing the height", vec![In(F, &[1, 1, 4, 4])], vec![attr_i("blocksize", 3)]),
        case("SpaceToDepth", Attribute, "no blocksize", vec![In(F, &[1, 1, 4, 4])], vec![]),
        case("SpaceToDepth", Rank, "rank 3", vec![In(F, &[1, 4, 4])], vec![attr_i("blocksize", 2)]),
        case("Trilu", Rank, "rank 1", vec![In(F, &[3])], vec![]),
        case("Trilu", Attribute, "upper of type string", vec![In(F, &[3, 3])], vec![attr_s("upper", "no")]),
        case("Trilu", Index, "k of two elements", vec![In(F, &[3, 3]), I64(&[2], &[1, 2])], vec![]),
        case("IsNaN", Attribute, "an integer input", vec![In(I, &[2, 3])], vec![]),
        case("IsInf", Attribute, "detect_negative of type string", vec![In(F, &[2, 3])], vec![attr_s("detect_negative", "0")]),
        case("IsInf", Rank, "two inputs", vec![In(F, &[2, 3]), In(F, &[2, 3])], vec![]),
        case("CumSum", Index, "axis out of range", vec![In(F, &[2, 3]), I64(&[], &[5])], vec![]),
        case("CumSum", Rank, "axis of two elements", vec![In(F, &[2, 3]), I64(&[2], &[0, 1])], vec![]),
        case("CumSum", Attribute, "exclusive of type float", vec![In(F, &[2, 3]), I64(&[], &[1])], vec![attr_f("exclusive", 1.0)]),
        case("GatherElements", Index, "axis out of range", vec![In(F, &[2, 3]), I64(&[2, 2], &[0, 1, 1, 0])], vec![attr_i("axis", 2)]),
        case("GatherElements", Rank, "indices of another rank", vec![In(F, &[2, 3]), I64(&[2], &[0, 1])], vec![]),
        case("GatherElements", Attribute, "axis of type string", vec![In(F, &[2, 3]), I64(&[2, 2], &[0, 1, 1, 0])], vec![attr_s("axis", "1")]),
        case("GatherElements", Index, "a constant index out of range", vec![In(F, &[2, 3]), I64(&[2, 2], &[0, 7, 1, 0])], vec![attr_i("axis", 1)]),
        run(vec![vec![1.0; 6], vec![0.0, 7.0, 1.0, 0.0]], case("GatherElements", Index, "a run-time index out of range", vec![In(F, &[2, 3]), In(I, &[2, 2])], vec![attr_i("axis", 1)])),
        case("GatherND", Index, "indices deeper than the data", vec![In(F, &[2, 3]), I64(&[1, 3], &[0, 0, 0])], vec![]),
        case("GatherND", Attribute, "batch_dims past the rank", vec![In(F, &[2, 3]), I64(&[2, 1], &[0, 1])], vec![attr_i("batch_dims", 3)]),
        case("GatherND", Rank, "scalar indices", vec![In(F, &[2, 3]), I64(&[], &[0])], vec![]),
        case("GatherND", Index, "a constant index out of range", vec![In(F, &[2, 3]), I64(&[2, 2], &[0, 1, 1, 9])], vec![]),
        run(vec![vec![1.0; 6], vec![0.0, 1.0, 1.0, 9.0]], case("GatherND", Index, "a run-time index out of range", vec![In(F, &[2, 3]), In(I, &[2, 2])], vec![])),
        case("OneHot", Index, "axis out of range", vec![In(I, &[3]), I64(&[], &[4]), F32(&[2], &[0., 1.])], vec![attr_i("axis", 3)]),
        case("OneHot", Rank, "values of three elements", vec![In(I, &[3]), I64(&[], &[4]), F32(&[3], &[0., 1., 2.])], vec![]),
        case("OneHot", Attribute, "a zero depth", vec![In(I, &[3]), I64(&[], &[0]), F32(&[2], &[0., 1.])], vec![]),
        case("InstanceNormalization", Rank, "scale of the wrong length", vec![In(F, x4), F32(&[3], &[1.; 3]), F32(&[2], &[0.; 2])], vec![]),
        case("InstanceNormalization", Rank, "rank 1", vec![In(F, &[4]), F32(&[2], &[1.; 2]), F32(&[2], &[0.; 2])], vec![]),
        case("InstanceNormalization", Attribute, "epsilon of type string", vec![In(F, x4), F32(&[2], &[1.; 2]), F32(&[2], &[0.; 2])], vec![attr_s("epsilon", "1e-5")]),
        case("GroupNormalization", Attribute, "num_groups not dividing the channels", vec![In(F, &[1, 4, 2, 2]), F32(&[4], &[1.; 4]), F32(&[4], &[0.; 4])], vec![attr_i("num_groups", 3)]),
        case("GroupNormalization", Attribute, "no num_groups", vec![In(F, &[1, 4, 2, 2]), F32(&[4], &[1.; 4]), F32(&[4], &[0.; 4])], vec![]),
        case("GroupNormalization", Rank, "scale of the wrong length", vec![In(F, &[1, 4, 2, 2]), F32(&[2], &[1.; 2]), F32(&[4], &[0.; 4])], vec![attr_i("num_groups", 2)]),
        case("TopK", Index, "k past the extent", vec![In(F, &[2, 4]), I64(&[1], &[5])], vec![]),
        case("TopK", Index, "axis out of range", vec![In(F, &[2, 4]), I64(&[1], &[2])], vec![attr_i("axis", 2)]),
        case("TopK", Attribute, "a negative k", vec![In(F, &[2, 4]), I64(&[1], &[-1])], vec![]),
        case("TopK", Rank, "k of rank 2", vec![In(F, &[2, 4]), I64(&[1, 1], &[2])], vec![]),
        case("ScatterND", Index, "indices deeper than the data", vec![In(F, &[4, 2]), I64(&[1, 3], &[0, 0, 0]), In(F, &[1])], vec![]),
        case("ScatterND", Rank, "updates of the wrong shape", vec![In(F, &[4, 2]), I64(&[2, 1], &[0, 3]), In(F, &[2, 3])], vec![]),
        case("ScatterND", Attribute, "unknown reduction", vec![In(F, &[4, 2]), I64(&[2, 1], &[0, 3]), In(F, &[2, 2])], vec![attr_s("reduction", "avg")]),
        case("ScatterND", Index, "a constant index out of range", vec![In(F, &[4, 2]), I64(&[2, 1], &[0, 9]), In(F, &[2, 2])], vec![]),
        run(vec![vec![1.0; 8], vec![0.0, 9.0], vec![1.0; 4]], case("ScatterND", Index, "a run-time index out of range", vec![In(F, &[4, 2]), In(I, &[2, 1]), In(F, &[2, 2])], vec![])),
        case("ScatterElements", Index, "axis out of range", vec![In(F, &[2, 3]), I64(&[1, 2], &[0, 2]), In(F, &[1, 2])], vec![attr_i("axis", 2)]),
        case("ScatterElements", Attribute, "unknown reduction", vec![In(F, &[2, 3]), I64(&[1, 2], &[0, 2]), In(F, &[1, 2])], vec![attr_s("reduction", "avg")]),
        case("ScatterElements", Rank, "indices of another rank", vec![In(F, &[2, 3]), I64(&[2], &[0, 2]), In(F, &[2])], vec![]),
        case("ScatterElements", Index, "a constant index out of range", vec![In(F, &[2, 3]), I64(&[1, 2], &[0, 3]), In(F, &[1, 2])], vec![attr_i("axis", 1)]),
        run(vec![vec![1.0; 6], vec![0.0, -4.0], vec![1.0; 2]], case("ScatterElements", Index, "a run-time index out of range", vec![In(F, &[2, 3]), In(I, &[1, 2]), In(F, &[1, 2])], vec![attr_i("axis", 1)])),
        case("Einsum", Attribute, "no equation", vec![In(F, &[2, 3]), In(F, &[3, 4])], vec![]),
        case("Einsum", Attribute, "an output label no input has", vec![In(F, &[2, 3]), In(F, &[3, 4])], vec![attr_s("equation", "ij,jk->iz")]),
        case("Einsum", Rank, "more labels than the rank", vec![In(F, &[2, 3]), In(F, &[3, 4])], vec![attr_s("equation", "ijk,jk->ik")]),
        case("Einsum", Index, "one label of two extents", vec![In(F, &[2, 3]), In(F, &[4, 4])], vec![attr_s("equation", "ij,jk->ik")]),
        case("Mod", Attribute, "fmod of type string", vec![In(F, &[2, 3]), In(F, &[3])], vec![attr_s("fmod", "1")]),
        case("Mod", Attribute, "fmod = 0 on floats", vec![In(F, &[2, 3]), In(F, &[3])], vec![attr_i("fmod", 0)]),
        case("Mod", Rank, "shapes that do not broadcast", vec![In(F, &[2, 3]), In(F, &[2])], vec![attr_i("fmod", 1)]),
        case("NonZero", Rank, "two inputs", vec![F32(&[2], &[1.0, 0.0]), F32(&[2], &[0.0, 1.0])], vec![]),
        case("QuantizeLinear", Index, "axis out of range", vec![In(F, &[2, 3]), F32(&[3], &[0.1; 3]), U8(&[3], &[0; 3])], vec![attr_i("axis", 5)]),
        case("QuantizeLinear", Rank, "scale of rank 2", vec![In(F, &[2, 3]), F32(&[1, 3], &[0.1; 3]), U8(&[1, 3], &[0; 3])], vec![]),
        case("QuantizeLinear", Attribute, "saturate of type string", vec![In(F, &[2, 3]), F32(&[], &[0.1]), U8(&[], &[0])], vec![attr_s("saturate", "1")]),
        case("DequantizeLinear", Index, "axis out of range", vec![In(U, &[2, 3]), F32(&[3], &[0.1; 3]), U8(&[3], &[0; 3])], vec![attr_i("axis", -3)]),
        case("DequantizeLinear", Rank, "scale of the wrong length", vec![In(U, &[2, 3]), F32(&[4], &[0.1; 4]), U8(&[4], &[0; 4])], vec![attr_i("axis", 1)]),
        case("DequantizeLinear", Attribute, "axis of type float", vec![In(U, &[2, 3]), F32(&[3], &[0.1; 3]), U8(&[3], &[0; 3])], vec![attr_f("axis", 1.0)]),
        Case { outputs: 3, ..case("DynamicQuantizeLinear", Attribute, "an integer input", vec![In(I, &[2, 3])], vec![]) },
        Case { outputs: 3, ..case("DynamicQuantizeLinear", Rank, "two inputs", vec![In(F, &[2, 3]), In(F, &[2, 3])], vec![]) },
        case("MatMulInteger", Index, "inner extents differ", vec![In(U, &[2, 3]), In(U, &[4, 2])], vec![]),
        case("MatMulInteger", Rank, "a zero point of the wrong length", vec![In(U, &[2, 3]), In(U, &[3, 2]), U8(&[3], &[1, 1, 1])], vec![]),
        case("MatMulInteger", Attribute, "a float operand", vec![In(F, &[2, 3]), In(U, &[3, 2])], vec![]),
        case("ConvInteger", Rank, "weight of rank 3", vec![In(U, &[1, 1, 3, 3]), U8(&[1, 1, 2], &[1, 2])], vec![]),
        case("ConvInteger", Attribute, "zero stride", vec![In(U, &[1, 1, 3, 3]), U8(&[1, 1, 2, 2], &[1, 2, 3, 4])], vec![attr_ints("strides", &[0, 0])]),
        case("ConvInteger", Index, "a kernel larger than the input", vec![In(U, &[1, 1, 3, 3]), U8(&[1, 1, 4, 4], &[1; 16])], vec![]),
        case("QLinearMatMul", Index, "inner extents differ", q_linear(&[2, 3], &[], &[4, 2]), vec![]),
        case("QLinearMatMul", Rank, "a per-row scale of the wrong length", q_linear(&[2, 3], &[3], &[3, 2]), vec![]),
        case("QLinearConv", Rank, "weight of rank 3", q_linear(&[1, 1, 3, 3], &[], &[1, 1, 2]), vec![]),
        case("QLinearConv", Attribute, "negative pads", q_linear(&[1, 1, 3, 3], &[], &[1, 1, 2, 2]), vec![attr_ints("pads", &[-1, 0, 0, 0])]),
        case("QLinearConv", Index, "group not dividing the channels", q_linear(&[1, 1, 3, 3], &[], &[1, 1, 2, 2]), vec![attr_i("group", 2)]),
    ];
    // The recurrent ops: W of rank 2, an unknown direction, a negative hidden_size, W for
    // another hidden size.
    for (op, w, r) in [("LSTM", &[1, 8, 3], &[1, 8, 2]), ("GRU", &[1, 6, 3], &[1, 6, 2]), ("RNN", &[1, 2, 3], &[1, 2, 2])] {
        let (w, r): (&'static [i64], &'static [i64]) = (w, r);
        v.push(case(op, Rank, "W of rank 2", vec![In(F, &[2, 1, 3]), In(F, &w[1..]), In(F, r)], vec![attr_i("hidden_size", 2)]));
        v.push(case(op, Attribute, "unknown direction", vec![In(F, &[2, 1, 3]), In(F, w), In(F, r)], vec![attr_i("hidden_size", 2), attr_s("direction", "sideways")]));
        v.push(case(op, Attribute, "a negative hidden_size", vec![In(F, &[2, 1, 3]), In(F, w), In(F, r)], vec![attr_i("hidden_size", -2)]));
        v.push(case(op, Index, "W for another hidden size", vec![In(F, &[2, 1, 3]), In(F, w), In(F, r)], vec![attr_i("hidden_size", 3)]));
    }
    // The trigonometric and hyperbolic functions: an integer operand, two operands.
    for op in ["Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"] {
        v.push(case(op, Attribute, "an integer operand", vec![In(I, &[2, 3])], vec![]));
        v.push(case(op, Rank, "two operands", vec![In(F, &[2, 3]), In(F, &[2, 3])], vec![]));
    }
    // Operators of exported models: Dropout (inference only), Upsample (opset 10's form at
    // opset 21), the composed reductions, Hardmax, the normalisations, Shrink, EyeLike, Swish.
    v.extend([
        says("training_mode", case("Dropout", Attribute, "training_mode true", vec![In(F, &[2, 3]), Skip, Bool(&[], &[true])], vec![])),
        case("Dropout", Rank, "training_mode of two values", vec![In(F, &[2, 3]), Skip, Bool(&[2], &[false, false])], vec![]),
        case("Dropout", Attribute, "an integer input", vec![In(I, &[2, 3])], vec![]),
        case("Upsample", Attribute, "unknown mode", vec![In(F, x4), F32(&[4], &[1., 1., 2., 2.])], vec![attr_s("mode", "cubic")]),
        case("Upsample", Rank, "scales of the wrong length", vec![In(F, x4), F32(&[2], &[2., 2.])], vec![]),
        case("Upsample", Index, "a scale below 1", vec![In(F, x4), F32(&[4], &[1., 1., 0.5, 2.])], vec![]),
        case("ReduceL1", Index, "axes out of range", vec![In(F, &[2, 3]), I64(&[1], &[5])], vec![]),
        case("ReduceL2", Attribute, "keepdims of type string", vec![In(F, &[2, 3])], vec![attr_s("keepdims", "no")]),
        case("ReduceSumSquare", Index, "a repeated axis", vec![In(F, &[2, 3]), I64(&[2], &[1, -1])], vec![]),
        case("ReduceLogSum", Attribute, "noop_with_empty_axes of type float", vec![In(F, &[2, 3])], vec![attr_f("noop_with_empty_axes", 1.0)]),
        case("ReduceLogSumExp", Attribute, "a BOOL input", vec![In(data_type::BOOL, &[2, 3])], vec![]),
        case("Hardmax", Index, "axis out of range", vec![In(F, &[2, 3])], vec![attr_i("axis", 2)]),
        case("LpNormalization", Attribute, "p of 3", vec![In(F, &[2, 3])], vec![attr_i("p", 3)]),
        case("MeanVarianceNormalization", Index, "the default axes on rank 2", vec![In(F, &[2, 3])], vec![]),
        case("Shrink", Attribute, "lambd of type string", vec![In(F, &[2, 3])], vec![attr_s("lambd", "0.5")]),
        case("LRN", Attribute, "no size", vec![In(F, x4)], vec![]),
        case("LRN", Rank, "rank 1", vec![In(F, &[4])], vec![attr_i("size", 3)]),
        case("EyeLike", Rank, "an input of rank 3", vec![In(F, &[2, 2, 2])], vec![]),
        case("Swish", Attribute, "an integer input", vec![In(I, &[2, 3])], vec![]),
    ]);
    // Operators of exported language models.
    v.extend([
        says("not a multiple", case("Attention", Index, "3 query heads over 2 key/value heads", vec![In(F, &[1, 3, 2, 4]), In(F, &[1, 2, 2, 4]), In(F, &[1, 2, 2, 4])], vec![])),
        says("stash_type", case("RMSNormalization", Attribute, "stash_type INT64", vec![In(F, &[2, 3]), F32(&[3], &[1., 1., 1.])], vec![attr_i("stash_type", 7)])),
        says("num_heads", case("RotaryEmbedding", Attribute, "3-D input without num_heads", vec![In(F, &[1, 2, 8]), F32(&[1, 2, 2], &[1., 1., 1., 1.]), F32(&[1, 2, 2], &[0., 0., 0., 0.])], vec![])),
    ]);
    v
}

/// `c` with run-time data for its graph inputs: it imports, and fails when it runs.
fn run(data: Vec<Vec<f64>>, c: Case) -> Case {
    Case {
        run: Some(data),
        ..c
    }
}

/// The eight operands of `QLinearMatMul` / `QLinearConv`: UINT8 `a` (graph input), its scale
/// (scalar, or 1-D of the `a_scale` extents) and zero point, UINT8 `b` (graph input), and
/// scalar scales and zero points.
fn q_linear(a: &'static [i64], a_scale: &'static [i64], b: &'static [i64]) -> Vec<V> {
    let a_scale = if a_scale.is_empty() {
        F32(&[], &[0.1])
    } else {
        F32(a_scale, &[0.1; 3])
    };
    vec![
        In(U, a),
        a_scale,
        U8(&[], &[0]),
        In(U, b),
        F32(&[], &[0.1]),
        U8(&[], &[0]),
        F32(&[], &[0.1]),
        U8(&[], &[0]),
    ]
}

/// `c` with `part` of the message that says its error is the one meant.
pub(crate) fn says(part: &'static str, c: Case) -> Case {
    Case {
        says: Some(part),
        ..c
    }
}

/// Runs every case of `all`: each must be an error naming its node (and saying its `says`),
/// never a panic or a success; panics listing the cases that are not.
pub(crate) fn check(all: &[Case]) {
    let mut failures = Vec::new();
    for c in all {
        let label = format!("{} ({:?}: {})", c.op, c.class, c.what);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| errors_of(c)));
        match outcome {
            Err(_) => failures.push(format!("{label}: panicked")),
            Ok(Err(e)) => failures.push(format!("{label}: {e}")),
            Ok(Ok(errors)) => {
                // Import errors say `<Op> `bad``; run-time errors name the IR node `bad` and
                // its provenance `onnx:<Op>:bad`.
                let named = format!("{} `bad`", c.op);
                let provenance = format!("onnx:{}:bad", c.op);
                // Shown with `--nocapture`, to read how clear each message is.
                println!("{label}: {}", errors[0]);
                for e in errors {
                    let names_it =
                        e.contains(&named) || (e.contains("`bad`") && e.contains(&provenance));
                    if !names_it {
                        failures.push(format!("{label}: the error does not name `{named}`: {e}"));
                    }
                    if let Some(part) = c.says.filter(|p| !e.contains(p)) {
                        failures.push(format!("{label}: the error does not say `{part}`: {e}"));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn malformed_nodes_are_errors_naming_the_node() {
    check(&cases());
}
