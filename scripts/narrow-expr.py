#!/usr/bin/env python3
# Writes an elementwise ONNX expression over f16 and u8 for `graphlift bench-expr FILE.onnx N`
# (f32 inputs x, y and output, as bench-expr takes; BENCHMARKS.md, issue 29 item 1):
#
#   target/models/venv/bin/python scripts/narrow-expr.py N FILE [both|f16|u8]
#
#   h = relu(f16(x) * f16(y) + f16(x))            (f16 arithmetic)
#   q = u8(|x| * 64) * u8(|y| * 64) + u8(|x| * 64)  (u8 wrapping arithmetic)
#   out = f32(h) + f32(q)
import sys, onnx
from onnx import helper as h, TensorProto as T
n = int(sys.argv[1]); path = sys.argv[2]; part = sys.argv[3] if len(sys.argv) > 3 else "both"
c64 = h.make_tensor("c64", T.FLOAT, [], [64.0])
nodes = [
    h.make_node("Cast", ["x"], ["xh"], to=T.FLOAT16),
    h.make_node("Cast", ["y"], ["yh"], to=T.FLOAT16),
    h.make_node("Mul", ["xh", "yh"], ["m"]),
    h.make_node("Add", ["m", "xh"], ["s"]),
    h.make_node("Relu", ["s"], ["r"]),
    h.make_node("Cast", ["r"], ["hf"], to=T.FLOAT),
    h.make_node("Abs", ["x"], ["ax"]), h.make_node("Abs", ["y"], ["ay"]),
    h.make_node("Mul", ["ax", "c64"], ["sx"]), h.make_node("Mul", ["ay", "c64"], ["sy"]),
    h.make_node("Cast", ["sx"], ["qx"], to=T.UINT8),
    h.make_node("Cast", ["sy"], ["qy"], to=T.UINT8),
    h.make_node("Mul", ["qx", "qy"], ["qm"]),
    h.make_node("Add", ["qm", "qx"], ["qs"]),
    h.make_node("Cast", ["qs"], ["qf"], to=T.FLOAT),
    h.make_node("Add", ["hf", "qf"], ["out"]),
]
if part == "f16":
    nodes = nodes[:6]; nodes[-1] = h.make_node("Cast", ["r"], ["out"], to=T.FLOAT)
elif part == "u8":
    nodes = nodes[6:15]; nodes[-1] = h.make_node("Cast", ["qs"], ["out"], to=T.FLOAT)
g = h.make_graph(nodes, "u8_f16_expr",
    [h.make_tensor_value_info("x", T.FLOAT, [n]), h.make_tensor_value_info("y", T.FLOAT, [n])],
    [h.make_tensor_value_info("out", T.FLOAT, [n])], initializer=[c64])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
onnx.checker.check_model(m)
onnx.save(m, path)
