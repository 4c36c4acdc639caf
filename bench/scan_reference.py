#!/usr/bin/env python3
"""Header-only reference for `rocpack scan` (bench/scan.sh): a small single-threaded reader
that reads the same headers rocpack reads, and nothing else.

For every regular file under the given directories (symbolic links not followed, as rocpack's
walk): stat, open, read the first 64 bytes. Then, by magic:
  - a 64-bit little-endian host ELF: the section header table and its names; for a
    `.hip_fatbin` section, each bundle header in it (walking bundle by bundle, skipping the
    zero padding in 4 KiB reads), and the 64-byte ELF header of every entry;
  - `__CLANG_OFFLOAD_BUNDLE__`: the bundle header and every entry's ELF header;
  - `CCOB` (zstd, versions 2 and 3): the CCOB header, then the zstd stream decoded (libzstd
    through ctypes, one context for the whole run) as far as the bundle header and the first
    64 bytes of every entry;
  - an AMDGPU code object (EM_AMDGPU): its ELF header, already read.
Prints one line per file that holds device code (path, entries, targets by e_flags' mach),
and a summary line with the totals on stderr.

    bench/scan_reference.py DIR...
"""

import ctypes
import ctypes.util
import os
import stat
import struct
import sys

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
EM_AMDGPU = 224


