"""Single-op models timed on CPU-JIT beside onnxruntime: the zoo's MaxPool shapes (and the
ResNet stem's), recurrent ops at the zoo's sizes, and the zoo's convolution shapes (dense,
strided, dilated, depthwise, transposed), each written as a one-node ONNX model with seeded
random weights and inputs.

    bench-ops.py BIN DIR [CASE ...]    write the models under DIR, then ROUNDS alternating
                                       rounds (environment; 5 by default) of RUNS runs each
                                       (20): `BIN bench` (and BASELINE=OTHER_BIN's), then
                                       onnxruntime; the median of the round medians, one
                                       thread, and the ratios
"""

import os
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# name: (op, input shape, attributes, hidden size for recurrent ops)
CASES = {
    "maxpool_plcmos": ("MaxPool", [1, 32, 198, 257], dict(kernel_shape=[1, 4], strides=[1, 4]), 0),
    "maxpool_tinyocr": ("MaxPool", [1, 16, 160, 160],
                        dict(kernel_shape=[2, 2], strides=[1, 1], auto_pad="SAME_UPPER"), 0),
    "maxpool_13x13": ("MaxPool", [1, 128, 16, 64],
                      dict(kernel_shape=[13, 13], strides=[1, 1], pads=[6, 6, 6, 6]), 0),
    "maxpool_3x3s2": ("MaxPool", [1, 64, 112, 112],
                      dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), 0),
    "gru_h32_seq194": ("GRU", [194, 1, 128],
                       dict(direction="bidirectional", linear_before_reset=1), 32),
    "gru_h128_seq12": ("GRU", [12, 1, 256],
                       dict(direction="bidirectional", linear_before_reset=1), 128),
    "lstm_h512_seq32": ("LSTM", [32, 1, 512], dict(direction="bidirectional"), 512),
    # Convolutions: the weight's shape in place of the hidden size.
    "conv_plcmos_dil": ("Conv", [1, 32, 198, 64], dict(dilations=[2, 1], pads=[1, 1, 1, 1]),
                        [64, 32, 3, 3]),
    "conv_tinyocr_16": ("Conv", [1, 64, 80, 80], dict(pads=[1, 1, 1, 1]), [16, 64, 3, 3]),
    "conv_tinyocr_s2": ("Conv", [1, 32, 160, 160], dict(strides=[2, 2], pads=[1, 1, 1, 1]),
                        [16, 32, 3, 3]),
    "conv_64x64": ("Conv", [1, 64, 40, 40], dict(pads=[1, 1, 1, 1]), [64, 64, 3, 3]),
    "conv_first_s2": ("Conv", [1, 3, 320, 320], dict(strides=[2, 2], pads=[1, 1, 1, 1]),
                      [16, 3, 3, 3]),
    "conv_2x2": ("Conv", [1, 8, 160, 160], dict(pads=[0, 0, 1, 1]), [16, 8, 2, 2]),
    "conv_1x1": ("Conv", [1, 32, 80, 80], dict(), [64, 32, 1, 1]),
    "dw_5x5": ("Conv", [1, 64, 80, 80], dict(pads=[2, 2, 2, 2], group=64), [64, 1, 5, 5]),
    "dw_3x3": ("Conv", [1, 96, 24, 96], dict(pads=[1, 1, 1, 1], group=96), [96, 1, 3, 3]),
    "dw_3x3s2": ("Conv", [1, 96, 24, 96], dict(strides=[2, 2], pads=[1, 1, 1, 1], group=96),
                 [96, 1, 3, 3]),
    "dw_5x5_40": ("Conv", [1, 64, 40, 40], dict(pads=[2, 2, 2, 2], group=64), [64, 1, 5, 5]),
    "dw_3x3_10": ("Conv", [1, 160, 10, 10], dict(pads=[1, 1, 1, 1], group=160), [160, 1, 3, 3]),
    "dw_5x5_160": ("Conv", [1, 32, 160, 160], dict(pads=[2, 2, 2, 2], group=32), [32, 1, 5, 5]),
    "dw_5x5_batch": ("Conv", [6, 200, 2, 96], dict(pads=[2, 2, 2, 2], group=200),
                     [200, 1, 5, 5]),
    "dw_5x5s2_batch": ("Conv", [6, 104, 3, 96], dict(strides=[2, 1], pads=[2, 2, 2, 2],
                       group=104), [104, 1, 5, 5]),
    "conv_1x1_batch": ("Conv", [6, 32, 2, 96], dict(), [200, 32, 1, 1]),
    "conv_first_batch": ("Conv", [6, 3, 48, 192], dict(strides=[2, 2], pads=[1, 1, 1, 1]),
                         [8, 3, 3, 3]),
    "conv_se_squeeze": ("Conv", [6, 200, 1, 1], dict(), [50, 200, 1, 1]),
    "conv_se_excite": ("Conv", [6, 50, 1, 1], dict(), [200, 50, 1, 1]),
    "convt_2x2s2": ("ConvTranspose", [1, 16, 80, 80], dict(strides=[2, 2]), [16, 16, 2, 2]),
    "convt_to_1": ("ConvTranspose", [1, 16, 160, 160], dict(strides=[2, 2]), [16, 1, 2, 2]),
}


