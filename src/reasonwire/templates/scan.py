"""Offline consumption scan: which chat templates render replayed reasoning, and when.

Why: on vLLM, SGLang and llama.cpp the chat template decides whether a replayed reasoning
field reaches the model. Rendering the method's fixture through each template and counting
the prompt with the model's own vocabulary answers "is ``reasoning_content`` consumed in the
loop, across turns, or dropped" for free, before any paid call.

Method (the harness's, offline): for every template, every variant of
:mod:`reasonwire.templates.fixture` is rendered at both positions; a field's delta is the
token count of its render minus the ``none`` render (every other byte identical). With ``T``
the token count of the trace itself, a delta ``>= ratio * T`` (``ratio`` 0.5 by default)
means consumed. The verdict per field is the method's (:mod:`reasonwire.method.verdicts`):
``consumes-all-turns``, ``in-loop-only``, ``cross-turn-only``, ``accepted-ignored``, or
``error`` when the template refused every documented message shape
(:mod:`reasonwire.templates._shapes`, tried in order until the ``none`` render and the
variant render both succeed).

Every row also carries the verdict under a server's render profile (``row.server``;
:mod:`reasonwire.templates.server_profile`, llama-server by default): the same renders with the
messages as that server hands them to the template and the variables it sets, and, for a
template that reads one of the server's switch variables, once more with the switch flipped.

The pieces: templates to read (:mod:`._sources`), the vocabulary that counts them
(:mod:`._counters`), the rows (:mod:`.rows`, the ``templates.json`` schema) and the outputs
(:mod:`.report`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from reasonwire.errors import TemplateRenderError
from reasonwire.method.verdicts import Verdict, combine, outcome_at
from reasonwire.templates._counters import VOCAB_MAP, Counter, CounterPool
from reasonwire.templates._shapes import SHAPES, Shape, apply_shape, shape_kwargs
from reasonwire.templates._sources import TemplateSource, corpus_sources, resolve_sources
from reasonwire.templates.fixture import FIELDS, POSITIONS, TOOLS, Fixture
from reasonwire.templates.render import (
    render_chat_template,
    render_llama_cpp_compat,
    variables_read,
)
from reasonwire.templates.report import html_section, markdown, write_outputs
from reasonwire.templates.rows import DEFAULT_RATIO as DEFAULT_RATIO
from reasonwire.templates.rows import VERDICTS, Row, ServerRow
from reasonwire.templates.rows import ScanOptions as ScanOptions
from reasonwire.templates.rows import ScanResult as ScanResult
from reasonwire.templates.server_profile import PROFILES, RenderProfile, causes
from reasonwire.wire.model import ABSENT, JsonObject


@dataclass
class _Render:
    text: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class _View:
    """How the messages reach the template: as sent (no profile), or as a server hands them
    (a render profile, with its switch on or off)."""

    profile: RenderProfile | None = None
    switch_on: bool = True


_PLAIN = _View()


@dataclass
class _Measured:
    """One field's deltas and canary sightings at both positions, and the shape that rendered;
    ``shape`` None: every shape failed, ``errors`` says why."""

    deltas: dict[str, int]
    seen: dict[str, bool]
    shape: Shape | None
    errors: list[str]


def _render(
    src: TemplateSource,
    messages: list[JsonObject],
    shape: Shape,
    counter: Counter,
    opts: ScanOptions,
    view: _View,
) -> _Render:
    kwargs: JsonObject = {
        "bos_token": src.bos_token if src.bos_token is not None else counter.bos_token or "",
        "eos_token": src.eos_token if src.eos_token is not None else counter.eos_token or "",
        "enable_thinking": opts.enable_thinking,
        **(view.profile.template_variables(view.switch_on) if view.profile else {}),
        **shape_kwargs(shape, TOOLS),
        **opts.extra_kwargs,
    }
    shaped = apply_shape(messages, shape)
    if view.profile is not None:
        shaped = view.profile.prepare(src.text, shaped)
    fn = render_llama_cpp_compat if shape.compat else render_chat_template
    try:
        return _Render(text=fn(src.text, shaped, TOOLS, True, **kwargs))
    except TemplateRenderError as exc:
        return _Render(error=str(exc) or type(exc).__name__)


def _measure(
    src: TemplateSource,
    fixture: Fixture,
    counter: Counter,
    opts: ScanOptions,
    view: _View,
    count: Callable[[str], int],
) -> dict[str, _Measured]:
    """Every field's deltas against ``none`` under ``view``, trying the shapes in order."""
    canary = fixture.canary_sentence
    baselines: dict[tuple[Shape, str], _Render] = {}

    def baseline(shape: Shape, position: str) -> _Render:
        key = (shape, position)
        if key not in baselines:
            baselines[key] = _render(
                src, fixture.messages("none", position), shape, counter, opts, view
            )
        return baselines[key]

    out: dict[str, _Measured] = {}
    for fld in FIELDS:
        errors: list[str] = []
        out[fld] = _Measured({}, {}, None, errors)
        for shape in SHAPES:
            attempt: dict[str, tuple[int, bool]] = {}
            for position in POSITIONS:
                base = baseline(shape, position)
                if base.text is None:
                    errors.append(base.error or "render failed")
                    break
                got = _render(src, fixture.messages(fld, position), shape, counter, opts, view)
                if got.text is None:
                    errors.append(got.error or "render failed")
                    break
                attempt[position] = (count(got.text) - count(base.text), canary in got.text)
            if len(attempt) == len(POSITIONS):
                deltas = {p: d for p, (d, _) in attempt.items()}
                seen = {p: c for p, (_, c) in attempt.items()}
                out[fld] = _Measured(deltas, seen, shape, errors)
                break
    return out


