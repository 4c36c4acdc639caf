#!/usr/bin/env bash
# Benchmark: `rocpack scan` over fourteen Debian sid ROCm library packages (unpacked: about
# 10 GB in about 2,900 files, 6,073 device code objects, 717 CCOB files) against the existing
# tools looping over every file, and over a .deb read in place against decompressing the same
# .deb with dpkg-deb.
#
#  0. Issue 16's targets, unpacked, warm page cache, from paired runs (ROUNDS rounds, default
#     10, each timing the three commands back to back with hyperfine, 3 runs each):
#       - `rocpack scan -q DIRS...` at least 3x faster than bench/scan_reference.py, a small
#         single-threaded Python script that reads only the headers rocpack reads;
#       - and within 1.5x of the time to stat every file (`find DIRS -type f -printf '%s\n'`,
#         one fstatat per file);
#     the median of the per-round ratios is printed against each target, met or not, and the
#     reference's device code object count against rocpack's.
#     With TARGETS_ONLY=1 the script stops after this part.
#  1. Unpacked, warm page cache: `rocpack scan -q DIRS... > /dev/null` and `--json` (hyperfine),
#     max RSS, and where the time goes (strace -c, perf stat). Baselines, each over the same
#     files (every regular file under the unpacked directories), run once:
#       - roc-obj-ls (Debian hip-utils) on each file in turn;
#       - the existing tools picked per file by its magic: llvm-readelf-19 -h on ELF files (the
#         target is in e_flags of a code object), then roc-obj-ls on a host (x86-64) ELF,
#         clang-offload-bundler-19 --list on an offload bundle (CCOB or __CLANG_OFFLOAD_BUNDLE__);
#         serially, and with `xargs -P 2` to use both cores as rocpack does.
#     The targets each baseline found are checked against rocpack's, per package.
#     A baseline whose estimate (from every 20th file) exceeds BASELINE_MAX_S seconds (default
#     600) runs over that sample only and is extrapolated, labelled as such.
#  2. .deb in place: `rocpack scan -q X.deb` against `dpkg-deb --fsys-tarfile X.deb | cat` for
#     librocsparse1 and librocblas4 (hyperfine, DEB_RUNS runs; plus wall, user, sys, max RSS
#     from /usr/bin/time).
#  3. Unpacked, cold-ish cache: every file's pages evicted with posix_fadvise(DONTNEED), then
#     `rocpack scan -q DIRS...` (3 times); bytes read from disk from fincore and ru_inblock.
#     On a VM the host may still cache the disk, hence "cold-ish".
#
#   bench/scan.sh [RUNS [DEB_RUNS [ROUNDS]]]   defaults 20, 3 and 10; results also written to
#                                              bench/results/scan-<date>.txt
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
deb_runs=${2:-3}
rounds=${3:-10}
max_s=${BASELINE_MAX_S:-600}

# Tools: say what to install rather than installing behind the user's back.
missing=()
for pair in hyperfine:hyperfine clang-offload-bundler-19:clang-tools-19 llvm-readelf-19:llvm-19 \
            objdump:binutils perl:perl dpkg-deb:dpkg /usr/bin/time:time python3:python3 \
            fincore:util-linux jq:jq strace:strace xargs:findutils cargo:cargo; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair##*:}")
