#!/usr/bin/env python3
"""Write the tree of TAG in a git directory into DEST, blob by blob: a stored mirror may lack its
largest files (Tensile logic, kernel databases); those are listed in DEST/.rocpack-missing, never
invented. Usage: git-export.py GIT_DIR TAG DEST"""
import os
import subprocess
import sys

git, tag, dest = sys.argv[1:4]
tree = subprocess.run(["git", f"--git-dir={git}", "ls-tree", "-r", "-z", tag],
                      check=True, capture_output=True).stdout.split(b"\0")
missing = []
for entry in filter(None, tree):
    meta, path = entry.split(b"\t", 1)
    mode, kind, sha = meta.split()
    if kind != b"blob":
        continue
    out = os.path.join(dest, path.decode())
    os.makedirs(os.path.dirname(out), exist_ok=True)
    r = subprocess.run(["git", f"--git-dir={git}", "cat-file", "blob", sha.decode()],
                       capture_output=True)
    if r.returncode != 0:
        missing.append(path.decode())
        continue
    if mode == b"120000":
        if not os.path.lexists(out):
            os.symlink(r.stdout.decode(), out)
        continue
    with open(out, "wb") as f:
        f.write(r.stdout)
    if mode == b"100755":
        os.chmod(out, 0o755)
with open(os.path.join(dest, ".rocpack-missing"), "w") as f:
    f.write("".join(m + "\n" for m in missing))
