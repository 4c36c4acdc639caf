#!/usr/bin/env bash
# Benchmark: `rocpack list` on Debian sid's librocsparse.so.1.0 (1.6 GB, 142 bundles x 10 GPUs)
# against roc-obj-ls (hip-utils) and clang-offload-bundler-19 --list.
#
# Reports, per tool: wall time (hyperfine, warm cache), max RSS (/usr/bin/time), and bytes of
# the library actually read from disk on a cold cache (the file's pages are evicted with
# posix_fadvise(DONTNEED), the tool runs, then `fincore` counts the file's resident bytes).
#
# Issue 16's target first: `rocpack list` at least 10x faster than roc-obj-ls, from paired
# runs: ROUNDS rounds (default 15), each timing both tools back to back with hyperfine (3 runs
# each, order alternating from round to round); the ratio of the two medians per round, and the
# median of those ratios, are printed with the target, met or not.
#
#   bench/list.sh [RUNS [ROUNDS]]   results also written to bench/results/list-<date>.txt
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
rounds=${2:-15}
scripts/install-deps.sh
for tool in hyperfine:hyperfine fincore:util-linux strace:strace jq:jq; do
  command -v "${tool%%:*}" >/dev/null || { apt-get update -qq && apt-get install -y -qq "${tool##*:}" >/dev/null; }
done
cargo build --release --locked --quiet -p rocpack
rocpack=$PWD/target/release/rocpack
lib=$(scripts/fetch-corpus.sh librocsparse1)/usr/lib/x86_64-linux-gnu/librocsparse.so.1.0
roc_obj_ls=$(scripts/fetch-corpus.sh hip-utils)/usr/bin/roc-obj-ls
out=bench/results/list-$(date -u +%Y-%m-%d).txt
mkdir -p bench/results
exec > >(tee "$out") 2>&1

echo "# rocpack list benchmark, $(date -u +%FT%TZ), $(nproc) cores, $(uname -r)"
echo "# file: $lib ($(stat -c %s "$lib") bytes)"
echo "# rocpack $(git rev-parse --short HEAD), $(clang-offload-bundler-19 --version | head -n 1), roc-obj-ls from $(basename "$(dirname "$(dirname "$(dirname "$roc_obj_ls")")")")"

