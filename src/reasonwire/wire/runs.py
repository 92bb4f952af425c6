"""Learned event shapes: the bytes around one JSON string, and the proof that another payload
is the same JSON but for that string. The stream decoders (chat, anthropic, gemini) use it to
take the long runs of delta events that make up an answer without parsing each one.

A shape is learned from a payload the decoder parsed: its piece must sit once in the bytes,
between quotes, with no backslash anywhere (an escape could move or hide a quote). A payload
that starts with the prefix, ends with the suffix and whose middle holds no quote, backslash or
control byte is that payload with another plain string.
"""

from __future__ import annotations

from collections.abc import Sequence

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


__all__ = ["cut_around", "middle", "middles", "plain"]
