#!/usr/bin/env bash
# Side by side speed of several graphlift binaries (e.g. before and after a change), in one
# run with the binaries interleaved in every round: `bench-expr` E1-E4 at 2^14 and 2^24
# elements on one thread, and the two real models (`graphlift bench`, one thread). Prints
# each binary's median of rounds and its ratio to the first binary.
#
#   ROUNDS=7 bash scripts/compare-builds.sh /tmp/graphlift-before target/release/graphlift
#
# Where a buffer lands decides a kernel's speed in cache (a misaligned 64-byte load splits
# two lines), and any change can move where the heap puts one: preload an allocator that
# aligns large blocks the same way in every binary to compare code, not placement, e.g.
#   LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 (Debian's libjemalloc2).
set -euo pipefail
(($# >= 1)) || { echo "usage: compare-builds.sh BIN [BIN ...]" >&2; exit 2; }
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${ROUNDS:-5}"
models="$repo/target/models"
bash "$repo/scripts/fetch-models.sh" >/dev/null
raw="$(mktemp)"
trap 'rm -f "$raw"' EXIT
bins=("$@")
specs=("paraphrase-MiniLM-L3-v2.onnx input_ids=1x128" "ch_ppocr_mobile_v2.0_cls_infer.onnx x=1x3x48x192")
for _ in $(seq "$ROUNDS"); do
    for k in "${!bins[@]}"; do
        bin="${bins[$k]}"
        for e in E1 E2 E3 E4; do
            for n in 16384 16777216; do
                v=$(GRAPHLIFT_NUM_THREADS=1 "$bin" bench-expr "$e" "$n" | sed -n 's/^ns_per_element=//p')
                echo "$k $e-$n $v" >>"$raw"
            done
        done
        for spec in "${specs[@]}"; do
            read -r model shape <<<"$spec"
            v=$("$bin" bench "$models/$model" --threads 1 --shape "$shape" --runs 40 2>/dev/null |
                sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p')
            echo "$k ${model%%.onnx}-ms $v" >>"$raw"
        done
    done
done
python3 - "$raw" "$@" <<'PY'
import collections, statistics, sys
raw, bins = sys.argv[1], sys.argv[2:]
d = collections.defaultdict(list)
for line in open(raw):
    k, case, v = line.split()
    d[(case, int(k) + 1)].append(float(v))
cases = list(dict.fromkeys(c for c, _ in d))
print("| case | " + " | ".join(bins) + " | " + " | ".join(f"{i + 1}/1" for i in range(1, len(bins))) + " |")
print("|---" * (2 * len(bins)) + "|")
for c in cases:
    m = [statistics.median(d[(c, k + 1)]) for k in range(len(bins))]
    print(f"| {c} | " + " | ".join(f"{x:.4g}" for x in m) + " | " + " | ".join(f"{x / m[0]:.3f}" for x in m[1:]) + " |")
PY
