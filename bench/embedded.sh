#!/usr/bin/env bash
# Benchmark: the cost of searching host ELF files for embedded GPU code (issue 14, part 1).
# Runs a baseline rocpack binary (main) and this tree's in the same run, on the Debian corpus
# of bench/list.sh and bench/scan.sh:
#   1. `rocpack list librocsparse.so.1.0` (1.6 GB; 142 bundles in .hip_fatbin, 3 MB .rodata);
#   2. `rocpack scan -q` over the six unpacked packages of bench/scan.sh (about 6.6 GB);
#   3. `rocpack list` of the same six directories.
# Wall time (hyperfine, warm cache, the two binaries alternating) and CPU time (perf stat
# task-clock, which a machine shared with other jobs disturbs less than wall time).
#
#   bench/embedded.sh BASELINE_BINARY [RUNS]    results also written to
#                                               bench/results/embedded-<date>.txt
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bench/embedded.sh BASELINE_BINARY [RUNS]}
runs=${2:-20}
for t in hyperfine perf; do
  command -v "$t" >/dev/null || { echo "bench/embedded.sh: $t missing" >&2; exit 1; }
done
cargo build --release --quiet -p rocpack
new=$(mktemp /tmp/rocpack-embedded.XXXXXX)
trap 'rm -f "$new"' EXIT
cp target/release/rocpack "$new"
chmod +x "$new"
mapfile -t dirs < <(scripts/fetch-corpus.sh librocrand1 librocsparse1 librocblas4 libhipblaslt1 librocfft0 libmiopen1)
lib=$(scripts/fetch-corpus.sh librocsparse1)/usr/lib/x86_64-linux-gnu/librocsparse.so.1.0
out=bench/results/embedded-$(date -u +%Y-%m-%d).txt
mkdir -p bench/results
exec > >(tee "$out") 2>&1

echo "# embedded-code search benchmark, $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# baseline: $base ($(sha256sum "$base" | cut -c1-12)); new: rocpack $(git rev-parse --short HEAD)$(git diff --quiet -- . ":!bench/results" || echo +changes)"
echo "# list file: $lib"
printf '# scan dirs:'; printf ' %s' "${dirs[@]}"; echo
echo
echo "## what each finds"
for b in "$base" "$new"; do
  echo "$(basename "$b"): list librocsparse: $("$b" list --json "$lib" | wc -l) rows;" \
    "list of the six dirs: $("$b" list -q --json "${dirs[@]}" | wc -l) rows"
done
cat "$lib" > /dev/null
echo
echo "## 1. list librocsparse.so.1.0, wall time ($runs runs each)"
hyperfine -N --warmup 3 --runs "$runs" --style basic -n main "$base list $lib" -n new "$new list $lib" 2>&1 | grep -v '^ *$'
echo "## 1. CPU time (perf stat -r $runs)"
for b in "$base" "$new"; do
  perf stat -e task-clock -r "$runs" "$b" list "$lib" 2>&1 >/dev/null | grep -E 'task-clock|elapsed' | sed "s|^|$(basename "$b"): |"
done
echo
srun=$(( runs / 4 > 3 ? runs / 4 : 3 ))
echo "## 2. scan -q of the six directories, wall time ($srun runs each)"
hyperfine -N --warmup 1 --runs "$srun" --style basic -n main "$base scan -q ${dirs[*]}" -n new "$new scan -q ${dirs[*]}" 2>&1 | grep -v '^ *$'
echo "## 2. CPU time (perf stat -r $srun)"
for b in "$base" "$new"; do
  perf stat -e task-clock -r "$srun" "$b" scan -q "${dirs[@]}" 2>&1 >/dev/null | grep -E 'task-clock|elapsed' | sed "s|^|$(basename "$b"): |"
done
echo
echo "## 3. list -q of the six directories, wall time ($srun runs each)"
hyperfine -N --warmup 1 --runs "$srun" --style basic -n main "$base list -q ${dirs[*]}" -n new "$new list -q ${dirs[*]}" 2>&1 | grep -v '^ *$'
echo "## 3. CPU time (perf stat -r $srun)"
for b in "$base" "$new"; do
  perf stat -e task-clock -r "$srun" "$b" list -q "${dirs[@]}" 2>&1 >/dev/null | grep -E 'task-clock|elapsed' | sed "s|^|$(basename "$b"): |"
done
