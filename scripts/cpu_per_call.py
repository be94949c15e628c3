"""CPU time per call of `graphlift bench` on one thread, for comparing binaries on a guest
that other processes share (wall-clock latency then swings with their load; the CPU time a
single-threaded call takes swings much less).

    cpu_per_call.py MODEL ROUNDS BIN [BIN ...]

Per binary and round: the user + system time of `BIN bench MODEL --threads 1 --runs 60`
minus that of `--runs 10` (so import, compile and warm-up cancel), over 50. Inputs are the
model's `input_*.npy` files in the directory named like the model (as `scripts/zoo.py` writes
them), else generated. Prints the median over the interleaved rounds and the ratio to the
first binary.
"""

import glob
import os
import resource
import statistics
import subprocess
import sys


def cpu_seconds(binary, model, inputs, runs):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([binary, "bench", model, "--threads", "1", "--runs", str(runs)] + inputs,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(model, rounds, binaries):
    inputs = []
    for path in sorted(glob.glob(os.path.join(model[:-len(".onnx")], "input_*.npy"))):
        inputs += ["--input", path]
    per_call = {b: [] for b in binaries}
    for _ in range(rounds):
        for b in binaries:
            spent = cpu_seconds(b, model, inputs, 60) - cpu_seconds(b, model, inputs, 10)
            per_call[b].append(spent / 50 * 1e3)
    base = statistics.median(per_call[binaries[0]])
    for b in binaries:
        ms = statistics.median(per_call[b])
        print(f"{os.path.basename(model):<28} {b:<32} {ms:8.3f} ms cpu/call  ratio {ms / base:.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