def write(path, op, shape, attrs, h):
    """Writes the one-node model and its seeded input; `h` is the recurrent ops' hidden size
    or the convolutions' weight shape."""
    rng = np.random.default_rng(20261127)
    inits, ins = [], ["X"]
    outs = ["Y"]
    if op in ("Conv", "ConvTranspose"):
        w = (rng.standard_normal(h) * 0.1).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "W"))
        ins.append("W")
        attrs = dict(attrs, kernel_shape=h[2:])
    elif op != "MaxPool":
        gates = {"GRU": 3, "LSTM": 4}[op]
        dirs = 2 if attrs.get("direction") == "bidirectional" else 1
        for name, dims in (("W", [dirs, gates * h, shape[2]]), ("R", [dirs, gates * h, h]),
                           ("B", [dirs, 2 * gates * h])):
            data = (rng.standard_normal(dims) * 0.1).astype(np.float32)
            inits.append(numpy_helper.from_array(data, name))
            ins.append(name)
        attrs = dict(attrs, hidden_size=h)
        outs = ["Y", "Y_h"]
    node = helper.make_node(op, ins, outs, **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    x = rng.standard_normal(shape).astype(np.float32)
    np.save(path[:-5] + "_x.npy", x)
    return x


def graphlift_median(binary, model, x_path, runs):
    args = [binary, "bench", model, "--threads", "1", "--runs", str(runs), "--warmup", "3",
            "--input", x_path]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("latency: median"))
    return float(line.split()[2])


def ort_median(session, x, runs):
    for _ in range(3):
        session.run(None, {"X": x})
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, {"X": x})
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def main(binary, dest, only):
    rounds = int(os.environ.get("ROUNDS", "5"))
    runs = int(os.environ.get("RUNS", "20"))
    baseline = os.environ.get("BASELINE")
    os.makedirs(dest, exist_ok=True)
    extra = f" {'baseline_ms':>11} {'vs_base':>7}" if baseline else ""
    print(f"{'case':<18} {'graphlift_ms':>12} {'onnxruntime_ms':>14} {'ratio':>6}" + extra)
    for case, (op, shape, attrs, h) in CASES.items():
        if only and case not in only:
            continue
        model = os.path.join(dest, case + ".onnx")
        x = write(model, op, shape, attrs, h)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        g, o, b = [], [], []
        for _ in range(rounds):
            g.append(graphlift_median(binary, model, model[:-5] + "_x.npy", runs))
            if baseline:
                b.append(graphlift_median(baseline, model, model[:-5] + "_x.npy", runs))
            o.append(ort_median(session, x, runs))
        gm, om = float(np.median(g)), float(np.median(o))
        line = f"{case:<18} {gm:>12.3f} {om:>14.3f} {gm / om:>6.2f}"
        if baseline:
            bm = float(np.median(b))
            line += f" {bm:>11.3f} {gm / bm:>7.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], set(sys.argv[3:]))
