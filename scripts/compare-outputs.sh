#!/usr/bin/env bash
# Behaviour unchanged? Runs every read-only rocpack command, as text and as --json, with the same
# arguments through two builds, and compares what they print byte for byte (issue 15, part 4).
#
#   scripts/compare-outputs.sh [--quick] REV_A [REV_B|worktree]
#
# REV_A, REV_B: git revisions, built in temporary worktrees with their own target directory
# (release; bench/lib.sh, one build per commit, cached in ~/.cache/rocpack-bench); `worktree`
# (the default for the second) is this tree as it is, uncommitted changes included.
#
# Inputs: every fixture under tests/fixtures (each file, and the directory as a whole), the sysfs
# fixtures of crates/rocpack-devices (gpus, devices, check --sysfs-root), and the Debian sid
# packages the tests use (scripts/fetch-corpus.sh: unpacked directories, and their .debs read in
# place) plus the Debian root of scripts/fetch-root.sh (verify). --quick: fixtures only.
#
# Commands: list (plain, --all-entries, --verify), show, show --kernels, check --gpu (plain and
# -v), scan (plain and --gpu), extract --target (stdout, exit status, and the name and sha256 of
# every file written into a fresh directory), strip/compress/decompress --dry-run, verify,
# verify --list-libs, plan (requests × formats, --list-components, --list-families, -o DIR),
# plan verify, gpus, devices, every command's --help. Each is compared on stdout, stderr, exit
# status and the files written; progress is off (-q) where a command has it. Needs about 1.5 GB
# free in TMPDIR (extract of librocblas4's gfx90a code objects).
#
# Prints a summary: commands compared, how many differ, the first lines of each difference.
# Exit status: 0 when every output is identical, 1 when one differs, 2 when a build fails.
set -euo pipefail
bench_name=scripts/compare-outputs.sh
. "$(dirname "$0")/../bench/lib.sh"

quick=false
revs=()
for a in "$@"; do
  case $a in
    --quick) quick=true ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) bench_log "unknown option $a"; exit 2 ;;
    *) revs+=("$a") ;;
  esac
