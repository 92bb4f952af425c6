"""Token usage as Google's two APIs report it (Gemini ``generateContent`` and Interactions).

Both count the same way under different names: the input figure includes the cached tokens,
tokens of tool results the API fetched itself (search) are billed as input but reported apart,
and thought tokens are billed as output but reported apart. So input_uncached = input -
cached + tool use, cache_read = cached, output = output + thoughts, reasoning = thoughts.
Each dialect gives its names (:class:`UsageNames`, with the sources in its ``_parse`` module).
"""

from __future__ import annotations

from dataclasses import dataclass

from reasonwire.errors import MalformedBody
from reasonwire.wire.model import JSON, JsonObject, Usage


@dataclass(frozen=True, slots=True)
class UsageNames:
    """Where one API puts each figure; ``where`` names the usage object in errors."""

    where: str
    input: str
    cached: str
    tool_use: str
    output: str
    thoughts: str


def google_usage(raw: JSON, names: UsageNames) -> Usage | None:
    """The :class:`Usage` of a usage object (None when there is none); a figure that is
    present must be an integer (:class:`MalformedBody` otherwise, never an invented 0)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise MalformedBody(f"{names.where} must be an object")
    given = _count(raw, names.input, names.where)
    cached = _count(raw, names.cached, names.where)
    tool_use = _count(raw, names.tool_use, names.where)
    out = _count(raw, names.output, names.where)
    thoughts = _count(raw, names.thoughts, names.where)
    uncached: int | None = None
    if given is not None or tool_use is not None:
        uncached = (given or 0) - (cached or 0) + (tool_use or 0)
    output = None if out is None and thoughts is None else (out or 0) + (thoughts or 0)
    return Usage(
        input_uncached=uncached, cache_read=cached, output=output, reasoning=thoughts, raw=raw
    )


def _count(raw: JsonObject, key: str, where: str) -> int | None:
    v = raw.get(key)
    if v is None:
        return None
    if type(v) is not int:
        raise MalformedBody(f"{where}.{key} must be an integer, got {v!r}")
    return v


__all__ = ["UsageNames", "google_usage"]
