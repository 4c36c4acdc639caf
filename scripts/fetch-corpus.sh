#!/usr/bin/env bash
# Downloads Debian sid ROCm packages (never installs them) into the corpus cache and unpacks each
# into its own directory. Prints the unpacked directory of each package, one per line.
#
#   scripts/fetch-corpus.sh librocrand1 librocsparse1
#
# ROCPACK_CORPUS overrides the cache directory (default ~/.cache/rocpack-corpus).
# Exit status 3 means the Debian mirror could not be reached.
set -euo pipefail

corpus=${ROCPACK_CORPUS:-$HOME/.cache/rocpack-corpus}
apt_dir=${ROCPACK_APT_DIR:-$HOME/.cache/rocpack-apt}
mkdir -p "$corpus" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
  > "$apt_dir/sources.list"
O=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
   -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")

# Refresh the private package lists at most once a day.
stamp="$apt_dir/lists/.rocpack-updated"
if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440)" ]; then
  if ! apt-get "${O[@]}" -o APT::Sandbox::User=root -qq update >&2; then
    echo "fetch-corpus: cannot reach the Debian mirror (apt-get update failed)" >&2
    exit 3
  fi
  touch "$stamp"
fi

for pkg in "$@"; do
  version=$(apt-cache "${O[@]}" show --no-all-versions "$pkg" 2>/dev/null | awk '/^Version:/ {print $2; exit}')
  if [ -z "$version" ]; then
    echo "fetch-corpus: package $pkg is not in Debian sid" >&2
    exit 1
  fi
  dir="$corpus/${pkg}_${version//:/%3a}"
  if [ ! -f "$dir/.complete" ]; then
    debs="$corpus/debs"
    mkdir -p "$debs"
    if ! ls "$debs/${pkg}_${version//:/%3a}"_*.deb >/dev/null 2>&1; then
      (cd "$debs" && apt-get "${O[@]}" -o APT::Sandbox::User=root -qq download "$pkg=$version" >&2) || {
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
