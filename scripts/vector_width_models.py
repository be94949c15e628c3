"""The x1-x4 expressions of BENCHMARKS.md ("Every fused f32 kernel at sixteen lanes") as ONNX
files of N elements ([N/1024, 1024] f32), for `graphlift bench-expr FILE N`:

    target/models/venv/bin/python scripts/vector_width_models.py OUT_DIR N

x1 = softplus(x) * tanh(row) + sqrt(|x|), x2 = log(1 + x*x) * sigmoid(col) - erf(x) * 0.5,
x3 = exp(-x*x) * cos(x) + pow(|x|, row), x4 = x * tanh(softplus(x)) + row (Mish-like), with a
row vector [1024] or a column vector [N/1024, 1]."""
import os
import sys

import onnx
from onnx import TensorProto, helper

out, n = sys.argv[1], int(sys.argv[2])
rows = n // 1024
os.makedirs(out, exist_ok=True)


def save(name, nodes, second):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, 1024]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, second)]
    consts = [helper.make_tensor(k, TensorProto.FLOAT, [], [v])
              for k, v in (("half", 0.5), ("one", 1.0))]
    graph = helper.make_graph(nodes, name, inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, 1024])],
                              initializer=consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(out, name + ".onnx"))


node = helper.make_node
save("x1", [node("Softplus", ["x"], ["s"]), node("Tanh", ["b"], ["t"]), node("Mul", ["s", "t"], ["m"]),
            node("Abs", ["x"], ["a"]), node("Sqrt", ["a"], ["r"]), node("Add", ["m", "r"], ["y"])], [1024])
save("x2", [node("Mul", ["x", "x"], ["q"]), node("Add", ["q", "one"], ["p"]), node("Log", ["p"], ["l"]),
            node("Sigmoid", ["b"], ["g"]), node("Mul", ["l", "g"], ["m"]), node("Erf", ["x"], ["e"]),
            node("Mul", ["e", "half"], ["h"]), node("Sub", ["m", "h"], ["y"])], [rows, 1])
save("x3", [node("Mul", ["x", "x"], ["q"]), node("Neg", ["q"], ["n"]), node("Exp", ["n"], ["e"]),
            node("Cos", ["x"], ["c"]), node("Mul", ["e", "c"], ["m"]), node("Abs", ["x"], ["a"]),
            node("Pow", ["a", "b"], ["p"]), node("Add", ["m", "p"], ["y"])], [1024])
save("x4", [node("Softplus", ["x"], ["s"]), node("Tanh", ["s"], ["t"]), node("Mul", ["x", "t"], ["m"]),
            node("Add", ["m", "b"], ["y"])], [1024])
