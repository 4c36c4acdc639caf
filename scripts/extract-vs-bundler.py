#!/usr/bin/env python3
"""Judges `rocpack extract` by LLVM: every file it writes for a target is compared, byte for byte,
with what clang-offload-bundler-19 --unbundle gives for the same entry of the same input (or,
for a bare code object, with the input file itself).

    scripts/extract-vs-bundler.py [--rocpack BIN] TARGET PATH

PATH: a file or a directory (read as `rocpack extract` reads it) of files the bundler reads
whole: bundle files (`.co`, `.hipfb`) and bare code objects, such as hipBLASLt's library
directory. clang-offload-bundler-19 does not find the bundles inside a host library's
`.hip_fatbin` (tests/real_packages.rs cuts them out first); such an entry is counted as not
judged, not as the same. Prints one line per file that differs or is not judged and a summary;
exit status 0 when every file was judged the same, 1 otherwise, 2 on a usage or tool error.
The files are written to a temporary directory, removed at the end.
"""
import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rocpack", default="target/release/rocpack")
    ap.add_argument("target")
    ap.add_argument("path")
    args = ap.parse_args()
    if shutil.which("clang-offload-bundler-19") is None:
        print("no clang-offload-bundler-19 (apt-get install clang-tools-19)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rocpack-extract-") as tmp:
        out = os.path.join(tmp, "out")
        run = subprocess.run(
            [args.rocpack, "extract", "--json", "--target", args.target, "-o", out, args.path],
            capture_output=True,
            text=True,
        )
        if run.returncode not in (0, 1):
            print(run.stderr, file=sys.stderr)
            return 2
        same = differ = bare = unjudged = 0
        for line in run.stdout.splitlines():
            r = json.loads(line)
            written = r["output"]
            if r.get("entry_id") is None:
                # A bare code object: extract copies the file.
                bare += 1
                ok = filecmp.cmp(r["file"], written, shallow=False)
            else:
                theirs = os.path.join(tmp, "llvm.co")
                llvm = subprocess.run(
                    [
                        "clang-offload-bundler-19",
                        "--unbundle",
                        "--type=o",
                        f"--targets={r['entry_id']}",
                        f"--input={r['file']}",
                        f"--output={theirs}",
                    ],
                    capture_output=True,
                    text=True,
                )
                if llvm.returncode != 0:
                    unjudged += 1
                    print(f"not judged: {r['file']} ({r['container']}): {llvm.stderr.strip()}")
                    os.remove(written)
                    continue
                ok = filecmp.cmp(theirs, written, shallow=False)
                os.remove(theirs)
            if ok:
                same += 1
            else:
                differ += 1
                print(f"differs: {r['file']} ({r['container']} {r.get('entry_id')}) -> {written}")
            os.remove(written)
    print(
        f"extract --target {args.target} {args.path}: {same + differ + unjudged} files, {same} "
        f"the same as clang-offload-bundler-19's (or, {bare} bare code objects, as the input), "
        f"{differ} differ, {unjudged} not judged (the bundler could not read them)"
    )
    return 0 if differ == 0 and unjudged == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