done
[ ${#revs[@]} -ge 1 ] && [ ${#revs[@]} -le 2 ] || { bench_log "usage: scripts/compare-outputs.sh [--quick] REV_A [REV_B|worktree]"; exit 2; }
rev_a=${revs[0]}
rev_b=${revs[1]:-worktree}
# Resolved once, now: a commit made while the builds run must not change what B is (or what the
# report calls it).
resolve() {  # resolve REV -> "NAME COMMIT", or "worktree worktree"
  if [ "$1" = worktree ]; then echo "worktree worktree"; else
    echo "$1 $(git rev-parse --verify --quiet "$1^{commit}" || { bench_log "unknown revision: $1"; exit 2; })"
  fi
}
read -r name_a rev_a < <(resolve "$rev_a") || exit 2
read -r name_b rev_b < <(resolve "$rev_b") || exit 2
[ -n "$rev_a" ] && [ -n "$rev_b" ] || exit 2
bench_need python3:python3 sha256sum:coreutils cmp:diffutils zstd:zstd git:git cargo:cargo

work=$(mktemp -d "${TMPDIR:-/tmp}/rocpack-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT
build() {  # build NAME COMMIT DEST -> prints a description
  if [ "$2" = worktree ]; then
    bench_build_current "$3" && echo "worktree ($(bench_tree_desc))"
  else
    bench_build_rev "$2" "$3" && echo "$1 (${2:0:7})"
  fi
}
# Each binary is called rocpack, in a directory of its own: clap prints the name it was run as.
mkdir "$work/a" "$work/b"
desc_a=$(build "$name_a" "$rev_a" "$work/a/rocpack") || exit 2
desc_b=$(build "$name_b" "$rev_b" "$work/b/rocpack") || exit 2
A=$work/a/rocpack
B=$work/b/rocpack

# --- comparing ----------------------------------------------------------------------------------
n=0
ndiff=0
report=$work/report.txt
: > "$report"
out=$work/out    # the directory extract and plan -o write into, the same path for both builds
# one SIDE BIN ARGS...: runs BIN in $work with ARGS: stdout into $work/SIDE.out.zst (compressed:
# show --kernels --json of a whole package is a single line of hundreds of MB), stderr into
# SIDE.err, the exit status into SIDE.rc, and the name and sha256 of every file extract or
# plan -o wrote into SIDE.files.
one() {
  local side=$1 bin=$2; shift 2
  rm -rf "$out"; mkdir -p "$out"
  set +e
  (cd "$work" && exec "$bin" "$@") 2> "$work/$side.err" | zstd -q -1 -c > "$work/$side.out.zst"
  local st=("${PIPESTATUS[@]}")
  set -e
  [ "${st[1]}" -eq 0 ] || { bench_log "zstd failed (disk full?) on: rocpack $*"; exit 2; }
  echo "${st[0]}" > "$work/$side.rc"
  (cd "$out" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum) > "$work/$side.files"
}
same_out() {
  cmp -s "$work/a.out.zst" "$work/b.out.zst" ||
    cmp -s <(zstd -dcq "$work/a.out.zst") <(zstd -dcq "$work/b.out.zst")
}
# cmp1 ARGS...: runs ARGS through both builds and compares.
cmp1() {
  one a "$A" "$@"
  one b "$B" "$@"
  n=$((n + 1))
  local what="" f
  same_out || what+=" out"
  for f in err rc files; do
    cmp -s "$work/a.$f" "$work/b.$f" || what+=" $f"
  done
  if [ -n "$what" ]; then
    ndiff=$((ndiff + 1))
    {
      echo "## rocpack $* (differs in:$what)"
      for f in rc out err files; do
        case $what in
          *"$f"*)
            if [ "$f" = out ]; then
              { diff <(zstd -dcq "$work/a.out.zst") <(zstd -dcq "$work/b.out.zst") || true; }
            else
              { diff "$work/a.$f" "$work/b.$f" || true; }
            fi | head -n 6 | cut -c1-300 | sed "s/^/  $f: /" ;;
        esac
      done
    } >> "$report"
  fi
  [ $((n % 200)) -ne 0 ] || bench_log "$n commands compared, $ndiff differ"
}
# both ARGS...: text and --json.
both() { cmp1 "$@"; cmp1 --json "$@"; }

# --- inputs -------------------------------------------------------------------------------------
mapfile -t fixtures < <(find "$bench_root/tests/fixtures/bin" "$bench_root/tests/fixtures/pe" "$bench_root/tests/fixtures/foreign" \
  -type f ! -name '*.sh' ! -name '*.py' ! -name '*.txt' ! -name '*.tsv' | sort)
sysfs=$bench_root/crates/rocpack-devices/tests/fixtures/sysfs
mapfile -t sysfs_dirs < <(find "$sysfs" -mindepth 1 -maxdepth 1 -type d | sort)
gpus=gfx90a,gfx1030,gfx1100,gfx942,gfx906
targets=(gfx1030 gfx90a gfx90a:xnack+ gfx906:sramecc-:xnack- gfx1100 gfx942 gfx11-generic)

# every command's --help, the catalogue, the machine's GPUs from fixtures
for c in list show extract check scan gpus devices strip verify plan compress decompress completions man; do
  cmp1 "$c" --help
done
cmp1 --help
for f in "" gfx90a navi21 gfx11 rdna3 7900 MI300 nonexistent; do both gpus $f; done
for d in "${sysfs_dirs[@]}"; do
  both devices --sysfs-root "$d" --amdgpu-ids "$sysfs/amdgpu.ids"
  both check -q --sysfs-root "$d" "$bench_root/tests/fixtures/bin"
done

# fixtures, one by one and as one directory
for f in "${fixtures[@]}" "$bench_root/tests/fixtures"; do
  both list -q "$f"
  both list -q --all-entries "$f"
  both list -q --verify "$f"
  both show -q "$f"
  both show -q --kernels "$f"
  both check -q --gpu "$gpus" "$f"
  both check -q -v --gpu "$gpus" --policy hip-legacy "$f"
  both scan -q "$f"
  both scan -q --gpu gfx90a,gfx1100 --policy debian "$f"
  both strip -q --dry-run --keep gfx90a "$f"
  both compress -q --dry-run "$f"
  both decompress -q --dry-run "$f"
  both verify --checks linkage "$f"
  if [ -f "$f" ]; then
    for t in "${targets[@]}"; do both extract -q -t "$t" -o "$out" "$f"; done
  fi
done

# plan: requests × formats, the lists, the cmake directory
for r in "--gpu gfx1030 --release 6.2" "--gpu gfx1100 --gpu gfx90a --release 6.4" \
         "--gpu gfx1151,gfx1201 --release 7.1" "--family gfx110X-dgpu --release 7.0" \
         "--gpu gfx90a --release 6.4 --components rocBLAS,MIOpen" "--gpu navi21 --release 6.4 --for spack"; do
  # shellcheck disable=SC2086
  for f in text json cmake spack gentoo nix therock; do cmp1 plan $r --format "$f"; done
done
for rel in 6.0 6.2 6.4 7.0 7.1; do
  both plan --list-components --release "$rel"
  both plan --list-families --release "$rel"
done
cmp1 plan --gpu gfx90a --release 6.4 --format cmake -o "$out"

if ! $quick; then
  # The Debian packages the tests use (crates/*/tests: fetch_corpus, verify_real's PACKAGES,
  # toolchain's DEBIAN_TOOLCHAIN), and the root of verify_real.
  pkgs=(librocrand1 librocsparse1 librocblas4 librocfft0 libhipblas2 libhiprand1 libhipfft0 libhipsparse1
        libmiopen1 libhipblaslt1 hipcc rocm-device-libs-21 libamdhip64-dev clang-21 libclang-common-21-dev
        libclang-cpp21)
  mapfile -t dirs < <(scripts/fetch-corpus.sh "${pkgs[@]}")
  root=$(scripts/fetch-root.sh)
  for d in "${dirs[@]}"; do
    both list -q "$d"
    both list -q --all-entries "$d"
    both show -q "$d"
    both check -q --gpu "$gpus" "$d"
    both scan -q "$d"
    both scan -q --gpu gfx90a,gfx1100 --policy debian "$d"
    both strip -q --dry-run --keep gfx90a "$d"
    both compress -q --dry-run "$d"
    both verify "$d"
    both verify --list-libs "$d"
    both extract -q -t gfx90a -o "$out" "$d"
  done
  # Each .deb read in place, but for the two largest (librocblas4, 280 MB, and libhipblaslt1,
  # 159 MB: each command on them takes half a minute; their unpacked trees are compared above).
  for d in "${dirs[@]}"; do
    case $(basename "$d") in librocblas4_*|libhipblaslt1_*) continue ;; esac
    deb=$(readlink -f "$d/.deb")
    both list -q "$deb"
    both scan -q "$deb"
    both check -q --gpu "$gpus" "$deb"
  done
  # Kernels of the two libraries the tests read (184,020 and about 4,000 kernels).
  for d in "${dirs[@]:0:2}"; do both show -q --kernels "$d"; done
  # plan verify, as crates/rocpack-plan/tests/verify_real.rs does.
  for r in "--gpu gfx1030 --release 6.4" "--family debian-sid --release 6.4"; do
    # shellcheck disable=SC2086
    "$A" plan $r --format json > "$work/plan.json" || true
    both plan verify "$work/plan.json" "${dirs[@]:0:9}"
  done
  both verify --root "$root"
  both verify --root "$root" --checks linkage,cmake
fi

# --- summary ------------------------------------------------------------------------------------
summary() {
  echo "compare-outputs: A = $desc_a, B = $desc_b$($quick && echo ', --quick')"
  echo "compare-outputs: $n commands compared (stdout, stderr, exit status, files written), $ndiff differ"
  if [ "$ndiff" -gt 0 ]; then
    echo
    cat "$report"
  fi
}
summary
[ "$ndiff" -eq 0 ]  || exit 1
