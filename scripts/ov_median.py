"""Median latency in ms of OpenVINO (CPU plugin, f32 inference precision) on a model, printed
with 4 decimals, with the inputs scripts/ort_median.py makes.

    python ov_median.py MODEL THREADS RUNS DIMS      # DIMS like 1x128 or 1x3x48x192

`INFERENCE_PRECISION_HINT` is `f32` (OpenVINO would otherwise run bf16 where the host has
AMX or AVX512-BF16), `INFERENCE_NUM_THREADS` THREADS, `PERFORMANCE_HINT` `LATENCY`, one
synchronous request. Used by scripts/bench-models.sh.
"""
import sys
import time

import numpy as np
import openvino as ov

model, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dims = tuple(int(d) for d in sys.argv[4].split("x"))
core = ov.Core()
net = core.read_model(model)
feed = {}
for i in net.inputs:
    name = i.get_any_name()
    if name in ("input_ids", "attention_mask", "token_type_ids"):
        feed[name] = np.ones(dims, np.int64)
    else:
        feed[name] = np.random.default_rng(7).standard_normal(dims).astype(np.float32)
net.reshape({name: list(a.shape) for name, a in feed.items()})
compiled = core.compile_model(net, "CPU", {
    "INFERENCE_PRECISION_HINT": "f32",
    "INFERENCE_NUM_THREADS": str(threads),
    "PERFORMANCE_HINT": "LATENCY",
})
request = compiled.create_infer_request()
for _ in range(5):
    request.infer(feed)
t = []
for _ in range(runs):
    a = time.perf_counter()
    request.infer(feed)
    t.append(time.perf_counter() - a)
print(f"{np.median(t) * 1e3:.4f}")
