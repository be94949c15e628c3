"""Side-by-side latency of graphlift binaries and onnxruntime on any models, alternated in
every round: each round times every model on every candidate in turn (`BIN bench`, and
onnxruntime's CPU provider through `ort_median.py`); prints each candidate's median of round
medians (ms) and its ratio to the first candidate's.

    python bench-side.py ROUNDS RUNS THREADS MODEL:NAME=DIMS ... -- CANDIDATE ...

A candidate is a graphlift binary, `ENV=VALUE,...@BIN` (the binary run with those
environment variables), or `ort`. DIMS like 1x3x224x224: graphlift gets `--shape
NAME=DIMS`, onnxruntime the inputs `ort_median.feed` makes. For example, ResNet-50 and
MobileNetV2 from scripts/make-cnn-models.py before and after a change:

    python scripts/bench-side.py 3 20 1 /tmp/cnn/mobilenetv2.onnx:x=1x3x224x224 -- \\
        target/release/graphlift /tmp/graphlift-base ort
"""
import os
import re
import statistics
import subprocess
import sys

from ort_median import feed, median_ms, session


def graphlift_ms(candidate, model, shape, threads, runs):
    """The median latency `graphlift bench` reports for `model` (NaN where it fails)."""
    env = dict(os.environ)
    binary = candidate
    if "@" in candidate:
        settings, binary = candidate.split("@", 1)
        env.update(kv.split("=", 1) for kv in settings.split(","))
    args = [binary, "bench", model, "--threads", str(threads), "--shape", shape,
            "--runs", str(runs)]
    out = subprocess.run(args, capture_output=True, text=True, env=env).stdout
    m = re.search(r"latency: median ([0-9.]+) ms", out)
    return float(m.group(1)) if m else float("nan")


def main():
    rounds, runs, threads = (int(a) for a in sys.argv[1:4])
    rest = sys.argv[4:]
    split = rest.index("--")
    specs, candidates = rest[:split], rest[split + 1:]
    for spec in specs:
        model, shape = spec.rsplit(":", 1)
        dims = tuple(int(d) for d in shape.split("=", 1)[1].split("x"))
        ort = None
        times = {c: [] for c in candidates}
        for _ in range(rounds):
            for c in candidates:
                if c == "ort":
                    if ort is None:
                        s = session(model, threads)
                        ort = (s, feed(s, dims))
                    times[c].append(median_ms(*ort, runs))
                else:
                    times[c].append(graphlift_ms(c, model, shape, threads, runs))
        medians = [statistics.median(times[c]) for c in candidates]
        cells = " ".join(f"{os.path.basename(c)}={m:.3f} ({m / medians[0]:.2f})"
                         for c, m in zip(candidates, medians))
        print(f"{os.path.basename(model)} {shape} {threads}t: {cells}", flush=True)


if __name__ == "__main__":
    main()
