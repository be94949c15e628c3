#!/usr/bin/env python3
"""Writes the seed corpus of the ONNX-import fuzz target (fuzz/fuzz_targets/onnx_import.rs):
one small valid model per operator, `fuzz/corpus/onnx_import/<Op>.onnx`.

The operators are the ones most recently added to the importer, the trigonometric and
hyperbolic functions and the control flow (`If`, `Loop`, `Scan`, whose subgraphs read a
value of the enclosing graph); each model is one node (constant operands as initializers)
at opset OPSET, checked with `onnx.checker`. Run with the venv that has `onnx` (README: "Test data"):

    /work/main/target/models/venv/bin/python scripts/make-fuzz-corpus.py

The models are committed; `tests/fuzz_corpus.rs` imports and runs every one of them on both
backends, so a change to the importer that breaks a seed fails the tests.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 21
F, I64, I32, U8, I8, B = (TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32,
                          TensorProto.UINT8, TensorProto.INT8, TensorProto.BOOL)


def tensor(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def f32(*shape, lo=-1.0, hi=1.0):
    """Deterministic values in [lo, hi) of `shape`."""
    n = int(np.prod(shape)) if shape else 1
    return (lo + (hi - lo) * ((np.arange(n) * 0.6180339887) % 1.0)).astype(np.float32).reshape(shape)


def model(op, inputs, outputs, attrs=None, inits=(), domain="", outer=(), opset=OPSET):
    """A one-node model: `inputs` and `outputs` are (name, elem_type, shape); `inits` are
    (name, array) initializers, named among the node's inputs but not graph inputs (an input
    named "" is an omitted optional one); `outer`
    are (name, elem_type, shape) graph inputs that only the node's subgraphs read; `opset`
    for an operator deprecated by OPSET."""
    init_names = [n for n, _ in inits]
    node_inputs = [n for n, _, _ in inputs]
    for n in init_names:
        if n not in node_inputs:
            node_inputs.append(n)
    node = helper.make_node(op, node_inputs, [n for n, _, _ in outputs], name=f"{op.lower()}0",
                            domain=domain, **(attrs or {}))
    graph = helper.make_graph(
        [node], op.lower(),
        [helper.make_tensor_value_info(n, t, s)
         for n, t, s in list(inputs) + list(outer) if n and n not in init_names],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        initializer=[tensor(n, a) for n, a in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="graphlift make-fuzz-corpus")
    m.ir_version = 10
    onnx.checker.check_model(m, full_check=True)
    return m


def unary(op, shape=(2, 3), t=F):
    return model(op, [("x", t, shape)], [("y", t, shape)])


def subgraph(name, nodes, inputs, outputs):
    """A subgraph: `inputs` and `outputs` are (name, elem_type, shape)."""
    return helper.make_graph(nodes, name,
                             [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                             [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])


def control_flow():
    """`If`, `Loop` and `Scan`, each over FLOAT [2] values with a subgraph that reads the
    enclosing graph's `w`."""
    w = [("w", F, [2])]
    node = helper.make_node
    branch = lambda name, op: subgraph(name, [node(op, ["w", "w"], [f"{name}_y"])], [],
                                       [(f"{name}_y", F, [2])])
    yield "If", model("If", [("cond", B, [])], [("y", F, [2])],
                      {"then_branch": branch("then", "Add"), "else_branch": branch("else", "Sub")},
                      outer=w)
    # i = 0, 1, 2: acc += i * w; the scan output stacks each new acc.
    body = subgraph("loop_body", [
        node("Cast", ["i"], ["fi"], to=F),
        node("Mul", ["fi", "w"], ["iw"]),
        node("Add", ["acc", "iw"], ["acc2"]),
        node("Identity", ["cond_in"], ["cond_out"]),
        node("Identity", ["acc2"], ["scan"]),
    ], [("i", I64, []), ("cond_in", B, []), ("acc", F, [2])],
        [("cond_out", B, []), ("acc2", F, [2]), ("scan", F, [2])])
    yield "Loop", model("Loop", [("m", I64, []), ("c", B, []), ("a", F, [2])],
                        [("a_final", F, [2]), ("scans", F, [3, 2])], {"body": body},
                        [("m", np.array(3, np.int64)), ("c", np.array(True))], outer=w)
    # A running sum of w * x[t], x read from its end.
    body = subgraph("scan_body", [
        node("Mul", ["xt", "w"], ["xw"]),
        node("Add", ["sum", "xw"], ["sum2"]),
        node("Identity", ["sum2"], ["y"]),
    ], [("sum", F, [2]), ("xt", F, [2])], [("sum2", F, [2]), ("y", F, [2])])
    yield "Scan", model("Scan", [("s", F, [2]), ("x", F, [3, 2])],
                        [("s_final", F, [2]), ("ys", F, [3, 2])],
                        {"body": body, "num_scan_inputs": 1, "scan_input_directions": [1]},
                        outer=w)


