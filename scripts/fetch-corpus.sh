#!/usr/bin/env bash
# Downloads Debian sid ROCm packages (never installs them) into the corpus cache and unpacks each
# into its own directory. Prints the unpacked directory of each package, one per line.
#
#   scripts/fetch-corpus.sh librocrand1 librocsparse1
#
# ROCPACK_CORPUS overrides the cache directory (default ~/.cache/rocpack-corpus).
# Exit status 3 means the Debian mirror could not be reached.
set -euo pipefail

# shellcheck source=scripts/apt-env.sh
. "$(dirname "$0")/apt-env.sh"
apt_lock
apt_refresh fetch-corpus

for pkg in "$@"; do
  version=$(apt_version "$pkg")
  if [ -z "$version" ]; then
    echo "fetch-corpus: package $pkg is not in Debian sid" >&2
    exit 1
  fi
  dir="$corpus/${pkg}_${version//:/%3a}"
  if [ ! -f "$dir/.complete" ]; then
    debs="$corpus/debs"
    mkdir -p "$debs"
    if ! ls "$debs/${pkg}_${version//:/%3a}"_*.deb >/dev/null 2>&1; then
      (cd "$debs" && apt-get "${O[@]}" -qq download "$pkg=$version" >&2) || {
        echo "fetch-corpus: cannot download $pkg $version from the Debian mirror" >&2
        exit 3
      }
    fi
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    deb=$(ls "$debs/${pkg}_${version//:/%3a}"_*.deb | head -n 1)
    dpkg-deb -x "$deb" "$dir.tmp"
    ln -sf "$deb" "$dir.tmp/.deb"
    touch "$dir.tmp/.complete"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  echo "$dir"
done
