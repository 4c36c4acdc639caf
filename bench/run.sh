#!/usr/bin/env bash
# The regression guard of issue 16: every benchmark, the baseline rocpack against this tree's,
# in one run; prints one table (benchmark, baseline median, current median, ratio, and the
# issue-16 target where there is one: met or not).
#
#   bench/run.sh [--quick] [--baseline REV] [--only NAME[,NAME...]]
#
# Baseline: REV, else the commit in bench/baseline.txt, else the merge-base of HEAD and main.
# It is built in a temporary worktree with its own target directory (bench/lib.sh; one build per
# commit, cached); this tree is built as it is (uncommitted changes included). When the
# baseline's sources (crates/, Cargo.toml, Cargo.lock) are this tree's, the one binary serves
# for both, and the ratios show the noise of the machine.
#
# Each benchmark runs the two binaries (and the reference a target names) in paired rounds,
# the order rotated every round (bench/paired.py): medians of wall time and CPU time, and for
# the slow ones the maximum RSS (/usr/bin/time's) and the peak RssAnon. Benchmarks (NAME):
#   list      rocpack list librocsparse.so.1.0; reference roc-obj-ls (target: >= 10x faster)
#   scan      rocpack scan -q over the six packages of bench/scan.sh; references
#             bench/scan_reference.py (target: >= 3x faster) and `find -printf %s`, which stats
#             every file (target: within 1.5x)
#   listdirs  rocpack list -q over the same six directories (bench/embedded.sh)
#   deb       rocpack scan -q librocsparse1's .deb, read in place (bench/packages.sh; not --quick)
#   kernels   rocpack show --kernels [--json] librocsparse.so.1.0 (target: < 64 MB RSS, < 1.5 s),
#             and show --kernels on jax-rocm7-pjrt 0.12.0's xla_rocm_plugin.so (bench/kernels.sh;
#             target: < 64 MB RSS)
#   extract   rocpack extract --target gfx1200 of hipBLASLt's largest code object (171 MB, in a
#             zstd CCOB whose window is decoded into a temporary file): wall and max RSS
#   strip     rocpack strip --keep gfx90a -o OUT librocsparse.so.1.0 (target: <= 256 MB RSS)
#   compress  rocpack compress -o OUT librocsparse.so.1.0 (target: <= 256 MB RSS); without
#             --quick also against clang-offload-bundler-19 -compress on the same bundles, two
#             at a time, in rounds with this tree's compress, the order turned each round
#             (bench/bundler.py; target: >= 1.5x faster, output no larger)
#   decompress rocpack decompress -o OUT COMPRESSED (target: <= 256 MB RSS)
#   plan      rocpack plan --gpu gfx1100,gfx90a --release 6.4 --all --format json (issue 13: < 100 ms)
#   verify    rocpack verify --checks linkage /usr/lib/x86_64-linux-gnu (not --quick)
# --quick: fewer runs, and not deb and verify (about 3 minutes, against about 8).
#
# A row without a target is a regression check: the ratio is the median, over the rounds, of
# baseline / current (wall time; maximum RSS for the memory rows); "slower" when it is under
# 1/1.1 and the current took longer (or more memory) in at least 3 rounds of 4 ("slower?" only,
# without changing the exit status, when there were fewer than 3 rounds).
# Exit status: 0; 1 if a row is "slower"; 2 if a command failed or a tool is missing.
# Raw output (every run's medians, min, max) goes to bench/results/run-<date>[-quick][-only-NAMES].txt.
#
# ROCPACK_BENCH_CACHE: the cache of baseline builds and the scratch directory for the copies
# strip/compress/decompress write (about 3.5 GB at most; 5 GB with the bundler's bundles),
# default ~/.cache/rocpack-bench; it should be on the corpus's filesystem.
set -euo pipefail
bench_name=bench/run.sh
. "$(dirname "$0")/lib.sh"

