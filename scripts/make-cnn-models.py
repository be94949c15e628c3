"""ResNet-50 (v1.5: the stride on the 3x3 convolution) and MobileNetV2 at 224x224 as ONNX
files with seeded random weights, for timing graphlift beside onnxruntime on the two most
common vision backbones (no model download: the architectures are built node by node).
Every convolution is followed by a BatchNormalization node and ReLU (ResNet) or ReLU6 as
`Clip(0, 6)` (MobileNetV2), as PyTorch exports them in eval mode; the batch dimension is
symbolic (`N`).

    target/models/venv/bin/python scripts/make-cnn-models.py [DEST]   # target/models/cnn

Then, for example (`graphlift bench` and onnxruntime in alternated rounds):

    graphlift bench DEST/mobilenetv2.onnx --shape x=1x3x224x224 --threads 1
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Graph:
    """Nodes and initializers, named in creation order."""

    def __init__(self, seed):
        self.nodes, self.inits, self.count = [], [], 0
        self.rng = np.random.default_rng(seed)

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def const(self, array, prefix="w"):
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def node(self, op, inputs, prefix, **attrs):
        out = self.name(prefix)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k, stride=1, group=1, act="Relu"):
        """Conv (He-initialized, no bias) -> BatchNormalization -> act (None: no act)."""
        r = self.rng
        fan = cin // group * k * k
        w = self.const(r.standard_normal((cout, cin // group, k, k)) * np.sqrt(2.0 / fan))
        y = self.node("Conv", [x, w], "conv", kernel_shape=[k, k], strides=[stride] * 2,
                      pads=[k // 2] * 4, group=group)
        bn = [1 + 0.1 * r.standard_normal(cout), 0.1 * r.standard_normal(cout),
              0.1 * r.standard_normal(cout), 1 + 0.1 * r.random(cout)]
        y = self.node("BatchNormalization", [y] + [self.const(a) for a in bn], "bn")
        if act == "Relu":
            y = self.node("Relu", [y], "relu")
        elif act == "Relu6":
            y = self.node("Clip", [y, self.const(0.0), self.const(6.0)], "relu6")
        return y

    def head(self, x, channels):
        """Global average pool, flatten, a 1000-way classifier."""
        x = self.node("GlobalAveragePool", [x], "gap")
        x = self.node("Flatten", [x], "flat")
        w = self.const(self.rng.standard_normal((1000, channels)) * 0.02)
        return self.node("Gemm", [x, w, self.const(np.zeros(1000))], "logits", transB=1)

    def save(self, path, y):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 224, 224])
        out = helper.make_tensor_value_info(y, TensorProto.FLOAT, ["N", 1000])
        g = helper.make_graph(self.nodes, os.path.basename(path), [x], [out], self.inits)
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(model)
        onnx.save(model, path)


def resnet50(path):
    g = Graph(50)
    x = g.conv("x", 3, 64, 7, 2)
    x = g.node("MaxPool", [x], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    cin = 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for b in range(blocks):
            s = stride if b == 0 else 1
            y = g.conv(x, cin, width, 1)
            y = g.conv(y, width, width, 3, s)
            y = g.conv(y, width, 4 * width, 1, act=None)
            shortcut = g.conv(x, cin, 4 * width, 1, s, act=None) if b == 0 else x
            x = g.node("Relu", [g.node("Add", [y, shortcut], "add")], "relu")
            cin = 4 * width
    g.save(path, g.head(x, 2048))


def mobilenetv2(path):
    g = Graph(2)
    x, cin = g.conv("x", 3, 32, 3, 2, act="Relu6"), 32
    # (expansion, channels, blocks, first stride)
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride, hidden = (s if i == 0 else 1), cin * t
            y = g.conv(x, cin, hidden, 1, act="Relu6") if t != 1 else x
            y = g.conv(y, hidden, hidden, 3, stride, group=hidden, act="Relu6")
            y = g.conv(y, hidden, c, 1, act=None)
            x = g.node("Add", [y, x], "add") if stride == 1 and cin == c else y
            cin = c
    x = g.conv(x, cin, 1280, 1, act="Relu6")
    g.save(path, g.head(x, 1280))


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else "target/models/cnn"
    os.makedirs(dest, exist_ok=True)
    resnet50(os.path.join(dest, "resnet50.onnx"))
    mobilenetv2(os.path.join(dest, "mobilenetv2.onnx"))


if __name__ == "__main__":
    main()
