#!/usr/bin/env python3
"""Extract the nixpkgs facts rocpack's Nix emitter is checked against.

Reads the NixOS/nixpkgs rocm-modules files listed in scripts/engines/nix/sources.toml (copies read
with the search service's read_file tool, kept in $ROCPACK_NIXPKGS_CACHE as <commit>/<path> and
checked against the recorded sha256) and writes crates/rocpack-plan/data/engines/nix.toml:

  [engine]      the files' repositories and commits
  [components]  per rocpack component: its rocmPackages attribute and nixpkgs' ROCm release lines
  [facts]       per line and package: version, the derivation's function arguments (the knobs an
                override can set) and their defaults, which cmakeFlags carry gpuTargets, the list
                gpuTargets is intersected with, meta.broken, the passthru target predicates; the
                scope's kind (makeScope has overrideScope) and attributes; composable_kernel's
                broken rule. Every fact carries the file's path, commit and line.

Deterministic: the same inputs give the same bytes. Usage: extract.py [--check]
(--check compares with the committed file instead of writing it).
"""

import hashlib
import os
import re
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import tomlw  # noqa: E402  (scripts/engines/tomlw.py)

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = ROOT / "scripts/engines/nix/sources.toml"
COMPONENTS = ROOT / "crates/rocpack-plan/data/components.toml"
OUT = ROOT / "crates/rocpack-plan/data/engines/nix.toml"
CACHE = Path(os.environ.get("ROCPACK_NIXPKGS_CACHE", Path.home() / ".cache/rocpack-nixpkgs/files"))


class ExtractError(Exception):
    pass


def read_copy(entry):
    path = CACHE / entry["commit"] / entry["path"]
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ExtractError(f"{path}: {e.strerror}; read it with read_file (repo NixOS/nixpkgs, "
                           f"path {entry['path']}, commit {entry['commit']})") from e
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise ExtractError(f"{path}: sha256 {digest}, the manifest records {entry['sha256']}")
    return data.decode("utf-8")


def skip_space_and_comments(text, i):
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text[i] == "#":
            while i < len(text) and text[i] != "\n":
                i += 1
        else:
            break
    return i


ESCAPES = ("'''", "''$", "''\\")


def skip_literal(text, i):
    """Index past the comment or string starting at text[i]; i itself when none starts there."""
    if text[i] == "#":
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text[i] == '"':
        i += 1
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        return i + 1
    if text.startswith("''", i):
        i += 2
        # Two single quotes end an indented string unless they start an escape (ESCAPES).
        while i < len(text) and not (text.startswith("''", i) and not text.startswith(ESCAPES, i)):
            i += 3 if text.startswith(ESCAPES, i) else 1
        return i + 2
    return i


def matching(text, i):
    """Index just past the bracket that closes text[i], skipping strings and comments."""
    pairs = {"{": "}", "[": "]", "(": ")"}
    stack = []
    while i < len(text):
        past = skip_literal(text, i)
        if past != i:
            i = past
            continue
        c = text[i]
        if c in pairs:
            stack.append(pairs[c])
        elif c in "}])":
            if not stack or stack.pop() != c:
                raise ExtractError(f"unbalanced '{c}' at offset {i}")
            if not stack:
                return i + 1
        i += 1
    raise ExtractError("unterminated bracket")


def split_top(body):
    """Top-level comma-separated entries of a function header body, with their offsets."""
    out, start, i = [], 0, 0
    while i < len(body):
        past = skip_literal(body, i)
        if past != i:
            i = past
            continue
        if body[i] in "{[(":
            i = matching(body, i)
            continue
        if body[i] == ",":
            out.append((start, body[start:i]))
            start = i + 1
        i += 1
    if body[start:].strip():
        out.append((start, body[start:]))
    return out


def strip_comments(s):
    return "\n".join(re.sub(r"\s#.*$|^#.*$", "", line) for line in s.splitlines())


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def function_args(text):
    """(name, default text or None, line) of the file's top-level function pattern."""
    i = skip_space_and_comments(text, 0)
    if text[i] != "{":
        raise ExtractError("the file does not start with a function pattern")
    end = matching(text, i)
    if not text[end:].lstrip().startswith(":"):
        raise ExtractError("the top-level { ... } is not followed by ':'")
    args = []
    for off, entry in split_top(text[i + 1:end - 1]):
        clean = strip_comments(entry).strip()
        if not clean or clean == "...":
            continue
        m = re.match(r"([A-Za-z_][A-Za-z0-9_'-]*)\s*(\?\s*(.*))?$", clean, re.S)
        if not m:
            raise ExtractError(f"cannot read function argument {clean!r}")
        default = " ".join(m.group(3).split()) if m.group(2) else None
        name_at = i + 1 + off + entry.index(m.group(1))
        args.append((m.group(1), default, line_of(text, name_at)))
    return args


def string_list_after(text, start):
    """The string literals of the [ ... ] list starting at or after `start`."""
    j = text.index("[", start)
    return re.findall(r'"([^"]*)"', strip_comments(text[j:matching(text, j)]))


def first(regex, text, flags=0):
    m = re.search(regex, text, flags)
    return (m, line_of(text, m.start())) if m else (None, None)


