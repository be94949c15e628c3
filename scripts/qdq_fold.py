"""Folds the QDQ pairs of a statically quantized ONNX model back to float: every
`DequantizeLinear(QuantizeLinear(x))` becomes `x`, and every `DequantizeLinear` of a
constant becomes the dequantized FLOAT constant; the float model the quantizer started
from, for timing the QDQ model's integer kernels against it (issue 29).

    qdq_fold.py IN.onnx OUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import numpy_helper


def dequantize(x, scale, zero_point, axis):
    """`(x - zero_point) * scale` along `axis` (per tensor for a one-element scale)."""
    x = x.astype(np.float32)
    if scale.size > 1:
        shape = [1] * x.ndim
        shape[axis] = scale.size
        scale = scale.reshape(shape)
        zero_point = zero_point.reshape(shape) if zero_point is not None else None
    if zero_point is not None:
        x = x - zero_point.astype(np.float32)
    return (x * scale.astype(np.float32)).astype(np.float32)


def fold(model):
    g = model.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    rename, dropped, new_inits = {}, set(), []
    for n in g.node:
        if n.op_type != "DequantizeLinear":
            continue
        src = producer.get(n.input[0])
        axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
        if src is not None and src.op_type == "QuantizeLinear":
            rename[n.output[0]] = src.input[0]
            dropped.add(id(n))
        elif n.input[0] in inits and n.input[1] in inits:
            zp = inits.get(n.input[2]) if len(n.input) > 2 and n.input[2] else None
            x = inits[n.input[0]]
            value = dequantize(x, inits[n.input[1]], zp, axis % max(x.ndim, 1))
            new_inits.append(numpy_helper.from_array(value, n.output[0]))
            dropped.add(id(n))
    keep = [n for n in g.node if id(n) not in dropped]

    def resolve(name):
        while name in rename:
            name = rename[name]
        return name

    for n in keep:
        for i, name in enumerate(n.input):
            n.input[i] = resolve(name)
    for o in g.output:
        o.name = resolve(o.name)
    used = {i for n in keep for i in n.input} | {o.name for o in g.output}
    keep = [n for n in keep if n.op_type != "QuantizeLinear" or any(o in used for o in n.output)]
    del g.node[:]
    g.node.extend(keep)
    g.initializer.extend(new_inits)
    used = {i for n in keep for i in n.input} | {o.name for o in g.output}
    live = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(live)
    return model


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    onnx.save(fold(onnx.load(sys.argv[1])), sys.argv[2])
