#!/usr/bin/env python3
"""Paired, interleaved runs of several commands: round after round, every command once per
round, the order rotated each round, so that a machine busy with something else slows all of
them alike. Used by bench/run.sh.

Per run: wall time (perf_counter around fork/exec/wait), user and system CPU time (getrusage
of the child). With --rss, the command runs under /usr/bin/time, whose maximum RSS is reported
(getrusage here would not do: at exec the kernel carries the forking process's own peak, this
Python's, into the child's); that adds /usr/bin/time's start (about 1 ms) to the wall time, so
it is meant for the slow commands. With --sample-rss (implies --rss) also the peak RssAnon and
RssFile, read from /proc/PID/status every 10 ms (1 ms at first) (the maximum RSS counts the pages of a mapped
input file; RssAnon is the memory the process allocated itself).

  paired.py [--runs N] [--warmup W] [--prepare SHELL_CMD] [--rss] [--sample-rss]
            [--ignore-failure] --json OUT.json NAME=COMMAND...

COMMAND is split like a shell word list (shlex) and run without a shell; its stdout and stderr
go to /dev/null. --prepare runs (through sh, untimed) before every run of every command.
Exits 1 if a command exits non-zero (unless --ignore-failure) and prints, per command, the
median wall time, CPU time and maximum RSS, and the min and max wall time.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time


def proc_rss(pid):
    """(RssAnon, RssFile) in KiB, or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            anon = file = 0
            for line in f:
                if line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
                elif line.startswith("RssFile:"):
                    file = int(line.split()[1])
            return anon, file
    except OSError:
        return None


def child_of(pid):
    """The first child of pid (the command /usr/bin/time runs), or None."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = f.read().split()
        return int(kids[0]) if kids else None
    except OSError:
        return None


def run_once(argv, rss, sample, tmp):
    if rss:
        argv = ["/usr/bin/time", "-f", "%M", "-o", tmp] + argv
    start = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    anon = file = 0
    if sample:
        target = None
        nap = 0.001
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            target = target or child_of(p.pid)
            r = proc_rss(target) if target else None
            if r:
                anon, file = max(anon, r[0]), max(file, r[1])
            time.sleep(nap)
            nap = min(0.01, nap * 2)
    else:
        _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    p.returncode = os.waitstatus_to_exitcode(status)
    out = {"wall": wall, "user": ru.ru_utime, "sys": ru.ru_stime, "exit": p.returncode}
    if rss:
        with open(tmp) as f:
            # /usr/bin/time writes "Command exited with non-zero status N" first on failure.
            out["max_rss_kib"] = int(f.read().split()[-1])
    if sample:
        out["peak_rss_anon_kib"] = anon
        out["peak_rss_file_kib"] = file
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--prepare")
    ap.add_argument("--rss", action="store_true")
    ap.add_argument("--sample-rss", action="store_true")
    ap.add_argument("--ignore-failure", action="store_true")
    ap.add_argument("--json", required=True)
    ap.add_argument("commands", nargs="+", metavar="NAME=COMMAND")
    a = ap.parse_args()
    a.rss = a.rss or a.sample_rss
    tmp = a.json + ".time"
    cmds = []
    for c in a.commands:
        name, sep, cmd = c.partition("=")
        if not sep or not cmd:
            ap.error(f"expected NAME=COMMAND, got {c!r}")
        cmds.append((name, shlex.split(cmd), cmd))
    runs = {name: [] for name, _, _ in cmds}
    failed = False
    for rnd in range(a.warmup + a.runs):
        k = rnd % len(cmds)
        for name, argv, text in cmds[k:] + cmds[:k]:
            if a.prepare:
                subprocess.run(a.prepare, shell=True, check=True)
            r = run_once(argv, a.rss, a.sample_rss, tmp)
            if r["exit"] != 0 and not a.ignore_failure:
                print(f"paired.py: {name}: `{text}` exited with {r['exit']}", file=sys.stderr)
                failed = True
            if rnd >= a.warmup:
                runs[name].append(r)
        if failed:
            break
    result = {"runs": a.runs, "warmup": a.warmup, "commands": []}
    for name, _, text in cmds:
        rs = runs[name]
        if not rs:
            continue
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "exit"}
        result["commands"].append({"name": name, "command": text, "median": med,
                                   "min_wall": min(r["wall"] for r in rs),
                                   "max_wall": max(r["wall"] for r in rs),
                                   "exits": sorted({r["exit"] for r in rs}), "samples": rs})
        line = (f"  {name:<22} wall median {med['wall']:.4f} s (min {min(r['wall'] for r in rs):.4f},"
                f" max {max(r['wall'] for r in rs):.4f}), cpu {med['user'] + med['sys']:.4f} s")
        if a.rss:
            line += (f", max RSS {med['max_rss_kib']:.0f} KiB"
                     f" (largest {max(r['max_rss_kib'] for r in rs)})")
        if a.sample_rss:
            line += (f", peak RssAnon {med['peak_rss_anon_kib']:.0f} KiB,"
                     f" RssFile {med['peak_rss_file_kib']:.0f} KiB")
        print(line + f"  [{len(rs)} runs]  $ {text}")
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)
    if os.path.exists(tmp):
        os.remove(tmp)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
