#!/usr/bin/env bash
# Side-by-side latency of the two real models on graphlift CPU-JIT (`graphlift bench`) and
# onnxruntime (CPU provider, pinned in fetch-models.sh), 1 and 2 threads, in one run:
# MiniLM at batch 1, sequence 128, and the PP-OCR classifier at [1, 3, 48, 192]. Each
# configuration alternates graphlift and onnxruntime for ROUNDS rounds; the table gives
# each side's median of round medians and the ratio graphlift / onnxruntime.
#
#   bash scripts/bench-models.sh            # ROUNDS=3 RUNS=50 by default
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
ROUNDS="${ROUNDS:-3}"
RUNS="${RUNS:-50}"
bash scripts/fetch-models.sh >/dev/null
cargo build --release -q -p graphlift-cli
models="$repo/target/models"
py="$models/venv/bin/python"
graphlift="$repo/target/release/graphlift"

ort_median() { # model threads dims
    "$py" "$repo/scripts/ort_median.py" "$1" "$2" "$RUNS" "$3"
}

gl_median() { # model threads shape
    "$graphlift" bench "$1" --threads "$2" --shape "$3" --runs "$RUNS" 2>/dev/null |
        sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'
}

median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf "%-28s %7s %14s %14s %7s\n" model threads graphlift_ms onnxruntime_ms ratio
for spec in "paraphrase-MiniLM-L3-v2.onnx input_ids=1x128" \
            "ch_ppocr_mobile_v2.0_cls_infer.onnx x=1x3x48x192"; do
    set -- $spec
    for threads in 1 2; do
        g=(); o=()
        for _ in $(seq "$ROUNDS"); do
            g+=("$(gl_median "$models/$1" "$threads" "$2")")
            o+=("$(ort_median "$models/$1" "$threads" "${2#*=}")")
        done
        gm=$(echo "${g[*]}" | median); om=$(echo "${o[*]}" | median)
        awk -v m="${1%.onnx}" -v t="$threads" -v g="$gm" -v o="$om" \
            'BEGIN { printf "%-28s %7s %14s %14s %7.2f\n", m, t, g, o, g / o }'
    done
done
