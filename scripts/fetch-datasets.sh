#!/usr/bin/env bash
# Fetches the real data set of the training example (examples/train) and its test
# (tests/train_example.rs): scikit-learn's digits (1797 8x8 images of handwritten digits,
# 64 features valued 0..16 then the label 0..9 per CSV line; BSD-3-Clause, from the UCI
# "Optical Recognition of Handwritten Digits" set), as shipped inside the scikit-learn wheel
# pinned below. Only the wheel is downloaded (no install, no dependency): its tags are fixed so
# that any host python3 with pip fetches the same file; python's zipfile and gzip extract it.
# Never committed: target/ is ignored. Idempotent: does nothing when the data is already there.
#
#   bash scripts/fetch-datasets.sh                 # into <repo>/target/datasets
#   DATASETS_DIR=/some/dir bash scripts/...        # elsewhere; then set GRAPHLIFT_DATASETS=/some/dir
set -euo pipefail

SKLEARN_VERSION="1.7.2"
# sha256 of the extracted digits.csv (so a changed file is an error, not a silent drift).
DIGITS_SHA256="6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${DATASETS_DIR:-$repo/target/datasets}"
stamp="$dest/.complete-v1"

if [[ -f "$stamp" ]]; then
    echo "datasets already present: $dest"
    exit 0
fi

python="${PYTHON:-python3}"
mkdir -p "$dest"
download="$dest/.download"
rm -rf "$download"
mkdir -p "$download"

"$python" -m pip download --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform manylinux_2_17_x86_64 \
    -d "$download" "scikit-learn==$SKLEARN_VERSION"

"$python" - "$download" "$dest" "$DIGITS_SHA256" <<'PY'
import glob, gzip, hashlib, os, sys, zipfile

download, dest, want = sys.argv[1], sys.argv[2], sys.argv[3]
wheels = glob.glob(os.path.join(download, "scikit_learn-*.whl"))
if not wheels:
    sys.exit(f"fetch-datasets: no scikit-learn wheel in {download}")
member = "sklearn/datasets/data/digits.csv.gz"
with zipfile.ZipFile(wheels[0]) as z:
    if member not in z.namelist():
        sys.exit(f"fetch-datasets: {member} is not in {wheels[0]}")
    data = gzip.decompress(z.read(member))
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"fetch-datasets: digits.csv has sha256 {got}, expected {want}")
tmp = os.path.join(dest, "digits.csv.tmp")
with open(tmp, "wb") as f:
    f.write(data)
os.replace(tmp, os.path.join(dest, "digits.csv"))
print("digits.csv:", data.count(b"\n"), "rows")
PY

rm -rf "$download"
touch "$stamp"
echo "datasets ready: $dest"
