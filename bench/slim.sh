#!/usr/bin/env bash
# Benchmark: `rocpack strip`, `compress` and `decompress` on Debian sid's librocsparse.so.1.0
# (1.6 GB, 142 uncompressed offload bundles x 10 GPU targets + an empty host entry, in a
# 1.6 GB .hip_fatbin), each on a scratch copy of the library.
#
#  1. strip in place to one target of ten: `rocpack strip --keep gfx90a --in-place COPY` against
#     `cp ORIG COPY` of the same file (hyperfine; every strip run gets a fresh copy through
#     --prepare, synced so that its writeback does not overlap the timed run). cp is timed
#     alone and followed by `sync COPY` (rocpack fsyncs what it writes; cp does not). Apparent
#     and allocated size before and after, and the smallest allocated size possible (bytes
#     outside .hip_fatbin plus the kept entries). Then verified, failing loudly: `rocpack
#     check --gpu gfx90a` says native, `rocpack list` shows only gfx90a, the bytes outside
#     .hip_fatbin are identical (cmp), and every kept code object is identical to the original.
#  2. compress: `rocpack compress -o OUT ORIG` (zstd 3 with long-distance matching, CCOB v2,
#     each CCOB at its bundle's offset): wall time (hyperfine), max RSS (/usr/bin/time -v, and
#     the peak anonymous and file-backed RSS sampled from /proc), ratio of the bundles' bytes
#     before/after, allocated size before/after; with perf, page faults and the functions with
#     the most CPU time. Then `rocpack decompress -o OUT2 OUT`, measured the same way, and
#     `cmp OUT2 ORIG` (the round trip must give the original back).
#     Baseline: clang-offload-bundler-19 -compress on the same bundles. Untimed: each bundle's
#     bytes are cut out of the library (offsets from `rocpack show --json`), unbundled into its
#     entries, and rebundled uncompressed to check that the bundler rebuilds the original bytes
#     (so both tools compress the same data: this needs -bundle-align=4096 and the host target
#     spelt without the trailing "-", as the HIP driver passes them); rocpack's CCOB for that bundle is cut out of OUT
#     (length from the total size field, bytes 8..12 of the CCOB v2 header) and must be listed
#     and unbundled by clang-offload-bundler-19 into the same entries. Timed: rebundling the
#     entries with -compress, one process per bundle, sequentially (sum of wall times) and two
#     at a time (both cores, as rocpack uses them).
#
#   bench/slim.sh [RUNS]     default 5 (compress/decompress: at most 3); results also written to
#                            bench/results/slim-<date>.txt
#
# ROCPACK_BENCH_DIR: scratch directory for the copies (default ~/.cache/rocpack-bench); it should
# be on the same filesystem as the corpus (~/.cache/rocpack-corpus), so that cp and rocpack copy
# within one filesystem. At most three copies of the library (about 5 GB) exist at a time; all
# are removed at the end. CARGO_TARGET_DIR is honoured for the build.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
slow_runs=$(( runs < 3 ? runs : 3 ))
keep=gfx90a

# Tools: say what to install rather than installing behind the user's back.
missing=()
for pair in hyperfine:hyperfine clang-offload-bundler-19:clang-tools-19 llvm-readelf-19:llvm-19 \
            /usr/bin/time:time python3:python3 jq:jq cmp:diffutils strace:strace cargo:cargo; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench/slim.sh: missing tools; install them with:" >&2
  echo "  apt-get install $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')" >&2
  exit 1
fi
have_perf=false
perf stat -e task-clock true >/dev/null 2>&1 && have_perf=true   # optional (linux-perf)

cargo build --release --locked --quiet -p rocpack
# A private copy, so that a rebuild in the same tree during the run does not change the binary.
work=$(mktemp -d /tmp/rocpack-bench-slim.XXXXXX)
cp "${CARGO_TARGET_DIR:-target}/release/rocpack" "$work/rocpack"
rocpack=$work/rocpack