def corpus():
    x = ("x", F, [1, 2, 3, 3])
    yield "Resize", model("Resize", [x, ("roi", F, [0]), ("scales", F, [4])],
                          [("y", F, [1, 2, 6, 6])], {"mode": "nearest"},
                          [("roi", np.zeros(0, np.float32)),
                           ("scales", np.array([1, 1, 2, 2], np.float32))])
    yield "Pad", model("Pad", [("x", F, [2, 3]), ("pads", I64, [4])], [("y", F, [3, 6])],
                       {"mode": "constant"}, [("pads", np.array([1, 2, 0, 1], np.int64))])
    yield "ConvTranspose", model("ConvTranspose", [x, ("w", F, [2, 1, 2, 2])],
                                 [("y", F, [1, 1, 4, 4])], {},
                                 [("w", f32(2, 1, 2, 2))])
    yield "Gemm", model("Gemm", [("a", F, [2, 3]), ("b", F, [4, 3]), ("c", F, [4])],
                        [("y", F, [2, 4])], {"transB": 1, "alpha": 0.5})
    yield "Split", model("Split", [("x", F, [4, 2]), ("split", I64, [2])],
                         [("y0", F, [1, 2]), ("y1", F, [3, 2])], {"axis": 0},
                         [("split", np.array([1, 3], np.int64))])
    yield "LogSoftmax", model("LogSoftmax", [("x", F, [2, 3])], [("y", F, [2, 3])], {"axis": 1})
    yield "AveragePool", model("AveragePool", [x], [("y", F, [1, 2, 2, 2])],
                               {"kernel_shape": [2, 2]})
    yield "GlobalMaxPool", model("GlobalMaxPool", [x], [("y", F, [1, 2, 1, 1])])
    yield "ArgMax", model("ArgMax", [("x", F, [2, 3])], [("y", I64, [2, 1])], {"axis": 1})
    yield "ArgMin", model("ArgMin", [("x", F, [2, 3])], [("y", I64, [1, 3])], {"axis": 0})
    yield "Tile", model("Tile", [("x", F, [2, 3]), ("repeats", I64, [2])], [("y", F, [4, 3])],
                        {}, [("repeats", np.array([2, 1], np.int64))])
    yield "Range", model("Range", [("start", F, []), ("limit", F, []), ("delta", F, [])],
                         [("y", F, [4])], {},
                         [("start", np.array(0, np.float32)), ("limit", np.array(2, np.float32)),
                          ("delta", np.array(0.5, np.float32))])
    yield "Size", model("Size", [("x", F, [2, 3])], [("y", I64, [])])
    yield "DepthToSpace", model("DepthToSpace", [("x", F, [1, 4, 2, 2])], [("y", F, [1, 1, 4, 4])],
                                {"blocksize": 2, "mode": "CRD"})
    yield "SpaceToDepth", model("SpaceToDepth", [("x", F, [1, 1, 4, 4])],
                                [("y", F, [1, 4, 2, 2])], {"blocksize": 2})
    yield "Trilu", model("Trilu", [("x", F, [3, 3]), ("k", I64, [])], [("y", F, [3, 3])],
                         {"upper": 0}, [("k", np.array(1, np.int64))])
    yield "IsNaN", model("IsNaN", [("x", F, [2, 3])], [("y", B, [2, 3])])
    yield "IsInf", model("IsInf", [("x", F, [2, 3])], [("y", B, [2, 3])], {"detect_negative": 0})
    yield "CumSum", model("CumSum", [("x", F, [2, 3]), ("axis", I64, [])], [("y", F, [2, 3])],
                          {"reverse": 1}, [("axis", np.array(1, np.int64))])
    seq, batch, inp, hid = 2, 1, 3, 2
    for op, gates in (("LSTM", 4), ("GRU", 3), ("RNN", 1)):
        yield op, model(op, [("x", F, [seq, batch, inp]), ("w", F, [1, gates * hid, inp]),
                             ("r", F, [1, gates * hid, hid])],
                        [("y", F, [seq, 1, batch, hid])], {"hidden_size": hid},
                        [("w", f32(1, gates * hid, inp)), ("r", f32(1, gates * hid, hid))])
    yield "GatherElements", model("GatherElements", [("x", F, [2, 3]), ("i", I64, [2, 2])],
                                  [("y", F, [2, 2])], {"axis": 1},
                                  [("i", np.array([[0, 2], [1, -1]], np.int64))])
    yield "GatherND", model("GatherND", [("x", F, [2, 3]), ("i", I64, [2, 2])], [("y", F, [2])],
                            {}, [("i", np.array([[0, 1], [1, 2]], np.int64))])
    yield "OneHot", model("OneHot", [("i", I64, [3]), ("depth", I64, []), ("values", F, [2])],
                          [("y", F, [3, 4])], {"axis": -1},
                          [("depth", np.array(4, np.int64)),
                           ("values", np.array([0, 1], np.float32))])
    yield "InstanceNormalization", model(
        "InstanceNormalization", [x, ("s", F, [2]), ("b", F, [2])], [("y", F, [1, 2, 3, 3])],
        {"epsilon": 1e-5}, [("s", f32(2)), ("b", f32(2))])
    yield "GroupNormalization", model(
        "GroupNormalization", [("x", F, [1, 4, 2, 2]), ("s", F, [4]), ("b", F, [4])],
        [("y", F, [1, 4, 2, 2])], {"num_groups": 2}, [("s", f32(4)), ("b", f32(4))])
    yield "TopK", model("TopK", [("x", F, [2, 4]), ("k", I64, [1])],
                        [("v", F, [2, 2]), ("i", I64, [2, 2])], {"axis": 1},
                        [("k", np.array([2], np.int64))])
    yield "ScatterND", model("ScatterND", [("x", F, [4, 2]), ("i", I64, [2, 1]), ("u", F, [2, 2])],
                             [("y", F, [4, 2])], {}, [("i", np.array([[0], [3]], np.int64))])
    yield "ScatterElements", model(
        "ScatterElements", [("x", F, [2, 3]), ("i", I64, [1, 2]), ("u", F, [1, 2])],
        [("y", F, [2, 3])], {"axis": 1, "reduction": "add"},
        [("i", np.array([[0, 2]], np.int64))])
    yield "Einsum", model("Einsum", [("a", F, [2, 3]), ("b", F, [3, 4])], [("y", F, [2, 4])],
                          {"equation": "ij,jk->ik"})
    yield "Mod", model("Mod", [("a", F, [2, 3]), ("b", F, [3])], [("y", F, [2, 3])], {"fmod": 1})
    scale, zp = ("scale", np.array(0.05, np.float32)), ("zp", np.array(3, np.uint8))
    yield "QuantizeLinear", model("QuantizeLinear", [("x", F, [2, 3]), ("scale", F, []),
                                                     ("zp", U8, [])],
                                  [("y", U8, [2, 3])], {}, [scale, zp])
    yield "DequantizeLinear", model("DequantizeLinear", [("x", U8, [2, 3]), ("scale", F, []),
                                                         ("zp", U8, [])],
                                    [("y", F, [2, 3])], {}, [scale, zp])
    yield "DynamicQuantizeLinear", model("DynamicQuantizeLinear", [("x", F, [2, 3])],
                                         [("y", U8, [2, 3]), ("s", F, []), ("z", U8, [])])
    yield "MatMulInteger", model("MatMulInteger", [("a", U8, [2, 3]), ("b", U8, [3, 2]),
                                                   ("az", U8, []), ("bz", U8, [])],
                                 [("y", I32, [2, 2])], {},
                                 [("az", np.array(1, np.uint8)), ("bz", np.array(2, np.uint8))])
    yield "ConvInteger", model("ConvInteger", [("x", U8, [1, 1, 3, 3]), ("w", U8, [1, 1, 2, 2])],
                               [("y", I32, [1, 1, 2, 2])], {},
                               [("w", np.array([[[[1, 2], [3, 4]]]], np.uint8))])
    q = [("as", np.array(0.1, np.float32)), ("az", np.array(2, np.uint8)),
         ("bs", np.array(0.2, np.float32)), ("bz", np.array(1, np.uint8)),
         ("ys", np.array(0.3, np.float32)), ("yz", np.array(4, np.uint8))]
    scalars = lambda names: [(n, F if n.endswith("s") else U8, []) for n in names]
    yield "QLinearMatMul", model(
        "QLinearMatMul", [("a", U8, [2, 3])] + scalars(["as", "az"]) + [("b", U8, [3, 2])]
        + scalars(["bs", "bz", "ys", "yz"]), [("y", U8, [2, 2])], {}, q)
    yield "QLinearConv", model(
        "QLinearConv", [("x", U8, [1, 1, 3, 3])] + scalars(["as", "az"]) + [("w", U8, [1, 1, 2, 2])]
        + scalars(["bs", "bz", "ys", "yz"]), [("y", U8, [1, 1, 2, 2])], {},
        q[:2] + [("w", np.array([[[[1, 2], [3, 4]]]], np.uint8))] + q[2:])
    # NonZero over a constant: a graph input's values would make its shape data-dependent,
    # which a plain import refuses (a Session runs such a model in stages).
    yield "NonZero", model("NonZero", [("c", F, [2, 3])], [("y", I64, [2, 3])], {},
                           [("c", np.array([[0, 1.5, 0], [-2, 0, 3]], np.float32))])
    # NonMaxSuppression over constants too (center form: boxes 0 and 1 overlap, 2 is apart).
    yield "NonMaxSuppression", model(
        "NonMaxSuppression", [("boxes", F, [1, 3, 4]), ("scores", F, [1, 1, 3]),
                              ("max", I64, [1]), ("iou", F, [1])],
        [("y", I64, [2, 3])], {"center_point_box": 1},
        [("boxes", np.array([[[0.5, 0.5, 1, 1], [0.55, 0.5, 1, 1], [5, 5, 1, 1]]], np.float32)),
         ("scores", np.array([[[0.9, 0.8, 0.7]]], np.float32)),
         ("max", np.array([2], np.int64)), ("iou", np.array([0.5], np.float32))])
    for op in ("Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
               "Atanh"):
        yield op, unary(op)
    yield from control_flow()
    yield from exported_model_ops()
    yield from language_model_ops()
    yield from sampling_ops()
    yield from spectral_ops()
    yield from lp_pools()


