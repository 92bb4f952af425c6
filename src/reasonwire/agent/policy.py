"""Opt-in cross-turn policy: keep reasoning carriers past the end of a turn.

By default the opaque tail ends with the turn, as the providers document: the next user turn
starts from the neutral transcript (visible text and function calls). The harness
(``reasonwire.eval``) measures, per route and model, whether replayed reasoning is consumed in
later turns too; for the pairs it marks so, this policy keeps every assistant step's native
payload (carriers included) in the history of later turns.

Matrix file (JSON). The harness's own matrix schema was not published when this was written,
so the reader accepts this documented minimal shape and ignores any other keys::

    {"rows": [{"route": "openai-responses", "model": "gpt-5", "verdict": "consumes-all-turns"},
              ...]}

A row may also give the verdict as ``"cross_turn": "consumed"``. Only those two spellings keep
carriers; every other verdict (and every pair not in the file) does not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasonwire.errors import ConfigError

KEEP_VERDICT = "consumes-all-turns"


@dataclass(frozen=True)
class CrossTurnPolicy:
    """The (route, model) pairs whose carriers are kept across turns."""

    keep: frozenset[tuple[str, str]] = frozenset()

    def keeps(self, route: str, model: str) -> bool:
        return (route, model) in self.keep

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]]) -> CrossTurnPolicy:
        return cls(frozenset(pairs))

    @classmethod
    def from_matrix(cls, path: str | Path) -> CrossTurnPolicy:
        """Read the harness's matrix JSON (see the module docstring for the shape)."""
        p = Path(path).expanduser()
        try:
            data: Any = json.loads(p.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read matrix {p}: {exc.strerror}") from None
        except ValueError as exc:
            raise ConfigError(f"matrix {p} is not valid JSON: {exc}") from None
        rows = data.get("rows") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise ConfigError(f'matrix {p}: expected {{"rows": [...]}}')
        keep: set[tuple[str, str]] = set()
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ConfigError(f"matrix {p}: rows[{i}] is not an object")
            route, model = row.get("route"), row.get("model")
            if not isinstance(route, str) or not isinstance(model, str):
                raise ConfigError(f"matrix {p}: rows[{i}] needs string 'route' and 'model'")
            if row.get("verdict") == KEEP_VERDICT or row.get("cross_turn") == "consumed":
                keep.add((route, model))
        return cls(frozenset(keep))


__all__ = ["KEEP_VERDICT", "CrossTurnPolicy"]
