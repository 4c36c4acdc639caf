#!/usr/bin/env bash
# Runs every test: installs the system tools the tests use (clang-19, llvm-19, ...), then the
# whole workspace's unit, integration, oracle, hostile-input, real-package and doc tests.
# The real-package tests download Debian sid ROCm packages into ~/.cache/rocpack-corpus and
# fail with a clear message when the Debian mirror cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python3 scripts/check-knowledge.py
cargo test --workspace --locked
