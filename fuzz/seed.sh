#!/usr/bin/env bash
# Seeds fuzz/corpus/<target>/ from the test fixtures (tests/fixtures/bin and tests/fixtures/pe).
# Safe to re-run: files are named by content hash, so nothing is duplicated. The corpus
# directories are git-ignored; libFuzzer adds what it finds to them.
#
#   fuzz/seed.sh            # all targets
#   fuzz/seed.sh fuzz_elf   # one target
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin="$here/../tests/fixtures/bin"
pe="$here/../tests/fixtures/pe"
corpus="$here/corpus"

add() { # target file...
    local target=$1
    shift
    mkdir -p "$corpus/$target"
    local f
    for f in "$@"; do
        [ -s "$f" ] || continue
        cp "$f" "$corpus/$target/$(sha1sum "$f" | cut -c1-40)"
    done
}

# Pieces that live inside other files: .llvm.offloading sections and metadata note
# descriptors. python3 is only needed for these two; without it they are skipped.
extract() { # kind out-dir file...
    command -v python3 > /dev/null || {
        echo "seed.sh: python3 not found, skipping $1 seeds" >&2
        return 0
    }
    python3 - "$@" << 'PY'
import struct, sys, os
kind, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(out, exist_ok=True)
n = 0
for path in files:
    d = open(path, 'rb').read()
    if d[:4] != b'\x7fELF' or d[4] != 2 or d[5] != 1:
        continue
    phoff, shoff = struct.unpack_from('<QQ', d, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from('<HHHHH', d, 54)
    if kind == 'offloading' and shoff and shnum:
        def sh(i):
            return struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * shentsize)
        stro = sh(shstrndx)[4]
        for i in range(shnum):
            name_off, typ, _, _, off, size = sh(i)[:6]
            name = d[stro + name_off:d.index(b'\0', stro + name_off)]
            if name == b'.llvm.offloading':
                open(os.path.join(out, '%s-%d' % (os.path.basename(path), i)), 'wb').write(d[off:off + size])
                n += 1
    if kind == 'notes':
        for i in range(phnum):
            typ, _, off, _, _, size = struct.unpack_from('<IIQQQQ', d, phoff + i * phentsize)
            if typ != 4:
                continue
            pos = off
            while pos + 12 <= off + size:
                namesz, descsz, ntype = struct.unpack_from('<III', d, pos)
                desc = (pos + 12 + namesz + 3) & ~3
                if ntype == 32:
                    open(os.path.join(out, '%s-%d' % (os.path.basename(path), pos)), 'wb').write(d[desc:desc + descsz])
                    n += 1
                pos = (desc + descsz + 3) & ~3
print('seed.sh: %d %s blobs' % (n, kind), file=sys.stderr)
PY
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_inspect fuzz_bundle fuzz_ccob fuzz_offload_binary fuzz_elf fuzz_pe fuzz_code_object fuzz_msgpack)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for t in "${targets[@]}"; do
    case $t in
    fuzz_inspect) add "$t" "$bin"/* "$pe"/*.dll "$pe"/*.exe ;;
    fuzz_pe) add "$t" "$pe"/*.dll "$pe"/*.exe ;;
    fuzz_bundle) add "$t" "$bin"/tu1.hipfb "$bin"/tu2.hipfb "$bin"/tu1-gfx1030.hipfb "$bin"/generic-v6.hipfb ;;
    fuzz_ccob) add "$t" "$bin"/ccob-*.hipfb "$bin"/tu2-compressed.hipfb ;;
    fuzz_offload_binary)
        extract offloading "$tmp/ob" "$bin"/nd-rdc1.o "$bin"/nd-rdc2.o
        add "$t" "$tmp"/ob/*
        ;;
    fuzz_elf) add "$t" "$bin"/*.o "$bin"/*.so "$bin"/exe-nopie "$bin"/gfx90a-v5.co "$bin"/gfx1100.hsaco ;;
    fuzz_code_object) add "$t" "$bin"/*.co "$bin"/*.hsaco ;;
    fuzz_msgpack)
        extract notes "$tmp/notes" "$bin"/*.co "$bin"/*.hsaco
        add "$t" "$tmp"/notes/*
        ;;
    *)
        echo "seed.sh: unknown target $t" >&2
        exit 1
        ;;
    esac
    echo "$t: $(find "$corpus/$t" -type f | wc -l) files in corpus/$t"
done
