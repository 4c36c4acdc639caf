#!/usr/bin/env bash
# Benchmark: `rocpack verify --checks linkage FILES...` against a loop of `ldd -r` over the same
# files: this machine's own shared libraries in /usr/lib/x86_64-linux-gnu (regular files, not
# symlinks, x86-64 ELF shared objects with ".so" in the name, sorted by name; all, or the first
# COUNT).
# Both answer the same question — is every DT_NEEDED found and every undefined symbol defined
# in the load closure — and the script checks they give the same answer ((file, symbol) pairs of
# undefined symbols, libraries not found, versions not found).
#
# Warm page cache (every file and everything they load read once before, plus hyperfine's
# warm-up runs). hyperfine runs both through bash (--shell=bash) with output discarded and
# --ignore-failure (both exit non-zero when they find something). Also measured: rocpack on one
# thread (RAYON_NUM_THREADS=1) and `ldd -r` on both cores (xargs -P 2), for a like-for-like
# ratio; the target (>= 20x) is against the plain loop.
#
#   bench/verify.sh [COUNT [RUNS]]      COUNT 0 (the default) means all of them (507 on the machine
#                                       of the recorded run); RUNS defaults to 10 (the ldd runs:
#                                       RUNS/2, at least 3); results written to bench/results/verify.md
set -euo pipefail
bench_name=bench/verify.sh
. "$(dirname "$0")/lib.sh"
count=${1:-0}
runs=${2:-10}
ldd_runs=$(( runs / 2 > 3 ? runs / 2 : 3 ))

bench_need hyperfine:hyperfine ldd:libc-bin jq:jq python3:python3 xargs:findutils cargo:cargo

work=$(mktemp -d /tmp/rocpack-bench-verify.XXXXXX)
trap 'rm -rf "$work"' EXIT
# A private copy, so that a rebuild in the same tree during the run does not change the binary.
bench_build_current "$work/rocpack"
rocpack=$work/rocpack

# The files: x86-64 (e_machine 62) ET_DYN (e_type 3) ELF, by their header.
python3 - "$count" > "$work/files" <<'EOF'
import os, sys
d = "/usr/lib/x86_64-linux-gnu"
out = []
for name in sorted(os.listdir(d)):
    p = os.path.join(d, name)
    if ".so" not in name or os.path.islink(p) or not os.path.isfile(p):
        continue
    with open(p, "rb") as f:
        h = f.read(20)
    if len(h) == 20 and h[:4] == b"\x7fELF" and h[4] == 2 and h[16:18] == b"\x03\x00" and h[18:20] == b"\x3e\x00":
        out.append(p)
