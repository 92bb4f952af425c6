"""JSON paths and walks for the audit: every node and string leaf with its path, lookups that
read ``thought_signature`` and ``thoughtSignature`` as one key, path text, byte diffs.

Nothing here knows a provider shape: paths are tuples of dict keys and list indices.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import TypeAlias

from reasonwire.wire.model import JSON, JsonObject

Path: TypeAlias = tuple[str | int, ...]

_MISSING: JSON = object()
MISSING: JSON = _MISSING
"""Returned by :func:`get` when a path does not resolve."""


def nkey(key: str) -> str:
    """A key as compared across spellings: ``thought_signature`` == ``thoughtSignature``."""
    return key.replace("_", "").replace("-", "").lower()


def npath(path: Path) -> Path:
    return tuple(nkey(p) if isinstance(p, str) else p for p in path)


def fmt(path: Path) -> str:
    """``('messages', 1, 'content', 0, 'signature')`` -> ``messages[1].content[0].signature``."""
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + p
    return out or "$"


def nodes(value: JSON, path: Path = ()) -> Iterator[tuple[Path, JSON]]:
    """Every node under ``value`` (itself first), in document order."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from nodes(v, (*path, str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nodes(v, (*path, i))


def strings(value: JSON, path: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every string leaf under ``value`` with its path, in document order."""
    for p, v in nodes(value, path):
        if isinstance(v, str):
            yield p, v


def get(root: JSON, path: Path) -> JSON:
    """The node at ``path`` (dict keys matched exactly, else by :func:`nkey`), or MISSING."""
    node = root
    for p in path:
        if isinstance(p, int):
            if not isinstance(node, list) or not 0 <= p < len(node):
                return MISSING
            node = node[p]
        else:
            if not isinstance(node, dict):
                return MISSING
            if p in node:
                node = node[p]
                continue
            want = nkey(p)
            for k, v in node.items():
                if isinstance(k, str) and nkey(k) == want:
                    node = v
                    break
            else:
                return MISSING
    return node


def under(path: Path, prefix: Path) -> bool:
    return len(path) >= len(prefix) and npath(path[: len(prefix)]) == npath(prefix)


def b64(text: str) -> bytes | None:
    """Standard or urlsafe base64 (padding optional) decoded; None when it is not base64."""
    s = text.strip()
    if len(s) < 8 or any(c.isspace() for c in s):
        return None
    s = s.replace("-", "+").replace("_", "/")
    s += "=" * (-len(s) % 4)
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None


def same_b64(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` differ as strings but decode to the same bytes."""
    if a == b:
        return False
    da, db = b64(a), b64(b)
    return da is not None and da == db


def byte_diff(expected: str, got: str, context: int = 12) -> JsonObject:
    """Where two strings first differ, in UTF-8 bytes, with a short excerpt of each side."""
    e, g = expected.encode("utf-8"), got.encode("utf-8")
    off = next(
        (i for i, (x, y) in enumerate(zip(e, g, strict=False)) if x != y), min(len(e), len(g))
    )
    lo = max(0, off - context)
    return {
        "offset": off,
        "expected_bytes": len(e),
        "got_bytes": len(g),
        "expected": e[lo : off + context].decode("utf-8", "replace"),
        "got": g[lo : off + context].decode("utf-8", "replace"),
        "reencoded": same_b64(expected, got),
    }