done
perl -MFile::Which -e1 2>/dev/null || missing+=(libfile-which-perl)
perl -MURI::Escape -e1 2>/dev/null || missing+=(liburi-perl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "bench/scan.sh: missing tools; install them with:" >&2
  echo "  apt-get install $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')" >&2
  exit 1
fi
have_perf=false
perf stat -e task-clock true >/dev/null 2>&1 && have_perf=true   # optional (linux-perf)

cargo build --release --quiet -p rocpack
# A private copy, so that a rebuild in the same tree during the run does not change the binary.
work=$(mktemp -d /tmp/rocpack-bench-scan.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp target/release/rocpack "$work/rocpack"
rocpack=$work/rocpack

mapfile -t dirs < <(scripts/fetch-corpus.sh librocrand1 librocsparse1 librocblas4 libhipblaslt1 librocfft0 libmiopen1 \
  libhipblas2 libhipfft0 libhiprand1 libhipsparse1 libhipsolver0 librocsolver0 librccl1 librocalution0)
ROC_OBJ_LS=$(scripts/fetch-corpus.sh hip-utils)/usr/bin/roc-obj-ls
corpus=$(dirname "${dirs[0]}")
debs=()
for d in "${dirs[@]}"; do
  case $(basename "$d") in librocsparse1_*|librocblas4_*) debs+=("$(readlink -f "$d/.deb")");; esac
done
# Every regular file rocpack examines (directory walks do not follow symbolic links).
find "${dirs[@]}" -type f -print0 | sort -z > "$work/files0"
nfiles=$(tr -cd '\0' < "$work/files0" | wc -c)
nbytes=$(xargs -0 stat -c %s < "$work/files0" | awk '{ s += $1 } END { printf "%.0f", s }')

out=bench/results/scan-$(date -u +%Y-%m-%d).txt
mkdir -p bench/results
exec > >(tee "$out") 2>&1

dirty=$(git status --porcelain --untracked-files=no | wc -l)
echo "# rocpack scan benchmark, $(date -u +%FT%TZ), $(nproc) cores, $(uname -r), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
echo "# rocpack $(git rev-parse --short HEAD)$([ "$dirty" -eq 0 ] || echo " + $dirty files with uncommitted changes in the tree"), $(hyperfine --version)"
echo "# $(clang-offload-bundler-19 --version | head -n 1 | sed 's/^ *//'); $(llvm-readelf-19 --version | grep -m1 -o 'LLVM version.*'); $(objdump --version | head -n 1); roc-obj-ls from $(basename "$(dirname "$(dirname "$(dirname "$ROC_OBJ_LS")")")"); $(dpkg-deb --version | head -n 1)"
echo "# corpus: $nfiles regular files, $nbytes bytes, in:"
for d in "${dirs[@]}"; do echo "#   $d ($(find "$d" -type f | wc -l) files)"; done
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

warm() { xargs -0 cat < "$work/files0" > /dev/null; }

echo "## 0. issue 16 targets: unpacked, warm cache, paired runs ($rounds rounds of 3 runs each)"
warm
pairs=$work/pairs
: > "$pairs"
for round in $(seq "$rounds"); do
  cmds=(-n rocpack "$rocpack scan -q ${dirs[*]}"
        -n reference "python3 bench/scan_reference.py ${dirs[*]}"
        -n stat "find ${dirs[*]} -type f -printf %s\n")
  if [ $((round % 2)) -eq 0 ]; then
    cmds=("${cmds[@]:6:3}" "${cmds[@]:3:3}" "${cmds[@]:0:3}")
  fi
  hyperfine -N --warmup 1 --runs 3 --style none --output=null "${cmds[@]}" \
    --export-json "$work/pair.json" > "$work/pair.log" 2>&1 || { cat "$work/pair.log"; exit 1; }
  for n in rocpack reference stat; do
    jq -r --arg n "$n" '.results[] | select(.command == $n) | .median' "$work/pair.json"
  done | paste -sd' ' >> "$pairs"
done
awk '{ printf "round %2d: rocpack %.1f ms, reference %.1f ms, stat walk %.1f ms; reference/rocpack %.2f, rocpack/stat %.2f\n",
       NR, $1 * 1000, $2 * 1000, $3 * 1000, $2 / $1, $1 / $3 }' "$pairs"
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m_r=$(awk '{ print $1 }' "$pairs" | median)
m_ref=$(awk '{ print $2 }' "$pairs" | median)
m_stat=$(awk '{ print $3 }' "$pairs" | median)
q_ref=$(awk '{ print $2 / $1 }' "$pairs" | median)
q_stat=$(awk '{ print $1 / $3 }' "$pairs" | median)
awk -v r="$m_r" -v f="$m_ref" -v s="$m_stat" -v a="$q_ref" -v b="$q_stat" -v n="$rounds" 'BEGIN {
  printf "medians over %d rounds: rocpack %.1f ms, reference %.1f ms, stat walk %.1f ms\n", n, r * 1000, f * 1000, s * 1000
  printf "rocpack vs the header-only reference: %.2fx faster (median ratio; target: at least 3x): %s\n", a, (a >= 3 ? "MET" : "NOT MET")
  printf "rocpack vs stating every file: %.2fx the stat walk (median ratio; target: at most 1.5x): %s\n", b, (b <= 1.5 ? "MET" : "NOT MET") }'
