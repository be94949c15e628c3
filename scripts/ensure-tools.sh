#!/usr/bin/env bash
# Installs the programs the tests need beyond the Rust toolchain and python3, so that
# ./scripts/test.sh passes on a fresh machine:
#   - Graphviz's `dot` (the DOT export is checked by rendering it; `explain --svg` runs it);
#   - python3's pip and venv (the fetch scripts download wheels and make onnxruntime's
#     reference outputs in a virtual environment).
# Uses apt-get (as root, or through sudo). Idempotent: installs nothing that is present.
set -euo pipefail

need=()
command -v dot >/dev/null || need+=(graphviz)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
((${#need[@]})) || exit 0

echo "ensure-tools: installing ${need[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || {
        echo "ensure-tools: ${need[*]} missing and not root (no sudo): install them with your package manager" >&2
        exit 1
    }
    sudo=(sudo)
fi
command -v apt-get >/dev/null || {
    echo "ensure-tools: ${need[*]} missing and no apt-get: install them with your package manager" >&2
    exit 1
}
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
