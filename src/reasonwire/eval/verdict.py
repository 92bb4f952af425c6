"""Verdicts from measured outcomes, with the thresholds stated.

Per position a cell's outcome is one of:

- ``consumed``: billed input grew by at least ``consume_ratio * T`` over the baseline (text
  step) or by more than ``opaque_min`` tokens over the stripped request (opaque step);
- ``dropped``: it grew by less;
- ``rejected``: the provider answered 4xx to the request with the carrier (status and exact
  error recorded) while the baseline passed;
- ``required``: (opaque) the carrier-free request was refused while the verbatim one passed:
  the provider demands the carrier in this position, so it reads it there;
- ``baseline-failed``: the baseline itself failed, nothing to compare with;
- ``missing``: not measured (budget stop, skipped).

Per (route, model, lane) and variant the two positions combine into one verdict:
``consumes-all-turns``, ``in-loop-only``, ``cross-turn-only``, ``accepted-ignored``,
``rejected``, ``baseline-failed``, ``incomplete``; ``direct-lane-not-reached`` replaces any of
them on a non-direct lane of a model that asked for the direct lane.
"""

from __future__ import annotations

from dataclasses import dataclass

VERDICTS: tuple[str, ...] = (
    "consumes-all-turns",
    "in-loop-only",
    "cross-turn-only",
    "accepted-ignored",
    "rejected",
    "baseline-failed",
    "direct-lane-not-reached",
    "incomplete",
)


@dataclass(frozen=True)
class Thresholds:
    consume_ratio: float = 0.5
    opaque_min: int = 25

    def text_outcome(self, delta: int, trace_tokens: int) -> str:
        return "consumed" if delta >= self.consume_ratio * trace_tokens else "dropped"

    def opaque_outcome(self, delta: int) -> str:
        return "consumed" if delta > self.opaque_min else "dropped"


def combine(in_loop: str, cross_turn: str) -> str:
    """One verdict from the two position outcomes (see the module docstring)."""
    pair = (in_loop, cross_turn)
    if "rejected" in pair:
        return "rejected"
    if "baseline-failed" in pair:
        return "baseline-failed"
    if "missing" in pair:
        return "incomplete"
    read_in = in_loop in ("consumed", "required")
    read_cross = cross_turn in ("consumed", "required")
    if read_in and read_cross:
        return "consumes-all-turns"
    if read_in:
        return "in-loop-only"
    if read_cross:
        return "cross-turn-only"
    return "accepted-ignored"
