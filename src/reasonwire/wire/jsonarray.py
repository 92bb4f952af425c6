"""Incremental decoder for a JSON array delivered progressively (``[{..},\\r\\n{..}]``).

Gemini's ``streamGenerateContent`` without ``alt=sse`` answers one JSON array whose elements
arrive over time. This yields each element as soon as its closing brace has arrived, without
re-scanning bytes already consumed.
"""

from __future__ import annotations

import json

from reasonwire.errors import MalformedBody
from reasonwire.wire.model import JSON

_WS = " \t\r\n"
_NUMBER_CHARS = "0123456789.eE+-"


class JSONArrayDecoder:
    """Feed bytes of one top-level JSON array; get its elements as they complete."""

    __slots__ = ("_decoder", "_ended", "_pos", "_raw", "_started", "_text")

    def __init__(self) -> None:
        self._raw = b""
        self._text = ""
        self._pos = 0
        self._started = False
        self._ended = False
        self._decoder = json.JSONDecoder()

    @property
    def ended(self) -> bool:
        return self._ended

    def feed(self, chunk: bytes) -> list[JSON]:
        self._raw += chunk
        # Decode only complete UTF-8; keep a split character's bytes for the next feed.
        try:
            new = self._raw.decode("utf-8")
            self._raw = b""
        except UnicodeDecodeError as exc:
            if exc.end < len(self._raw) - 3 or exc.reason != "unexpected end of data":
                raise MalformedBody(f"stream is not UTF-8 at byte {exc.start}") from None
            new = self._raw[: exc.start].decode("utf-8")
            self._raw = self._raw[exc.start :]
        self._text += new
        return self._scan()

    def _scan(self) -> list[JSON]:
        out: list[JSON] = []
        text, pos = self._text, self._pos
        n = len(text)
        while pos < n and not self._ended:
            while pos < n and text[pos] in _WS:
                pos += 1
            if pos >= n:
                break
            ch = text[pos]
            if not self._started:
                if ch != "[":
                    raise MalformedBody(f"expected a JSON array, found {text[pos : pos + 20]!r}")
                self._started = True
                pos += 1
                continue
            if ch == ",":
                pos += 1
                continue
            if ch == "]":
                self._ended = True
                pos += 1
                break
            try:
                value, end = self._decoder.raw_decode(text, pos)
            except json.JSONDecodeError:
                break  # element not complete yet
            if (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and (end == n or text[end] in _NUMBER_CHARS)
            ):
                break  # a number is complete only once a non-number character follows it
            out.append(value)
            pos = end
        # Drop consumed text so memory stays bounded on long streams.
        self._text = text[pos:]
        self._pos = 0
        return out

    def close(self) -> None:
        """Raise if the array did not end or left undecodable bytes."""
        if self._raw:
            raise MalformedBody("stream ended inside a UTF-8 character")
        if self._ended and self._text.strip():
            raise MalformedBody(f"data after the closing ']': {self._text.strip()[:80]!r}")
        if self._text.strip() and not self._ended:
            raise MalformedBody(f"undecodable array element: {self._text.strip()[:80]!r}")
        if not self._ended:
            from reasonwire.errors import TruncatedStream

            raise TruncatedStream("JSON array stream ended before its closing ']'")
