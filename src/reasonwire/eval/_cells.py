"""Cells: one request of the method, its body, and the record of its answer.

A cell is (route, model, step, position, variant, wording, effort, extra, attempt). The
``text`` step sends the fixture with a text variant's carriers; the ``opaque`` step sends the
live turn 1 (``position="turn1"``) and then turn 2 with the carriers it returned, ``verbatim``,
``stripped`` or (where the dialect documents one) with a ``stand_in`` signature.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar, overload
from urllib.parse import urlsplit

from reasonwire.eval._params import ParamFix
from reasonwire.eval._records import CallRecord, CellLabels, FoldFacts
from reasonwire.method.matrix import CarrierSummary
from reasonwire.routes import Route
from reasonwire.wire.fold import FoldReport, FoldSettings, fold_request, marker
from reasonwire.wire.model import ABSENT, JSON, Message, RequestOptions, ToolSpec, Turn
from reasonwire.wire.registry import get_dialect

T = TypeVar("T")

FILTER_REASONS = frozenset({"content_filter", "safety", "SAFETY", "refusal"})
"""Finish reasons that mean a safety layer replaced the answer, as the wire layer parses them
into ``Turn.finish_reason`` (the provider's own word, so this is data, not a branch per
provider): ``content_filter`` (Chat Completions ``finish_reason``), ``refusal`` (Anthropic
``stop_reason`` since Claude 4: "Streaming refusals" in Anthropic's docs; the body may carry no
``usage``), ``SAFETY`` (Gemini ``finishReason``). A call that ends in one is a refusal, handled
like a ``403`` (:mod:`reasonwire.eval._steps`: the probe falls back to the neutral wording),
with or without usage figures."""


@dataclass(frozen=True)
class Cell:
    route: Route
    model: str
    step: str  # "text" | "opaque"
    position: str  # "in_loop" | "cross_turn" | "turn1"
    variant: str  # text variant, or "turn1" / "verbatim" / "stripped" / "stand_in"
    wording: str
    effort: str | None
    transcript: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    params: dict[str, JSON]
    fix: ParamFix
    extra: str = ""  # opaque extra pair name ("" or e.g. "all_turns")
    keep_carriers: bool = True
    attempt: int = 0
    t1_lane: str | None = None  # turn 2: the lane of the turn 1 whose carriers it replays
    t1_run: str | None = None  # turn 2: the run id of that turn-1 capture
    fold_mode: str = ""  # fold step: "baseline" | "unfolded" | "folded"
    fold_id: str = ""  # fold step: the fold setup (``FoldTrace.fold_id``)
    fold: FoldSettings | None = None  # folded cells: the body goes through ``fold_request``

    def options(self) -> RequestOptions:
        return RequestOptions(
            model=self.model,
            tools=self.tools,
            extra_body=self.params,
            keep_carriers=self.keep_carriers,
        )

    def body(self) -> dict[str, JSON]:
        """The exact request body: permissive carrier profile, route params as extra_body;
        a ``folded`` cell's body is then folded as an agent's would be (:meth:`folding`)."""
        dialect = get_dialect(self.route.dialect)
        body = dialect.build_request(list(self.transcript), self.options(), None)
        return body if self.fold is None else self.folding(body)[0]

    def folding(self, body: dict[str, JSON] | None = None) -> tuple[dict[str, JSON], FoldReport]:
        """``fold_request`` over the built body, matched by route name, host and model, the
        names a fold settings file lists (``reasonwire fold plan`` writes ``route/model``)."""
        assert self.fold is not None
        if body is None:
            dialect = get_dialect(self.route.dialect)
            body = dialect.build_request(list(self.transcript), self.options(), None)
        host = urlsplit(self.route.base_url).netloc or None
        return fold_request(
            self.route.dialect, body, self.fold, route=self.route.name, host=host,
            model=self.model,
        )  # fmt: skip

    def fold_facts(self) -> FoldFacts | None:
        """What the fold did to this cell's request (None for a cell that is not folded)."""
        if self.fold is None:
            return None
        report = self.folding()[1]
        if not report.texts:
            return None
        first = report.texts[0]
        sent = len(marker(first.folded)) + first.kept if first.action == "fold" else 0
        return FoldFacts(
            action=first.action, texts=len(report.texts), chars=first.chars, kept=first.kept,
            sent=sent,
        )  # fmt: skip

    def path(self) -> str:
        return get_dialect(self.route.dialect).request_path(self.options())

    def labels(self) -> CellLabels:
        return CellLabels(
            route=self.route.name,
            model=self.model,
            dialect=self.route.dialect,
            step=self.step,
            position=self.position,
            variant=self.variant,
            wording=self.wording,
            effort=self.effort,
            extra=self.extra,
            attempt=self.attempt,
            t1_lane=ABSENT if self.t1_lane is None else self.t1_lane,
            t1_run=ABSENT if self.t1_run is None else self.t1_run,
            params_sig=self.fix.signature(),
            fix_notes=self.fix.notes,
            fold_mode=self.fold_mode or ABSENT,
            fold_id=self.fold_id or ABSENT,
        )


class _FromRecord(Generic[T]):
    """A :class:`CallOutcome` fact read off its record, or ``absent`` when no call was sent
    (the budget stopped it): the one rule every such fact follows."""

    def __init__(self, read: Callable[[CallRecord], T], absent: T) -> None:
        self._read = read
        self._absent = absent

    @overload
    def __get__(self, outcome: None, owner: type[CallOutcome]) -> _FromRecord[T]: ...
    @overload
    def __get__(self, outcome: CallOutcome, owner: type[CallOutcome]) -> T: ...
    def __get__(self, outcome: CallOutcome | None, owner: type[CallOutcome]) -> T | _FromRecord[T]:
        if outcome is None:
            return self
        return self._absent if outcome.record is None else self._read(outcome.record)


@dataclass(frozen=True)
class CallOutcome:
    """What one call gave: the record written (None: not sent, the budget stopped it) and the
    turn when the answer parsed."""

    record: CallRecord | None
    turn: Turn | None = None
    reused: bool = False

    @property
    def skipped(self) -> bool:
        return self.record is None

    ok = _FromRecord(lambda r: r.ok, False)
    status = _FromRecord(lambda r: r.status, None)
    filtered = _FromRecord(lambda r: r.filtered, False)
    lane = _FromRecord(lambda r: r.lane, None)
    error = _FromRecord(lambda r: r.error, None)
    error_body = _FromRecord(lambda r: r.error_body, None)


@dataclass
class CallStats:
    sent: int = 0
    reused: int = 0
    errors: int = 0
    not_resent: int = 0  # calls in flight at two interruptions: not sent a third time
    started: float = field(default_factory=time.monotonic)


def carrier_summary(turn: Turn) -> tuple[CarrierSummary, ...]:
    """Carriers of a turn as the report shows them: kind, path, opaque, size, digest."""
    return tuple(
        CarrierSummary(c.kind, c.path, c.opaque, c.size, c.digest, c.tool_call_id)
        for c in turn.carriers
    )
