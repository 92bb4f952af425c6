"""The verdict vocabulary: what a measured position is (:class:`Outcome`), what a field or a
carrier is once both positions are known (:class:`Verdict`), and the thresholds between.

The same words serve the live harness (``reasonwire.eval``: billed prompt tokens) and the
offline template scan (``reasonwire.templates``: rendered prompt tokens). Every member carries
its meaning as its ``__doc__``; the values are the words written in ``matrix.json`` and
``templates.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Self

from reasonwire.method.codec import JSONRecord


class _Word(StrEnum):
    """A word of the vocabulary: its value is what files hold, its ``__doc__`` what it means."""

    def __new__(cls, value: str, doc: str) -> Self:
        member = str.__new__(cls, value)
        member._value_ = value
        member.__doc__ = doc
        return member


class Outcome(_Word):
    """What one position (``in_loop`` or ``cross_turn``) of a cell measured."""

    CONSUMED = (
        "consumed",
        "billed (text step) or rendered (scan) input grew by at least the threshold: the "
        "carrier reached the model",
    )
    DROPPED = "dropped", "the input grew by less than the threshold: the carrier was dropped"
    REJECTED = (
        "rejected",
        "the provider answered 4xx to the request with the carrier (status and error "
        "recorded) while the baseline passed",
    )
    REQUIRED = (
        "required",
        "(opaque step) the carrier-free request was refused while the verbatim one passed: "
        "the provider demands the carrier here, so it reads it",
    )
    BASELINE_FAILED = "baseline-failed", "the baseline itself failed: nothing to compare with"
    MISSING = "missing", "not measured (budget stop, skipped, or no answer on this lane)"
    BASELINE = "baseline", "the baseline cell itself (variant none): the reference, not a result"


class Verdict(_Word):
    """What a carrier (text variant, opaque replay) or a template field is, both positions
    combined (:func:`combine`)."""

    CONSUMES_ALL_TURNS = (
        "consumes-all-turns",
        "read in the tool loop and across turns: a client may keep replaying it",
    )
    IN_LOOP_ONLY = (
        "in-loop-only",
        "read inside the tool loop, dropped once a new user message follows",
    )
    CROSS_TURN_ONLY = (
        "cross-turn-only",
        "read across turns but not in the loop (no known model does this; kept so that one "
        "would never be mislabelled)",
    )
    ACCEPTED_IGNORED = (
        "accepted-ignored",
        "accepted, but the input grew by less than the threshold in both positions",
    )
    REJECTED = "rejected", "a position's request with the carrier was refused (4xx)"
    BASELINE_FAILED = "baseline-failed", "a position's baseline failed: nothing to compare"
    DIRECT_LANE_NOT_REACHED = (
        "direct-lane-not-reached",
        "a non-direct lane of a model that asked for the direct lane (``--want-direct``): "
        "replaces any verdict, the lane is not the one asked about",
    )
    INCOMPLETE = "incomplete", "a position was not measured (budget stop, skipped)"
    ERROR = (
        "error",
        "(template scan) the template refused every documented message shape; the row "
        "holds the template's own message",
    )
    BASELINE = "baseline", "the baseline variant's own entry: the reference, not a verdict"


HARNESS_VERDICTS: tuple[Verdict, ...] = (
    Verdict.CONSUMES_ALL_TURNS,
    Verdict.IN_LOOP_ONLY,
    Verdict.CROSS_TURN_ONLY,
    Verdict.ACCEPTED_IGNORED,
    Verdict.REJECTED,
    Verdict.BASELINE_FAILED,
    Verdict.DIRECT_LANE_NOT_REACHED,
    Verdict.INCOMPLETE,
)
"""The verdicts of the live harness's matrix (besides ``baseline`` on the ``none`` entry)."""

SCAN_VERDICTS: tuple[Verdict, ...] = (
    Verdict.CONSUMES_ALL_TURNS,
    Verdict.IN_LOOP_ONLY,
    Verdict.CROSS_TURN_ONLY,
    Verdict.ACCEPTED_IGNORED,
    Verdict.ERROR,
)
"""The verdicts of the offline template scan."""

