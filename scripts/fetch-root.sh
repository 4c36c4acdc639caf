#!/usr/bin/env bash
# Builds a Debian sid root (a sysroot, never chrooted into or run) from a set of packages and
# their whole dependency closure: downloads the .debs (never installs them) into the corpus cache
# and unpacks each into one directory. Prints that directory.
#
#   scripts/fetch-root.sh                   the default ROCm set below
#   scripts/fetch-root.sh PKG...            another set
#
# The closure is what `apt-cache depends --recurse` reaches through Depends and Pre-Depends
# only (no Recommends or Suggests), every alternative of an `a | b` dependency included;
# virtual package names (printed as <name>) are skipped, as is anything without a downloadable
# .deb in sid. Essential packages are implied on every Debian system and not declared as
# dependencies, so two of them are always added: base-files (the merged-/usr symlinks /lib ->
# usr/lib and /lib64 -> usr/lib64, through which the interpreter /lib64/ld-linux-x86-64.so.2 is
# found) and libc-bin (/etc/ld.so.conf and ld.so.conf.d/libc.conf; libc6 ships
# ld.so.conf.d/x86_64-linux-gnu.conf).
#
# Maintainer scripts are not run, so the root has no /etc/ld.so.cache: whoever reads the root
# must search the directories of /etc/ld.so.conf instead, as ldconfig would have cached them.
#
# The root is ROCPACK_CORPUS/root-<hash>, where the hash is of the sorted "package=version"
# list, so a new version in sid makes a new root; a complete root has a .complete marker and a
# .packages file ("package=version size-of-deb" lines). Exit status 3 means the Debian mirror
# could not be reached; 1 that a named package is not in sid.
set -euo pipefail

# The ROCm set: the HIP runtime and its headers and CMake configs, the HSA runtime, comgr (with
# its LLVM 21 and clang resource headers), rocBLAS, rocRAND and hipBLAS with their -dev packages.
# librocsparse1 alone would add 362 MB, so it is left out; this set is about 390 MB of .debs.
default_pkgs=(hipcc libamdhip64-6 libamdhip64-dev libhsa-runtime64-1 libhsa-runtime-dev libamd-comgr3
              librocblas4 librocblas-dev librocrand1 librocrand-dev libhipblas2 libhipblas-dev)
essential=(base-files libc-bin)

# shellcheck source=scripts/apt-env.sh
. "$(dirname "$0")/apt-env.sh"
apt_lock
apt_refresh fetch-root

if [ $# -gt 0 ]; then pkgs=("$@"); else pkgs=("${default_pkgs[@]}"); fi
pkgs+=("${essential[@]}")
for p in "${pkgs[@]}"; do
  if [ -z "$(apt_version "$p")" ]; then
    echo "fetch-root: package $p is not in Debian sid" >&2
    exit 1
  fi
done

# The closure, walked here over the Depends/PreDepends edges of apt-cache's recursive listing
# (which itself only follows those, given the --no-* options).
closure=$(
  apt-cache "${O[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "${pkgs[@]}" |
  awk -v roots="${pkgs[*]}" '
    /^[^ ]/ { cur = $1; next }
    /^ *\|?(Pre)?Depends: / {
      dep = $2
      if (dep !~ /^</) edges[cur] = edges[cur] " " dep
    }
    END {
      n = split(roots, queue, " ")
      for (i = 1; i <= n; i++) seen[queue[i]] = 1
      for (i = 1; i <= n; i++) {
        print queue[i]
        m = split(edges[queue[i]], next_, " ")
        for (j = 1; j <= m; j++)
          if (!(next_[j] in seen)) { seen[next_[j]] = 1; queue[++n] = next_[j] }
      }
    }' | sort -u
)

# package=version of every real, downloadable package; and what the downloads will weigh.
mapfile -t entries < <(
  # shellcheck disable=SC2086
  apt-cache "${O[@]}" show --no-all-versions $closure 2>/dev/null |
  awk '/^Package:/ { p = $2 } /^Version:/ { v = $2 } /^Filename:/ { f = 1 } /^Size:/ { s = $2 }
       /^$/ { if (p != "" && f) print p "=" v " " s; p = ""; v = ""; f = 0; s = 0 }
       END { if (p != "" && f) print p "=" v " " s }' | sort -u
)
hash=$(printf '%s\n' "${entries[@]%% *}" | sha256sum | cut -c1-16)
root="$corpus/root-$hash"

if [ ! -f "$root/.complete" ]; then
  debs="$corpus/debs"
  mkdir -p "$debs"
  deb_of() { # PKG VERSION -> the cached .deb (apt-get download's file name), if any
    local f
    for f in "$debs/${1}_${2//:/%3a}"_*.deb; do [ -f "$f" ] && { echo "$f"; return; }; done
  }
  missing=()
  for e in "${entries[@]}"; do
    pv=${e%% *}
    [ -n "$(deb_of "${pv%%=*}" "${pv#*=}")" ] || missing+=("$pv")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "fetch-root: downloading ${#missing[@]} of ${#entries[@]} packages" >&2
    (cd "$debs" && apt-get "${O[@]}" -qq download "${missing[@]}" >&2) || {
      echo "fetch-root: cannot download ${missing[*]} from the Debian mirror" >&2
      exit 3
    }
  fi
  rm -rf "$root.tmp"
  mkdir -p "$root.tmp"
  : > "$root.tmp/.packages"
  # base-files first: its /lib and /lib64 symlinks must exist before anything is unpacked
  # through them, and --keep-directory-symlink keeps them when a later package has a ./lib/
  # directory entry (dpkg-deb -x would replace them with directories).
  for e in $(printf '%s\n' "${entries[@]%% *}" | awk '/^base-files=/ { print; next } { rest[++n] = $0 }
                                                 END { for (i = 1; i <= n; i++) print rest[i] }'); do
    deb=$(deb_of "${e%%=*}" "${e#*=}")
    if [ -z "$deb" ]; then
      echo "fetch-root: ${e%%=*} ${e#*=} was not downloaded" >&2
      exit 3
    fi
    dpkg-deb --fsys-tarfile "$deb" | tar -x --keep-directory-symlink -C "$root.tmp"
    echo "$e $(stat -c %s "$deb")" >> "$root.tmp/.packages"
  done
  touch "$root.tmp/.complete"
  rm -rf "$root"
  mv "$root.tmp" "$root"
fi
echo "fetch-root: $(wc -l < "$root/.packages") packages, $(awk '{ s += $2 } END { printf "%.0f", s }' "$root/.packages") bytes of .deb" >&2
echo "$root"
