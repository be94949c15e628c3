"""Median latency in ms of onnxruntime (CPU provider) on a model, printed with 4 decimals.

    python ort_median.py MODEL THREADS RUNS DIMS      # DIMS like 1x128 or 1x3x48x192

Token inputs (input_ids, attention_mask, token_type_ids) get int64 ones of DIMS (what
`graphlift bench` generates); any other input gets seeded float32 normals of DIMS. Used by
scripts/bench-models.sh and scripts/bench-attention.sh.
"""
import sys
import time

import numpy as np
import onnxruntime as ort

model, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dims = tuple(int(d) for d in sys.argv[4].split("x"))
o = ort.SessionOptions()
o.intra_op_num_threads = threads
o.inter_op_num_threads = 1
s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
feed = {}
for i in s.get_inputs():
    if i.name in ("input_ids", "attention_mask", "token_type_ids"):
        feed[i.name] = np.ones(dims, np.int64)
    else:
        feed[i.name] = np.random.default_rng(7).standard_normal(dims).astype(np.float32)
for _ in range(5):
    s.run(None, feed)
t = []
for _ in range(runs):
    a = time.perf_counter()
    s.run(None, feed)
    t.append(time.perf_counter() - a)
print(f"{np.median(t) * 1e3:.4f}")