quick=false
baseline=""
only=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=true ;;
    --baseline) baseline=${2:?--baseline needs a revision}; shift ;;
    --baseline=*) baseline=${1#*=} ;;
    --only) only=${2:?--only needs names}; shift ;;
    --only=*) only=${1#*=} ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) bench_log "unknown argument $1 (see --help)"; exit 2 ;;
  esac
  shift
done
bench_need python3:python3 perl:perl cargo:cargo git:git find:findutils sync:coreutils
perl -MFile::Which -e1 2>/dev/null || { bench_log "roc-obj-ls needs: apt-get install libfile-which-perl"; exit 2; }
perl -MURI::Escape -e1 2>/dev/null || { bench_log "roc-obj-ls needs: apt-get install liburi-perl"; exit 2; }
want() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

if [ -z "$baseline" ] && [ -f bench/baseline.txt ]; then
  baseline=$(grep -v '^ *#' bench/baseline.txt | awk 'NF { print $1; exit }')
fi
[ -n "$baseline" ] || baseline=$(git merge-base HEAD main)

work=$(mktemp -d "${TMPDIR:-/tmp}/rocpack-bench-run.XXXXXX")
scratch=$bench_cache/scratch
trap 'rm -rf "$work" "$scratch"' EXIT
mkdir -p "$scratch"

# --- the two binaries ---------------------------------------------------------------------------
bench_build_current "$work/rocpack-new"
if git diff --quiet "$baseline" -- crates Cargo.toml Cargo.lock; then
  cp "$work/rocpack-new" "$work/rocpack-base"
  same_source=" (same sources as the current tree: one binary)"
else
  bench_build_rev "$baseline" "$work/rocpack-base" || exit 2
  same_source=""
fi
base=$work/rocpack-base
new=$work/rocpack-new

# --- the corpus ---------------------------------------------------------------------------------
lib=$(bench_corpus_lib)
roc_obj_ls=$(bench_roc_obj_ls)
mapfile -t dirs < <(scripts/fetch-corpus.sh "${BENCH_SCAN_PKGS[@]}")
deb=$(readlink -f "$(scripts/fetch-corpus.sh librocsparse1)/.deb")

suffix=${only:+-only-${only//,/-}}
if $quick; then
  r_fast=10 r_scan=5 r_dirs=3 r_slow=1 r_plan=10
  bench_results run "-quick$suffix"
else
  r_fast=30 r_scan=15 r_dirs=7 r_slow=3 r_plan=30
  bench_results run "$suffix"
fi
bench_header "bench/run.sh$($quick && echo ' --quick')"
echo "# baseline: $baseline ($(git rev-parse --short "$baseline"))$same_source; current: $(bench_tree_desc)"
echo "# list/kernels/strip/compress/decompress: $lib ($(stat -c %s "$lib") bytes)"
printf '# scan/listdirs:'; printf ' %s' "${dirs[@]}"; echo
echo "# rounds: paired, order rotated each round, 1 warm-up round (none for strip/compress/decompress)"
echo

table=$work/table.tsv
status=0
# row BENCHMARK METRIC BASELINE CURRENT RATIO TARGET VERDICT
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$table"; }
# get JSON NAME FIELD: the median FIELD (wall, user, sys, max_rss_kib, peak_rss_anon_kib) of NAME.
get() {
  python3 -c 'import json, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["commands"]}
print(d[sys.argv[2]]["median"][sys.argv[3]])' "$@"
}
rounds() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["runs"])' "$1"; }
# largest JSON NAME FIELD: the largest FIELD of NAME over its runs (memory targets are judged on it).
largest() {
  python3 -c 'import json, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["commands"]}
print(max(s[sys.argv[3]] for s in d[sys.argv[2]]["samples"]))' "$@"
}
# calc EXPR: awk arithmetic, printed with up to 3 significant decimals.
calc() { awk "BEGIN { printf \"%.2f\", $1 }"; }
secs() { awk -v s="$1" 'BEGIN { if (s < 1) printf "%.1f ms", s * 1000; else printf "%.2f s", s }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }
# paired NAME RUNS [paired.py options] -- NAME=CMD...: runs bench/paired.py, raw lines to the output.
paired() {
  local name=$1 runs=$2; shift 2
  echo "## $name"
  if ! python3 bench/paired.py --runs "$runs" --json "$work/$name.json" "$@"; then
    echo "  FAILED (see above)"; status=2; return 1
  fi
}
# pairs JSON FIELD [X Y]: the medians of FIELD of commands X and Y (default base and new), the
# median over the rounds of X / Y (each round's commands ran back to back), and the share of
# rounds in which Y was above X.
pairs() {
  python3 -c 'import json, statistics, sys
d = {c["name"]: c for c in json.load(open(sys.argv[1]))["commands"]}
f = sys.argv[2]
b = [s[f] for s in d[sys.argv[3]]["samples"]]
n = [s[f] for s in d[sys.argv[4]]["samples"]]
r = statistics.median(x / y if y else 1.0 for x, y in zip(b, n))
print(statistics.median(b), statistics.median(n), r, sum(y > x for x, y in zip(b, n)) / len(n))' "$@"
}
# regression BENCH METRIC FIELD JSON: a row comparing baseline and current on FIELD, no target.
# "slower": the median of the rounds' ratios is under 1/1.1 and the current was above the
# baseline in at least 3 rounds of 4, in at least 3 rounds.
regression() {
  local bench=$1 metric=$2 field=$3 json=$4 b n r up fmt=secs verdict=ok
  read -r b n r up < <(pairs "$json" "$field" base new)
  [ "$field" = wall ] || fmt=mib
  if awk -v r="$r" -v up="$up" 'BEGIN { exit !(r < 1 / 1.1 && up >= 0.75) }'; then
    if [ "$(rounds "$json")" -ge 3 ]; then
      verdict=slower
      [ "$status" -ne 0 ] || status=1
    else
      verdict="slower? ($(rounds "$json") round)"
    fi
  fi
  row "$bench" "$metric" "$($fmt "$b")" "$($fmt "$n")" "$(calc "$r")" "—" "$verdict"
}
met() { awk "BEGIN { exit !($1) }" && echo met || echo "not met"; }

# --- list ---------------------------------------------------------------------------------------
if want list; then
  bench_warm "$lib"
  if paired list "$r_fast" -- "base=$base list $lib" "new=$new list $lib" "roc-obj-ls=perl $roc_obj_ls $lib"; then
    j=$work/list.json
    regression list "wall" wall "$j"
    read -r r n q _ < <(pairs "$j" wall roc-obj-ls new)
    row list "wall vs roc-obj-ls" "$(secs "$r") (roc-obj-ls)" "$(secs "$n")" "$(calc "$q")×" "≥10× faster than roc-obj-ls" "$(met "$q >= 10")"
  fi
fi

# --- scan ---------------------------------------------------------------------------------------
if want scan; then
  cmds=("base=$base scan -q ${dirs[*]}" "new=$new scan -q ${dirs[*]}" "stat=find ${dirs[*]} -printf %s")
  have_ref=false
  if [ -f bench/scan_reference.py ]; then
    cmds+=("reference=python3 bench/scan_reference.py ${dirs[*]}"); have_ref=true
  fi
  if paired scan "$r_scan" -- "${cmds[@]}"; then
    j=$work/scan.json
    regression "scan -q" wall wall "$j"
    if $have_ref; then
      read -r r n q _ < <(pairs "$j" wall reference new)
      row "scan -q" "wall vs scan_reference.py" "$(secs "$r") (reference)" "$(secs "$n")" "$(calc "$q")×" "≥3× faster than the reference" "$(met "$q >= 3")"
    else
      row "scan -q" "wall vs scan_reference.py" "" "" "" "≥3× faster than the reference" "reference missing"
    fi
    read -r st n q _ < <(pairs "$j" wall stat new)
    row "scan -q" "wall vs stat of every file" "$(secs "$st") (find -printf %s)" "$(secs "$n")" "$(calc "1 / $q")× stat" "≤1.5× the time to stat every file" "$(met "1 / $q <= 1.5")"
  fi
fi

# --- list of the six directories ----------------------------------------------------------------
if want listdirs && paired listdirs "$r_dirs" -- "base=$base list -q ${dirs[*]}" "new=$new list -q ${dirs[*]}"; then
  regression "list -q (6 dirs)" wall wall "$work/listdirs.json"
fi

# --- a .deb read in place -----------------------------------------------------------------------
if ! $quick && want deb; then
  bench_warm "$deb"
  if paired deb "$r_slow" --rss -- "base=$base scan -q $deb" "new=$new scan -q $deb"; then
    regression "scan -q .deb" wall wall "$work/deb.json"
    regression "scan -q .deb" "max RSS" max_rss_kib "$work/deb.json"
  fi
fi

# --- show --kernels -----------------------------------------------------------------------------
if want kernels; then
  bench_warm "$lib"
  for flags in "" "--json"; do
    name=kernels${flags:+-json}
    label="show --kernels${flags:+ $flags}"
    paired "$name" "$r_slow" --rss -- "base=$base show --kernels $flags $lib" "new=$new show --kernels $flags $lib" || continue
    j=$work/$name.json
    regression "$label" wall wall "$j"
    regression "$label" "max RSS" max_rss_kib "$j"
    n=$(get "$j" new wall); m=$(largest "$j" new max_rss_kib)
    row "$label" "target (median s, largest RSS)" "" "$(secs "$n"), $(mib "$m")" "" "< 64 MB RSS and < 1.5 s" "$(met "$m < 62500 && $n < 1.5")"
  done
  # The jax-rocm7-pjrt plugin: compressed bundles whose windows exceed the budget (issue 16's
  # memory target there; about 8 s a run, so run as the slow benchmarks are).
  jax=$(bench_jax_plugin)
  bench_warm "$jax"
  if paired kernels-jax "$r_slow" --rss -- "base=$base show --kernels $jax" "new=$new show --kernels $jax"; then
    j=$work/kernels-jax.json
    regression "show --kernels (jax plugin)" wall wall "$j"
    regression "show --kernels (jax plugin)" "max RSS" max_rss_kib "$j"
    m=$(largest "$j" new max_rss_kib)
    # 64 MB = 64,000,000 bytes = 62,500 KiB (the stricter reading of the issue's "MB").
    row "show --kernels (jax plugin)" "target (largest RSS)" "" "$m KiB" "" "< 64 MB RSS" "$(met "$m < 62500")"
  fi
fi

# --- extract of the largest code object -----------------------------------------------------------
# hipBLASLt's TensileLibrary_HH_HH_…_Bljk_…_gfx1200.co: one 171,171,656-byte code object in a zstd
# CCOB. Each written file is removed before the next run.
if want extract; then
  big=$(ls "$(scripts/fetch-corpus.sh libhipblaslt1)"/usr/lib/x86_64-linux-gnu/hipblaslt/library/TensileLibrary_HH_HH_HA_Bias_SAV_UA_Type_HH_HPA_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx1200.co)
  bench_warm "$big"
  ex=$scratch/extract
  if paired extract "$r_slow" --rss --prepare "rm -rf $ex" -- \
       "base=$base extract --target gfx1200 -o $ex $big" "new=$new extract --target gfx1200 -o $ex $big"; then
    regression "extract (171 MB code object)" wall wall "$work/extract.json"
    regression "extract (171 MB code object)" "max RSS" max_rss_kib "$work/extract.json"
  fi
  rm -rf "$ex"
fi

# --- strip, compress, decompress: memory --------------------------------------------------------
# max RSS counts the pages of the mapped library too; the raw output also has the peak RssAnon.
slim_row() {
  local label=$1 j=$2 m a
  regression "$label" wall wall "$j"
  regression "$label" "max RSS" max_rss_kib "$j"
  m=$(largest "$j" new max_rss_kib); a=$(largest "$j" new peak_rss_anon_kib)
  # 256 MB = 256,000,000 bytes = 250,000 KiB (the stricter reading of the issue's "MB").
  row "$label" "target (largest run)" "" "$(mib "$m") (anon $(mib "$a"))" "" "≤ 256 MB RSS" "$(met "$m <= 250000")"
}
if want strip || want compress || want decompress; then
  # The copies, and without --quick the bundler's bundles and entries (bench/bundler.py).
  gib=5; $quick && gib=4
  need=$(( gib * 1024 * 1024 * 1024 ))
  avail=$(df -B1 --output=avail "$scratch" | tail -n 1)
  if [ "$avail" -lt "$need" ]; then
    echo "## strip/compress/decompress: SKIPPED, $scratch has $avail bytes free, needs $need"; status=2
  else
    bench_warm "$lib"
    out=$scratch/out.so
    if want strip && paired strip "$r_slow" --warmup 0 --sample-rss --prepare "rm -f $out; sync" -- \
         "base=$base strip -q --keep gfx90a -o $out $lib" "new=$new strip -q --keep gfx90a -o $out $lib"; then
      slim_row "strip --keep gfx90a" "$work/strip.json"
    fi
    comp=$scratch/compressed.so
    if want compress && paired compress "$r_slow" --warmup 0 --sample-rss --prepare "rm -f $out; sync" -- \
         "base=$base compress -q -o $out $lib" "new=$new compress -q -o $out $lib"; then
      slim_row compress "$work/compress.json"
      if $quick; then
        row compress "wall vs clang-offload-bundler-19 -compress ×2" "" "" "" "≥1.5× faster, output no larger" "not measured with --quick"
      elif ! command -v clang-offload-bundler-19 >/dev/null; then
        row compress "wall vs clang-offload-bundler-19 -compress ×2" "" "" "" "≥1.5× faster, output no larger" "not measured: no clang-offload-bundler-19 (apt-get install clang-tools-19)"
        status=2
      else
        # The bundler on the same bundles, two processes at a time (bench/bundler.py: untimed
        # checks that both compress the same bytes, then timed in rounds with the current
        # rocpack's compress, the order turned each round): the median of the rounds' ratios.
        rm -f "$out"
        "$new" compress -q -o "$comp" "$lib"
        "$new" show --json "$lib" > "$work/orig.show.json"
        "$new" show --json "$comp" > "$work/comp.show.json"
        echo "## clang-offload-bundler-19 -compress (bench/bundler.py)"
        if python3 bench/bundler.py "$lib" "$comp" "$work/orig.show.json" "$work/comp.show.json" \
             "$scratch/bundles" "$work/bundler.json" "$new" compress -q -o "$out" "$lib"; then
          read -r par n ratio bl rp < <(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
w = sorted(d["rocpack_walls"])
print(d["par2_wall"], w[len(w) // 2], d["paired_ratio"], d["bundler_after"], d["rocpack_after"])' "$work/bundler.json")
          rm -f "$out"
          row compress "wall vs clang-offload-bundler-19 -compress ×2" "$(secs "$par") (bundler)" "$(secs "$n")" \
            "$(calc "$ratio")×" "≥1.5× faster, output no larger" \
            "$(met "$ratio >= 1.5 && $rp <= $bl") (bytes $rp vs $bl)"
        else
          echo "  FAILED (see above)"; status=2
        fi
      fi
    fi
    if want decompress; then
      rm -f "$out"
      # The input: compressed once, untimed, by the current build (the baseline's if that fails).
      [ -s "$comp" ] || "$new" compress -q -o "$comp" "$lib" || "$base" compress -q -o "$comp" "$lib"
      bench_warm "$comp"
      if paired decompress "$r_slow" --warmup 0 --sample-rss --prepare "rm -f $out; sync" -- \
           "base=$base decompress -q -o $out $comp" "new=$new decompress -q -o $out $comp"; then
        slim_row decompress "$work/decompress.json"
      fi
    fi
    rm -rf "$out" "$comp" "$scratch/bundles"
  fi
fi

# --- plan ---------------------------------------------------------------------------------------
if want plan; then
  p="plan --gpu gfx1100 --gpu gfx90a --release 6.4 --all --format json"
  if paired plan "$r_plan" --ignore-failure -- "base=$base $p" "new=$new $p"; then
    regression "plan --all --format json" wall wall "$work/plan.json"
    n=$(get "$work/plan.json" new wall)
    row "plan --all --format json" target "" "$(secs "$n")" "" "< 100 ms (issue 13)" "$(met "$n < 0.1")"
  fi
fi

# --- verify -------------------------------------------------------------------------------------
if ! $quick && want verify; then
  v="verify --checks linkage /usr/lib/x86_64-linux-gnu"
  if paired verify "$r_fast" --ignore-failure -- "base=$base $v" "new=$new $v"; then
    regression "verify --checks linkage /usr/lib" wall wall "$work/verify.json"
  fi
fi

# --- the table ----------------------------------------------------------------------------------
echo
echo "## summary (ratio = baseline / current: above 1 is faster or smaller; against a reference,"
echo "## reference / current; medians of paired runs)"
echo
python3 - "$table" <<'EOF'
import sys
head = ["benchmark", "metric", "baseline", "current", "ratio", "issue-16 target", "verdict"]
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
rows = [[c if c else "" for c in r] for r in rows]
w = [max(len(x) for x in col) for col in zip(head, *rows)]
fmt = lambda r: "| " + " | ".join(c.ljust(n) for c, n in zip(r, w)) + " |"
print(fmt(head))
print("|" + "|".join("-" * (n + 2) for n in w) + "|")
for r in rows:
    print(fmt(r))
EOF
echo
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
