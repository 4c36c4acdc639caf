#!/usr/bin/env bash
# Benchmark: the floor under issue 16's two unmet speed targets — the least time any program
# takes on this machine to read the bytes rocpack reads — timed beside rocpack and the reference
# each target names, so that the target can be judged against what reading the files costs.
#
#  1. `list` on librocsparse.so.1.0, target: 10x faster than roc-obj-ls. The floor is a static
#     C program that replays rocpack's own `pread` calls (sizes and offsets taken with strace
#     from `rocpack list`) and does nothing else: no parsing, no output. Also timed: the replay
#     without the embedded-code search's reads (every `pread` of more than 4 KiB), the same
#     reads submitted together through io_uring (the batching issue 16 suggests; skipped where
#     the kernel refuses io_uring), a static C program and a Rust program that only print one
#     line (process start), and `rocpack --version`.
#  2. `scan -q` over the six packages of bench/run.sh, target: within 1.5x of `find DIRS -type f
#     -printf %s` (one fstatat per file). The floor is a static C program that, for every
#     regular file (the list made beforehand, untimed), opens it, reads its first 64 bytes and
#     closes it, on one thread and on two; that is less than any tool that looks inside each
#     file can do (rocpack also reads section headers, bundle tables and compressed streams).
#     Then the same program that also decodes, with zstd's own library and one context per
#     thread, the start of every zstd CCOB file's frame until its bundle's entry table is out
#     (hipBLASLt's 717 .co files): the least a reader built on zstd's library, which decodes a
#     block whole, must decode to learn their targets.
#
# hyperfine, warm page cache (each file read once before). Results also written to
# bench/results/floor-<date>.txt.
#
#   bench/floor.sh [RUNS]     default 40
set -euo pipefail
bench_name=floor
source "$(dirname "$0")/lib.sh"
runs=${1:-40}
bench_need hyperfine:hyperfine strace:strace gcc:gcc perl:perl rustc:rustc
if [ ! -f /usr/include/zstd.h ]; then
  bench_log "missing zstd's headers and static library; install them with:"
  echo "  apt-get install libzstd-dev" >&2
  exit 1
fi
scripts/install-deps.sh >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/rocpack-floor.XXXXXX")
trap 'rm -rf "$work"' EXIT
bench_build_current "$work/rocpack"
lib=$(bench_corpus_lib)
roc_obj_ls=$(bench_roc_obj_ls)
dirs=()
for p in "${BENCH_SCAN_PKGS[@]}"; do dirs+=("$(scripts/fetch-corpus.sh "$p")"); done

cat > "$work/replay.c" <<'EOF'
/* Replays (size, offset) preads listed in argv[2] on the file argv[1]; prints the byte total. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static char buf[1 << 20];
int main(int argc, char **argv) {
  if (argc != 3) return 2;
  FILE *f = fopen(argv[2], "r");
  if (!f) return 2;
  static long size[65536], off[65536];
  int n = 0;
  while (n < 65536 && fscanf(f, "%ld %ld", &size[n], &off[n]) == 2) n++;
  fclose(f);
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) return 2;
  long total = 0;
  for (int i = 0; i < n; i++) {
    long want = size[i] < (long)sizeof buf ? size[i] : (long)sizeof buf;
    long got = pread(fd, buf, want, off[i]);
    if (got < 0) return 1;
    total += got;
  }
  printf("%ld\n", total);
  return 0;
}
EOF
cat > "$work/heads.c" <<'EOF'
/* For every path in argv[1] (one per line): open it, read its first 64 bytes and close it, on
   THREADS threads; prints the bytes read. With a third argument `ccob`, also decode, when the
   file is a zstd CCOB, the start of its frame until the bundle's entry table is complete (the
   least a reader on zstd's library, which decodes a block whole, must decode to learn which
   targets the file holds), one zstd context per thread; then prints the CCOBs decoded and the
   entries found. */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
static char **paths;
static int npaths, nthreads, decode;
static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
/* Entries in a complete table at the start of out[0..len), -1 while it is incomplete. */
static long table_entries(const unsigned char *out, size_t len) {
  if (len < 32) return -1;
  uint64_t n = le(out + 24, 8), at = 32;
  if (n > 4096) return -2;
  for (uint64_t i = 0; i < n; i++) {
    if (at + 24 > len) return -1;
    at += 24 + le(out + at + 16, 8);
    if (at > len) return -1;
  }
  return (long)n;
}
/* Decodes the CCOB at the start of fd (head: its first got bytes) until its table is out: the
   table's entries, or a negative number when it is no zstd CCOB or does not decode. */
