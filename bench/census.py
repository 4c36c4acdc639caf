#!/usr/bin/env python3
"""Byte census of AMD GPU code headers, independent of rocpack.

Counts, in every file of a wheel/zip (each member streamed), a directory tree or single
files, every place whose bytes start like
  - an AMDGPU ELF header: b"\\x7fELF", EI_CLASS 1 or 2, EI_DATA 1 (little-endian), EI_VERSION 1,
    e_machine (u16 at +18) == 224 (EM_AMDGPU);
  - a clang offload bundle header: b"__CLANG_OFFLOAD_BUNDLE__" then a u64 entry count in 1..4096;
  - a compressed offload bundle (CCOB) header: b"CCOB", u16 version 1..3, u16 method 0..1.
Raw magic hits are counted too (bundle_magic, ccob_magic), so a reader can see what the
plausibility fields filtered out. Code objects inside compressed bundles are not visible to a
byte census and are not counted.

Usage: census.py [--json] PATH...   (PATH: .whl/.zip, directory, or file)
Output: one line per file with hits, then a total; --json prints one JSON object per file.
"""
import json
import os
import struct
import sys
import zipfile

CHUNK = 8 << 20
OVER = 64


def census_stream(read):
    c = {"amdgpu_elf64": 0, "amdgpu_elf32": 0, "bundle": 0, "bundle_magic": 0,
         "ccob": 0, "ccob_magic": 0}
    offsets = {"amdgpu_elf64": [], "bundle": [], "ccob": []}
    buf = b""
    base = 0  # file offset of buf[0]
    eof = False
    while not eof:
        more = read(CHUNK)
        if not more:
            eof = True
        buf += more
        # positions < limit are judged now; the last OVER bytes wait for the next chunk.
        limit = len(buf) if eof else max(0, len(buf) - OVER)
        for needle, kind in ((b"\x7fELF", "elf"), (b"__CLANG_OFFLOAD_BUNDLE__", "bundle"),
                             (b"CCOB", "ccob")):
            at = buf.find(needle, 0)
            while 0 <= at < limit:
                h = buf[at:at + 64]
                if kind == "elf":
                    if len(h) >= 20 and h[5] == 1 and h[6] == 1 and \
                            struct.unpack_from("<H", h, 18)[0] == 224:
                        if h[4] == 2:
                            c["amdgpu_elf64"] += 1
                            offsets["amdgpu_elf64"].append(base + at)
                        elif h[4] == 1:
                            c["amdgpu_elf32"] += 1
                elif kind == "bundle":
                    c["bundle_magic"] += 1
                    if len(h) >= 32 and 1 <= struct.unpack_from("<Q", h, 24)[0] <= 4096:
                        c["bundle"] += 1
                        offsets["bundle"].append(base + at)
                else:
                    c["ccob_magic"] += 1
                    if len(h) >= 8:
                        ver, meth = struct.unpack_from("<HH", h, 4)
                        if 1 <= ver <= 3 and meth <= 1:
                            c["ccob"] += 1
                            offsets["ccob"].append(base + at)
                at = buf.find(needle, at + 1)
        base += limit
        buf = buf[limit:]
    return c, offsets


def files(path):
    if os.path.isdir(path):
        for root, _, names in os.walk(path):
            for n in sorted(names):
                p = os.path.join(root, n)
                if os.path.isfile(p) and not os.path.islink(p):
                    with open(p, "rb") as f:
                        yield p, f.read
    elif zipfile.is_zipfile(path) and path.endswith((".whl", ".zip")):
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if info.is_dir():
                    continue
                with z.open(info) as f:
                    yield f"{path}!/{info.filename}", f.read
    else:
        with open(path, "rb") as f:
            yield path, f.read


def main():
    args = sys.argv[1:]
    as_json = "--json" in args
    args = [a for a in args if a != "--json"]
    total = {}
    for path in args:
        for name, read in files(path):
            c, offsets = census_stream(read)
            if not any(c.values()):
                continue
            for k, v in c.items():
                total[k] = total.get(k, 0) + v
            if as_json:
                print(json.dumps({"file": name, **c, "offsets": offsets}))
            else:
                print(name, " ".join(f"{k}={v}" for k, v in c.items() if v))
    if not as_json:
        print("TOTAL", " ".join(f"{k}={v}" for k, v in sorted(total.items())))


if __name__ == "__main__":
    main()
