"""TOML literals for the engine fact extractors (scripts/engines/<tool>/extract.py): one way to
write a string, list, inline table or key, so every data/engines/<tool>.toml is written alike."""

import re


def string(s: str) -> str:
    """A TOML basic string."""
    out = ['"']
    for c in s:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif ord(c) < 0x20:
            out.append("\\u%04x" % ord(c))
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def strings(items) -> str:
    """A TOML array of strings."""
    return "[" + ", ".join(string(i) for i in items) + "]"


def key(k: str) -> str:
    """A bare key where TOML allows one, else a quoted key."""
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else string(k)


def value(v) -> str:
    """A TOML value: bool, int, string, array or inline table (keys in the dict's order)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} as TOML")