"$rocpack" list --json "${dirs[@]}" > "$work/list.json"
python3 bench/scan_reference.py "${dirs[@]}" 2> "$work/ref.err" > "$work/ref.out"
echo "same files read: $(tail -n 1 "$work/ref.err"); rocpack list: $(wc -l < "$work/list.json") device code objects in $(jq -r .file "$work/list.json" | sort -u | wc -l) files"
/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS  rocpack scan -q" \
  "$rocpack" scan -q "${dirs[@]}" > /dev/null 2> "$work/time"
tail -n 1 "$work/time"
/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS  bench/scan_reference.py" \
  python3 bench/scan_reference.py "${dirs[@]}" > /dev/null 2> "$work/time"
tail -n 1 "$work/time"
strace -c -f -o "$work/strace0" "$rocpack" scan -q "${dirs[@]}" > /dev/null
echo "rocpack's system calls (strace -c -f, calls only): $(awk '$4 ~ /^[0-9]+$/ && $NF ~ /^(mmap|munmap|pread64|openat|statx|madvise)$/ { printf "%s %s, ", $NF, $4 }' "$work/strace0")"
echo
if [ -n "${TARGETS_ONLY:-}" ]; then
  echo "# TARGETS_ONLY set: parts 1 to 3 not run"
  echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

echo "## 1. unpacked, warm cache"
warm
echo "### rocpack scan (hyperfine -N --warmup 3 --runs $runs --output=null)"
hyperfine -N --warmup 3 --runs "$runs" --style basic --output=null \
  -n 'rocpack scan -q' "$rocpack scan -q ${dirs[*]}" \
  -n 'rocpack scan -q --json' "$rocpack scan -q --json ${dirs[*]}" \
  -n 'rocpack --version (process start)' "$rocpack --version" 2>&1 | grep -v '^ *$'
echo
echo "### max RSS, user and sys (/usr/bin/time, one run each)"
for flags in "-q" "-q --json"; do
  /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS  rocpack scan $flags" \
    "$rocpack" scan $flags "${dirs[@]}" > /dev/null 2> "$work/time"
  tail -n 1 "$work/time"
done
"$rocpack" scan -q "${dirs[@]}" > "$work/scan.txt"
"$rocpack" scan -q --json "${dirs[@]}" > "$work/scan.json"
echo "what rocpack reports: $(tail -n 1 "$work/scan.txt")"
echo
echo "### where the time goes"
if $have_perf; then
  perf stat -r 5 -e task-clock,context-switches,page-faults "$rocpack" scan -q "${dirs[@]}" 2>&1 >/dev/null |
    grep -E 'task-clock|context-switches|page-faults|elapsed' | sed 's/  */ /g'
fi
strace -c -f -o "$work/strace" "$rocpack" scan -q "${dirs[@]}" > /dev/null
echo "strace -c -f (syscalls with at least 100 calls; strace itself slows each call down):"
awk 'NR <= 2 || ($4 ~ /^[0-9]+$/ && $4 >= 100) || /total/' "$work/strace"
echo

# --- baselines ---------------------------------------------------------------------------------
# The existing tools, one file at a time; prints FILE<TAB>TOOL<TAB>WHAT lines.
baseline_files() {
  local f m h fl n triple uri
  for f in "$@"; do
    m=
    IFS= read -r -N 4 m < "$f" 2>/dev/null || true
    case $m in
      $'\x7f'ELF)
        h=$(llvm-readelf-19 -h "$f" 2>/dev/null) || continue
        if [[ $h == *EM_AMDGPU* ]]; then
          fl=${h#*Flags:}; fl=${fl%%$'\n'*}; fl=${fl#*, }
          printf '%s\treadelf\t%s\n' "$f" "$fl"
        elif [[ $h == *X86-64* ]]; then
          while read -r n triple uri; do
            printf '%s\troc-obj-ls\t%s\n' "$f" "$triple"
          done < <(perl "$ROC_OBJ_LS" "$f" 2>/dev/null)
        fi ;;
      CCOB|__CL)
        while read -r triple; do
          printf '%s\tbundler\t%s\n' "$f" "$triple"
        done < <(clang-offload-bundler-19 --list --type=o --input="$f" 2>/dev/null) ;;
    esac
  done
}
# roc-obj-ls alone, on every file in turn (it stops at the first file without .hip_fatbin, so
# one run per file).
rocobjls_files() {
  local f
  for f in "$@"; do perl "$ROC_OBJ_LS" "$f" 2>/dev/null || true; done
}
export -f baseline_files rocobjls_files
export ROC_OBJ_LS

