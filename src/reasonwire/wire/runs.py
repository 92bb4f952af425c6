"""Learned event shapes: the bytes around one JSON string, and the proof that another payload
is the same JSON but for that string. The stream decoders (chat, anthropic, gemini) use it to
take the long runs of delta events that make up an answer without parsing each one.

A shape is learned from a payload the decoder parsed: its piece must sit once in the bytes,
between quotes, with no backslash anywhere (an escape could move or hide a quote). A payload
that starts with the prefix, ends with the suffix and whose middle holds no quote, backslash or
control byte is that payload with another plain string.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Protocol, TypeVar

_CONTROL = bytes(range(32))


def cut_around(data: bytes, piece: str) -> tuple[bytes, bytes] | None:
    """``(prefix, suffix)`` around the one quoted occurrence of ``piece`` in ``data``
    (``prefix`` ends with its opening quote, ``suffix`` starts with its closing one); None
    when ``data`` holds a backslash or ``"piece"`` is not there exactly once."""
    if b"\\" in data:
        return None
    needle = b'"' + piece.encode("utf-8") + b'"'
    if data.count(needle) != 1:
        return None
    at = data.index(needle) + 1
    return data[:at], data[at + len(needle) - 2 :]


def plain(mid: bytes) -> bool:
    """True when ``mid`` can only be the inside of one JSON string: no quote, backslash or
    control byte."""
    return b'"' not in mid and b"\\" not in mid and len(mid.translate(None, _CONTROL)) == len(mid)


def middle(data: bytes, prefix: bytes, suffix: bytes) -> str | None:
    """The string ``data`` holds between ``prefix`` and ``suffix``, or None when ``data`` is
    not that shape around a plain string (or is not UTF-8)."""
    end = len(data) - len(suffix)
    if end < len(prefix) or not data.startswith(prefix) or not data.endswith(suffix):
        return None
    mid = data[len(prefix) : end]
    if not plain(mid):
        return None
    try:
        return mid.decode("utf-8")
    except UnicodeDecodeError:
        return None


def middles(datas: Sequence[bytes], prefix: bytes, suffix: bytes) -> list[str] | None:
    """:func:`middle` of every payload of a batch, proved with a few C-level passes over all
    of them at once; None when any one is not the shape."""
    n, lp, ls = len(datas), len(prefix), len(suffix)
    if (
        sum(map(bytes.startswith, datas, [prefix] * n)) != n
        or sum(map(bytes.endswith, datas, [suffix] * n)) != n
        or min(map(len, datas)) < lp + ls
    ):
        return None
    mids = b"\n".join([d[lp : len(d) - ls] for d in datas])
    if b'"' in mids or b"\\" in mids or len(mids) - len(mids.translate(None, _CONTROL)) != n - 1:
        return None
    try:
        return mids.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None


class Shape(Protocol):
    """A learned shape: the bytes before and after its one string."""

    @property
    def prefix(self) -> bytes: ...

    @property
    def suffix(self) -> bytes: ...


S = TypeVar("S", bound=Shape)


def take(shapes: Sequence[S], datas: Sequence[bytes]) -> tuple[S, list[str]] | None:
    """The shape of a batch (the one whose prefix its first payload starts with) and the
    :func:`middles` of its payloads; None when no shape or not every payload fits it."""
    first = datas[0]
    shape = next((sh for sh in shapes if first.startswith(sh.prefix)), None)
    if shape is None:
        return None
    pieces = middles(datas, shape.prefix, shape.suffix)
    return None if pieces is None else (shape, pieces)


_NUMBER = rb"(?:0|[1-9][0-9]*)"
"""A JSON integer that is not negative: digits, no leading zero."""
_STRING = rb'([^"\\\x00-\x1f]*)'
"""The inside of a plain JSON string, captured: no quote, backslash or control byte."""
_ASCII = rb"[\x20\x21\x23-\x5b\x5d-\x7e]*"
"""The inside of a plain ASCII JSON string (an uncaptured hole: it needs no UTF-8 check)."""
_SAMPLES: tuple[tuple[int, str], ...] = ((7, "a"), (12, "bb"))
"""Two fillings for the proof of a template (two, so one differs from any learned value)."""


class Template:
    """A payload's bytes with holes: integers and plain strings at fixed places, all else
    literal. Why: a Responses delta event carries a ``sequence_number`` and an
    ``obfuscation`` string besides its text, so no single-string shape (:func:`cut_around`)
    fits two of them; a template does.

    A template is only made by :func:`learn_template`, which proves by parsing that filling
    its holes with other values gives the learned payload with just those values changed.
    Token for token a filled template is that payload, so any other integer (digits, no
    leading zero) and any other plain string give the same JSON but for those fields.
    """

    __slots__ = ("_pattern", "head")

    def __init__(self, head: bytes, pattern: re.Pattern[bytes]) -> None:
        self.head = head
        """The literal bytes before the first hole (a cheap first test)."""
        self._pattern = pattern

    def captured(self, datas: Sequence[bytes]) -> list[str] | None:
        """The captured string of every payload of a batch, in order; None when any one is
        not the template filled with plain integers and plain strings, or is not UTF-8.

        The proof is C-level passes over the payloads joined by newlines: exactly
        ``len(datas) - 1`` newlines (so a line is a payload), one match of the line-anchored
        pattern per payload (a match cannot cross a line: no literal and no hole holds a
        newline), and a UTF-8 decode of the captured strings (the literals were decoded
        when learned and the other holes are ASCII, so the whole payload is UTF-8)."""
        blob = b"\n".join(datas)
        if blob.count(b"\n") != len(datas) - 1:
            return None
        found = self._pattern.findall(blob)
        if len(found) != len(datas):
            return None
        try:
            return b"\n".join(found).decode("utf-8").split("\n")
        except UnicodeDecodeError:
            return None


def learn_template(
    data: bytes,
    payload: Mapping[str, object],
    holes: Sequence[str],
    capture: str,
    loads: Callable[[bytes], object],
) -> Template | None:
    """The template of ``data`` (which parsed to ``payload``) with a hole at the value of
    each key of ``holes`` (an int or a str in ``payload``) and ``capture``'s string captured
    by :meth:`Template.captured`; None when it cannot be proved.

    Each hole is found as ``"key":value`` in compact form (the value as raw bytes, so a
    string with an escape is not found), exactly once; ``data`` must be UTF-8. The proof:
    ``data`` with every hole filled with other values parses (``loads``) to ``payload``
    with just those values changed, for two different fillings. A literal holding a
    newline never matches (see :meth:`Template.captured`), so it needs no test here."""
    try:
        data.decode("utf-8")  # the literals: what the captured strings' check relies on
    except UnicodeDecodeError:
        return None
    spans: list[tuple[int, int, str]] = []
    for key in holes:
        value = payload.get(key)
        if type(value) is int:
            text = str(value).encode()
        elif type(value) is str:
            text = b'"' + value.encode("utf-8") + b'"'
        else:
            return None
        needle = b'"' + key.encode("utf-8") + b'":' + text
        if data.count(needle) != 1:
            return None
        start = data.index(needle) + len(needle) - len(text)
        spans.append((start, start + len(text), key))
    spans.sort()
    if (
        type(payload.get(capture)) is not str
        or capture not in holes
        or any(a[1] > b[0] for a, b in pairwise(spans))
    ):
        return None
    for number, string in _SAMPLES:
        filled, at = b"", 0
        for start, end, key in spans:
            fill = str(number) if type(payload[key]) is int else '"' + string + key + '"'
            filled += data[at:start] + fill.encode("utf-8")
            at = end
        expected = {
            **payload,
            **{k: number if type(payload[k]) is int else string + k for k in holes},
        }
        try:
            if loads(filled + data[at:]) != expected:
                return None
        except ValueError:
            return None
    pattern, at = b"(?m)^", 0
    for start, end, key in spans:
        if type(payload[key]) is int:
            hole = _NUMBER
        else:
            hole = b'"' + (_STRING if key == capture else _ASCII) + b'"'
        pattern += re.escape(data[at:start]) + hole
        at = end
    pattern += re.escape(data[at:]) + b"$"
    return Template(data[: spans[0][0]], re.compile(pattern))


__all__ = ["Template", "cut_around", "learn_template", "middle", "middles", "plain"]