class InBuf(ctypes.Structure):
    _fields_ = [("src", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


class OutBuf(ctypes.Structure):
    _fields_ = [("dst", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


_zstd = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
_zstd.ZSTD_createDCtx.restype = ctypes.c_void_p
_zstd.ZSTD_DCtx_reset.argtypes = [ctypes.c_void_p, ctypes.c_int]
_zstd.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.POINTER(OutBuf), ctypes.POINTER(InBuf)]
_zstd.ZSTD_decompressStream.restype = ctypes.c_size_t
_zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]
_DCTX = _zstd.ZSTD_createDCtx()


class ZstdPrefix:
    """Decodes a zstd frame held in `payload` only as far as asked (`upto`)."""

    def __init__(self, payload):
        _zstd.ZSTD_DCtx_reset(_DCTX, 1)  # ZSTD_reset_session_only
        self.src = ctypes.create_string_buffer(payload, len(payload))
        self.inb = InBuf(ctypes.cast(self.src, ctypes.c_void_p), len(payload), 0)
        self.out = bytearray()
        self.chunk = ctypes.create_string_buffer(16 << 10)
        self.done = False

    def upto(self, n):
        """The first n decoded bytes (fewer if the frame ends first)."""
        while len(self.out) < n and not self.done:
            outb = OutBuf(ctypes.cast(self.chunk, ctypes.c_void_p), len(self.chunk), 0)
            r = _zstd.ZSTD_decompressStream(_DCTX, ctypes.byref(outb), ctypes.byref(self.inb))
            if _zstd.ZSTD_isError(r):
                self.done = True
                break
            self.out += self.chunk.raw[: outb.pos]
            if r == 0 or (outb.pos == 0 and self.inb.pos == self.inb.size):
                self.done = True
        return bytes(self.out[:n])


def bundle_header(read, size):
    """(entries [(offset, size, id)], header end) of the bundle read by read(off, n)."""
    head = read(0, 1024)
    if not head.startswith(BUNDLE_MAGIC) or len(head) < 32:
        return None
    (n,) = struct.unpack_from("<Q", head, 24)
    if n > 100000:
        return None
    entries, pos = [], 32
    for _ in range(n):
        if pos + 24 > len(head):
            head = read(0, max(2 * len(head), pos + 4096))
            if pos + 24 > len(head):
                return None
        off, sz, idlen = struct.unpack_from("<QQQ", head, pos)
        if pos + 24 + idlen > len(head):
            head = read(0, pos + 24 + idlen + 4096)
            if pos + 24 + idlen > len(head):
                return None
        entries.append((off, sz, head[pos + 24 : pos + 24 + idlen].decode("latin-1")))
        pos += 24 + idlen
    return entries


def elf_target(h):
    """The mach number (low byte of e_flags) of an AMDGPU ELF header, else None."""
    if len(h) >= 64 and h[:4] == b"\x7fELF" and struct.unpack_from("<H", h, 18)[0] == EM_AMDGPU:
        return struct.unpack_from("<I", h, 48)[0] & 0xFF
    return None


class Reader:
    def __init__(self, fd):
        self.fd = fd

    def at(self, base):
        return lambda off, n: os.pread(self.fd, n, base + off)


def read_bundle(read, size, found):
    entries = bundle_header(read, size)
    if entries is None:
        return None
    end = 0
    for off, sz, eid in entries:
        end = max(end, off + sz)
        if sz:
            mach = elf_target(read(off, 64))
            if not eid.startswith("host-"):
                found.append(mach)
    return end


def read_ccob(read, found):
    h = read(0, 32)
    if len(h) < 24 or h[:4] != b"CCOB":
        return None
    version, method = struct.unpack_from("<HH", h, 4)
    if version == 2:
        total, usize = struct.unpack_from("<II", h, 8)
        hsize = 24
    elif version == 3:
        total, usize = struct.unpack_from("<QQ", h, 8)
        hsize = 32
    else:
        return None
    if method != 1:
        return total
    z = ZstdPrefix(read(hsize, total - hsize))
    entries = bundle_header(lambda off, n: z.upto(off + n)[off:], usize)
    for off, sz, eid in sorted(entries or []):
        if sz:
            mach = elf_target(z.upto(off + 64)[off : off + 64])
            if not eid.startswith("host-"):
                found.append(mach)
    return total


def host_elf(fd, read, size, found):
    h = read(0, 64)
    shoff, = struct.unpack_from("<Q", h, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", h, 58)
    if shnum == 0 or shentsize != 64 or shoff + shnum * 64 > size:
        return
    table = read(shoff, shnum * 64)
    secs = [struct.unpack_from("<IIQQQQ", table, i * 64) for i in range(shnum)]
    if shstrndx >= shnum:
        return
    names = read(secs[shstrndx][4], secs[shstrndx][5])
    for name, typ, flags, addr, off, sz in secs:
        if names[name : names.find(b"\0", name)] != b".hip_fatbin":
            continue
        pos = 0
        while pos < sz:
            base = off + pos
            magic = read(base, 24)
            if magic.startswith(BUNDLE_MAGIC):
                end = read_bundle(Reader(fd).at(base), sz - pos, found)
            elif magic.startswith(b"CCOB"):
                end = read_ccob(Reader(fd).at(base), found)
            else:
                # Zero padding up to the next bundle: read it in 4 KiB pieces.
                block = read(base, min(4096, sz - pos))
                skip = len(block) - len(block.lstrip(b"\0"))
                if skip == 0:
                    break
                pos += skip
                continue
            if not end:
                break
            pos += end


def inspect(path, found):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        size = os.fstat(fd).st_size
        read = Reader(fd).at(0)
        h = read(0, 64)
        if h.startswith(b"\x7fELF"):
            if elf_target(h) is not None:
                found.append(elf_target(h))
            elif len(h) >= 64 and h[4] == 2 and h[5] == 1:
                host_elf(fd, read, size, found)
        elif h.startswith(BUNDLE_MAGIC):
            read_bundle(read, size, found)
        elif h.startswith(b"CCOB"):
            read_ccob(read, found)
    finally:
        os.close(fd)


def walk(d, files):
    with os.scandir(d) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            walk(e.path, files)
        elif not e.is_symlink():
            files.append(e.path)


def main():
    files = []
    for d in sys.argv[1:]:
        walk(d, files)
    n_files = n_code = 0
    out = []
    for f in files:
        if not stat.S_ISREG(os.stat(f).st_mode):
            continue
        n_files += 1
        found = []
        inspect(f, found)
        if found:
            n_code += len(found)
            machs = sorted({m for m in found if m is not None})
            out.append(f"{f}\t{len(found)}\t{','.join(f'{m:#x}' for m in machs)}")
    sys.stdout.write("\n".join(out) + ("\n" if out else ""))
    print(f"scan_reference: {n_files} files, {len(out)} with device code, {n_code} device code objects", file=sys.stderr)


if __name__ == "__main__":
    main()