def package_facts(text, entry):
    facts = {"path": entry["path"], "commit": entry["commit"], "source": entry["source"]}
    m, ln = first(r'^\s*version = "([^"]+)";', text, re.M)
    if m:
        facts["version"] = m.group(1)
        facts["version_line"] = ln
    args = function_args(text)
    facts["args"] = [a for a, _, _ in args]
    facts["args_line"] = args[0][2] if args else 1
    # The defaults of the knobs the emitter passes: target lists and with* switches.
    defaults = {a: d for a, d, _ in args
                if d is not None and (a.startswith("with") or a in ("gpuTargets", "localGpuTargets"))}
    if defaults:
        facts["defaults"] = defaults
    # gpuTargets, directly or through a list intersected with it, into cmakeFlags entries.
    carriers = ["gpuTargets"]
    m, ln = first(r"^\s*(\w+) = lib\.intersectLists \[", text, re.M)
    if m and re.search(r"\]\s*gpuTargets;", text[m.end():m.end() + 2000]):
        carriers.append(m.group(1))
        facts["supported_targets"] = string_list_after(text, m.start())
        facts["supported_targets_line"] = ln
    flags = []
    for fm in re.finditer(r'"-D(\w+)=\$\{lib\.concatStringsSep ";" (\w+)\}"', text):
        if fm.group(2) in carriers:
            flags.append(fm.group(1))
            facts.setdefault("target_flags_line", line_of(text, fm.start()))
    for fm in re.finditer(r'lib\.cmakeFeature "(\w+)" \(lib\.concatStringsSep ";" (\w+)\)', text):
        if fm.group(2) in carriers:
            flags.append(fm.group(1))
            facts.setdefault("target_flags_line", line_of(text, fm.start()))
    # A let binding holding the joined list (rocblas 7.x: gpuTargets' = concatStringsSep ";" ...).
    joined = [m.group(1) for m in re.finditer(
        r"^\s*([\w']+) = lib\.concatStringsSep \";\" (\w+);", text, re.M) if m.group(2) in carriers]
    for fm in re.finditer(r'lib\.cmakeFeature "(\w+)" ([\w\']+)\)', text):
        if fm.group(2) in joined:
            flags.append(fm.group(1))
            facts.setdefault("target_flags_line", line_of(text, fm.start()))
    if flags:
        facts["target_flags"] = flags
        m, _ = first(r"lib\.optionals \(gpuTargets != \[ \]\) \[", text)
        facts["target_flags_when_empty"] = "omitted" if m else "passed"
    # cmakeFlags the file always passes with a literal value (the unconditional first list, not
    # the `++ lib.optionals ...` ones): what no override can change.
    fixed = {}
    m, _ = first(r"^\s*cmakeFlags =\s*\[", text, re.M)
    always = text[m.end() - 1:matching(text, m.end() - 1)] if m else ""
    for fm in re.finditer(r'^\s*"-D(\w+)=([A-Za-z0-9_.]+)"', always, re.M):
        fixed.setdefault(fm.group(1), fm.group(2))
    for fm in re.finditer(r'lib\.cmakeBool "(\w+)" (true|false)\)', always):
        fixed.setdefault(fm.group(1), "ON" if fm.group(2) == "true" else "OFF")
    if fixed:
        facts["fixed_flags"] = dict(sorted(fixed.items()))
    m, ln = first(r'lib\.cmakeBool "(\w+)" withComposableKernel', text)
    if m:
        facts["ck_flag"] = m.group(1)
        facts["ck_flag_line"] = ln
    m, ln = first(r"^\s*broken = (.+?);\s*(#.*)?$", text, re.M)
    if m:
        facts["broken"] = m.group(1).strip()
        facts["broken_line"] = ln
    m, ln = first(r'anyGfx9Target = lib\.lists\.any \(lib\.strings\.hasPrefix "(\w+)"\) gpuTargets', text)
    if m:
        facts["any_gfx9_prefix"] = m.group(1)
        facts["any_gfx9_line"] = ln
    m, ln = first(r"anyMfmaTarget =", text)
    if m:
        facts["any_mfma_targets"] = string_list_after(text, m.end())
        facts["any_mfma_line"] = ln
    return facts


def scope_facts(text, entry):
    """The set's kind and the attributes it defines (names at the set's own indentation)."""
    facts = {"path": entry["path"], "commit": entry["commit"], "source": entry["source"]}
    m, ln = first(r"lib\.makeScope newScope", text)
    if m:
        # outer = lib.makeScope newScope (self: let ... in { <attrs> }); outer // ... // { <attrs> }
        body_at = re.search(r"\n    in\n    \{", text[m.end():])
        tail_at = re.search(r"\nouter\n", text)
        if not body_at or not tail_at:
            raise ExtractError(f"{entry['path']}: makeScope body or 'outer' result not found")
        start = m.end() + body_at.end() - 1
        body = text[start:matching(text, start)]
        names = re.findall(r"^      ([A-Za-z_][A-Za-z0-9_-]*) =", body, re.M)
        names += re.findall(r"^  ([A-Za-z_][A-Za-z0-9_-]*) =", text[tail_at.end():], re.M)
        facts["kind"] = "makeScope"
    else:
        m, ln = first(r"^in\s+rec\s*\{", text, re.M)
        if not m:
            raise ExtractError(f"{entry['path']}: neither lib.makeScope nor a rec set")
        start = text.index("{", m.start())
        body = text[start:matching(text, start)]
        names = re.findall(r"^  ([A-Za-z_][A-Za-z0-9_-]*) ?=", body, re.M)
        facts["kind"] = "rec"
    facts["kind_line"] = ln
    facts["attrs"] = sorted(set(names))
    return facts


