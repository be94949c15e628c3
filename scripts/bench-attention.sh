#!/usr/bin/env bash
# MiniLM (paraphrase-MiniLM-L3-v2, sequence 128) on graphlift CPU-JIT with the scope fusion
# pass `attention` on (its three self-attention blocks run as one native Attention kernel
# each) and off (`--disable-scope-pass attention`: MatMul, Div, Add, Softmax, MatMul and the
# head Reshapes/Transposes run one by one), batch 1 and 8, 1 and 2 threads, in one run.
# Each round runs every configuration on, off and on onnxruntime (CPU provider, pinned in
# fetch-models.sh) back to back; the table gives each side's median of round medians, the
# ratio on / off (below 1: the fused kernel is faster) and graphlift (on) / onnxruntime.
#
#   bash scripts/bench-attention.sh            # ROUNDS=5 RUNS=40 by default
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/bench-lib.sh
ROUNDS="${ROUNDS:-5}"
RUNS="${RUNS:-40}"
bash scripts/fetch-models.sh >/dev/null
cargo build --release -q -p graphlift-cli
model="$repo/target/models/paraphrase-MiniLM-L3-v2.onnx"
graphlift="$repo/target/release/graphlift"
py="$repo/target/models/venv/bin/python"

median_ms() { # batch threads [extra flags...]
    local b="$1" t="$2"
    shift 2
    gl_median "$graphlift" "$model" "$t" "input_ids=${b}x128" "$RUNS" "$@"
}

declare -A on off ort
configs=("1 1" "1 2" "8 1" "8 2")
for round in $(seq "$ROUNDS"); do
    for c in "${configs[@]}"; do
        set -- $c
        on[$c]+="$(median_ms "$1" "$2") "
        off[$c]+="$(median_ms "$1" "$2" --disable-scope-pass attention) "
        ort[$c]+="$("$py" "$repo/scripts/ort_median.py" "$model" "$2" "$RUNS" "${1}x128") "
    done
    echo "round $round/$ROUNDS done" >&2
done
printf "%-6s %7s %10s %11s %7s %15s %10s\n" batch threads fused_ms unfused_ms ratio onnxruntime_ms fused/ort
for c in "${configs[@]}"; do
    set -- $c
    f=$(echo "${on[$c]}" | median)
    u=$(echo "${off[$c]}" | median)
    o=$(echo "${ort[$c]}" | median)
    awk -v b="$1" -v t="$2" -v f="$f" -v u="$u" -v o="$o" \
        'BEGIN { printf "%-6s %7s %10s %11s %7.3f %15s %10.2f\n", b, t, f, u, f / u, o, f / o }'
done