static long ccob_table(ZSTD_DCtx *dctx, int fd, const unsigned char *head, ssize_t got) {
  static __thread unsigned char in[16384], out[1 << 20];
  if (got < 24 || memcmp(head, "CCOB", 4) != 0 || le(head + 6, 2) != 1) return -3;
  unsigned version = le(head + 4, 2);
  uint64_t hdr = version == 1 ? 20 : version == 2 ? 24 : 32, total;
  if (version == 1) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -2;
    total = st.st_size;
  } else {
    total = version == 2 ? le(head + 8, 4) : le(head + 8, 8);
  }
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  ZSTD_outBuffer ob = {out, sizeof out, 0};
  uint64_t at = hdr;
  long n = -1;
  while (n == -1 && at < total) {
    size_t want = total - at < sizeof in ? total - at : sizeof in;
    ssize_t k = pread(fd, in, want, at);
    if (k <= 0) break;
    at += k;
    ZSTD_inBuffer ib = {in, (size_t)k, 0};
    while (ib.pos < ib.size && ob.pos < ob.size && n == -1) {
      if (ZSTD_isError(ZSTD_decompressStream(dctx, &ob, &ib))) return -2;
      n = table_entries(out, ob.pos);
    }
    if (ob.pos == ob.size) break; /* a table over 1 MiB: not counted */
  }
  return n;
}
struct result { long bytes, ccobs, entries; };
static void *work(void *arg) {
  long t = (long)arg;
  struct result *r = calloc(1, sizeof *r);
  ZSTD_DCtx *dctx = decode ? ZSTD_createDCtx() : NULL;
  if (dctx) ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 27);
  unsigned char head[64];
  for (int i = (int)t; i < npaths; i += nthreads) {
    int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t got = pread(fd, head, sizeof head, 0);
    if (got > 0) r->bytes += got;
    if (dctx) {
      long n = ccob_table(dctx, fd, head, got);
      if (n >= 0) {
        r->ccobs++;
        r->entries += n;
      }
    }
    close(fd);
  }
  ZSTD_freeDCtx(dctx);
  return r;
}
int main(int argc, char **argv) {
  if (argc != 3 && !(argc == 4 && strcmp(argv[3], "ccob") == 0)) return 2;
  nthreads = atoi(argv[2]);
  decode = argc == 4;
  if (nthreads < 1 || nthreads > 8) return 2;
  FILE *f = fopen(argv[1], "r");
  if (!f) return 2;
  size_t cap = 0;
  char *line = NULL;
  ssize_t len;
  while ((len = getline(&line, &cap, f)) > 0) {
    if (line[len - 1] == '\n') line[len - 1] = 0;
    paths = realloc(paths, sizeof *paths * (npaths + 1));
    paths[npaths++] = strdup(line);
  }
  fclose(f);
  pthread_t th[8];
  struct result all = {0, 0, 0};
  for (long t = 1; t < nthreads; t++) pthread_create(&th[t], NULL, work, (void *)t);
  for (long t = 0; t < nthreads; t++) {
    void *p = NULL;
    if (t == 0) p = work((void *)0);
    else pthread_join(th[t], &p);
    struct result *r = p;
    all.bytes += r->bytes;
    all.ccobs += r->ccobs;
    all.entries += r->entries;
  }
  if (decode) printf("%ld CCOBs, %ld entries\n", all.ccobs, all.entries);
  else printf("%ld\n", all.bytes);
  return 0;
}
EOF
cat > "$work/uring.c" <<'EOF'
/* As replay.c, but every read is submitted through one io_uring, up to 1,024 per
   io_uring_enter, waiting for all of them; exits 3 when the kernel refuses io_uring. */