def exported_model_ops():
    """Operators that exported models contain: Dropout (inference), Upsample (opset 9), the
    composed reductions, Hardmax, the normalisations, Shrink, EyeLike, Swish (opset 24)."""
    yield "Dropout", model("Dropout", [("x", F, [2, 3])], [("y", F, [2, 3]), ("mask", B, [2, 3])])
    yield "Upsample", model("Upsample", [("x", F, [1, 2, 2, 2]), ("scales", F, [4])],
                            [("y", F, [1, 2, 4, 6])], {"mode": "linear"},
                            [("scales", np.array([1, 1, 2, 3], np.float32))], opset=9)
    for op in ("ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"):
        yield op, model(op, [("x", F, [2, 3]), ("axes", I64, [1])], [("y", F, [2])],
                        {"keepdims": 0}, [("axes", np.array([-1], np.int64))])
    x = ("x", F, [1, 3, 2, 2])
    yield "Hardmax", model("Hardmax", [("x", F, [2, 3])], [("y", F, [2, 3])], {"axis": 0})
    yield "LpNormalization", model("LpNormalization", [x], [("y", F, [1, 3, 2, 2])],
                                   {"axis": 1, "p": 1})
    # `axes` given: onnx's shape inference of the function body fails on the default.
    yield "MeanVarianceNormalization", model("MeanVarianceNormalization", [x],
                                             [("y", F, [1, 3, 2, 2])], {"axes": [0, 2, 3]})
    yield "Shrink", model("Shrink", [("x", F, [2, 3])], [("y", F, [2, 3])],
                          {"lambd": 0.3, "bias": 0.1})
    yield "LRN", model("LRN", [x], [("y", F, [1, 3, 2, 2])], {"size": 2, "alpha": 0.5})
    yield "EyeLike", model("EyeLike", [("x", I64, [3, 4])], [("y", F, [3, 4])],
                           {"k": 1, "dtype": F})
    yield "Swish", model("Swish", [("x", F, [2, 3])], [("y", F, [2, 3])], {"alpha": 1.5},
                         opset=24)


