"""QDQ models on integer kernels beside the same models with their QDQ pairs folded back to
float (`qdq_fold.py`: the float model the quantizer started from), beside the QDQ model with
the `qdq_lowering` pass switched off (GRAPHLIFT_DISABLE_PASSES: float QDQ) and beside
onnxruntime on the QDQ model, at 1 and 2 threads: ROUNDS alternating rounds of RUNS runs each (environment;
3 and 20 by default), the median of the round medians, and the ratios to onnxruntime.

    qdq_bench.py ZOO_DIR BIN CASE...   (cases as scripts/zoo.py names them)
"""

import os
import sys

import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qdq_fold  # noqa: E402
import zoo  # noqa: E402


def main(dest, binary, only):
    import onnxruntime as ort

    rounds = int(os.environ.get("ROUNDS", "3"))
    runs = int(os.environ.get("RUNS", "20"))
    rng = np.random.default_rng(20261126)
    print(f"{'case':<20} {'thr':>3} {'integer_ms':>10} {'f32_ms':>7} {'pass_off_ms':>11} "
          f"{'ort_ms':>7} {'int/ort':>7} {'int/f32':>7}")
    tmp = tempfile.mkdtemp()
    for case, model, inputs, _ in zoo.cases(rng):
        if case not in only:
            continue
        d = os.path.join(dest, case)
        files = [os.path.join(d, f"input_{k}.npy") for k in range(len(inputs))]
        path = os.path.join(dest, model)
        f32 = os.path.join(tmp, case + "_f32.onnx")
        onnx.save(qdq_fold.fold(onnx.load(path)), f32)
        for threads in (1, 2):
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            feed = {i.name: np.load(f) for i, f in zip(session.get_inputs(), files)}
            lowered, folded, off, theirs = [], [], [], []
            for _ in range(rounds):
                os.environ.pop("GRAPHLIFT_DISABLE_PASSES", None)
                lowered.append(zoo.graphlift_median(binary, path, files, threads, runs))
                folded.append(zoo.graphlift_median(binary, f32, files, threads, runs))
                os.environ["GRAPHLIFT_DISABLE_PASSES"] = "qdq_lowering"
                off.append(zoo.graphlift_median(binary, path, files, threads, runs))
                os.environ.pop("GRAPHLIFT_DISABLE_PASSES", None)
                theirs.append(zoo.ort_median(session, feed, runs))
            lm, fm, pm, om = (float(np.median(v)) for v in (lowered, folded, off, theirs))
            print(f"{case:<20} {threads:>3} {lm:>10.3f} {fm:>7.3f} {pm:>11.3f} {om:>7.3f} "
                  f"{lm / om:>7.2f} {lm / fm:>7.2f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], set(sys.argv[3:]))
