#!/usr/bin/env bash
# Benchmark: `rocpack show --kernels` (text, --json, --jsonl) on Debian sid's librocsparse.so.1.0
# (1.67 GB, 1,420 code objects, 184,020 kernels, uncompressed bundles) and on the plugin inside
# the jax-rocm7-pjrt wheel (459 MB, 45 compressed bundles decompressing to 2.4 GB), with a
# baseline binary and this checkout's, in one run.
#
# Reports: whether the outputs of the two binaries are byte-identical (text and --json; the run
# fails if not); wall time with hyperfine (warm cache, librocsparse only); and wall, user and
# system time and peak RSS from GNU /usr/bin/time over RUNS interleaved pairs (baseline, new,
# baseline, new, ...), medians, so that load from other processes falls on both alike.
# The jax plugin is measured in one pair per mode: the baseline takes about a minute there.
#
#   bench/kernels.sh BASELINE_BINARY    results also written to bench/results/kernels-<date>.txt
#                                       (kernels-<date>T<HHMM>.txt when that exists)
#
# BASELINE_BINARY: a built rocpack to compare with, e.g. main's (bench/run.sh builds any
# revision); RUNS=n sets the number of pairs on librocsparse (default 7).
set -euo pipefail
bench_name=bench/kernels.sh
. "$(dirname "$0")/lib.sh"
baseline=${1:?usage: bench/kernels.sh BASELINE_BINARY}
runs=${RUNS:-7}
scripts/install-deps.sh
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rocpack-bench-kernels.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$baseline" "$work/rocpack-base"
base_desc="$baseline ($("$baseline" --version))"
cargo build --release --locked --quiet -p rocpack
cp target/release/rocpack "$work/rocpack-new"

lib=$(scripts/fetch-corpus.sh librocsparse1)/usr/lib/x86_64-linux-gnu/librocsparse.so.1.0
jax=$(bench_jax_plugin)

# A second run on the same day keeps the first one's raw output (which a note may cite).
out=bench/results/kernels-$(date -u +%Y-%m-%d).txt
[ -e "$out" ] && out=bench/results/kernels-$(date -u +%Y-%m-%dT%H%M).txt
mkdir -p bench/results
echo "raw output: $out" >&2
exec > >(tee "$out") 2>&1
echo "# rocpack show --kernels benchmark, $(date -u +%FT%TZ), $(nproc) cores, $(uname -r), $(free -g | awk '/^Mem/{print $2}') GiB RAM"
echo "# baseline: $base_desc; new: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' + uncommitted changes')"
echo "# librocsparse: $lib ($(stat -c %s "$lib") bytes)"
echo "# jax plugin: xla_rocm_plugin.so of the jax-rocm7-pjrt 0.12.0 wheel, $jax ($(stat -c %s "$jax") bytes)"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

cat "$lib" "$jax" > /dev/null  # warm cache for both binaries alike
status=0

echo "## what is decoded"
for file in "$lib" "$jax"; do
  "$work/rocpack-new" show -q --kernels --jsonl "$file" |
    awk -v f="$(basename "$file")" '/^\{"record":"kernel"/ { k++ }
      /^\{"record":"code-object".*"format":"code-object"/ { c++ }
      END { printf "%s: %d code objects, %d kernels\n", f, c, k }'
done
echo

echo "## byte-identical output, baseline vs new (SHA-256 of stdout: the jax plugin's --json is 2 GB)"
for file in "$lib" "$jax"; do
  for mode in text --json; do
    for bin in base new; do
      # shellcheck disable=SC2086 # ${mode#text} is empty or one word
      "$work/rocpack-$bin" show -q --kernels ${mode#text} "$file" |
        tee >(wc -c > "$work/$bin.bytes") | sha256sum > "$work/$bin.sum"
    done
    sleep 1  # let the wc behind tee finish writing
    if cmp -s "$work/base.sum" "$work/new.sum"; then
      echo "$(basename "$file") show --kernels $mode: identical ($(cat "$work/new.bytes") bytes)"
    else
      echo "$(basename "$file") show --kernels $mode: DIFFERENT ($(cat "$work/base.bytes") vs $(cat "$work/new.bytes") bytes)"
      status=1
    fi
  done
done
echo

echo "## librocsparse show --kernels (text): wall time, hyperfine, $runs runs each, output to /dev/null"
hyperfine -N --warmup 1 --runs "$runs" --style basic \
  -n base "$work/rocpack-base show -q --kernels $lib" \
  -n new "$work/rocpack-new show -q --kernels $lib" 2>&1 | grep -v '^ *$'
echo

# One timed run: prints "wall user sys max_rss_kib".
timed() {
  /usr/bin/time -f '%e %U %S %M' -o "$work/time.txt" "$@" > /dev/null 2> "$work/stderr.txt" || true
  cat "$work/time.txt"
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# pairs FILE PAIRS MODE...: interleaved runs, medians per binary.
pairs() {
  local file=$1 n=$2 mode
  shift 2
  for mode in "$@"; do
    : > "$work/base.times"
    : > "$work/new.times"
    for _ in $(seq "$n"); do
      for bin in base new; do
        [ "$bin" = base ] && [ "$mode" = --jsonl ] && continue  # the baseline has no --jsonl
        # shellcheck disable=SC2086 # $mode is empty or one word
        timed "$work/rocpack-$bin" show -q --kernels ${mode#text} "$file" >> "$work/$bin.times"
      done
    done
    for bin in base new; do
      [ -s "$work/$bin.times" ] || continue
      printf '%-14s %-8s %-5s %8s %8s %8s %12s\n' "$(basename "$file" | cut -c1-14)" "$mode" "$bin" \
        "$(cut -d' ' -f1 "$work/$bin.times" | median)" "$(cut -d' ' -f2 "$work/$bin.times" | median)" \
        "$(cut -d' ' -f3 "$work/$bin.times" | median)" "$(cut -d' ' -f4 "$work/$bin.times" | median)"
    done
  done
}

echo "## /usr/bin/time, interleaved pairs, medians (librocsparse: $runs pairs; jax plugin: 1 pair)"
printf '%-14s %-8s %-5s %8s %8s %8s %12s\n' file mode bin wall_s user_s sys_s max_rss_kib
pairs "$lib" "$runs" text --json --jsonl
pairs "$jax" 1 text --json --jsonl
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