#include <linux/io_uring.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#define MAXREADS 65536
#define DEPTH 1024
static unsigned long size[MAXREADS], off[MAXREADS];
int main(int argc, char **argv) {
  if (argc != 3) return 2;
  int fd = open(argv[1], O_RDONLY);
  FILE *f = fopen(argv[2], "r");
  if (fd < 0 || !f) return 2;
  long n = 0;
  size_t bytes = 0;
  while (n < MAXREADS && fscanf(f, "%lu %lu", &size[n], &off[n]) == 2) bytes += size[n++];
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  int ring = syscall(__NR_io_uring_setup, DEPTH, &p);
  if (ring < 0) { perror("io_uring_setup"); return 3; }
  size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
  char *sq = mmap(0, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
  char *cq = mmap(0, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
  struct io_uring_sqe *sqes = mmap(0, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
  if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) { perror("mmap"); return 3; }
  unsigned *array = (unsigned *)(sq + p.sq_off.array), *sq_tail = (unsigned *)(sq + p.sq_off.tail);
  unsigned *cq_head = (unsigned *)(cq + p.cq_off.head), *cq_tail = (unsigned *)(cq + p.cq_off.tail);
  struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
  char *buf = malloc(bytes ? bytes : 1);
  size_t at = 0;
  long next = 0, done = 0, total = 0;
  while (done < n) {
    unsigned tail = *sq_tail, k = 0;
    for (; next < n && k < p.sq_entries; next++, k++) {
      unsigned slot = (tail + k) & (p.sq_entries - 1);
      struct io_uring_sqe *e = &sqes[slot];
      memset(e, 0, sizeof *e);
      e->opcode = IORING_OP_READ;
      e->fd = fd;
      e->addr = (unsigned long)(buf + at);
      e->len = size[next];
      e->off = off[next];
      array[slot] = slot;
      at += size[next];
    }
    atomic_store_explicit((_Atomic unsigned *)sq_tail, tail + k, memory_order_release);
    if (syscall(__NR_io_uring_enter, ring, k, k, IORING_ENTER_GETEVENTS, NULL, 0) < 0) { perror("io_uring_enter"); return 3; }
    unsigned head = *cq_head, end = atomic_load_explicit((_Atomic unsigned *)cq_tail, memory_order_acquire);
    for (; head != end; head++, done++) total += cqes[head & (p.cq_entries - 1)].res;
    atomic_store_explicit((_Atomic unsigned *)cq_head, head, memory_order_release);
  }
  printf("%ld\n", total);
  return 0;
}
EOF
printf 'int main(void){return puts("x") < 0;}\n' > "$work/hello.c"
gcc -O2 -static -include stdio.h "$work/hello.c" -o "$work/hello"
# The start of any Rust program (std's runtime set-up, glibc loaded dynamically as rocpack's is).
printf 'fn main() {\n    println!("x");\n}\n' > "$work/hello.rs"
rustc -O -o "$work/hello-rust" "$work/hello.rs"
gcc -O2 -static "$work/replay.c" -o "$work/replay"
gcc -O2 -static -pthread "$work/heads.c" -o "$work/heads" -lzstd
gcc -O2 -static "$work/uring.c" -o "$work/uring"

# rocpack's own reads of the library, in its order.
strace -o "$work/list.strace" -e trace=pread64 "$work/rocpack" list "$lib" > /dev/null
sed -nE 's/^pread64\([0-9]+, .*, ([0-9]+), ([0-9]+)\) = [0-9]+$/\1 \2/p' "$work/list.strace" > "$work/reads.txt"
awk '$1 <= 4096' "$work/reads.txt" > "$work/reads-headers.txt"
find "${dirs[@]}" -type f > "$work/files.txt"
cat "$lib" > /dev/null
xargs -a "$work/files.txt" -d '\n' cat > /dev/null 2>&1 || true

bench_results floor
bench_header "bench/floor.sh"
echo "# list: $lib ($(stat -c %s "$lib") bytes)"
echo "# scan: ${#BENCH_SCAN_PKGS[@]} packages, $(wc -l < "$work/files.txt") regular files"
echo "# scan: zstd CCOB files whose bundle table the decoding floor reads: $("$work/heads" "$work/files.txt" 1 ccob)"
echo "# rocpack list's preads: $(wc -l < "$work/reads.txt") calls, $(awk '{s+=$1} END{print s}' "$work/reads.txt") bytes; of 4 KiB or less: $(wc -l < "$work/reads-headers.txt") calls, $(awk '{s+=$1} END{print s}' "$work/reads-headers.txt") bytes"
echo

echo "## 1. list"
# The io_uring replay must read what the pread replay reads, or it is not the same work.
uring=()
if replayed=$("$work/replay" "$lib" "$work/reads.txt") &&
  uringed=$("$work/uring" "$lib" "$work/reads.txt" 2> "$work/uring.err"); then
  if [[ $replayed != "$uringed" ]]; then
    echo "floor.sh: the io_uring replay read $uringed bytes, the pread replay $replayed" >&2
    exit 1
  fi
  uring=(-n 'replay of the preads <= 4 KiB, io_uring' "$work/uring $lib $work/reads-headers.txt"
    -n "replay of all rocpack list's preads, io_uring" "$work/uring $lib $work/reads.txt")
else
  echo "# io_uring replay skipped: $(cat "$work/uring.err")"
fi
hyperfine -N --warmup 3 --runs "$runs" --style basic --output=null \
  -n 'static C, one line (process start)' "$work/hello" \
  -n 'Rust, one line (process start)' "$work/hello-rust" \
  -n 'rocpack --version' "$work/rocpack --version" \
  -n 'replay of the preads <= 4 KiB' "$work/replay $lib $work/reads-headers.txt" \
  -n "replay of all rocpack list's preads" "$work/replay $lib $work/reads.txt" \
  "${uring[@]}" \
  -n 'rocpack list' "$work/rocpack list $lib" \
  -n 'roc-obj-ls' "perl $roc_obj_ls $lib" 2>&1 | grep -E '^Benchmark|Time|Range'
echo
echo "## 2. scan -q"
hyperfine -N --warmup 3 --runs "$runs" --style basic --output=null \
  -n 'find -printf %s (stat)' "find ${dirs[*]} -type f -printf %s\n" \
  -n 'open + read 64 B + close, 1 thread' "$work/heads $work/files.txt 1" \
  -n 'open + read 64 B + close, 2 threads' "$work/heads $work/files.txt 2" \
  -n "the same, and decode each zstd CCOB's bundle table, 1 thread" "$work/heads $work/files.txt 1 ccob" \
  -n "the same, and decode each zstd CCOB's bundle table, 2 threads" "$work/heads $work/files.txt 2 ccob" \
  -n 'rocpack scan -q' "$work/rocpack scan -q ${dirs[*]}" 2>&1 | grep -E '^Benchmark|Time|Range'
bench_log "done"
