"""Median latency in ms of onnxruntime (CPU provider) on a model, printed with 4 decimals.

    python ort_median.py MODEL THREADS RUNS DIMS      # DIMS like 1x128 or 1x3x48x192

Token inputs (input_ids, attention_mask, token_type_ids) get int64 ones of DIMS (what
`graphlift bench` generates); any other input gets seeded float32 normals of DIMS. Used by
scripts/bench-models.sh, bench-attention.sh and bench-scaling.sh; `session` and `feed` by
scripts/ort_profile.py, `median_ms` by scripts/zoo.py.
"""
import sys
import time

import numpy as np
import onnxruntime as ort

TOKEN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def session(model, threads, profile_prefix=None):
    """A CPU-provider session of `threads` intra-op threads (one inter-op thread); with
    `profile_prefix`, onnxruntime's profiler writes its trace there."""
    o = ort.SessionOptions()
    o.intra_op_num_threads = threads
    o.inter_op_num_threads = 1
    if profile_prefix is not None:
        o.enable_profiling = True
        o.profile_file_prefix = profile_prefix
    return ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])


def feed(s, dims):
    """The inputs of every graph input of session `s` at shape `dims` (see the module doc)."""
    out = {}
    for i in s.get_inputs():
        if i.name in TOKEN_INPUTS:
            out[i.name] = np.ones(dims, np.int64)
        else:
            out[i.name] = np.random.default_rng(7).standard_normal(dims).astype(np.float32)
    return out


def median_ms(s, f, runs, warmup=5):
    """The median latency in ms of `runs` runs of session `s` on feed `f`, after `warmup`
    untimed ones."""
    for _ in range(warmup):
        s.run(None, f)
    t = []
    for _ in range(runs):
        a = time.perf_counter()
        s.run(None, f)
        t.append(time.perf_counter() - a)
    return float(np.median(t)) * 1e3


def main():
    model, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    dims = tuple(int(d) for d in sys.argv[4].split("x"))
    s = session(model, threads)
    print(f"{median_ms(s, feed(s, dims), runs):.4f}")


if __name__ == "__main__":
    main()
