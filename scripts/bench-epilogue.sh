#!/usr/bin/env bash
# Epilogue fusion on against off, on the two real models (MiniLM at batch 1, sequence 128;
# the PP-OCR classifier at [1, 3, 48, 192]), 1 and 2 threads: `graphlift bench` with
# GRAPHLIFT_EPILOGUE_FUSION=0 and =1 alternate for ROUNDS rounds of RUNS runs each; the
# table gives each side's median of round medians and the ratio on / off (below 1: fusion
# is faster).
#
#   bash scripts/bench-epilogue.sh          # ROUNDS=5 RUNS=40 by default
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
ROUNDS="${ROUNDS:-5}"
RUNS="${RUNS:-40}"
bash scripts/fetch-models.sh >/dev/null
cargo build --release -q -p graphlift-cli
models="$repo/target/models"
graphlift="$repo/target/release/graphlift"

median() { tr ' ' '\n' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
run() { # fusion model threads shape
    GRAPHLIFT_EPILOGUE_FUSION="$1" "$graphlift" bench "$models/$2" --threads "$3" \
        --shape "$4" --runs "$RUNS" 2>/dev/null |
        sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'
}

printf "%-32s %7s %10s %10s %7s\n" model threads off_ms on_ms on/off
for spec in "paraphrase-MiniLM-L3-v2.onnx input_ids=1x128" \
            "ch_ppocr_mobile_v2.0_cls_infer.onnx x=1x3x48x192"; do
    set -- $spec
    for threads in 1 2; do
        off=(); on=()
        for _ in $(seq "$ROUNDS"); do
            off+=("$(run 0 "$1" "$threads" "$2")")
            on+=("$(run 1 "$1" "$threads" "$2")")
        done
        a=$(echo "${off[*]}" | median); b=$(echo "${on[*]}" | median)
        awk -v m="${1%.onnx}" -v t="$threads" -v a="$a" -v b="$b" \
            'BEGIN { printf "%-32s %7s %10s %10s %7.3f\n", m, t, a, b, b / a }'
    done
done