def sampling_ops():
    """GridSample (cubic, reflection) and AffineGrid (opset 20): a spatial transformer's
    two halves."""
    yield "GridSample", model(
        "GridSample", [("x", F, [1, 2, 3, 4]), ("grid", F, [1, 2, 3, 2])],
        [("y", F, [1, 2, 2, 3])], {"mode": "cubic", "padding_mode": "reflection"}, opset=20)
    yield "AffineGrid", model(
        "AffineGrid", [("theta", F, [2, 2, 3]), ("size", I64, [4])], [("grid", F, [2, 3, 4, 2])],
        {"align_corners": 1}, [("size", np.array([2, 1, 3, 4], np.int64))], opset=20)


def lp_pools():
    """LpPool (p = 3, padded, strided) and GlobalLpPool (p = 1)."""
    yield "LpPool", model("LpPool", [("x", F, [1, 2, 4, 4])], [("y", F, [1, 2, 3, 3])],
                          {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1], "strides": [2, 2],
                           "p": 3}, opset=18)
    yield "MaxUnpool", model("MaxUnpool", [("x", F, [1, 2, 2, 2]), ("i", I64, [1, 2, 2, 2])],
                             [("y", F, [1, 2, 4, 4])], {"kernel_shape": [2, 2], "strides": [2, 2]},
                             [("i", np.array([[[[0, 3], [9, 15]], [[16, 18], [27, 31]]]],
                                             np.int64))])
    yield "ReverseSequence", model("ReverseSequence", [("x", F, [4, 3, 2]), ("lens", I64, [3])],
                                   [("y", F, [4, 3, 2])], {},
                                   [("lens", np.array([4, 1, 2], np.int64))])
    for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
        yield op, model(op, [("a", I32, [2, 3]), ("b", I32, [3])], [("y", I32, [2, 3])],
                        opset=18)
    yield "BitwiseNot", model("BitwiseNot", [("a", U8, [2, 3])], [("y", U8, [2, 3])], opset=18)
    yield "BitShift", model("BitShift", [("x", U8, [2, 3]), ("y", U8, [2, 3])],
                            [("z", U8, [2, 3])], {"direction": "LEFT"})
    yield "CenterCropPad", model("CenterCropPad", [("x", F, [3, 4]), ("shape", I64, [2])],
                                 [("y", F, [2, 7])], {}, [("shape", np.array([2, 7], np.int64))],
                                 opset=18)
    yield "Compress", model("Compress", [("x", F, [3, 2]), ("c", B, [3])], [("y", F, [2, 2])],
                            {"axis": 0}, [("c", np.array([True, False, True]))])
    yield "GlobalLpPool", model("GlobalLpPool", [("x", F, [1, 2, 3, 3])],
                                [("y", F, [1, 2, 1, 1])], {"p": 1})


