#!/usr/bin/env bash
# Runs every test: installs the system tools the tests use (clang-19, llvm-19, ...), then the
# whole workspace's unit, integration, oracle, hostile-input, real-package and doc tests.
# The real-package tests download Debian sid ROCm packages (and the derived-facts tests their
# source packages) into ~/.cache/rocpack-corpus and fail with a clear message when the Debian
# mirror cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python3 scripts/check-knowledge.py
# Debian sid's source packages for the derived-facts drift test (crates/rocpack-derive/tests).
scripts/derive-facts.sh --download-only > /dev/null
cargo test --workspace --locked
