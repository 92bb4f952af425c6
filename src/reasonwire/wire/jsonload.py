"""The one JSON loader of the wire layer: orjson for speed, the stdlib for the rest.

Why: stream decoding parses one JSON payload per SSE event, and the stdlib parser alone runs
at roughly 30-55 MB/s on those payloads, which caps every decoder below the throughput bar of
issue 2. orjson parses the same documents several times faster and reads ``bytes`` directly
(no separate UTF-8 decode).

Where orjson accepts a document it gives the value ``json.loads`` gives (dicts keep key order,
strings are unchanged, floats round the same), with one exception: an integer outside the
64-bit range becomes a float. So a document holding a run of 19 or more digits is left to the
stdlib (a cheap byte scan decides; digits inside strings only cost speed). orjson refuses
some inputs the stdlib accepts (``NaN`` and ``Infinity``, lone surrogate escapes, a UTF-8 BOM
on bytes); those fall back to ``json.loads`` too, so nothing valid is rejected and errors are
the stdlib's ``json.JSONDecodeError`` with its usual message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import orjson

from reasonwire.errors import FastLoadRefused
from reasonwire.wire.model import JSON

_orjson_loads = orjson.loads
_json_loads = json.loads

# Every ASCII digit maps to "0": a run of 19 zeros then means 19 consecutive digits.
_DIGITS = bytes(48 if 48 <= b <= 57 else b for b in range(256))
_RUN = b"0" * 19
_RUN_STR = re.compile(r"[0-9]{19}")


def _long_digits(data: bytes | str) -> bool:
    if isinstance(data, str):
        return _RUN_STR.search(data) is not None
    return _RUN in data.translate(_DIGITS)


def loads(data: bytes | str) -> JSON:
    """Parse one JSON document exactly as ``json.loads`` would (same values, same errors)."""
    if _long_digits(data):
        return _json_loads(data)
    try:
        return _orjson_loads(data)
    except orjson.JSONDecodeError:
        return _json_loads(data)


def _checked(data: bytes) -> JSON:
    if _RUN in data.translate(_DIGITS):
        raise FastLoadRefused("19 or more consecutive digits")
    return _orjson_loads(data)


class StreamGuard:
    """Picks the fast loader for the payloads of a stream, chunk by chunk.

    ``loader(chunk)`` must be called with every chunk of the stream (also those that complete
    no event), before the events it completes are parsed.
    It returns a function that parses one payload (bytes) and raises ``ValueError`` whenever
    it cannot promise ``json.loads``'s value; the caller then takes its exact (stdlib) path.
    Until a run of 19 digits has been seen anywhere in the stream (across chunk borders too)
    that function is orjson itself; from then on every payload is scanned first.
    """

    __slots__ = ("_exact", "_tail")

    def __init__(self) -> None:
        self._tail = b""
        self._exact = False

    def loader(self, chunk: bytes) -> Callable[[bytes], JSON]:
        if self._exact:
            return _checked
        joined = self._tail + chunk[:32]  # a run may straddle chunk borders
        if _RUN in joined.translate(_DIGITS) or _RUN in chunk.translate(_DIGITS):
            self._exact = True
            return _checked
        self._tail = (self._tail + chunk[-32:])[-32:]
        return _orjson_loads

    @staticmethod
    def fast(loader: Callable[[bytes], JSON]) -> bool:
        """True when ``loader`` (from :meth:`loader`) is orjson itself: a payload parsed by
        orjson elsewhere is then the value it would give."""
        return loader is _orjson_loads


__all__ = ["StreamGuard", "loads"]