def spectral_ops():
    """The audio front end's operators (opset 17): DFT along a middle axis, STFT with a
    window, the three windows and the mel filter bank (constants of constant sizes)."""
    scalar = lambda v: np.array(v, np.int64)
    yield "DFT", model("DFT", [("x", F, [2, 5, 3, 1]), ("n", I64, [])], [("y", F, [2, 4, 3, 2])],
                       {"axis": 1, "onesided": 1}, [("n", scalar(6))], opset=17)
    yield "STFT", model("STFT", [("x", F, [1, 16, 1]), ("step", I64, []), ("w", F, [8])],
                        [("y", F, [1, 3, 5, 2])], {"onesided": 1},
                        [("step", scalar(4)), ("w", np.hanning(8).astype(np.float32))],
                        opset=17)
    for op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        yield op, model(op, [("size", I64, [])], [("y", F, [6])], {"periodic": 0},
                        [("size", scalar(6))], opset=17)
    yield "MelWeightMatrix", model(
        "MelWeightMatrix", [("m", I64, []), ("d", I64, []), ("r", I64, []), ("lo", F, []),
                            ("hi", F, [])], [("y", F, [9, 4])], {},
        [("m", scalar(4)), ("d", scalar(16)), ("r", scalar(8000)),
         ("lo", np.array(0, np.float32)), ("hi", np.array(4000, np.float32))], opset=17)


