#!/usr/bin/env bash
# The main job: builds rocpack, downloads real ROCm packages from Debian sid (never installing
# them), and answers the questions rocpack is for: which GPUs does each library carry code for,
# and will it run on a given GPU — reading the .deb files in place, without unpacking them —
# then slims a copy of a library for one GPU and compresses another, and verifies a Debian root
# made of rocRAND and its whole dependency closure (link closure, symbols, CMake configs); plans
# GPU targets across ROCm 6.4 and checks the downloaded packages against a plan.
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
# The components the fetched packages belong to (for rocpack plan verify).
plan_components=()
for p in "${pkgs[@]}"; do
  case $p in
    librocrand1) plan_components+=(rocRAND) ;;
    librocblas4) plan_components+=(rocBLAS) ;;
    librocsparse1) plan_components+=(rocSPARSE) ;;
    librocfft0) plan_components+=(rocFFT) ;;
  esac
done

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
echo "== plan GPU targets for an RX 6800 (gfx1030) across ROCm 6.4 (rocpack plan): what is built,"
echo "   and the traps the plan steps around (hipBLASLt has no RDNA2 kernels, CK no conv instances)"
"$rocpack" plan --release 6.4 --gpu gfx1030 | sed -n '1,2p;/^Findings/,$p' | grep -v '^      source' | cut -c1-220 || true
echo "   the same plan as CMake initial-cache files, one per component (cmake -C DIR/rocBLAS.cmake):"
plandir=$(mktemp -d)
"$rocpack" plan --release 6.4 --gpu gfx1030 --format cmake -o "$plandir" -q
ls "$plandir" | head -n 6 | sed 's/^/     /'
echo
if [ ${#plan_components[@]} -gt 0 ]; then
  echo "== check Debian's packages against plans (rocpack plan verify): Debian's target list, then gfx1030 only"
  echo "   (Debian builds rocBLAS without hipBLASLt and rocSPARSE without rocBLAS: --set says so)"
  debian_build=(--set rocBLAS:BUILD_WITH_HIPBLASLT=OFF --set rocSPARSE:BUILD_WITH_ROCBLAS=OFF
    --components "$(IFS=,; echo "${plan_components[*]}")" --format json -q)
  "$rocpack" plan --release 6.4 --family debian-sid "${debian_build[@]}" -o "$plandir/sid"
  "$rocpack" plan verify "$plandir/sid/plan.json" "${trees[@]}" | sed -n '3,6p;$p' || true
  "$rocpack" plan --release 6.4 --gpu gfx1030 "${debian_build[@]}" -o "$plandir/one"
  "$rocpack" plan verify "$plandir/one/plan.json" "${trees[@]}" | sed -n '3,6p;$p' || true
fi
rm -rf "$plandir"

echo
echo "== this machine's GPUs (rocpack devices)"
"$rocpack" devices || true
echo
echo "== the catalogue entry for gfx1031 (rocpack gpus gfx1031)"
"$rocpack" gpus gfx1031 | head -n 14
