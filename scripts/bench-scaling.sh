#!/usr/bin/env bash
# How graphlift CPU-JIT and onnxruntime (CPU provider) scale with threads, side by side in
# one run: MiniLM at sequence 128 (batch 1 and 8) and the PP-OCR classifier at
# [B, 3, 48, 192] (batch 1 and 6), at each thread count of THREADS. Each configuration
# alternates the two for ROUNDS rounds of RUNS runs; the table gives each one's median of
# round medians, the ratio graphlift / onnxruntime, and each one's speed-up over its own
# time at the first thread count. With PROFILE set to thread counts, each model then gets
# both runtimes' time per op type at those counts (`graphlift bench --profile`,
# scripts/ort_profile.py), to show which steps stop scaling. With BASE set to another
# graphlift binary (main's build copied aside before a change), it runs in the same rounds
# too, and the table adds its time and the ratio graphlift / base.
#
# Made for a machine with more cores than the development one: it builds nothing when
# GRAPHLIFT names a binary and fetches nothing when MODELS holds the two models.
#
#   bash scripts/bench-scaling.sh      # THREADS: 1, 2, 4, ... up to the cores; ROUNDS=2 RUNS=20
#   GRAPHLIFT=./graphlift PY=python3 MODELS=models THREADS="1 4 16" PROFILE="1 16" \
#       bash scripts/bench-scaling.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$repo/scripts/bench-lib.sh"
ROUNDS="${ROUNDS:-2}"
RUNS="${RUNS:-20}"
MODELS="${MODELS:-$repo/target/models}"
PY="${PY:-$MODELS/venv/bin/python}"
if [ -z "${GRAPHLIFT:-}" ]; then
    (cd "$repo" && cargo build --release -q -p graphlift-cli)
    GRAPHLIFT="$repo/target/release/graphlift"
fi
[ -f "$MODELS/paraphrase-MiniLM-L3-v2.onnx" ] || bash "$repo/scripts/fetch-models.sh" >/dev/null
if [ -z "${THREADS:-}" ]; then
    cores=$(nproc)
    THREADS=$(t=1; while [ "$t" -lt "$cores" ]; do printf "%s " "$t"; t=$((t * 2)); done; echo "$cores")
fi
specs=("paraphrase-MiniLM-L3-v2.onnx input_ids=1x128"
       "paraphrase-MiniLM-L3-v2.onnx input_ids=8x128"
       "ch_ppocr_mobile_v2.0_cls_infer.onnx x=1x3x48x192"
       "ch_ppocr_mobile_v2.0_cls_infer.onnx x=6x3x48x192")

printf "%-28s %7s %7s %13s %15s %7s %11s %11s" model shape threads graphlift_ms \
    onnxruntime_ms vs_ort gl_speedup ort_speedup
base_header
echo
for spec in "${specs[@]}"; do
    set -- $spec
    g1=""; o1=""
    for threads in $THREADS; do
        g=(); o=(); b=()
        for _ in $(seq "$ROUNDS"); do
            g+=("$(gl_median "$GRAPHLIFT" "$MODELS/$1" "$threads" "$2" "$RUNS")")
            [ -n "${BASE:-}" ] && b+=("$(gl_median "$BASE" "$MODELS/$1" "$threads" "$2" "$RUNS")")
            o+=("$("$PY" "$repo/scripts/ort_median.py" "$MODELS/$1" "$threads" "$RUNS" "${2#*=}")")
        done
        gm=$(echo "${g[*]}" | median); om=$(echo "${o[*]}" | median)
        g1="${g1:-$gm}"; o1="${o1:-$om}"
        awk -v m="${1%.onnx}" -v s="${2#*=}" -v t="$threads" -v g="$gm" -v o="$om" \
            -v g1="$g1" -v o1="$o1" 'BEGIN { printf "%-28s %7s %7s %13s %15s %7.2f %11.2f %11.2f",
                m, s, t, g, o, g / o, g1 / g, o1 / o }'
        base_columns "$gm" "${b[@]}"
        echo
    done
done
for threads in ${PROFILE:-}; do
    for spec in "${specs[@]}"; do
        set -- $spec
        echo
        echo "== ${1%.onnx} ${2#*=}, $threads thread(s)"
        "$GRAPHLIFT" bench "$MODELS/$1" --threads "$threads" --shape "$2" --runs "$RUNS" \
            --profile "$RUNS" --slowest 8 2>/dev/null | sed -n '/^latency/,$p'
        "$PY" "$repo/scripts/ort_profile.py" "$MODELS/$1" "$threads" "$RUNS" "${2#*=}" 8
    done
done
