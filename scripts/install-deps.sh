#!/usr/bin/env bash
# Installs the system packages rocpack's tests and fixture scripts need on a fresh Debian machine:
# the LLVM 19 tools (fixtures and oracles; lld-link-19 links the Windows PE fixtures), pip (the
# real wheels the tests download from PyPI), dpkg-deb/xz/zstd/tar/python3 (packages built by the
# package tests), chromium (the HTML report is opened headless and screenshotted), gcc/g++/ar
# (the verify tests build their own shared libraries), and cmake, nix-instantiate and PyYAML (the
# plan emitter tests load what they emit with the real tools).
# Idempotent: does nothing (and needs no network) when everything is already present.
set -euo pipefail

need=()
for pair in clang++-19:clang-19 clang-offload-bundler-19:clang-tools-19 llvm-readelf-19:llvm-19 \
            llvm-ar-19:llvm-19 llvm-objcopy-19:llvm-19 llvm-readobj-19:llvm-19 lld-19:lld-19 \
            lld-link-19:lld-19 zstd:zstd \
            dpkg-deb:dpkg perl:perl xz:xz-utils tar:tar python3:python3 chromium:chromium \
            gcc:gcc g++:g++ ar:binutils ldd:libc-bin cmake:cmake nix-instantiate:nix-bin; do
  cmd=${pair%%:*} pkg=${pair##*:}
  command -v "$cmd" >/dev/null 2>&1 || need+=("$pkg")
done
# GNU time (/usr/bin/time -v) for the peak RSS in bench/packages.sh; the shell keyword is not it.
[ -x /usr/bin/time ] || need+=(time)
# Perl modules used by roc-obj-ls in the benchmark.
perl -MFile::Which -e1 2>/dev/null || need+=(libfile-which-perl)
perl -MURI::Escape -e1 2>/dev/null || need+=(liburi-perl)
# Python module used by the plan emitter tests to parse spack.yaml.
python3 -c 'import yaml' 2>/dev/null || need+=(python3-yaml)
# pip downloads the PyPI wheels some tests read (`pip download --no-deps`, never installs).
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
# Deduplicate.
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
echo "install-deps: installing ${need[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