n = int(sys.argv[1])
print("\n".join(out[:n] if n > 0 else out))
EOF
mapfile -t files < "$work/files"
if [ ${#files[@]} -lt 300 ]; then
  echo "bench/verify.sh: only ${#files[@]} shared libraries in /usr/lib/x86_64-linux-gnu (want at least 300)" >&2
  exit 1
fi
nbytes=$(stat -c %s "${files[@]}" | awk '{ s += $1 } END { printf "%.0f", s }')
quoted=$(printf '%q ' "${files[@]}")

cmd_rocpack="$rocpack verify --checks linkage $quoted"
cmd_rocpack1="RAYON_NUM_THREADS=1 $cmd_rocpack"
cmd_ldd="for f in $quoted; do ldd -r \"\$f\" >/dev/null 2>&1; done"
cmd_ldd2="printf '%s\\0' $quoted | xargs -0 -P 2 -n 16 bash -c 'for f; do ldd -r \"\$f\" >/dev/null 2>&1; done' _"

# Warm the cache: the files and every library their closures load.
cat "${files[@]}" > /dev/null
"$rocpack" verify --list-libs --json "${files[@]}" 2>/dev/null |
  jq -r '.libraries[].path // empty' | sort -u | xargs cat > /dev/null 2>&1 || true

# Same answer? ldd -r prints "undefined symbol: SYM	(OBJECT)", "NAME => not found" and
# "OBJECT: version `V' not found (required by R)".
for f in "${files[@]}"; do ldd -r "$f" 2>&1 | sed "s|^|$f\t|"; done > "$work/ldd.out" || true
{ grep -P '\tundefined symbol: ' "$work/ldd.out" || true; } |
  sed -E 's/^[^\t]*\tundefined symbol: ([^\t ,]+)(, version [^\t ]+)?[\t ]+\((.*)\)$/\3\t\1/' | sort -u > "$work/undef.ldd"
"$rocpack" verify --checks linkage --json "${files[@]}" > "$work/verify.json" || true
jq -r 'select(.code == "undefined-symbol") | .file as $f | .symbols[] | "\($f)\t\(.name)"' \
  "$work/verify.json" | sort -u > "$work/undef.rocpack"
n_notfound_ldd=$(grep -cP '\t\t.* => not found' "$work/ldd.out" || true)
n_notfound_rocpack=$(jq -r 'select(.code == "unresolved-library")' "$work/verify.json" | grep -c '"code"' || true)
n_version_ldd=$(grep -c "version \`.*' not found" "$work/ldd.out" || true)
n_version_rocpack=$(jq -r 'select(.code == "missing-symbol-version") | .code' "$work/verify.json" | wc -l)

out=bench/results/verify.md
mkdir -p bench/results
dirty=$(git status --porcelain --untracked-files=no | wc -l)
{
  echo "# rocpack verify against \`ldd -r\`"
  echo
  echo "$(date -u +%FT%TZ), $(nproc) cores, kernel $(uname -r), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM;"
  echo "rocpack $(git rev-parse --short HEAD)$([ "$dirty" -eq 0 ] || echo " + $dirty files with uncommitted changes") (release build); $(ldd --version | head -n 1); $(hyperfine --version)."
  echo "Load average at start: $(cut -d' ' -f1-3 /proc/loadavg). Written by \`bench/verify.sh $count $runs\`."
  echo
  echo "Files: $([ "$count" -gt 0 ] && echo "the first ${#files[@]} (by name)" || echo "all ${#files[@]}") regular x86-64 ELF shared objects with \`.so\` in their name in"
  echo "/usr/lib/x86_64-linux-gnu, $nbytes bytes, from \`$(basename "${files[0]}")\` to \`$(basename "${files[-1]}")\`."
  echo "Warm page cache: the files and every library of their closures read once before, and warm-up runs."
  echo
  echo "## Same answer"
  echo
  echo "| | \`ldd -r\` loop | \`rocpack verify\` |"
  echo "|---|---|---|"
  echo "| undefined symbols, (object, symbol) pairs | $(wc -l < "$work/undef.ldd") in $(cut -f1 "$work/undef.ldd" | sort -u | wc -l) objects | $(wc -l < "$work/undef.rocpack") in $(cut -f1 "$work/undef.rocpack" | sort -u | wc -l) objects |"
  echo "| libraries not found | $n_notfound_ldd lines | $n_notfound_rocpack \`unresolved-library\` findings |"
  echo "| versions not found | $n_version_ldd lines | $n_version_rocpack \`missing-symbol-version\` findings |"
  echo
  if diff -q "$work/undef.ldd" "$work/undef.rocpack" > /dev/null; then
    echo "The undefined (object, symbol) pairs are identical:"
  else
    echo "The undefined (object, symbol) pairs DIFFER (< ldd -r only, > rocpack only):"
    echo
    echo '```'
    diff "$work/undef.ldd" "$work/undef.rocpack" | grep '^[<>]' || true
    echo '```'
    echo
    echo "Both:"
  fi
  echo
  echo '```'
  comm -12 "$work/undef.ldd" "$work/undef.rocpack" | awk -F'\t' '{ s[$1] = s[$1] " " $2 } END { for (f in s) print f ":" s[f] }' | sort
  echo '```'
  echo
  echo "## Wall time"
  echo
  echo "Command lines (FILES stands for the ${#files[@]} paths; hyperfine --shell=bash --ignore-failure"
  echo "--output=null):"
  echo
  echo '```'
  echo "rocpack verify --checks linkage FILES                       # rocpack, both cores"
  echo "RAYON_NUM_THREADS=1 rocpack verify --checks linkage FILES   # rocpack, one thread"
  echo "for f in FILES; do ldd -r \"\$f\" >/dev/null 2>&1; done      # the ldd -r loop"
  echo "printf '%s\\0' FILES | xargs -0 -P 2 -n 16 bash -c 'for f; do ldd -r \"\$f\" >/dev/null 2>&1; done' _"
  echo '```'
  echo
} > "$out"

hyperfine --shell=bash --ignore-failure --output=null --style basic --warmup 3 --runs "$runs" \
  -n 'rocpack verify' "$cmd_rocpack" \
  -n 'rocpack verify, 1 thread' "$cmd_rocpack1" \
  --export-json "$work/rocpack.json" >&2
hyperfine --shell=bash --ignore-failure --output=null --style basic --warmup 1 --runs "$ldd_runs" \
  -n 'ldd -r loop' "$cmd_ldd" \
  -n 'ldd -r, xargs -P 2' "$cmd_ldd2" \
  --export-json "$work/ldd.json" >&2

jq -s -r '[.[].results[]] as $r
  | ($r[] | select(.command == "rocpack verify") | .mean) as $base
  | ($r[] | select(.command == "rocpack verify, 1 thread") | .mean) as $base1
  | "| command | runs | mean ± σ | min … max | user / sys | ldd -r loop ÷ this |",
    "|---|---|---|---|---|---|",
    ($r[] | "| \(.command) | \(.times | length) | \(.mean * 1000 | round) ms ± \(.stddev * 1000 | round) ms | \(.min * 1000 | round) … \(.max * 1000 | round) ms | \(.user * 1000 | round) / \(.system * 1000 | round) ms | \((($r[] | select(.command == "ldd -r loop") | .mean) / .mean) * 10 | round / 10)× |"),
    "",
    "rocpack verify is **\((($r[] | select(.command == "ldd -r loop") | .mean) / $base) * 10 | round / 10)×** faster than the `ldd -r` loop (target: ≥ 20×),",
    "\((($r[] | select(.command == "ldd -r, xargs -P 2") | .mean) / $base) * 10 | round / 10)× faster than `ldd -r` on both cores; on one thread it is \((($r[] | select(.command == "ldd -r loop") | .mean) / $base1) * 10 | round / 10)× faster than the loop."' \
  "$work/rocpack.json" "$work/ldd.json" >> "$out"
echo >> "$out"
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)." >> "$out"
cat "$out"
