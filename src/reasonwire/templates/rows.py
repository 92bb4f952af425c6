"""The scan's record: one :class:`Row` per (template, field), the ``templates.json`` schema.

``templates.json`` (stable; users script against it) is a JSON list, one object per
(template, field), fields in the order ``reasoning_content, reasoning, reasoning_details,
thinking, all``. Its keys are the fields of :class:`Row`, in that order (written and read by
:mod:`reasonwire.method.codec`); keys may be added, never renamed. ``server`` (a
:class:`ServerRow`) was added later: files without it still read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from reasonwire.errors import ConfigError
from reasonwire.method.codec import JSONRecord, from_json
from reasonwire.method.verdicts import SCAN_VERDICTS, Verdict
from reasonwire.templates.fixture import Fixture
from reasonwire.wire.model import ABSENT, JSON, JsonObject

VERDICTS = SCAN_VERDICTS
"""The verdicts a row can hold (:mod:`reasonwire.method.verdicts` says what each means)."""


@dataclass(frozen=True, slots=True)
class ServerRow(JSONRecord):
    """The same (template, field) rendered as one server hands it to the template (a render
    profile of :mod:`reasonwire.templates.server_profile`): the verdict to expect there.

    ``profile``: the profile's name (``llama-server``); ``verdict`` and the deltas: as in
    :class:`Row`, with the server's default settings; ``handler``: the server's template
    handler that recognised the template (null: its generic path); ``switches``: the
    server-set variables the template reads (``clear_thinking`` ...); ``switch_off_verdict``:
    the verdict with that setting off (null when the template reads none); ``causes``: the
    server-side facts behind a verdict that differs from the plain render (empty when equal);
    ``error``: the template's own message when ``verdict`` is ``error``;
    ``switch_off_causes``: as ``causes``, for ``switch_off_verdict``.
    """

    profile: str
    verdict: Verdict
    in_loop_delta: int | None
    cross_turn_delta: int | None
    handler: str | None
    switches: tuple[str, ...]
    switch_off_verdict: Verdict | None
    causes: tuple[str, ...]
    error: str | None
    switch_off_causes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Row(JSONRecord):
    """One (template, field) result.

    ``template``: the template file stem (e.g. ``Qwen-Qwen3-0.6B``); ``field``: the replayed
    field (``all`` = every field at once); ``in_loop_delta`` / ``cross_turn_delta``: tokens of
    the field's render minus the ``none`` render (null on error); ``tokenizer``:
    ``ggml-vocab-qwen2``, ``ggml-vocab-deepseek-llm (approx)``, ``tokenizer.json`` or
    ``chars/4``; ``error``: the template's own message when the verdict is ``error``;
    ``tokenizer_exact``: the vocabulary is the model's own family; ``trace_tokens``: T, the
    trace counted with the same tokenizer; ``threshold``: ceil(ratio * T);
    ``in_loop_canary`` / ``cross_turn_canary``: the canary sentence appears in the render;
    ``shape``: the message shape that rendered (e.g. ``args=object``); ``source``: the file
    the template came from; ``server``: the verdict under a server's render profile
    (:class:`ServerRow`; absent in files written before it, and when the scan skipped it).
    """

    template: str
    field: str
    verdict: Verdict
    in_loop_delta: int | None
    cross_turn_delta: int | None
    tokenizer: str
    error: str | None
    tokenizer_exact: bool
    trace_tokens: int
    threshold: int
    in_loop_canary: bool | None
    cross_turn_canary: bool | None
    shape: str | None
    source: str
    server: ServerRow = ABSENT


def read_rows(data: JSON) -> list[Row]:
    """The rows of a decoded ``templates.json``; a :class:`ConfigError` when it is not one."""
    if not isinstance(data, list):
        raise ConfigError("templates.json: expected a list of rows")
    return [from_json(Row, obj, what=f"templates.json row {i}") for i, obj in enumerate(data)]


DEFAULT_RATIO: Final = 0.5
"""Consumed when the delta is at least this share of the trace's tokens."""


@dataclass
class ScanOptions:
    """Knobs of a scan; the report states them."""

    ratio: float = DEFAULT_RATIO
    seed: int | None = None
    enable_thinking: bool = True
    chars_only: bool = False
    extra_kwargs: JsonObject = field(default_factory=dict)
    profile: str | None = "llama-server"
    """The server render profile each row also gets a verdict for (None: plain only)."""


@dataclass
class ScanResult:
    rows: list[Row]
    seconds: float
    options: ScanOptions
    fixture: Fixture

    def errors(self) -> list[str]:
        """Templates whose every field is an error."""
        by: dict[str, list[Row]] = {}
        for r in self.rows:
            by.setdefault(r.template, []).append(r)
        return [t for t, rs in by.items() if all(r.verdict == Verdict.ERROR for r in rs)]