_READ = frozenset({Outcome.CONSUMED, Outcome.REQUIRED})


def outcome_at(delta: float, threshold: float) -> Outcome:
    """``consumed`` when ``delta`` reaches ``threshold``, else ``dropped``."""
    return Outcome.CONSUMED if delta >= threshold else Outcome.DROPPED


@dataclass(frozen=True, slots=True)
class Thresholds(JSONRecord):
    """Where a delta becomes ``consumed``: ``consume_ratio * T`` for a text carrier (T the
    trace's tokens), more than ``opaque_min`` tokens for an opaque one (verbatim against
    stripped). ``lane_attempts``: how often a cell is resampled to land on a lane (the
    harness's; the matrix states it, no verdict reads it)."""

    consume_ratio: float = 0.5
    opaque_min: int = 25
    lane_attempts: int | None = None

    def text_outcome(self, delta: int, trace_tokens: int) -> Outcome:
        return outcome_at(delta, self.consume_ratio * trace_tokens)

    def opaque_outcome(self, delta: int) -> Outcome:
        return Outcome.CONSUMED if delta > self.opaque_min else Outcome.DROPPED


def model_verdict(entries: Sequence[tuple[Outcome, Outcome]]) -> Verdict:
    """The method's one verdict of a (route, model, lane) from its carriers' position outcomes
    (every text variant but ``none``, every opaque pair), in this order:

    - ``baseline-failed``: no carrier could be compared because the in-loop baseline failed
      (or the row has no carrier entry at all after a failure: see :func:`row_verdict`);
    - ``consumes-all-turns``: some carrier was read across turns;
    - ``in-loop-only``: some carrier was read in the loop, none across turns;
    - ``rejected``: EVERY carrier was refused (4xx) in some position;
    - ``incomplete``: a carrier position was not measured;
    - ``accepted-ignored``: the rest: every answered carrier grew the input by less than the
      threshold in both positions (a carrier refused among ignored ones stays visible in its
      cell; nothing was read).
    """
    if not entries:
        return Verdict.INCOMPLETE
    if any(p[0] == Outcome.BASELINE_FAILED for p in entries) and not any(
        o in _READ for p in entries for o in p
    ):
        return Verdict.BASELINE_FAILED
    if any(p[1] in _READ for p in entries):
        return Verdict.CONSUMES_ALL_TURNS
    if any(p[0] in _READ for p in entries):
        return Verdict.IN_LOOP_ONLY
    if all(Outcome.REJECTED in p for p in entries):
        return Verdict.REJECTED
    if any(o in (Outcome.MISSING, Outcome.BASELINE_FAILED) for p in entries for o in p):
        return Verdict.INCOMPLETE
    return Verdict.ACCEPTED_IGNORED


def combine(in_loop: Outcome, cross_turn: Outcome) -> Verdict:
    """One verdict from the two position outcomes: a refusal or a failed baseline in either
    position wins, then an unmeasured one; otherwise where the carrier was read."""
    pair = (in_loop, cross_turn)
    if Outcome.REJECTED in pair:
        return Verdict.REJECTED
    if Outcome.BASELINE_FAILED in pair:
        return Verdict.BASELINE_FAILED
    if Outcome.MISSING in pair:
        return Verdict.INCOMPLETE
    read_in, read_cross = in_loop in _READ, cross_turn in _READ
    if read_in and read_cross:
        return Verdict.CONSUMES_ALL_TURNS
    if read_in:
        return Verdict.IN_LOOP_ONLY
    if read_cross:
        return Verdict.CROSS_TURN_ONLY
    return Verdict.ACCEPTED_IGNORED


__all__ = [
    "HARNESS_VERDICTS",
    "SCAN_VERDICTS",
    "Outcome",
    "Thresholds",
    "Verdict",
    "combine",
    "model_verdict",
    "outcome_at",
]