def language_model_ops():
    """The operators of exported language models (opset 23): Attention with 3-D inputs,
    grouped-query heads, a causal mask, a KV cache and the score output; RMSNormalization
    over the last two axes; RotaryEmbedding of a 3-D input, interleaved and partial, with
    position ids."""
    yield "Attention", model(
        "Attention",
        [("q", F, [1, 2, 8]), ("k", F, [1, 2, 4]), ("v", F, [1, 2, 4]), ("", F, None),
         ("past_key", F, [1, 2, 1, 2]), ("past_value", F, [1, 2, 1, 2])],
        [("y", F, [1, 2, 8]), ("present_key", F, [1, 2, 3, 2]),
         ("present_value", F, [1, 2, 3, 2]), ("qk", F, [1, 4, 2, 3])],
        {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1, "qk_matmul_output_mode": 3},
        opset=23)
    yield "RMSNormalization", model(
        "RMSNormalization", [("x", F, [2, 3, 4]), ("scale", F, [3, 4])], [("y", F, [2, 3, 4])],
        {"axis": -2, "epsilon": 1e-3}, [("scale", f32(3, 4, lo=0.5, hi=1.5))], opset=23)
    angles = np.arange(8)[:, None] * np.array([1.0, 0.1])
    yield "RotaryEmbedding", model(
        "RotaryEmbedding",
        [("x", F, [1, 3, 12]), ("cos", F, [8, 2]), ("sin", F, [8, 2]), ("pos", I64, [1, 3])],
        [("y", F, [1, 3, 12])],
        {"num_heads": 2, "rotary_embedding_dim": 4, "interleaved": 1},
        [("cos", np.cos(angles).astype(np.float32)), ("sin", np.sin(angles).astype(np.float32)),
         ("pos", np.array([[5, 0, 7]], np.int64))], opset=23)


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus",
                       "onnx_import")
    os.makedirs(out, exist_ok=True)
    names = []
    for name, m in corpus():
        with open(os.path.join(out, f"{name}.onnx"), "wb") as f:
            f.write(m.SerializeToString())
        names.append(name)
    print(f"wrote {len(names)} models to {os.path.normpath(out)}", file=sys.stderr)


if __name__ == "__main__":
    main()
