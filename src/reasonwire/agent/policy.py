"""Opt-in cross-turn policy: keep reasoning carriers past the end of a turn.

By default the opaque tail ends with the turn, as the providers document: the next user turn
starts from the neutral transcript (visible text and function calls). The harness
(``reasonwire.eval``) measures, per route and model, whether replayed reasoning is consumed in
later turns too; for the pairs it marks so, this policy keeps every assistant step's native
payload (carriers included) in the history of later turns.

Matrix file: the harness's ``matrix.json`` (schema ``reasonwire.eval.matrix/1``, read into
typed rows by :func:`reasonwire.method.matrix.read_matrix`). A (route, model) keeps its
carriers when one of its rows
says ``consumes-all-turns`` for what the model actually returns, and none of its rows says
``rejected`` for it (a row per lane; the agent cannot pick the lane):

- the opaque step's ``opaque["replay"]`` verdict (turn-1 carriers replayed verbatim), or
- the text verdict of the variant that sends a readable carrier of a kind the model returned
  on turn 1 (``turn1.carriers[].kind``, e.g. ``reasoning_content``; Gemini ``thought`` is
  the ``thought_part`` variant).

Every other verdict, and every pair not in the file, drops carriers at the end of the turn.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reasonwire.method.matrix import SCHEMA, MatrixRow, read_matrix
from reasonwire.method.verdicts import Verdict
from reasonwire.wire.registry import dialects

KEEP_VERDICT = Verdict.CONSUMES_ALL_TURNS
REJECTED = Verdict.REJECTED
MATRIX_SCHEMA = SCHEMA


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
        keep: set[tuple[str, str]] = set()
        refused: set[tuple[str, str]] = set()
        for row in read_matrix(path).rows:
            verdicts = _verdicts(row)
            if KEEP_VERDICT in verdicts:
                keep.add((row.route, row.model))
            if REJECTED in verdicts:
                refused.add((row.route, row.model))
        return cls(frozenset(keep - refused))


def _verdicts(row: MatrixRow) -> list[Verdict]:
    """The verdicts of a row that speak for what its model returns (see the module doc)."""
    out: list[Verdict] = []
    replay = row.opaque.get("replay")
    if replay is not None:
        out.append(replay.verdict)
    if row.turn1 is not None:
        by_kind = _VARIANT_OF_KIND.get(row.dialect, {})
        for c in row.turn1.carriers:
            if c.opaque:
                continue
            entry = row.text.get(by_kind.get(c.kind, ""))
            if entry is not None:
                out.append(entry.verdict)
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
