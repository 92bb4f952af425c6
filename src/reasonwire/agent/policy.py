"""Opt-in cross-turn policy: keep reasoning carriers past the end of a turn.

By default the opaque tail ends with the turn, as the providers document: the next user turn
starts from the neutral transcript (visible text and function calls). The harness
(``reasonwire.eval``) measures, per route and model, whether replayed reasoning is consumed in
later turns too; for the pairs it marks so, this policy keeps every assistant step's native
payload (carriers included) in the history of later turns.

Matrix file: the harness's ``matrix.json`` (schema ``reasonwire.eval.matrix/1``, documented
in :mod:`reasonwire.eval.matrix`). A (route, model) keeps its carriers when one of its rows
says ``consumes-all-turns`` for what the model actually returns, and none of its rows says
``rejected`` for it (a row per lane; the agent cannot pick the lane):

- the opaque step's ``opaque["replay"]`` verdict (turn-1 carriers replayed verbatim), or
- the text verdict of the variant that sends a readable carrier of a kind the model returned
  on turn 1 (``turn1.carriers[].kind``, e.g. ``reasoning_content``; Gemini ``thought`` is
  the ``thought_part`` variant).

Every other verdict, and every pair not in the file, drops carriers at the end of the turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reasonwire.errors import ConfigError
from reasonwire.wire.registry import dialects

KEEP_VERDICT = "consumes-all-turns"
REJECTED = "rejected"
MATRIX_SCHEMA = "reasonwire.eval.matrix/1"


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
        """Read the harness's ``matrix.json`` (see the module docstring for the rule)."""
        p = Path(path).expanduser()
        try:
            data: Any = json.loads(p.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read matrix {p}: {exc.strerror}") from None
        except ValueError as exc:
            raise ConfigError(f"matrix {p} is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("schema") != MATRIX_SCHEMA:
            raise ConfigError(f"matrix {p}: expected a {MATRIX_SCHEMA} document (eval report)")
        rows = data.get("rows")
        if not isinstance(rows, list):
            raise ConfigError(f"matrix {p}: 'rows' is not a list")
        keep: set[tuple[str, str]] = set()
        refused: set[tuple[str, str]] = set()
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise ConfigError(f"matrix {p}: rows[{i}] is not an object")
            route, model = row.get("route"), row.get("model")
            if not isinstance(route, str) or not isinstance(model, str):
                raise ConfigError(f"matrix {p}: rows[{i}] needs string 'route' and 'model'")
            verdicts = _verdicts(row)
            if KEEP_VERDICT in verdicts:
                keep.add((route, model))
            if REJECTED in verdicts:
                refused.add((route, model))
        return cls(frozenset(keep - refused))


def _verdicts(row: dict[str, Any]) -> list[str]:
    """The verdicts of a row that speak for what its model returns (see the module doc)."""
    out: list[str] = []
    opaque = row.get("opaque")
    replay = opaque.get("replay") if isinstance(opaque, dict) else None
    if isinstance(replay, dict) and isinstance(replay.get("verdict"), str):
        out.append(replay["verdict"])
    turn1 = row.get("turn1")
    carriers = turn1.get("carriers") if isinstance(turn1, dict) else None
    text = row.get("text")
    if isinstance(carriers, list) and isinstance(text, dict):
        by_kind = _VARIANT_OF_KIND.get(str(row.get("dialect")), {})
        for c in carriers:
            if not isinstance(c, dict) or c.get("opaque"):
                continue
            entry = text.get(by_kind.get(str(c.get("kind")), ""))
            if isinstance(entry, dict) and isinstance(entry.get("verdict"), str):
                out.append(entry["verdict"])
    return out


def _variant_of_kind() -> dict[str, dict[str, str]]:
    """dialect -> carrier kind -> the text variant that sends exactly that carrier."""
    out: dict[str, dict[str, str]] = {}
    for dialect in dialects():
        for name, specs in dialect.variants.text.items():
            if len(specs) == 1:
                out.setdefault(dialect.name, {})[specs[0][0]] = name
    return out


_VARIANT_OF_KIND = _variant_of_kind()


__all__ = ["KEEP_VERDICT", "MATRIX_SCHEMA", "CrossTurnPolicy"]
