#!/usr/bin/env bash
# The main job: builds rocpack, downloads a real ROCm library package from Debian sid (never
# installing it), and shows which GPUs it carries code for, bundle by bundle, with kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
rocpack=target/release/rocpack
pkg=${1:-librocrand1}
echo "== fetching $pkg from Debian sid (cached in ~/.cache/rocpack-corpus)" >&2
dir=$(scripts/fetch-corpus.sh "$pkg")
lib=$(find "$dir" -type f -name '*.so*' | sort | head -n 1)
echo
echo "== rocpack list $lib (first 12 rows)"
"$rocpack" list "$lib" | head -n 13
echo "   ... $("$rocpack" list --json "$lib" | wc -l) device code objects in all"
echo
echo "== GPU targets in $(basename "$lib"), code objects per target"
"$rocpack" list --json "$lib" | sed -n 's/.*"target":"\([^"]*\)".*/\1/p' | sort | uniq -c
echo
echo "== rocpack show --kernels (first bundle)"
"$rocpack" show --kernels "$lib" | sed -n '1,/bundle #1/p' | head -n 40