# What each tool reports, so the comparison is like for like.
n_rocpack=$("$rocpack" list --json "$lib" | wc -l)
n_targets=$("$rocpack" list --json "$lib" | grep -c '"target":"gfx')
n_roc=$(perl "$roc_obj_ls" "$lib" 2>/dev/null | grep -c 'file://')
n_roc_dev=$(perl "$roc_obj_ls" "$lib" 2>/dev/null | grep 'file://' | grep -vc '^[0-9]* *host-')
# clang-offload-bundler lists nothing for a host library: .hip_fatbin must be dumped first
# (outside the timing), and then it reads only the first bundle of the dump.
fatbin=$(mktemp /tmp/rocpack-bench-fatbin.XXXXXX)
trap 'rm -f "$fatbin" "$fatbin.o"' EXIT
# Copied with dd from the section's offset and size (llvm-objcopy --dump-section would also
# write a copy of the whole library, 1.6 GB more on disk).
read -r fb_off fb_size < <(llvm-readelf-19 -SW "$lib" | awk '$2 == ".hip_fatbin" { print $5, $6 }')
dd if="$lib" of="$fatbin" bs=1M iflag=skip_bytes,count_bytes skip=$((16#$fb_off)) count=$((16#$fb_size)) status=none
n_bundler=$(clang-offload-bundler-19 --list --type=o --input="$fatbin" | wc -l)
echo "rocpack list: $n_rocpack device code objects, $n_targets with a target decoded from the code object's ELF header"
echo "roc-obj-ls:   $n_roc entries ($n_roc_dev device entries; targets only as written in the entry IDs)"
echo "clang-offload-bundler-19 --list on the dumped .hip_fatbin: $n_bundler entries (it reads only the first bundle)"
echo

echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## issue 16 target: rocpack list at least 10x faster than roc-obj-ls (paired runs, warm cache)"
cat "$lib" > /dev/null
pairs=$(mktemp /tmp/rocpack-bench-pairs.XXXXXX)
for round in $(seq "$rounds"); do
  # Alternate which tool runs first, so neither always follows the other.
  if [ $((round % 2)) -eq 1 ]; then
    order=(-n rocpack "$rocpack list $lib" -n roc-obj-ls "perl $roc_obj_ls $lib")
  else
    order=(-n roc-obj-ls "perl $roc_obj_ls $lib" -n rocpack "$rocpack list $lib")
  fi
  hyperfine -N --warmup 1 --runs 3 --style none --output=null "${order[@]}" \
    --export-json /tmp/rocpack-bench-pair.json > /dev/null 2>&1
  r=$(jq -r '.results[] | select(.command == "rocpack") | .median' /tmp/rocpack-bench-pair.json)
  o=$(jq -r '.results[] | select(.command == "roc-obj-ls") | .median' /tmp/rocpack-bench-pair.json)
  echo "$r $o" >> "$pairs"
done
awk '{ printf "round %2d: rocpack %.2f ms, roc-obj-ls %.2f ms, ratio %.1f\n", NR, $1 * 1000, $2 * 1000, $2 / $1 }' "$pairs"
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med_r=$(awk '{ print $1 }' "$pairs" | median)
med_o=$(awk '{ print $2 }' "$pairs" | median)
med_ratio=$(awk '{ print $2 / $1 }' "$pairs" | median)
rm -f "$pairs"
awk -v r="$med_r" -v o="$med_o" -v q="$med_ratio" -v n="$rounds" 'BEGIN {
  printf "medians over %d rounds: rocpack %.2f ms, roc-obj-ls %.2f ms; median ratio %.1fx (target: at least 10x): %s\n",
    n, r * 1000, o * 1000, q, (q >= 10 ? "MET" : "NOT MET") }'
echo "rocpack --version (process start), for scale:"
hyperfine -N --warmup 3 --runs 30 --style basic --output=null -n 'rocpack --version' "$rocpack --version" 2>&1 | grep -E 'Time|Range'
echo

echo "## wall time, warm cache ($runs runs each)"
cat "$lib" > /dev/null
hyperfine -N --warmup 2 --runs "$runs" --style basic \
  -n rocpack "$rocpack list $lib" \
  -n roc-obj-ls "perl $roc_obj_ls $lib" \
  --export-json /tmp/rocpack-bench.json 2>&1 | grep -v '^ *$'
hyperfine -N --warmup 1 --runs 3 --style basic \
  -n clang-offload-bundler-19 "clang-offload-bundler-19 --list --type=o --input=$fatbin" 2>&1 | grep -v '^ *$'
echo

echo "## max RSS (KiB), warm cache"
for cmd in "$rocpack list $lib" "perl $roc_obj_ls $lib" "clang-offload-bundler-19 --list --type=o --input=$fatbin"; do
  /usr/bin/time -f "%M KiB  ${cmd%% *}" $cmd > /dev/null 2> /tmp/rocpack-time.txt || true
  tail -n 1 /tmp/rocpack-time.txt
done
echo

echo "## bytes of the library read from disk, cold cache (fincore after posix_fadvise DONTNEED)"
evict() { python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$lib"; }
resident() { fincore --bytes --noheadings --output RES "$lib" | tr -d ' '; }
for cmd in "$rocpack list $lib" "perl $roc_obj_ls $lib"; do
  evict
  before=$(resident)
  $cmd > /dev/null 2>&1
  echo "$(( $(resident) - before )) bytes  ${cmd%% *} (resident before: $before)"
done
echo

echo "## bytes requested from the library through read/pread (strace), and pages mapped in"
# rocpack reads small headers with pread (every code object header of the fat binary in one
# batch, spread over its threads) and maps the file for the rest; count both.
strace -f -e trace=pread64,read -o /tmp/rocpack-strace.txt "$rocpack" list "$lib" > /dev/null
fd_bytes=$(awk '/pread64\(3,/ { n = $NF; if (n ~ /^[0-9]+$/) s += n } END { print s + 0 }' /tmp/rocpack-strace.txt)
preads=$(grep -c 'pread64(3,' /tmp/rocpack-strace.txt || true)
echo "rocpack: $fd_bytes bytes in $preads pread calls"
strace -f -e trace=read,pread64,lseek -o /tmp/rocobjls-strace.txt perl "$roc_obj_ls" "$lib" > /dev/null 2>&1
echo "roc-obj-ls (perl and its objdump children): $(awk '/^[0-9]+ +read\(/ && !/ENOENT/ { n = $NF; if (n ~ /^[0-9]+$/) s += n } END { print s + 0 }' /tmp/rocobjls-strace.txt) bytes in read calls (all files, including perl modules)"
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
