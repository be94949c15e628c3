#!/usr/bin/env bash
# Runs every model of the zoo (scripts/zoo.py) with a release build of `graphlift run` on
# CPU-JIT and on the INTERPRETER and compares the outputs with onnxruntime's. Needs
# scripts/fetch-models.sh and scripts/fetch-zoo.sh first. Extra arguments name the cases
# to run (all when none).
#
#   bash scripts/check-zoo.sh [CASE ...]
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="${MODELS_DIR:-$repo/target/models}"
cargo build --release --quiet -p graphlift-cli --manifest-path "$repo/Cargo.toml"
"$models/venv/bin/python" "$repo/scripts/zoo.py" check "$models/zoo" \
    "$repo/target/release/graphlift" "$@"