# run_baseline NAME XARGS_OPTS FUNCTION: time `xargs -0 XARGS_OPTS bash -c FUNCTION` over all
# files, or over every 20th file if the estimate is above $max_s seconds.
run_baseline() {
  local name=$1 xopts=$2 fn=$3 e u s
  awk 'BEGIN { RS = "\0"; ORS = "\0" } NR % 20 == 1' "$work/files0" > "$work/sample0"
  local nsample; nsample=$(tr -cd '\0' < "$work/sample0" | wc -c)
  # shellcheck disable=SC2086
  /usr/bin/time -f '%e %U %S' -o "$work/btime" xargs -0 $xopts bash -c "$fn \"\$@\"" _ \
    < "$work/sample0" > "$work/$fn.sample.out"
  read -r e u s < "$work/btime"
  local est; est=$(awk -v e="$e" -v n="$nsample" -v t="$nfiles" 'BEGIN { printf "%.0f", e * t / n }')
  echo "$name, sample of every 20th file ($nsample files): $e s wall, $u s user, $s s sys -> estimate for all $nfiles files: $est s"
  if [ "$est" -le "$max_s" ]; then
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %U %S' -o "$work/btime" xargs -0 $xopts bash -c "$fn \"\$@\"" _ \
      < "$work/files0" > "$work/$fn.out"
    read -r e u s < "$work/btime"
    echo "$name, all $nfiles files (measured, 1 run): $e s wall, $u s user, $s s sys"
  else
    echo "$name: NOT RUN over all files (estimate above ${max_s} s); EXTRAPOLATED from the sample: $est s wall"
    cp "$work/$fn.sample.out" "$work/$fn.out"
  fi
}

echo "### baselines (warm cache, one run each, /usr/bin/time)"
warm
run_baseline "roc-obj-ls on every file, serially" "-n 256" rocobjls_files
echo "  entries listed: $(grep -c 'file://' "$work/rocobjls_files.out" || true) ($(grep 'file://' "$work/rocobjls_files.out" | grep -vc '^[0-9]* *host-' || true) device), from $(grep 'file://' "$work/rocobjls_files.out" | sed 's/.*file:\/\///; s/#offset.*//' | sort -u | wc -l) files"
run_baseline "readelf -h / roc-obj-ls / clang-offload-bundler --list by file type, serially" "-n 256" baseline_files
mv "$work/baseline_files.out" "$work/baseline_serial.out"
run_baseline "readelf -h / roc-obj-ls / clang-offload-bundler --list by file type, xargs -P 2" "-P 2 -n 32" baseline_files
echo "  entries: $(awk -F'\t' '$3 !~ /^host-/' "$work/baseline_serial.out" | wc -l) device code objects (readelf: $(awk -F'\t' '$2 == "readelf"' "$work/baseline_serial.out" | wc -l) files; clang-offload-bundler: $(awk -F'\t' '$2 == "bundler" && $3 !~ /^host-/' "$work/baseline_serial.out" | wc -l) entries in $(awk -F'\t' '$2 == "bundler" { print $1 }' "$work/baseline_serial.out" | sort -u | wc -l) files; roc-obj-ls: $(awk -F'\t' '$2 == "roc-obj-ls" && $3 !~ /^host-/' "$work/baseline_serial.out" | wc -l) entries in $(awk -F'\t' '$2 == "roc-obj-ls" { print $1 }' "$work/baseline_serial.out" | sort -u | wc -l) files)"

