"""The provider-neutral effort levels an organisation can govern."""

from __future__ import annotations

from typing import Literal

Level = Literal["low", "medium", "high"]
Requested = Literal["auto", "low", "medium", "high"]

LEVELS: tuple[Level, ...] = ("low", "medium", "high")
"""Ordered from least to most effort; order is what "ceiling" and "maximum" compare."""


def rank(level: str) -> int:
    """Position of ``level`` in :data:`LEVELS`; ValueError for anything else (fail closed)."""
    return LEVELS.index(level)  # type: ignore[arg-type,unused-ignore]


def parse_requested(value: str) -> Requested:
    """Normalise a user-facing level (``Auto``, ``High``...) or raise ValueError."""
    v = value.strip().lower()
    if v in ("auto", "low", "medium", "high"):
        return v  # type: ignore[return-value]
    raise ValueError(f"unknown effort level {value!r}; expected Auto, Low, Medium or High")
