#!/usr/bin/env python3
"""The baseline of `rocpack compress`: clang-offload-bundler-19 -compress on the same bundles.

    bench/bundler.py LIB COMPRESSED ORIG_SHOW_JSON COMPRESSED_SHOW_JSON SCRATCH_DIR RESULT_JSON [ROCPACK_CMD...]

LIB is the uncompressed library, COMPRESSED what `rocpack compress` made of it, the two JSON
files `rocpack show --json` of each. Untimed: each bundle is cut out of LIB, unbundled into its
entries and rebundled uncompressed, which must give its bytes back (so that both tools compress
the same data: -bundle-align=4096, and the host target without the trailing "-", as the HIP
driver passes them); rocpack's CCOB at the same offset (length from its header) must be listed
and unbundled by clang-offload-bundler-19 into the same entries. Timed: rebundling the entries
with -compress, one process per bundle, one after another (once) and two at a time (both
cores; PAR_ROUNDS times, default 3, the median reported). Given ROCPACK_CMD (a `rocpack compress
... -o OUT LIB` command line), it is timed in the same rounds, the order of the two turned every
round (OUT removed and the disks synced before each of both), so that the ratio compares runs
made under the same load: this machine's speed drifts by a third within minutes, and a ratio of
medians taken minutes apart measured the drift as much as the tools. The ratio reported is the
median over the rounds of bundler ÷ rocpack.
Writes RESULT_JSON (bundles, bytes before, bundler_after, rocpack_after, seq_wall, par2_wall,
and with ROCPACK_CMD rocpack_walls and paired_ratio, ...) and prints a summary. Used by
bench/slim.sh and bench/run.sh.
"""
import json, os, subprocess, sys, time, struct, shutil
from concurrent.futures import ThreadPoolExecutor
if len(sys.argv) < 7:
    sys.exit(__doc__)
lib, comp, oshow, cshow, bdir, result = sys.argv[1:7]
rocpack_cmd = sys.argv[7:]
if rocpack_cmd and "-o" not in rocpack_cmd[:-1]:
    sys.exit("bundler.py: ROCPACK_CMD must name its output with -o OUT")
B = "clang-offload-bundler-19"
o = json.load(open(oshow)); c = json.load(open(cshow))
bundles = [x for x in o["containers"] if x["type"] == "bundle"]
ccobs = {x["file_offset"]: x for x in c["containers"] if x["type"] == "ccob"}
entries = {}
for co in o["code_objects"]:
    entries.setdefault(co["container"], []).append((co["entry_index"], co["entry_id"]))
def bundler_id(i):
    # The HIP driver passes the host target without the trailing "-" of the empty target ID
    # as written in the bundle; clang-offload-bundler-19 given the written ID doubles it.
    return i[:-1] if i.startswith("host-") and i.endswith("-") else i
def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout

# Untimed: cut out, unbundle, check the rebuild, check rocpack's CCOB with the bundler.
jobs = []
with open(lib, "rb") as f, open(comp, "rb") as g:
    for n, b in enumerate(bundles):
        d = os.path.join(bdir, f"{n:03}"); os.makedirs(d, exist_ok=True)
        ids = [i for _, i in sorted(entries[b["id"]])]
        targets = ",".join(map(bundler_id, ids))
        es = [os.path.join(d, f"e{k}") for k in range(len(ids))]
        f.seek(b["file_offset"]); data = f.read(b["size"])
        open(f"{d}/b.bin", "wb").write(data)
        run([B, "--unbundle", "--type=o", f"--input={d}/b.bin", f"--targets={targets}"] + [f"--output={e}" for e in es])
        run([B, "--type=o", f"--targets={targets}", "-bundle-align=4096"] + [f"--input={e}" for e in es] + [f"--output={d}/re.bin"])
        if open(f"{d}/re.bin", "rb").read() != data:
            sys.exit(f"FAILED: bundle {n}: clang-offload-bundler-19 does not rebuild the original bytes")
        # rocpack's CCOB at the same offset: magic, version 2, total size at bytes 8..12.
        g.seek(b["file_offset"]); head = g.read(12)
        magic, ver, meth, total = struct.unpack("<4sHHI", head)
        cc = ccobs.get(b["file_offset"])
        if magic != b"CCOB" or ver != 2 or cc is None or total != cc["total_size"]:
            sys.exit(f"FAILED: bundle {n}: no CCOB v2 of the size rocpack show gives at {b['file_offset']} in OUT")
        g.seek(b["file_offset"]); open(f"{d}/rocpack.ccob", "wb").write(g.read(total))
        listed = sorted(run([B, "--list", "--type=o", f"--input={d}/rocpack.ccob"]).split())
        if listed != sorted(ids):
            sys.exit(f"FAILED: bundle {n}: clang-offload-bundler-19 --list on rocpack's CCOB: {listed}")
        run([B, "--unbundle", "--type=o", f"--input={d}/rocpack.ccob", f"--targets={targets}"] + [f"--output={e}.r" for e in es])
        for e in es:
            if open(e, "rb").read() != open(e + ".r", "rb").read():
                sys.exit(f"FAILED: bundle {n}: entry {e} unbundled from rocpack's CCOB differs")
            os.remove(e + ".r")
        for x in ("b.bin", "re.bin", "rocpack.ccob"):
            os.remove(f"{d}/{x}")
        jobs.append((n, b["size"], total, [B, "--type=o", f"--targets={targets}", "-bundle-align=4096"]
                     + [f"--input={e}" for e in es] + [f"--output={d}/out.ccob", "-compress"]))
