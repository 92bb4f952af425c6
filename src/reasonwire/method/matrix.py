"""The consumption matrix as typed rows: the schema of ``matrix.json`` and its reader.

``matrix.json`` (schema ``reasonwire.eval.matrix/1``) is what the live harness
(``reasonwire.eval``) concludes per (route, model, lane); the agent's cross-turn policy and
anyone scripting against the report read it. These classes are its one definition: the
harness builds them and writes them with :mod:`reasonwire.method.codec` (keys in field
order), :func:`read_matrix` reads them back. Outcomes and verdicts are the words of
:mod:`reasonwire.method.verdicts`.

A text position is one of three layouts, each its own class: :class:`TextMeasured` (the
variant answered on this lane), :class:`TextUnanswered` (the baseline did, the variant did
not), :class:`TextUnbased` (no baseline answered on this lane). An opaque position compares
verbatim and stripped (or stand-in) answers that both landed on the row's lane, replaying
that lane's turn 1.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from reasonwire.errors import ConfigError
from reasonwire.method.codec import JSONRecord, from_json
from reasonwire.method.verdicts import Outcome, Thresholds, Verdict
from reasonwire.wire.model import ABSENT, JSON

SCHEMA: Final = "reasonwire.eval.matrix/1"


@dataclass(frozen=True, slots=True)
class CarrierSummary(JSONRecord):
    """A carrier as records and reports show it (never its value)."""

    kind: str
    path: str
    opaque: bool
    size: int
    digest: str
    tool_call_id: str | None


@dataclass(frozen=True, slots=True)
class CallError(JSONRecord):
    """The status and message of a failed call (or why a mode has no answer on a lane)."""

    status: int | None
    error: str | None


@dataclass(frozen=True, slots=True)
class RowError(JSONRecord):
    """One failed cell of a row: which step, variant and position, and how it failed."""

    step: str
    variant: str
    position: str
    status: int | None
    error: str | None


@dataclass(frozen=True, slots=True)
class TextMeasured(JSONRecord):
    """A text position whose variant answered on the lane: ``delta`` = its billed input minus
    the baseline's; ``ratio`` = delta / T; ``canary``: the reply named the word."""

    wording: str | None
    baseline_input: int | None
    outcome: Outcome
    delta: int
    input: int | None
    ratio: float | None
    canary: bool
    status: int | None
    error: str | None


@dataclass(frozen=True, slots=True)
class TextUnanswered(JSONRecord):
    """A text position whose baseline answered on the lane but whose variant did not:
    ``rejected`` (the provider refused it) or ``missing``."""

    wording: str | None
    baseline_input: int | None
    outcome: Outcome
    delta: None
    canary: None
    status: int | None
    error: str | None


@dataclass(frozen=True, slots=True)
class TextUnbased(JSONRecord):
    """A text position without a baseline on the lane: ``baseline-failed`` (with the
    baseline's error) or ``missing``."""

    outcome: Outcome
    status: int | None
    error: str | None
    wording: str | None


TextPosition = TextMeasured | TextUnanswered | TextUnbased