def rule_facts(text, entry):
    m, ln = first(r"broken = !finalAttrs\.passthru\.anyGfx9Target;", text)
    if not m:
        raise ExtractError(f"{entry['path']}: no 'broken = !finalAttrs.passthru.anyGfx9Target;'")
    return {"path": entry["path"], "commit": entry["commit"], "source": entry["source"],
            "line": ln, "broken": "!anyGfx9Target", "seen_in": entry["line"]}






def render(manifest, components):
    files = manifest["file"]
    lines = manifest["line"]
    out = ["# Generated by scripts/engines/nix/extract.py from the files listed in",
           "# scripts/engines/nix/sources.toml; do not edit. Documented in docs/plan-knowledge.md",
           "# (section \"Nix engine facts\").", ""]
    out.append("[engine]")
    out.append('tool = "nix"')
    out.append("repos = [")
    seen = set()
    for f in files:
        if f["commit"] not in seen:
            seen.add(f["commit"])
            # The store does not report commit dates for files read with read_file.
            out.append(f'  {{ repo = "NixOS/nixpkgs", commit = "{f["commit"]}", date = "unknown" }},')
    lib = manifest["lib"]
    out.append(f'  {{ repo = "{lib["repo"]}", commit = "{lib["commit"]}", date = "{lib["date"]}" }},')
    out.append("]")
    out.append('script = "scripts/engines/nix/extract.py"')
    out.append("")

    per_line = {}
    for f in files:
        text = read_copy(f)
        kind = {"scope": scope_facts, "package": package_facts, "rule": rule_facts}[f["role"]]
        per_line.setdefault(f["line"], {})[f["attr"]] = kind(text, f)

    # A line whose scope file was not read takes the attributes of the nearest earlier line whose
    # scope was read (written to [facts] as scope_from, so the guess stays visible).
    scope_from = {}
    last = None
    for ln in lines:
        if "rocmPackages" in per_line.get(ln["line"], {}):
            last = ln["line"]
        scope_from[ln["line"]] = last
    for name in sorted(components["component"]):
        attrs = components["component"][name].get("packages", {}).get("nixpkgs", [])
        if not attrs:
            continue
        releases = []
        for ln in lines:
            src = scope_from[ln["line"]]
            if src is None:
                continue
            if any(a in per_line[src]["rocmPackages"]["attrs"] for a in attrs):
                releases.append(ln["line"])
        out.append(f"[components.{tomlw.key(name)}]")
        out.append(f"package = {tomlw.value(attrs[0])}")
        out.append(f"releases = {tomlw.value(releases)}")
        out.append("")

    out.append("[facts]")
    out.append('scope = "rocmPackages"')
    out.append('argument = "gpuTargets"')
    out.append("lines = " + tomlw.value([ln["line"] for ln in lines]))
    out.append("")
    for ln in lines:
        out.append(f"[facts.line.{tomlw.key(ln['line'])}]")
        out.append(f"version = {tomlw.value(ln['version'])}")
        out.append(f"source = {tomlw.value(ln['source'])}")
        read = per_line.get(ln["line"], {})
        if scope_from[ln["line"]] != ln["line"]:
            out.append(f"scope_from = {tomlw.value(scope_from[ln['line']])}")
        borrowed = sorted(f["attr"] for f in files if ln["line"] in f.get("stand_in_for", []))
        if borrowed:
            out.append(f"stand_ins = {tomlw.value(borrowed)}")
        out.append("")
        for attr in sorted(read):
            out.append(f"[facts.line.{tomlw.key(ln['line'])}.package.{tomlw.key(attr)}]")
            for k, v in read[attr].items():
                out.append(f"{tomlw.key(k)} = {tomlw.value(v)}")
            out.append("")
    for ln_name in sorted(set(per_line) - {ln["line"] for ln in lines}):
        for attr, facts in sorted(per_line[ln_name].items()):
            out.append(f"[facts.rule.{tomlw.key(attr)}]")
            for k, v in facts.items():
                out.append(f"{tomlw.key(k)} = {tomlw.value(v)}")
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def main():
    try:
        manifest = tomllib.loads(MANIFEST.read_text())
        components = tomllib.loads(COMPONENTS.read_text())
        text = render(manifest, components)
    except (ExtractError, OSError, tomllib.TOMLDecodeError) as e:
        print(f"extract.py: {e}", file=sys.stderr)
        return 2
    if "--check" in sys.argv[1:]:
        if OUT.read_text() != text:
            print(f"extract.py: {OUT} differs from what the sources give", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