lib=$(scripts/fetch-corpus.sh librocsparse1)/usr/lib/x86_64-linux-gnu/librocsparse.so.1.0
scratch=${ROCPACK_BENCH_DIR:-$HOME/.cache/rocpack-bench}
mkdir -p "$scratch"
copy=$scratch/strip.so          # strip's input, and cp's destination
comp=$scratch/compressed.so     # compress -o
decomp=$scratch/decompressed.so # decompress -o
bdir=$scratch/bundles           # the baseline's bundles and entries
cleanup() { rm -rf "$work" "$copy" "$comp" "$decomp" "$bdir"; }
trap cleanup EXIT
need=$(( 5 * 1024 * 1024 * 1024 ))
avail=$(df -B1 --output=avail "$scratch" | tail -n 1)
[ "$avail" -ge "$need" ] || { echo "bench/slim.sh: $scratch has $avail bytes free, needs $need" >&2; exit 1; }

out=bench/results/slim-$(date -u +%Y-%m-%d).txt
mkdir -p bench/results
exec > >(tee "$out") 2>&1

fail() { echo "FAILED: $*"; exit 1; }
alloc() { stat -c '%b %B' "$1" | awk '{ printf "%.0f", $1 * $2 }'; }  # allocated bytes
apparent() { stat -c %s "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# The .hip_fatbin section's file offset and size, in decimal (llvm-readelf-19 -S prints hex).
fatbin_range() {
  local off size
  read -r off size < <(llvm-readelf-19 -S -W "$1" | sed -n 's/^ *\[ *[0-9]*\] //p' |
                       awk '$1 == ".hip_fatbin" { print $4, $5 }')
  [ -n "$off" ] || fail "$1: no .hip_fatbin section"
  echo "$((16#$off)) $((16#$size))"
}
# Fails unless FILE's bytes outside ORIG's .hip_fatbin are those of ORIG (and the sizes equal).
same_outside_fatbin() {
  local orig=$1 file=$2 off size
  read -r off size < <(fatbin_range "$orig")
  [ "$(apparent "$orig")" -eq "$(apparent "$file")" ] || fail "$file: size differs from $orig"
  cmp -n "$off" "$orig" "$file" || fail "cmp -n $off $orig $file: bytes before .hip_fatbin differ"
  cmp -i "$((off + size))" "$orig" "$file" || fail "cmp -i $((off + size)) $orig $file: bytes after .hip_fatbin differ"
  echo "cmp -n $off ORIG $(basename "$file") && cmp -i $((off + size)) ORIG $(basename "$file"): identical outside .hip_fatbin ($off + $((off + size))..$(apparent "$orig"))"
}
# Runs a command and prints the peak RssAnon and RssFile of its process (KiB), sampled from
# /proc every 20 ms (/usr/bin/time's max RSS counts the library's mapped pages as well).
peak_rss() {
  "$@" > /dev/null 2>&1 &
  local pid=$! anon=0 file=0 a f rc
  while [ -r "/proc/$pid/status" ]; do
    read -r a f < <(awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { print a + 0, f + 0 }' \
                      "/proc/$pid/status" 2>/dev/null || echo 0 0)
    [ "$a" -gt "$anon" ] && anon=$a
    [ "$f" -gt "$file" ] && file=$f
    sleep 0.02
  done
  wait "$pid" && rc=0 || rc=$?
  [ "$rc" -eq 0 ] || fail "$* exited with status $rc"
  echo "  peak RssAnon $anon KiB, peak RssFile $file KiB (sampled every 20 ms from /proc/PID/status)"
}
# One run under /usr/bin/time -v: prints the command's own output (its summary, on stdout), then
# wall, user, sys, CPU and max RSS.
time_v() {
  local rc
  /usr/bin/time -v -o "$work/timev" "$@" > "$work/output" 2>&1 && rc=0 || rc=$?
  [ "$rc" -eq 0 ] || { cat "$work/output"; fail "$* exited with status $rc"; }
  sed 's/^/  | /' "$work/output"
  awk -F': ' '/Elapsed \(wall clock\)/ { w = $2 } /User time/ { u = $2 } /System time/ { s = $2 }
              /Maximum resident set size/ { m = $2 } /Percent of CPU/ { c = $2 }
              END { printf "  %s wall, %s s user, %s s sys, %s CPU, %s KiB max RSS\n", w, u, s, c, m }' "$work/timev"
}
# Where a command's time goes (only with perf): `profile OUTPUT CMD...` removes OUTPUT, runs
# CMD under perf stat (task-clock, page faults), removes OUTPUT again, runs CMD under perf record
# (cpu-clock samples) and prints the functions with the most self time.
profile() {
  $have_perf || return 0
  local output=$1; shift
  rm -f "$output"; sync
  perf stat -e task-clock,page-faults,context-switches -o "$work/perfstat" "$@" > /dev/null 2>&1 ||
    fail "perf stat $*: exit status $?"
  grep -E 'task-clock|page-faults|context-switches|elapsed|user|sys' "$work/perfstat" | sed 's/  */ /g; s/^/  perf stat:/'
  rm -f "$output"; sync
  perf record -q -e cpu-clock -F 499 -o "$work/perf.data" "$@" > /dev/null 2>&1 || fail "perf record $*: exit status $?"
  echo "  perf record, functions with the most self time (cpu-clock samples, all threads):"
  perf report -i "$work/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null | awk '/%/ && ++n <= 8' | sed 's/  *-  *- *$//; s/^/  /'
  rm -f "$output" "$work/perf.data"; sync
}
# Mean of hyperfine result number N (0-based) in an --export-json file.
mean() { jq -r ".results[$2].mean" "$1"; }

dirty=$(git status --porcelain --untracked-files=no | wc -l)
echo "# rocpack strip/compress/decompress benchmark, $(date -u +%FT%TZ), $(nproc) cores, $(uname -r), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
echo "# rocpack $(git rev-parse --short HEAD)$([ "$dirty" -eq 0 ] || echo " + $dirty files with uncommitted changes in the tree"), $(hyperfine --version), $(cp --version | head -n 1), $(/usr/bin/time --version 2>&1 | head -n 1)"
echo "# $(clang-offload-bundler-19 --version | head -n 1 | sed 's/^ *//'); $(llvm-readelf-19 --version | grep -m1 -o 'LLVM version.*')"
echo "# file: $lib"
echo "#   $(apparent "$lib") bytes apparent, $(alloc "$lib") allocated; .hip_fatbin at $(fatbin_range "$lib" | awk '{ print $1 ", " $2 " bytes" }')"
echo "# scratch: $scratch ($(stat -f -c %T "$scratch"), $(df --output=source "$scratch" | tail -n 1); library on $(df --output=source "$lib" | tail -n 1))"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

"$rocpack" show --json "$lib" > "$work/orig.show.json"
"$rocpack" list --json "$lib" > "$work/orig.list.json"
nbundles=$(jq '[.containers[] | select(.type == "bundle")] | length' "$work/orig.show.json")
echo "rocpack list ORIG: $(wc -l < "$work/orig.list.json") device code objects in $nbundles bundles; per target:"
jq -r .target "$work/orig.list.json" | sort | uniq -c | awk '{ printf "  %s x %s\n", $2, $1 }' | paste -sd ' '
grep -q "\"target\":\"$keep\"" "$work/orig.list.json" || fail "$keep is not among the library's targets"
cat "$lib" > /dev/null   # warm cache: every timed command reads ORIG from the page cache
echo

# --- 1. strip ----------------------------------------------------------------------------------
echo "## 1. strip in place to one target of ten: rocpack strip --keep $keep --in-place COPY"
echo "### hyperfine --warmup 1 --runs $runs (COPY removed, or freshly copied and synced, before each run)"
hyperfine --warmup 1 --runs "$runs" --style basic --export-json "$work/strip.hf.json" \
  -n 'cp ORIG COPY' --prepare "rm -f $copy; sync" "cp $lib $copy" \
  -n 'cp ORIG COPY && sync COPY' --prepare "rm -f $copy; sync" "cp $lib $copy && sync $copy" \
  -n "rocpack strip --keep $keep --in-place COPY" --prepare "rm -f $copy; cp $lib $copy; sync $copy" \
     "$rocpack strip -q --keep $keep --in-place $copy" 2>&1 | grep -v '^ *$'
t_cp=$(mean "$work/strip.hf.json" 0)
t_cpsync=$(mean "$work/strip.hf.json" 1)
t_strip=$(mean "$work/strip.hf.json" 2)
echo "strip / cp = $(ratio "$t_strip" "$t_cp") (target: at most 2); strip / (cp + sync) = $(ratio "$t_strip" "$t_cpsync")"
echo "cp's system calls (strace -f, one run):"
rm -f "$copy"; sync
strace -f -e trace=copy_file_range,ioctl,read,write,sendfile,splice -o "$work/cp.strace" cp "$lib" "$copy"
grep -E 'copy_file_range|ioctl|sendfile|splice' "$work/cp.strace" | sed 's/^[0-9]* */  /' | head -n 4
echo "  $(grep -c '^[0-9]* *read(' "$work/cp.strace" || true) read and $(grep -c '^[0-9]* *write(' "$work/cp.strace" || true) write calls"
echo

echo "### one more strip on a fresh copy: sizes, time -v, verification"
rm -f "$copy"; cp "$lib" "$copy"; sync "$copy"
ap_before=$(apparent "$copy"); al_before=$(alloc "$copy"); du_before=$(du -B1 "$copy" | cut -f1)
echo "\$ rocpack strip --keep $keep --in-place COPY"
time_v "$rocpack" strip --keep "$keep" --in-place "$copy"
ap_after=$(apparent "$copy"); al_after=$(alloc "$copy"); du_after=$(du -B1 "$copy" | cut -f1)
echo "apparent size (stat -c %s):        $ap_before -> $ap_after"
echo "allocated size (stat -c '%b*%B'):  $al_before -> $al_after  (du -B1: $du_before -> $du_after)"
echo "allocated before/after = $(ratio "$al_before" "$al_after") (target: at least 8)"
"$rocpack" list --json "$copy" > "$work/strip.list.json"
read -r off size < <(fatbin_range "$lib")
kept=$(jq -s 'map(.size) | add' "$work/strip.list.json")
floor=$(( ap_before - size + kept ))
echo "smallest possible: $((ap_before - size)) bytes outside .hip_fatbin + $kept bytes of $keep code objects = $floor bytes -> best ratio $(ratio "$al_before" "$floor"); the stripped file is $((al_after - floor)) bytes ($(ratio "$((100 * (al_after - floor)))" "$floor") %) above it"
echo "rocpack strip --keep $keep --in-place, a second time on the stripped file (nothing to do):"
/usr/bin/time -f '  %e s wall, %M KiB max RSS' "$rocpack" strip --keep "$keep" --in-place "$copy" 2>&1 | sed 's/^\([^ ]\)/  | \1/'
echo

echo "### verification"
( cd "$scratch" && "$rocpack" check --gpu "$keep" "$(basename "$copy")" ) | sed 's/^/  | /' || fail "rocpack check --gpu $keep COPY: exit status $?"
verdict=$("$rocpack" check --json --gpu "$keep" "$copy" | jq -r 'select(.type == "verdict") | .verdict')
[ "$verdict" = native ] || fail "rocpack check --gpu $keep COPY: verdict $verdict, not native"
echo "rocpack check --json --gpu $keep COPY: verdict $verdict"
targets=$(jq -r .target "$work/strip.list.json" | sort | uniq -c | awk '{ print $2 " x " $1 }' | paste -sd ' ')
[ "$targets" = "$keep x $nbundles" ] || fail "rocpack list COPY: $targets, expected $keep x $nbundles"
echo "rocpack list --json COPY: $targets"
same_outside_fatbin "$lib" "$copy"
# Every kept code object, found through rocpack list on both files, byte for byte.
python3 - "$lib" "$copy" "$work/orig.list.json" "$work/strip.list.json" "$keep" <<'EOF' || fail "kept code objects differ"
import json, sys
orig, new, ol, nl, keep = sys.argv[1:]
key = lambda d: (d["bundle_offset"], d["entry_id"])
old = {key(d): d for d in map(json.loads, open(ol)) if d["target"] == keep}
got = {key(d): d for d in map(json.loads, open(nl))}
assert old.keys() == got.keys(), "kept entries are not those of ORIG"
with open(orig, "rb") as a, open(new, "rb") as b:
    for k, d in old.items():
        a.seek(d["file_offset"]); b.seek(got[k]["file_offset"])
        assert a.read(d["size"]) == b.read(got[k]["size"]), f"entry {k} differs"
print(f"the {len(old)} kept code objects: identical to the originals ({sum(d['size'] for d in old.values())} bytes)")
EOF
diags=$("$rocpack" show --json "$copy" | jq '.diagnostics | length')
[ "$diags" -eq 0 ] || fail "rocpack show --json COPY: $diags diagnostics"
echo "rocpack show --json COPY: no diagnostics"
rm -f "$copy"
echo

# --- 2. compress / decompress ------------------------------------------------------------------
echo "## 2. compress: rocpack compress -o OUT ORIG"
echo "### hyperfine --warmup 0 --runs $slow_runs (OUT removed before each run)"
hyperfine --runs "$slow_runs" --style basic --export-json "$work/comp.hf.json" \
  -n 'rocpack compress -o OUT ORIG' --prepare "rm -f $comp; sync" "$rocpack compress -q -o $comp $lib" \
  2>&1 | grep -v '^ *$'
t_comp=$(mean "$work/comp.hf.json" 0)
rm -f "$comp"; sync
echo "### one more run: time -v, memory, sizes"
profile "$comp" "$rocpack" compress -q -o "$comp" "$lib"
echo "\$ rocpack compress -o OUT ORIG"
time_v "$rocpack" compress -o "$comp" "$lib"
rm -f "$comp"; sync
echo "memory, one more run (rocpack compress -q -o OUT ORIG):"
peak_rss "$rocpack" compress -q -o "$comp" "$lib"
"$rocpack" show --json "$comp" > "$work/comp.show.json"
before=$(jq '[.containers[] | select(.type == "bundle") | .size] | add' "$work/orig.show.json")
after=$(jq '[.containers[] | select(.type == "ccob") | .total_size] | add' "$work/comp.show.json")
nccob=$(jq '[.containers[] | select(.type == "ccob" and .version == 2 and .method == "zstd")] | length' "$work/comp.show.json")
[ "$nccob" -eq "$nbundles" ] || fail "rocpack show --json OUT: $nccob zstd CCOB v2, expected $nbundles"
echo "bundles (rocpack show --json): $nbundles uncompressed, $before bytes -> $nccob CCOB v2 zstd, $after bytes: ratio $(ratio "$before" "$after")"
echo "apparent size: $(apparent "$lib") -> $(apparent "$comp"); allocated: $(alloc "$lib") -> $(alloc "$comp") (ratio $(ratio "$(alloc "$lib")" "$(alloc "$comp")"))"
"$rocpack" list --verify -q "$comp" > /dev/null || fail "rocpack list --verify OUT: exit status $?"
echo "rocpack list --verify OUT: every CCOB decompresses and its hash matches"
same_outside_fatbin "$lib" "$comp"
echo

echo "### decompress: rocpack decompress -o OUT2 OUT; hyperfine --runs $slow_runs (OUT2 removed before each run)"
cat "$comp" > /dev/null
hyperfine --runs "$slow_runs" --style basic --export-json "$work/decomp.hf.json" \
  -n 'rocpack decompress -o OUT2 OUT' --prepare "rm -f $decomp; sync" "$rocpack decompress -q -o $decomp $comp" \
  2>&1 | grep -v '^ *$'
profile "$decomp" "$rocpack" decompress -q -o "$decomp" "$comp"
echo "memory (rocpack decompress -q -o OUT2 OUT):"
peak_rss "$rocpack" decompress -q -o "$decomp" "$comp"
rm -f "$decomp"; sync
echo "\$ rocpack decompress -o OUT2 OUT"
time_v "$rocpack" decompress -o "$decomp" "$comp"
cmp "$decomp" "$lib" || fail "cmp OUT2 ORIG: the round trip does not give the original back"
echo "cmp OUT2 ORIG: identical; OUT2 allocated $(alloc "$decomp") bytes (ORIG: $(alloc "$lib"))"
rm -f "$decomp"
echo

# --- baseline: clang-offload-bundler-19 -compress ------------------------------------------------
echo "## baseline: clang-offload-bundler-19 -compress on the same $nbundles bundles"
mkdir -p "$bdir"
python3 bench/bundler.py "$lib" "$comp" "$work/orig.show.json" "$work/comp.show.json" "$bdir" "$work/baseline.json" || fail "baseline"
read -r seq par bl rp < <(jq -r '"\(.seq_wall) \(.par2_wall) \(.bundler_after) \(.rocpack_after)"' "$work/baseline.json")
echo "rocpack compress (hyperfine mean $t_comp s, whole ELF written, verified and fsynced) / bundler sequential: $(ratio "$t_comp" "$seq"); / bundler 2 at a time: $(ratio "$t_comp" "$par")"
echo "compressed size rocpack / bundler: $(ratio "$rp" "$bl")"
rm -f "$comp"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
