"""Deterministic tokenizer for the simulator's usage figures.

Real providers count tokens with their own vocabularies; the consumption harness only needs a
count that is deterministic and grows with what the model "sees", so a replayed carrier that is
kept shows up as a prompt-token delta and a dropped one does not. One token per word run, per
digit run and per punctuation character is close enough to real tokenizers for short English.
"""

from __future__ import annotations

import re
from functools import lru_cache

_PIECE = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")

#: fixed cost of one message in the prompt (role markers of a chat template)
MESSAGE_OVERHEAD = 4


@lru_cache(maxsize=4096)
def count(text: str) -> int:
    """Number of tokens in ``text``."""
    return len(_PIECE.findall(text))


def pieces(text: str) -> list[str]:
    """``text`` split into token-sized pieces whose concatenation is ``text`` (stream deltas)."""
    out: list[str] = []
    last = 0
    for m in _PIECE.finditer(text):
        if m.start() > last:
            out.append(text[last : m.start()])
        out.append(m.group())
        last = m.end()
    if last < len(text):
        out.append(text[last:])
    merged: list[str] = []
    for p in out:
        if merged and (p.isspace() or len(merged[-1]) < 1):
            merged[-1] += p
        else:
            merged.append(p)
    return merged


def chunks(text: str, per: int = 4) -> list[str]:
    """``text`` in deltas of about ``per`` pieces each (never empty for non-empty text)."""
    ps = pieces(text)
    return ["".join(ps[i : i + per]) for i in range(0, len(ps), per)] or ([text] if text else [])
