#!/usr/bin/env bash
# Developer harness (not CI: CI cannot reach the repositories): feeds `rocpack plan --format spack`
# to the real Spack concretizer, and re-extracts data/engines/spack.toml.
#
#   scripts/engines/spack/run.sh setup     # unpack Spack and spack-packages, configure them
#   scripts/engines/spack/run.sh extract   # rewrite crates/rocpack-plan/data/engines/spack.toml
#   scripts/engines/spack/run.sh check [LABEL]  # emit each request and `spack -e DIR concretize -f`
#
# Inputs (environment):
#   SPACK_GIT     git dir holding spack/spack commit $SPACK_COMMIT (a `fetch`ed mirror)
#   PACKAGES_GIT  git dir holding spack/spack-packages commit $PACKAGES_COMMIT
#   ENGINE_DIR    where to unpack and configure (default /work/engines)
# Needs python3 with clingo (`pip install clingo`), gcc/g++/gfortran on PATH, and cargo.
set -euo pipefail

SPACK_COMMIT=${SPACK_COMMIT:-9cf66332df3dd988248617fc93400045be59ebab}
PACKAGES_COMMIT=${PACKAGES_COMMIT:-1e8cf059e35d55c4fe1142fed41785bedf6c7246}
SPACK_GIT=${SPACK_GIT:-/work/.mirror/vjranagit+spack/repo}
PACKAGES_GIT=${PACKAGES_GIT:-/work/.mirror/spack+spack-packages/repo}
ENGINE_DIR=${ENGINE_DIR:-/work/engines}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)

# The requests of issue 13 and the ones added here: label and arguments.
REQUESTS=(
  "a|--gpu gfx1030 --release 6.2 --all"
  "b|--gpu gfx1100 --gpu gfx90a --release 6.4 --all"
  "c|--gpu gfx1151 --gpu gfx1201 --release 7.1 --all"
  "d|--gpu gfx942 --release 7.0 --all"
  "e|--gpu gfx1030 --release 6.0 --all"
)

spack_env() {
  export SPACK_ROOT=$ENGINE_DIR/spack
  export SPACK_USER_CONFIG_PATH=$ENGINE_DIR/spack-user
  export SPACK_SYSTEM_CONFIG_PATH=$ENGINE_DIR/spack-system
  export SPACK_USER_CACHE_PATH=$ENGINE_DIR/spack-cache
  export PATH=$SPACK_ROOT/bin:$PATH
}

setup() {
  python3 -c 'import clingo' || { echo "run.sh: pip install clingo first" >&2; exit 2; }
  mkdir -p "$ENGINE_DIR"
  rm -rf "$ENGINE_DIR/spack" "$ENGINE_DIR/spack-packages" "$ENGINE_DIR/spack-user" \
    "$ENGINE_DIR/spack-system" "$ENGINE_DIR/spack-cache"
  mkdir -p "$ENGINE_DIR/spack" "$ENGINE_DIR/spack-packages" "$ENGINE_DIR/spack-user" \
    "$ENGINE_DIR/spack-system"
  git --git-dir="$SPACK_GIT" archive "$SPACK_COMMIT" | tar -x -C "$ENGINE_DIR/spack"
  git --git-dir="$PACKAGES_GIT" archive "$PACKAGES_COMMIT" | tar -x -C "$ENGINE_DIR/spack-packages"
  spack_env
  # The default `builtin` repository is a git URL Spack clones on first use; point it at the
  # unpacked commit instead (the only configuration that is not a Spack command).
  printf 'repos::\n  builtin: %s\n' "$ENGINE_DIR/spack-packages/repos/spack_repo/builtin" \
    > "$SPACK_USER_CONFIG_PATH/repos.yaml"
  spack repo list
  # Compilers as a packager registers them: the system gcc (c, c++, fortran); clang-19, which
  # `compiler find` also detects, is removed so that gcc is the only compiler.
  spack compiler find --scope user /usr/bin
  if spack compiler list | grep -q 'llvm@'; then
    spack compiler remove --scope user "$(spack compiler list | grep -o 'llvm@[0-9.]*' | head -1)"
  fi
  spack compiler list
  spack --version
}

extract() {
  spack_env
  local date
  date=$(git --git-dir="$PACKAGES_GIT" log -1 --format=%cs "$PACKAGES_COMMIT")
  cd "$REPO"
  spack python scripts/engines/spack/extract.py \
    --spack-commit "$SPACK_COMMIT" --packages-commit "$PACKAGES_COMMIT" \
    --packages-date "$date" --packages-root "$ENGINE_DIR/spack-packages" \
    --out crates/rocpack-plan/data/engines/spack.toml
}

check() {
  local label=${1:-now}
  spack_env
  (cd "$REPO" && cargo build -q -p rocpack)
  local rocpack=$REPO/target/debug/rocpack out=$ENGINE_DIR/runs/$label
  mkdir -p "$out"
  for r in "${REQUESTS[@]}"; do
    local name=${r%%|*} args=${r#*|}
    local dir=$out/$name
    rm -rf "$dir" && mkdir -p "$dir"
    # shellcheck disable=SC2086
    "$rocpack" plan -q $args --format spack -o "$dir" || true
    local rc=0
    ( time nice spack -e "$dir" concretize -f ) > "$dir/concretize.log" 2>&1 || rc=$?
    if [ "$rc" = 0 ]; then
      echo "$name ($args): $(grep -m1 '^==> Concretized' "$dir/concretize.log" | sed 's/^==> //;s/:$//'), $(grep -cE '^( - |\[e\]|\[\+\])' "$dir/concretize.log") nodes"
    else
      echo "$name ($args): FAILED (exit $rc)"
      grep -E '^(==> Error|[[:space:]]+[0-9]+\. )' "$dir/concretize.log" | head -12 | sed 's/^/    /'
    fi
  done
}

case ${1:-} in
  setup) setup ;;
  extract) extract ;;
  check) shift; check "$@" ;;
  *) sed -n '2,14p' "$0"; exit 2 ;;
esac
