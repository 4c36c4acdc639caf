#!/usr/bin/env bash
# The main job: builds rocpack, downloads real ROCm packages from Debian sid (never installing
# them), and answers the questions rocpack is for: which GPUs does each library carry code for,
# and will it run on a given GPU — reading the .deb files in place, without unpacking them —
# then slims a copy of a library for one GPU and compresses another, and verifies a Debian root
# made of rocRAND and its whole dependency closure (link closure, symbols, CMake configs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked --quiet
rocpack=target/release/rocpack
pkgs=("${@:-librocrand1}")
[ $# -gt 0 ] || pkgs=(librocrand1 librocblas4)
echo "== fetching ${pkgs[*]} from Debian sid (cached in ~/.cache/rocpack-corpus)" >&2
mapfile -t trees < <(scripts/fetch-corpus.sh "${pkgs[@]}")
debs=()
for p in "${pkgs[@]}"; do
  debs+=("$(ls -t ~/.cache/rocpack-corpus/debs/"${p}"_*.deb | head -n 1)")
done
lib_deb=${debs[0]}

echo
echo "== rocpack list $(basename "$lib_deb") (read in place; first 8 rows)"
"$rocpack" list "$lib_deb" | head -n 9 | cut -c1-220
echo "   ... $("$rocpack" list --json "$lib_deb" | wc -l) device code objects in all"

echo
echo "== coverage matrix of ${pkgs[*]} (rocpack scan, .deb files read in place)"
"$rocpack" scan "${debs[@]}" --report target/coverage.html | cut -c1-220
echo "   HTML heat map: $(pwd)/target/coverage.html"

echo
echo "== will it run on an RX 6700 XT (gfx1031) and an MI210 (gfx90a)? (rocpack check)"
set +e
"$rocpack" check "${debs[@]}" --gpu "RX 6700 XT" --gpu gfx90a:sramecc+:xnack- | cut -c1-300
echo "   exit status ${PIPESTATUS[0]} (1: some library cannot run on a requested GPU)"
echo
echo "== gfx1031 under Debian's extended ISA compatibility policy, and with HSA_OVERRIDE_GFX_VERSION=10.3.0"
echo "   (on the unpacked trees this time: ${trees[*]})"
"$rocpack" check "${trees[@]}" --gpu gfx1031 --policy debian | tail -n 1
"$rocpack" check "${trees[@]}" --gpu gfx1031 --hsa-override-gfx-version 10.3.0 | tail -n 1
set -e

echo
echo "== slim a copy of librocrand.so for one GPU (rocpack strip), and compress another (rocpack compress)"
work=target/demo
rm -rf "$work" && mkdir -p "$work"
lib=$(find "${trees[0]}" -name 'librocrand.so.*' -type f | head -n 1)
cp "$lib" "$work/librocrand.so"
"$rocpack" strip --keep "RX 6800" --dry-run "$work/librocrand.so"
"$rocpack" strip --keep "RX 6800" --in-place "$work/librocrand.so"
echo "   du: $(du -h "$lib" | cut -f1) before, $(du -h "$work/librocrand.so" | cut -f1) after"
"$rocpack" check "$work/librocrand.so" --gpu gfx1030 --gpu gfx90a | sed -n '/^LIBRARY/,/^$/p' || true
"$rocpack" compress -q "$lib" -o "$work/librocrand-compressed.so"
"$rocpack" decompress -q "$work/librocrand-compressed.so" -o "$work/librocrand-roundtrip.so"
cmp "$lib" "$work/librocrand-roundtrip.so" && echo "   decompress after compress: byte-identical to the original"
rm -rf "$work"

echo
echo "== verify a Debian sid root: librocrand1 + librocrand-dev and every package they depend on"
echo "   (unpacked, never installed or run; rocpack verify --root ROOT)"
root=$(scripts/fetch-root.sh librocrand1 librocrand-dev | tail -n 1)
"$rocpack" verify --root "$root" | tail -n 3 || true
echo "   rocRAND's libraries as the root's loader would find them (--list-libs):"
"$rocpack" verify --root "$root" --list-libs /usr/lib/x86_64-linux-gnu/librocrand.so.1 | sed -n '2,6p'
echo "   ... and after deleting libhsa-runtime64 from a hard-linked copy:"
copy=$(mktemp -d "$(dirname "$root")/demo-root-XXXXXX")
cp -al "$root/." "$copy/"
rm -f "$copy"/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so*
"$rocpack" verify --root "$copy" --checks linkage | grep -A2 'unresolved-library' | head -n 3 || true
rm -rf "$copy"

echo
echo "== this machine's GPUs (rocpack devices)"
"$rocpack" devices || true
echo
echo "== the catalogue entry for gfx1031 (rocpack gpus gfx1031)"
"$rocpack" gpus gfx1031 | head -n 14