def _verdict_of(m: _Measured, threshold: int) -> Verdict:
    if m.shape is None:
        return Verdict.ERROR
    return verdict(m.deltas["in_loop"], m.deltas["cross_turn"], threshold)


def scan_template(
    src: TemplateSource, fixture: Fixture, counter: Counter, opts: ScanOptions | None = None
) -> list[Row]:
    """All field rows for one template (never raises for a template's own failure)."""
    opts = opts or ScanOptions()
    trace_tokens = counter.counter.count(fixture.trace)
    threshold = math.ceil(opts.ratio * trace_tokens)
    counts: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in counts:
            counts[text] = counter.counter.count(text)
        return counts[text]

    plain = _measure(src, fixture, counter, opts, _PLAIN, count)
    servers = (
        _server_rows(src, fixture, counter, opts, PROFILES[opts.profile], plain, threshold, count)
        if opts.profile is not None
        else {}
    )
    rows: list[Row] = []
    for fld in FIELDS:
        m = plain[fld]
        server = servers.get(fld, ABSENT)
        if m.shape is None:
            rows.append(
                Row(
                    src.name,
                    fld,
                    Verdict.ERROR,
                    None,
                    None,
                    counter.label,
                    _error_text(m.errors),
                    counter.exact,
                    trace_tokens,
                    threshold,
                    None,
                    None,
                    None,
                    src.origin,
                    server,
                )
            )
            continue
        rows.append(
            Row(
                src.name,
                fld,
                _verdict_of(m, threshold),
                m.deltas["in_loop"],
                m.deltas["cross_turn"],
                counter.label,
                None,
                counter.exact,
                trace_tokens,
                threshold,
                m.seen["in_loop"],
                m.seen["cross_turn"],
                m.shape.label(),
                src.origin,
                server,
            )
        )
    return rows


def _server_rows(
    src: TemplateSource,
    fixture: Fixture,
    counter: Counter,
    opts: ScanOptions,
    profile: RenderProfile,
    plain: dict[str, _Measured],
    threshold: int,
    count: Callable[[str], int],
) -> dict[str, ServerRow]:
    """Each field as ``profile``'s server renders it: with its switch at the default, and,
    when the template reads a switch variable, with the switch flipped."""
    default_on = profile.switch.default_on
    on = _measure(src, fixture, counter, opts, _View(profile, default_on), count)
    reads = variables_read(src.text)
    switches = tuple(sorted(reads & set(profile.switch.variables)))
    off = (
        _measure(src, fixture, counter, opts, _View(profile, not default_on), count)
        if switches
        else None
    )
    handler = profile.handler_for(src.text)
    plain_verdicts = {f: _verdict_of(m, threshold) for f, m in plain.items()}
    out: dict[str, ServerRow] = {}
    for fld in FIELDS:
        m = on[fld]
        got = _verdict_of(m, threshold)
        off_verdict = _verdict_of(off[fld], threshold) if off is not None else None
        carried = tuple(fixture.carrier(fld))
        passed = [f for f in carried if f in profile.passes]
        dropped_matters = len(passed) != 1 or plain_verdicts.get(passed[0]) != plain_verdicts[fld]
        switch_matters = off_verdict is not None and off_verdict != got

        why = [
            ()
            if v is None or v == plain_verdicts[fld]
            else tuple(
                causes(
                    profile,
                    src.text,
                    carried,
                    dropped_matters=dropped_matters,
                    switch_matters=switch_matters,
                    switches=switches,
                    switch_on=on,
                )
            )
            for v, on in ((got, default_on), (off_verdict, not default_on))
        ]
        out[fld] = ServerRow(
            profile.name,
            got,
            m.deltas.get("in_loop"),
            m.deltas.get("cross_turn"),
            handler.name if handler is not None else None,
            switches,
            off_verdict,
            why[0],
            _error_text(m.errors) if m.shape is None else None,
            why[1],
        )
    return out


def _error_text(messages: list[str]) -> str:
    """The template's own messages, most frequent first (distinct, at most three)."""
    ranked = sorted(dict.fromkeys(messages), key=lambda m: -messages.count(m))
    return " | ".join(ranked[:3]) or "render failed"


def verdict(in_loop_delta: int, cross_turn_delta: int, threshold: int) -> Verdict:
    """The method's verdict from two deltas and the consumption threshold."""
    return combine(outcome_at(in_loop_delta, threshold), outcome_at(cross_turn_delta, threshold))


def scan(
    sources: Iterable[TemplateSource] | None = None,
    opts: ScanOptions | None = None,
    *,
    vocab_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> ScanResult:
    """Scan templates (default: the llama.cpp corpus) and return one row per (template, field)."""
    opts = opts or ScanOptions()
    start = time.perf_counter()
    fixture = Fixture.from_seed() if opts.seed is None else Fixture.from_seed(opts.seed)
    pool = CounterPool(vocab_dir, force_chars=opts.chars_only)
    rows: list[Row] = []
    for src in corpus_sources() if sources is None else sources:
        if progress is not None:
            progress(src.name)
        rows.extend(scan_template(src, fixture, pool.for_source(src), opts))
    pool.save()
    return ScanResult(rows, time.perf_counter() - start, opts, fixture)


__all__ = [
    "DEFAULT_RATIO",
    "SHAPES",
    "VERDICTS",
    "VOCAB_MAP",
    "Counter",
    "CounterPool",
    "Row",
    "ScanOptions",
    "ScanResult",
    "Shape",
    "TemplateSource",
    "corpus_sources",
    "html_section",
    "markdown",
    "resolve_sources",
    "scan",
    "scan_template",
    "verdict",
    "write_outputs",
]
