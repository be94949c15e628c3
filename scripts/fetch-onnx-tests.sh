#!/usr/bin/env bash
# Fetches the ONNX backend node tests (model.onnx + test_data_set_0/*.pb per test) that ship
# inside the onnx==1.22.0 wheel on PyPI, and extracts only onnx/backend/test/data/node/* into
# target/onnx-node-tests/node/<test>/ (never committed: target/ is ignored).
#
# Used by tests/onnx_node_tests.rs. Idempotent: does nothing when the data is already there.
#
#   bash scripts/fetch-onnx-tests.sh            # into <repo>/target/onnx-node-tests
#   ONNX_TESTS_DIR=/some/dir bash scripts/...   # elsewhere; then set GRAPHLIFT_ONNX_NODE_TESTS=/some/dir/node
set -euo pipefail

ONNX_VERSION="1.22.0"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${ONNX_TESTS_DIR:-$repo/target/onnx-node-tests}"
stamp="$dest/.complete-onnx-$ONNX_VERSION"

if [[ -f "$stamp" ]]; then
    echo "onnx node tests already present: $dest/node ($(ls "$dest/node" | wc -l) tests)"
    exit 0
fi

python="${PYTHON:-python3}"
download="$dest/.download"
rm -rf "$dest/node" "$download"
mkdir -p "$download"

# Any platform's wheel carries the same test data; pip picks the one for this interpreter and
# platform. --no-deps: only the wheel itself is needed, nothing is installed. If this Python
# has no wheel of that version, take the CPython 3.11 manylinux x86_64 one instead.
pip_download() {
    "$python" -m pip download --disable-pip-version-check --no-deps --only-binary=:all: \
        "onnx==$ONNX_VERSION" -d "$download" "$@"
}
if ! pip_download; then
    echo "fetch-onnx-tests: no onnx $ONNX_VERSION wheel for this Python; trying cp311 manylinux" >&2
    pip_download --python-version 3.11 --implementation cp --abi cp311 \
        --platform manylinux_2_28_x86_64
fi

shopt -s nullglob
wheels=("$download"/onnx-"$ONNX_VERSION"-*.whl)
if (( ${#wheels[@]} == 0 )); then
    echo "fetch-onnx-tests: no onnx-$ONNX_VERSION wheel in $download" >&2
    exit 1
fi
wheel="${wheels[0]}"

"$python" - "$wheel" "$dest" <<'EOF'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
prefix = "onnx/backend/test/data/node/"
count = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if not name.startswith(prefix) or info.is_dir():
            continue
        rel = name[len(prefix):]
        parts = rel.split("/")
        if any(p in ("", ".", "..") for p in parts):
            continue
        out = os.path.join(dest, "node", *parts)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            dst.write(src.read())
        count += 1
if count == 0:
    sys.exit("fetch-onnx-tests: the wheel holds no " + prefix + " files")
print(f"extracted {count} files into {os.path.join(dest, 'node')}")
EOF

rm -rf "$download"
touch "$stamp"
echo "onnx node tests ready: $dest/node ($(ls "$dest/node" | wc -l) tests)"
