#!/usr/bin/env bash
# Runs every test: installs the system tools the tests use (clang-19, llvm-19, ...), checks
# formatting and clippy (warnings are errors), then the whole workspace's unit, integration,
# oracle, hostile-input, real-package and doc tests.
# The real-package tests download Debian sid ROCm packages (and the derived-facts tests their
# source packages) into ~/.cache/rocpack-corpus and fail with a clear message when the Debian
# mirror cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python3 scripts/check-knowledge.py
# Debian sid's source packages for the derived-facts drift test (crates/rocpack-derive/tests).
scripts/derive-facts.sh --download-only > /dev/null
# Lints: formatting, and clippy with every warning an error (the components are added where
# rustup manages the toolchain).
if command -v rustup > /dev/null; then
    rustup component add clippy rustfmt > /dev/null 2>&1 || true
fi
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The fuzz targets (their own workspace, docs/fuzzing.md) keep compiling against the parsers,
# with their lock file current.
cargo check --locked --manifest-path fuzz/Cargo.toml --bins
cargo test --workspace --locked
