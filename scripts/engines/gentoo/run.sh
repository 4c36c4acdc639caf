#!/usr/bin/env bash
# Developer harness (not CI: it needs PyPI and the files read from GitHub): emits the Gentoo
# plans of issue 13's requests (a)-(c), plus (d) gfx1030 at 6.4 (the seed's GPU on the nearest
# release line Gentoo has), (e) gfx90a+gfx942 at 7.1, (f) gfx1151 at 6.4, (g) gfx1151+gfx1201 and
# (h) gfx1030 at 7.0, (i) settings without a USE flag pinned with --set, and feeds each to
# real Portage with harness.py. Prints everything emerge says.
#
#   scripts/engines/gentoo/run.sh [OUT_DIR]
#
# Needs: target/debug/rocpack (cargo build -p rocpack), the md5-cache entries and
# profiles/base/make.defaults listed in md5-cache.tsv under $ROCPACK_GENTOO_CACHE (default
# ~/.cache/rocpack-gentoo/gentoo), and portage from PyPI in $ROCPACK_PORTAGE_VENV (default
# ~/.cache/rocpack-gentoo/venv; created with pip when missing). Nothing outside OUT_DIR (default
# a new temporary directory) and the venv is written; the machine's /etc is not read.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv=${ROCPACK_PORTAGE_VENV:-$HOME/.cache/rocpack-gentoo/venv}
rocpack=${ROCPACK:-$root/target/debug/rocpack}
out=${1:-$(mktemp -d)}
if [ ! -x "$venv/bin/emerge" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet portage
fi
"$venv/bin/python" -c 'import portage; print("# portage", portage.VERSION)'
status=0
run() {
    name=$1; shift
    mkdir -p "$out/$name"
    echo "## $name: rocpack plan $* --all --format gentoo"
    "$rocpack" plan -q "$@" --all --format json > "$out/$name/plan.json" || true
    "$rocpack" plan -q "$@" --all --format gentoo -o "$out/$name/emitted" || true
    PATH="$venv/bin:$PATH" "$venv/bin/python" "$here/harness.py" \
        "$out/$name/plan.json" "$out/$name/emitted" "$out/$name/portage" || status=1
}
run a --gpu gfx1030 --release 6.2
run b --gpu gfx1100 --gpu gfx90a --release 6.4
run c --gpu gfx1151 --gpu gfx1201 --release 7.1
run d --gpu gfx1030 --release 6.4
run e --gpu gfx90a --gpu gfx942 --release 7.1
run f --gpu gfx1151 --release 6.4
run g --gpu gfx1151 --gpu gfx1201 --release 7.0
run h --gpu gfx1030 --release 7.0
# (i) settings no USE flag carries, pinned with --set: they go to package.env (MYCMAKEARGS)
run i --gpu gfx1030 --release 6.4 --set rocSOLVER:BUILD_WITH_SPARSE=ON --set MIOpen:MIOPEN_USE_MLIR=OFF
echo "# results under $out"
exit $status
