#!/usr/bin/env bash
# Side-by-side latency of the two real models on graphlift CPU-JIT (`graphlift bench`),
# onnxruntime (CPU provider, pinned in fetch-models.sh) and OpenVINO (CPU plugin, f32
# inference precision, pinned below; installed into the models' venv on first use), 1 and
# 2 threads, in one run: MiniLM at sequence 128, batch 1 and 8, and the PP-OCR classifier at
# [B, 3, 48, 192], batch 1 and 6. Each configuration alternates the three for ROUNDS
# rounds; the table gives each one's median of round medians and the ratios graphlift /
# onnxruntime and graphlift / OpenVINO. With BASE set to another graphlift binary (main's
# build copied aside before a change), it runs in the same rounds too, and the table adds
# its time and the ratio graphlift / base.
#
#   bash scripts/bench-models.sh            # ROUNDS=3 RUNS=50 by default
#   BASE=/tmp/graphlift-base ROUNDS=5 RUNS=30 bash scripts/bench-models.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
source scripts/bench-lib.sh
ROUNDS="${ROUNDS:-3}"
RUNS="${RUNS:-50}"
OPENVINO_VERSION="2026.4.1"
bash scripts/fetch-models.sh >/dev/null
cargo build --release -q -p graphlift-cli
models="$repo/target/models"
py="$models/venv/bin/python"
graphlift="$repo/target/release/graphlift"
"$py" -c "import openvino" 2>/dev/null ||
    "$py" -m pip install --disable-pip-version-check --quiet "openvino==$OPENVINO_VERSION"

ort_median() { # model threads dims
    "$py" "$repo/scripts/ort_median.py" "$1" "$2" "$RUNS" "$3"
}

ov_median() { # model threads dims
    "$py" "$repo/scripts/ov_median.py" "$1" "$2" "$RUNS" "$3"
}


printf "%-28s %7s %7s %13s %15s %12s %8s %8s" model shape threads graphlift_ms \
    onnxruntime_ms openvino_ms vs_ort vs_ov
base_header
echo
for spec in "paraphrase-MiniLM-L3-v2.onnx input_ids=1x128" \
            "paraphrase-MiniLM-L3-v2.onnx input_ids=8x128" \
            "ch_ppocr_mobile_v2.0_cls_infer.onnx x=1x3x48x192" \
            "ch_ppocr_mobile_v2.0_cls_infer.onnx x=6x3x48x192"; do
    set -- $spec
    for threads in 1 2; do
        g=(); o=(); v=(); b=()
        for _ in $(seq "$ROUNDS"); do
            g+=("$(gl_median "$graphlift" "$models/$1" "$threads" "$2" "$RUNS")")
            [ -n "${BASE:-}" ] && b+=("$(gl_median "$BASE" "$models/$1" "$threads" "$2" "$RUNS")")
            o+=("$(ort_median "$models/$1" "$threads" "${2#*=}")")
            v+=("$(ov_median "$models/$1" "$threads" "${2#*=}")")
        done
        gm=$(echo "${g[*]}" | median); om=$(echo "${o[*]}" | median)
        vm=$(echo "${v[*]}" | median)
        awk -v m="${1%.onnx}" -v s="${2#*=}" -v t="$threads" -v g="$gm" -v o="$om" -v v="$vm" \
            'BEGIN { printf "%-28s %7s %7s %13s %15s %12s %8.2f %8.2f", m, s, t, g, o, v, g / o, g / v }'
        base_columns "$gm" "${b[@]}"
        echo
    done
done