echo "### same answer? GPU processors per package: rocpack scan --json against the by-type baseline"
pkg_of() { awk -F'\t' -v root="$corpus/" '{ p = substr($1, length(root) + 1); sub(/\/.*/, "", p); print p "\t" $2 }'; }
awk -F'\t' '$3 !~ /^host-/ {
    t = $3
    if ($2 == "readelf") sub(/,.*/, "", t); else { sub(/.*--/, "", t); sub(/:.*/, "", t) }
    print $1 "\t" t }' "$work/baseline_serial.out" | pkg_of | sort -u > "$work/targets.baseline"
jq -r 'select(.type == "library") | .file as $f | .bytes_per_processor | keys[] | "\($f)\t\(.)"' \
  "$work/scan.json" | pkg_of | sort -u > "$work/targets.rocpack"
for p in $(cut -f1 "$work/targets.baseline" "$work/targets.rocpack" | sort -u); do
  echo "$p: rocpack $(awk -F'\t' -v p="$p" '$1 == p { printf "%s ", $2 }' "$work/targets.rocpack")| baseline $(awk -F'\t' -v p="$p" '$1 == p { printf "%s ", $2 }' "$work/targets.baseline")"
done
if diff -q "$work/targets.baseline" "$work/targets.rocpack" >/dev/null; then
  echo "=> same processors per package"
else
  echo "=> DIFFERENT (< baseline only, > rocpack only):"; diff "$work/targets.baseline" "$work/targets.rocpack" | grep '^[<>]' || true
fi
echo

echo "## 2. .deb read in place, against dpkg-deb decompressing the same .deb"
for deb in "${debs[@]}"; do
  echo "### $(basename "$deb") ($(stat -c %s "$deb") bytes; $(ar t "$deb" | grep '^data' ), $(dpkg-deb --fsys-tarfile "$deb" | wc -c) bytes of tar)"
  cat "$deb" > /dev/null
  hyperfine --warmup 1 --runs "$deb_runs" --style basic --output=null \
    -n 'rocpack scan -q X.deb' "$rocpack scan -q $deb" \
    -n 'dpkg-deb --fsys-tarfile X.deb | cat > /dev/null' "dpkg-deb --fsys-tarfile $deb | cat > /dev/null" \
    2>&1 | grep -v '^ *$'
  /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS  rocpack scan -q X.deb" \
    "$rocpack" scan -q "$deb" > "$work/deb.txt" 2> "$work/time"
  tail -n 1 "$work/time"
  /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS (largest process)  dpkg-deb --fsys-tarfile X.deb | cat > /dev/null" \
    sh -c 'dpkg-deb --fsys-tarfile "$1" | cat > /dev/null' _ "$deb" 2> "$work/time"
  tail -n 1 "$work/time"
  echo "what rocpack reports: $(tail -n 1 "$work/deb.txt")"
  if $have_perf; then
    # Which thread spends the CPU time, and on what (perf record, cpu-clock samples).
    if perf record -q -e cpu-clock -F 499 -o "$work/perf.data" "$rocpack" scan -q "$deb" > /dev/null 2>&1; then
      echo "perf record: share of CPU samples per thread (thread id:name; the main thread, whose id is the lowest, decompresses):"
      perf report -i "$work/perf.data" --no-children --sort pid --stdio 2>/dev/null | awk '/%/ && ++n <= 4'
      echo "perf record: top functions:"
      perf report -i "$work/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null | awk '/%/ && ++n <= 5' | sed 's/  *-  *-  *$//'
    fi
  fi
done
echo

echo "## 3. unpacked, cold-ish cache (posix_fadvise DONTNEED on every file before each run)"
evict() {
  python3 -c '
import os, sys
for p in sys.stdin.buffer.read().split(b"\0"):
    if p:
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)' < "$work/files0"
}
resident() { xargs -0 fincore --bytes --noheadings --output RES < "$work/files0" | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
for i in 1 2 3; do
  evict
  before=$(resident)
  /usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KiB max RSS, %I blocks read (ru_inblock)" \
    "$rocpack" scan -q "${dirs[@]}" > /dev/null 2> "$work/time"
  echo "run $i: $(tail -n 1 "$work/time"); resident bytes of the corpus before $before, after $(resident)"
done
warm
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
