#!/usr/bin/env bash
# Side-by-side latency of a baseline graphlift binary (BASE, e.g. main's build copied aside
# before a change), the current release build and onnxruntime (CPU provider) on the two real
# models, 1 and 2 threads, in one run: MiniLM at sequence 128, batch 1 and 8, and the PP-OCR
# classifier at [B, 3, 48, 192], batch 1 and 6. Every round runs the three in turn; the
# table gives each one's median of round medians and the ratios new / base, base / ort and
# new / ort.
#
#   BASE=/tmp/graphlift-base ROUNDS=5 RUNS=30 bash scripts/bench-vs-base.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
: "${BASE:?set BASE to the baseline graphlift binary}"
ROUNDS="${ROUNDS:-5}"
RUNS="${RUNS:-30}"
bash scripts/fetch-models.sh >/dev/null
cargo build --release -q -p graphlift-cli
models="$repo/target/models"
py="$models/venv/bin/python"
new="$repo/target/release/graphlift"

gl_median() { # binary model threads shape
    "$1" bench "$2" --threads "$3" --shape "$4" --runs "$RUNS" 2>/dev/null |
        sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'
}

median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf "%-36s %7s %9s %9s %9s %8s %8s %8s\n" model threads base_ms new_ms ort_ms \
    new/base base/ort new/ort
for spec in "paraphrase-MiniLM-L3-v2.onnx input_ids=1x128" \
            "paraphrase-MiniLM-L3-v2.onnx input_ids=8x128" \
            "ch_ppocr_mobile_v2.0_cls_infer.onnx x=1x3x48x192" \
            "ch_ppocr_mobile_v2.0_cls_infer.onnx x=6x3x48x192"; do
    set -- $spec
    for threads in 1 2; do
        b=(); n=(); o=()
        for _ in $(seq "$ROUNDS"); do
            b+=("$(gl_median "$BASE" "$models/$1" "$threads" "$2")")
            n+=("$(gl_median "$new" "$models/$1" "$threads" "$2")")
            o+=("$("$py" scripts/ort_median.py "$models/$1" "$threads" "$RUNS" "${2#*=}")")
        done
        bm=$(echo "${b[*]}" | median); nm=$(echo "${n[*]}" | median)
        om=$(echo "${o[*]}" | median)
        awk -v m="${1%.onnx} ${2#*=}" -v t="$threads" -v b="$bm" -v n="$nm" -v o="$om" \
            'BEGIN { printf "%-36s %7s %9s %9s %9s %8.2f %8.2f %8.2f\n", m, t, b, n, o, n / b, b / o, n / o }'
    done
done
