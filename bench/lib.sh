# Shared by the scripts in bench/ and scripts/compare-outputs.sh (sourced, not run):
# tool checks, building rocpack (this tree, or any git revision in a temporary worktree),
# the Debian corpus the benchmarks use, results files and hyperfine.
#
#   . "$(dirname "$0")/lib.sh"     # from bench/; it cds to the top of the repository
#
# ROCPACK_BENCH_CACHE (default ~/.cache/rocpack-bench) holds the binaries built from revisions,
# one per commit (bin/rocpack-<sha>), and the target directory they are built in (target/):
# a revision is built once, in a worktree of its own, never in this tree's target/.

bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$bench_root"
bench_cache=${ROCPACK_BENCH_CACHE:-$HOME/.cache/rocpack-bench}

# The six Debian sid packages of bench/scan.sh, bench/embedded.sh and bench/run.sh (unpacked:
# about 6.6 GB in about 2,860 files).
BENCH_SCAN_PKGS=(librocrand1 librocsparse1 librocblas4 libhipblaslt1 librocfft0 libmiopen1)

bench_log() { echo "${bench_name:-bench}: $*" >&2; }

# bench_need CMD:DEBIAN_PACKAGE...: exits 1 naming the packages to install when a command is
# missing (say what to install rather than installing behind the user's back).
bench_need() {
  local pair missing=()
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair##*:}")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    bench_log "missing tools; install them with:"
    echo "  apt-get install $(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')" >&2
    exit 1
  fi
}

# bench_tree_desc: this tree's commit, and whether it has uncommitted changes outside
# bench/results.
bench_tree_desc() {
  local dirty=""
  git diff --quiet HEAD -- . ":!bench/results" || dirty=" + uncommitted changes"
  echo "$(git rev-parse --short HEAD)$dirty"
}

# bench_build_current DEST: builds this tree (release, --locked) and copies the binary to DEST,
# so that a rebuild during the run does not change what is measured.
bench_build_current() {
  nice cargo build --release --locked --quiet -p rocpack
  install -m 0755 "${CARGO_TARGET_DIR:-target}/release/rocpack" "$1"
}

# bench_build_rev REV DEST: the rocpack of git revision REV (release, --locked), built in a
# temporary worktree with the cache's own target directory, copied to DEST. A commit's binary
# is built once and kept in the cache.
bench_build_rev() {
  local rev=$1 dest=$2 sha wt
  sha=$(git rev-parse --verify "$rev^{commit}") || { bench_log "no such revision: $rev"; return 1; }
  local bin=$bench_cache/bin/rocpack-$sha
  mkdir -p "$bench_cache/bin"
  # One build at a time in the cache (two scripts may want the same commit at once).
  exec {lock}> "$bench_cache/bin/.lock"
  flock "$lock"
  if [ ! -x "$bin" ]; then
    wt=$(mktemp -d "${TMPDIR:-/tmp}/rocpack-rev.XXXXXX")
    git worktree add --quiet --detach "$wt" "$sha"
    bench_log "building $rev ($(git rev-parse --short "$sha")) in $wt, target $bench_cache/target"
    if ! (cd "$wt" && CARGO_TARGET_DIR="$bench_cache/target" nice cargo build --release --locked --quiet -p rocpack); then
      git worktree remove --force "$wt"
      exec {lock}>&-
      bench_log "building $rev failed"
      return 1
    fi
    cp "$bench_cache/target/release/rocpack" "$bin.tmp.$$"
    mv "$bin.tmp.$$" "$bin"
    git worktree remove --force "$wt"
  fi
  exec {lock}>&-
  install -m 0755 "$bin" "$dest"
}

# bench_corpus_lib: Debian sid's librocsparse.so.1.0 (1.6 GB, 1,420 code objects).
bench_corpus_lib() {
  echo "$(scripts/fetch-corpus.sh librocsparse1)/usr/lib/x86_64-linux-gnu/librocsparse.so.1.0"
}

# bench_roc_obj_ls: roc-obj-ls of Debian's hip-utils (a Perl script: run it with perl).
bench_roc_obj_ls() {
  echo "$(scripts/fetch-corpus.sh hip-utils)/usr/bin/roc-obj-ls"
}

# bench_results NAME [SUFFIX]: sends everything printed from now on to the terminal and to
# bench/results/NAME-<date>SUFFIX.txt, whose path it prints first.
bench_results() {
  local out=bench/results/$1-$(date -u +%Y-%m-%d)${2:-}.txt
  # A second run on the same day keeps the first one's raw output (which a note may cite).
  [ -e "$out" ] && out=bench/results/$1-$(date -u +%Y-%m-%dT%H%M)${2:-}.txt
  mkdir -p bench/results
  echo "raw output: $out" >&2
  exec > >(tee "$out") 2>&1
}

# bench_header TITLE: the first line of a results file: what, when, the machine and its load.
bench_header() {
  echo "# $1, $(date -u +%FT%TZ), $(nproc) cores, $(uname -r), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM, load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_hyperfine ARGS...: hyperfine in the basic style without its blank lines.
bench_hyperfine() {
  hyperfine --style basic "$@" 2>&1 | grep -v '^ *$'
}

# bench_warm FILE...: reads files into the page cache.
bench_warm() {
  cat "$@" > /dev/null
}

# bench_jax_plugin: the path of xla_rocm_plugin.so from the jax-rocm7-pjrt 0.12.0 wheel (459 MB;
# 45 zstd-compressed bundles, 31 of them over the 16 MiB window budget): the wheel is downloaded
# with pip into the corpus, and the plugin extracted once into the bench cache.
bench_jax_plugin() {
  local corpus=${ROCPACK_CORPUS:-$HOME/.cache/rocpack-corpus} wheel out=$bench_cache/xla_rocm_plugin-0.12.0.so
  if [ ! -e "$out" ]; then
    mkdir -p "$corpus/wheels" "$bench_cache"
    if ! ls "$corpus/wheels/jax_rocm7_pjrt-0.12.0-"*.whl >/dev/null 2>&1; then
      pip download --quiet --no-deps jax-rocm7-pjrt==0.12.0 -d "$corpus/wheels" >&2
    fi
    wheel=$(ls "$corpus/wheels/jax_rocm7_pjrt-0.12.0-"*.whl | head -n 1)
    python3 - "$wheel" "$out.tmp.$$" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    name = next(n for n in z.namelist() if n.endswith("xla_rocm_plugin.so"))
    with z.open(name) as src, open(sys.argv[2], "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
    mv "$out.tmp.$$" "$out"
  fi
  echo "$out"
}