print(f"untimed checks, all {len(jobs)} bundles: cut out of ORIG, unbundled, rebundled with -bundle-align=4096 "
      "byte-identical to the original; rocpack's CCOB (length from bytes 8..12) listed by "
      "clang-offload-bundler-19 --list with the same entry IDs, and unbundled by it into the same entries")

def timed(job):
    n, _, _, cmd = job
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if status != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}: {p.stderr.read().decode()}")
    return wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss, os.path.getsize(cmd[-2][len("--output="):])

# Timed: sequentially once, then two at a time PAR_ROUNDS times (median; default 3).
t0 = time.perf_counter(); seq = [timed(j) for j in jobs]; seq_wall = time.perf_counter() - t0
def bundler_par2():
    t0 = time.perf_counter()
    with ThreadPoolExecutor(2) as ex: out = list(ex.map(timed, jobs))
    return time.perf_counter() - t0, out

def rocpack_once():
    out = rocpack_cmd[rocpack_cmd.index("-o") + 1]
    if os.path.exists(out):
        os.remove(out)
    os.sync()
    t0 = time.perf_counter()
    run(rocpack_cmd)
    return time.perf_counter() - t0

def median(xs):
    return sorted(xs)[len(xs) // 2]

par_walls, rocpack_walls = [], []
for r in range(max(1, int(os.environ.get("PAR_ROUNDS", "3")))):
    if rocpack_cmd and r % 2 == 1:
        rocpack_walls.append(rocpack_once())
    os.sync()
    wall, par = bundler_par2()
    par_walls.append(wall)
    if rocpack_cmd and r % 2 == 0:
        rocpack_walls.append(rocpack_once())
par_wall = median(par_walls)
sizes = [s[4] for s in seq]
assert sizes == [p[4] for p in par]
before = sum(j[1] for j in jobs); rp = sum(j[2] for j in jobs); bl = sum(sizes)
big = max(jobs, key=lambda j: j[1])
p = subprocess.run(big[3] + ["-verbose"], capture_output=True, text=True)
verbose = [l for l in (p.stdout + p.stderr).splitlines() if l.strip() and not l.lstrip().startswith(("===", "Total", "---", "Timer"))][:9]
res = dict(bundles=len(jobs), before=before, bundler_after=bl, rocpack_after=rp,
           seq_sum_wall=sum(s[0] for s in seq), seq_wall=seq_wall, seq_user=sum(s[1] for s in seq),
           seq_sys=sum(s[2] for s in seq), max_rss_kib=max(s[3] for s in seq), par2_wall=par_wall,
           par2_walls=par_walls,
           **(dict(rocpack_walls=rocpack_walls,
                   paired_ratio=median([b / r for b, r in zip(par_walls, rocpack_walls)]))
              if rocpack_cmd else {}),
           rocpack_smaller=sum(1 for j, s in zip(jobs, sizes) if j[2] < s),
           largest=dict(index=big[0], size=big[1], rocpack=big[2], bundler=sizes[big[0]]))
json.dump(res, open(result, "w"))
print(f"clang-offload-bundler-19 -compress, {len(jobs)} processes one after another: {seq_wall:.2f} s wall "
      f"(sum of each process's wall {res['seq_sum_wall']:.2f} s; user {res['seq_user']:.2f} s, sys {res['seq_sys']:.2f} s); "
      f"largest max RSS of one process {res['max_rss_kib']} KiB")
print(f"clang-offload-bundler-19 -compress, two processes at a time (2 cores): {par_wall:.2f} s wall "
      f"(median of {len(par_walls)}: {', '.join(f'{w:.2f}' for w in par_walls)})")
if rocpack_cmd:
    print(f"rocpack compress in the same rounds, the order turned each round: {median(rocpack_walls):.2f} s wall "
          f"(median of {', '.join(f'{w:.2f}' for w in rocpack_walls)}); bundler / rocpack per round: "
          f"{', '.join(f'{b / r:.2f}' for b, r in zip(par_walls, rocpack_walls))}, median {res['paired_ratio']:.2f}")
print(f"bundles {before} bytes -> bundler {bl} bytes (ratio {before / bl:.2f}); rocpack {rp} bytes (ratio {before / rp:.2f}); "
      f"rocpack's CCOB smaller in {res['rocpack_smaller']} of {len(jobs)} bundles")
print(f"largest bundle (#{big[0]}, {big[1]} bytes): rocpack {big[2]}, bundler {sizes[big[0]]} bytes; the bundler's -verbose report:")
print("\n".join("  | " + l for l in verbose))
shutil.rmtree(bdir)
