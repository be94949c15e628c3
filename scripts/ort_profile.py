"""onnxruntime's time per operator type on a model, in the layout of `graphlift bench
--profile`: the mean kernel time per call of each op type (onnxruntime's own profiler,
`SessionOptions.enable_profiling`), its share of the kernels' total, and the slowest nodes.

    python ort_profile.py MODEL THREADS RUNS DIMS [SLOWEST]   # DIMS like 1x128

Inputs as scripts/ort_median.py makes them; five untimed runs first (their events are left
out). Used by scripts/bench-scaling.sh to set each op type's scaling beside graphlift's.
"""
import collections
import json
import os
import sys
import tempfile

from ort_median import feed, session

WARMUP = 5


def main():
    model, threads, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    dims = tuple(int(d) for d in sys.argv[4].split("x"))
    slowest = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    with tempfile.TemporaryDirectory() as tmp:
        s = session(model, threads, os.path.join(tmp, "ort"))
        f = feed(s, dims)
        for _ in range(WARMUP + runs):
            s.run(None, f)
        with open(s.end_profiling()) as trace:
            events = json.load(trace)
    calls = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    start = calls[WARMUP]
    by_op, by_node, nodes = collections.defaultdict(float), collections.defaultdict(float), {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time") or e["ts"] < start:
            continue
        op = e["args"]["op_name"]
        node = e["name"][: -len("_kernel_time")]
        by_op[op] += e["dur"] / 1e3 / runs
        by_node[node] += e["dur"] / 1e3 / runs
        nodes[node] = op
    total = sum(by_op.values())
    print(f"onnxruntime profile: {model} ({'x'.join(map(str, dims))}), {threads} thread(s), "
          f"{runs} call(s)")
    print(f"  {'op':<24} {'steps':>7} {'ms/call':>12} {'share':>7}")
    steps = collections.Counter(nodes.values())
    for op, ms in sorted(by_op.items(), key=lambda kv: -kv[1]):
        print(f"  {op:<24} {steps[op]:>7} {ms:>12.4f} {100 * ms / total:>6.1f}%")
    print(f"  {'total':<24} {'':>7} {total:>12.4f}")
    print("  slowest steps:")
    for node, ms in sorted(by_node.items(), key=lambda kv: -kv[1])[:slowest]:
        print(f"    {ms:>9.4f} ms  {nodes[node]:<16} {node}")


if __name__ == "__main__":
    main()