@dataclass(frozen=True, slots=True)
class TextEntry(JSONRecord):
    """One text variant of a row: both positions and their verdict."""

    in_loop: TextPosition
    cross_turn: TextPosition
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class OpaquePosition(JSONRecord):
    """One position of the opaque step: turn 2 replaying turn 1's carriers ``verbatim``
    against ``stripped`` (and a ``stand_in`` signature where the dialect documents one);
    ``errors`` per mode that failed or did not land on the lane."""

    verbatim_input: int | None
    stripped_input: int | None
    stand_in_input: int | None
    wording: str | None
    errors: Mapping[str, CallError]
    delta: int | None
    canary: bool | None
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class OpaqueEntry(JSONRecord):
    """One opaque pair of a row (``replay``, or ``replay+<extra>``): positions and verdict."""

    in_loop: OpaquePosition
    cross_turn: OpaquePosition
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class Turn1(JSONRecord):
    """The lane's live turn 1, whose carriers the row's opaque cells replay."""

    effort: str | None
    response_id: str | None
    lane: str | None
    tool_calls: int | None
    carriers: tuple[CarrierSummary, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MatrixRow(JSONRecord):
    """The verdicts of one (route, model, lane).

    ``verdict`` is the method's one verdict of the row
    (:func:`reasonwire.method.verdicts.model_verdict`: ``consumes-all-turns``,
    ``in-loop-only``, ``accepted-ignored``, ``rejected``, ``baseline-failed``,
    ``direct-lane-not-reached``, ``incomplete``); the per-carrier verdicts stay in ``text``
    and ``opaque``. Files written before it existed have no such key: it reads as
    ``ABSENT`` (falsy) and is not written back.

    ``T`` is the trace's tokens for this row, ``T_source`` ``chars/4`` or ``count-endpoint``,
    ``T_note`` why it was not counted; ``text`` maps each text variant of the dialect
    (``none`` first), ``opaque`` each opaque pair; ``wording`` the probe wording each
    position used (``probe`` | ``neutral``); ``params_fix`` the parameter fixes the baseline
    needed; ``calls`` and ``cost_usd`` count every call of the (route, model), ``price`` says
    where the cost came from (``unknown``: an estimate at an assumed price, to be shown as
    one).
    """

    route: str
    model: str
    dialect: str
    lane: str
    verdict: Verdict = ABSENT  # the method's one verdict; matrices before it lack the key
    T: int
    T_source: str = "chars/4"  # matrices written before T was counted have neither
    T_note: str | None = None
    text: Mapping[str, TextEntry]
    opaque: Mapping[str, OpaqueEntry]
    turn1: Turn1 | None
    wording: Mapping[str, str]
    params_fix: tuple[str, ...]
    notes: tuple[str, ...]
    errors: tuple[RowError, ...]
    calls: int
    cost_usd: float
    price: str = ABSENT  # billed | listed | free | unknown (an estimate); older files lack it


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldCanary(JSONRecord):
    """One canary sentence of the fold evidence's trace: the region it was placed in
    (``head`` | ``middle`` | ``tail``), its word, ``text[start:end]`` the sentence, and where
    the fold's cuts leave it (``head`` | ``tail`` kept, ``folded``, ``straddles`` a cut)."""

    region: str
    word: str
    start: int
    end: int
    kept: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldSetup(JSONRecord):
    """The fold evidence's settings and trace (``eval run --fold``): the fold settings, the
    trace's length unfolded, kept by the fold (head + tail) and as the fold sends it (with
    its marker), T of the unfolded and the sent text by chars/4, the canaries.
    ``fold_id`` ties the step's call records to this setup."""

    fold_id: str
    floor_chars: int
    head_chars: int
    tail_chars: int
    providers: tuple[str, ...] | None
    drop: tuple[str, ...]
    trace_chars: int
    kept_chars: int
    folded_chars: int
    T_unfolded: int
    T_folded: int
    canaries: tuple[FoldCanary, ...]


@dataclass(frozen=True, slots=True)
class FoldRecall(JSONRecord):
    """One canary in one fold row: recalled by the reply to the ``unfolded`` and the
    ``folded`` replay (None: that replay has no answer), and ``expected`` of the folded reply
    (True kept, False folded, None when the sentence straddles a cut or was dropped)."""

    region: str
    word: str
    expected: bool | None
    unfolded: bool | None
    folded: bool | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FoldRow(JSONRecord):
    """The fold evidence of one (route, model, lane, field), in the loop.

    ``unfolded_delta`` / ``folded_delta``: billed input of the replay minus the byte-identical
    baseline's (same probe, no carrier); their outcomes against ``consume_ratio`` times
    ``T_unfolded`` / ``T_folded`` (the folded text's own T); ``saved_tokens``: unfolded minus
    folded billed input, ``saved_share`` that over ``unfolded_delta``, ``folded_share`` the
    characters the fold removed over the trace's (what ``saved_share`` should be near);
    ``action``: what the settings did to the carrier (``fold`` | ``drop``); ``recall``: per
    canary; ``recall_as_expected``: every kept canary recalled and no folded one (None until the
    folded replay answered and the unfolded one was consumed: a lane that ignores the field
    recalls nothing either way)."""

    route: str
    model: str
    dialect: str
    lane: str
    field: str
    action: str | None
    wording: str | None
    baseline_input: int | None
    unfolded_input: int | None
    folded_input: int | None
    unfolded_delta: int | None
    folded_delta: int | None
    unfolded_outcome: Outcome
    folded_outcome: Outcome
    T_unfolded: int
    T_folded: int
    saved_tokens: int | None
    saved_share: float | None
    folded_share: float
    recall: tuple[FoldRecall, ...]
    recall_as_expected: bool | None
    errors: tuple[RowError, ...]


@dataclass(frozen=True, slots=True)
class FoldSection(JSONRecord):
    """``matrix.json``'s ``fold`` key: the setup of the last ``--fold`` run and its rows."""

    setup: FoldSetup
    rows: tuple[FoldRow, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class MatrixRun(JSONRecord):
    """The run the matrix speaks for (the last ``run_start`` of the fixture), with ``runs``
    and ``run_ids`` counting every run that shared the output directory."""

    seed: int | None
    canary: str
    T: int
    T_source: str = "chars/4"  # matrices written before T was counted do not say
    trace_chars: int | None
    fixture_id: str | None
    effort: str | None
    max_tokens: int | None
    budget_usd: float | None
    versions: Mapping[str, str] | None
    runs: int
    run_ids: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class Matrix(JSONRecord):
    """The whole document: run metadata, thresholds, the text variants per dialect (and why a
    dialect has none), spend, budget stops (the harness's records as written), rows."""

    schema: Literal["reasonwire.eval.matrix/1"]
    generated_at: str
    out: str
    run: MatrixRun
    thresholds: Thresholds  # the ones the verdicts were computed with
    variants: Mapping[str, tuple[str, ...]]
    no_text_variants: Mapping[str, str]
    spent_usd: float
    calls: int
    budget_stops: tuple[Mapping[str, JSON], ...]
    rows: tuple[MatrixRow, ...]
    spent_estimate: bool = ABSENT  # some spend is at an assumed (unknown) price; older lack it
    fold: FoldSection = ABSENT  # the fold evidence (``eval run --fold``); other runs lack it


def read_matrix(path: str | Path) -> Matrix:
    """The typed matrix of a ``matrix.json``; a :class:`ConfigError` saying what is wrong
    with any other file."""
    p = Path(path).expanduser()
    try:
        data: JSON = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read matrix {p}: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"matrix {p} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ConfigError(f"matrix {p}: expected a {SCHEMA} document (eval report)")
    return from_json(Matrix, data, what=f"matrix {p}")


__all__ = [
    "SCHEMA",
    "CallError",
    "CarrierSummary",
    "FoldCanary",
    "FoldRecall",
    "FoldRow",
    "FoldSection",
    "FoldSetup",
    "Matrix",
    "MatrixRow",
    "MatrixRun",
    "OpaqueEntry",
    "OpaquePosition",
    "RowError",
    "TextEntry",
    "TextMeasured",
    "TextPosition",
    "TextUnanswered",
    "TextUnbased",
    "Turn1",
    "read_matrix",
]
