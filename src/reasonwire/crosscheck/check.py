"""Cross-check the offline scan against the real llama.cpp server.

Why: the offline render says what a template *would* do with a field; the server decides
which fields reach the template at all, rewrites some for the template family it recognises
and sets template variables of its own. The scan predicts that too (each row's ``server``
verdict, the :data:`~reasonwire.templates.server_profile.LLAMA_SERVER` render profile); this
module measures it. For each template a real ``llama-server --jinja`` serving a tiny model
with that template runs the harness's text step: each variant at both positions,
``max_tokens: 1``, and the ``usage.prompt_tokens`` delta against ``none`` (T from the
server's own ``/tokenize``). A template that reads one of the server's switch variables gets
a second server with the switch flipped (``--no-reasoning-preserve``), compared with the
scan's switch-off verdict.

Each comparison (a :class:`Finding`) says whether the server agrees with the plain render
(``agree``) and with the profile's prediction (``explained``); where the plain render and
the server differ the row's causes say why. A template the server cannot load is listed with
the server's own reason.

The server counts with the tiny model's vocabulary (chosen by ``reasonwire.localserver``), so
deltas are compared through verdicts, never as raw numbers.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypedDict, Unpack

from reasonwire.errors import ReasonwireError
from reasonwire.method.codec import JSONRecord
from reasonwire.templates.fixture import FIELDS, POSITIONS, TOOLS, Fixture
from reasonwire.templates.rows import Row
from reasonwire.templates.scan import DEFAULT_RATIO, verdict
from reasonwire.templates.server_profile import LLAMA_SERVER
from reasonwire.wire.model import ABSENT

SAMPLE: Final = (
    "Qwen-Qwen3-0.6B",
    "GLM-4.7-Flash",
    "LFM2.5-8B-A1B",
    "openai-gpt-oss-120b",
    "Kimi-K3",
    "mistralai-Mistral-Nemo-Instruct-2407",
)
"""The fast subset: plain and server agree (Qwen3, Kimi K3); the server sets a variable the
template reads (GLM-4.7-Flash, LFM2.5); the server rewrites ``reasoning_content`` (LFM2.5 into
``thinking``, gpt-oss into ``thinking`` without the call's content); the server cannot serve
the template at all (Mistral Nemo: its parser generation renders tool-call ids the template
refuses)."""

DEFAULT_SETTING: Final = "default"


@dataclass(frozen=True, slots=True)
class Finding(JSONRecord):
    """One (template, field, server setting) compared, a ``crosscheck.json`` entry.

    ``offline``: the plain render's verdict; ``server``: the real server's verdict word, or an
    outcome (``missing``, ``baseline-failed``, ``rejected``, ``error``) where it has none;
    ``agree``: the two are equal. Added later, absent in older files: ``setting`` (``default``
    or the server flag of the second run, ``--no-reasoning-preserve``), ``predicted`` (the
    scan's verdict under the llama-server render profile for that setting), ``explained``
    (the server's verdict equals ``predicted``: a difference from the plain render that the
    profile accounts for), ``causes`` (the profile's reasons the plain render differs)."""

    template: str
    field: str
    offline: str
    server: str
    server_in_loop_delta: int | None
    server_cross_turn_delta: int | None
    server_trace_tokens: int | None
    agree: bool
    note: str | None
    setting: str = ABSENT
    predicted: str = ABSENT
    explained: bool = ABSENT
    causes: tuple[str, ...] = ABSENT


def _prompt_tokens(server: Any, messages: list[dict[str, Any]]) -> tuple[int | None, str | None]:
    """``usage.prompt_tokens`` of a one-token completion; when the server cannot finish the
    completion (a tiny random model's token can fail a template's output parser, HTTP 500),
    the same request through ``/apply-template`` then ``/tokenize``: the server's own
    rendering and tokenization, without generation. The note says which path counted."""
    body = {"messages": messages, "tools": TOOLS, "max_tokens": 1, "temperature": 0}
    resp = server.post("/v1/chat/completions", body)
    if resp.status_code == 200:
        tokens = (resp.json().get("usage") or {}).get("prompt_tokens")
        if isinstance(tokens, int):
            return tokens, None
    first = f"HTTP {resp.status_code}: {_server_message(resp)}"
    applied = server.post("/apply-template", {"messages": messages, "tools": TOOLS})
    if applied.status_code != 200:
        return None, f"{first}; /apply-template HTTP {applied.status_code}"
    prompt = applied.json().get("prompt")
    tok = server.post("/tokenize", {"content": prompt, "add_special": True})
    if tok.status_code != 200 or not isinstance(prompt, str):
        return None, f"{first}; /tokenize HTTP {tok.status_code}"
    return len(tok.json().get("tokens", [])), _VIA_APPLY


_VIA_APPLY: Final = "counted via /apply-template + /tokenize (completion failed: tiny model)"

_UNSERVED: Final = ("error", "baseline-failed")
"""Server outcomes that mean it serves no request with this template at this setting: not a
verdict to compare, a template it cannot load, listed with its reason."""


def _server_message(resp: Any) -> str:
    """The server's own error message (llama-server: ``{"error": {"message"}}``), on one line."""
    try:
        message = str(resp.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        message = resp.text
    return " ".join(message.split())[:400]


def _with_template_line(note: str, template: Path | None) -> str:
    """``note`` and, when the server names a template line (``at line 91``), that line: the
    template's own refusal (a ``raise_exception``) is the reason a reader wants."""
    found = re.search(r"at line (\d+)", note)
    if template is None or found is None:
        return note
    try:
        lines = template.read_text(encoding="utf-8").splitlines()
    except OSError:
        return note
    number = int(found.group(1))
    if not 0 < number <= len(lines):
        return note
    return f"{note} [template line {number}: {lines[number - 1].strip()[:200]}]"


def cross_check_template(
    name: str,
    offline: dict[str, Row],
    fixture: Fixture,
    ratio: float = DEFAULT_RATIO,
    *,
    switch_on: bool = LLAMA_SERVER.switch.default_on,
    target: str | None = None,
) -> list[Finding]:
    """Start a real llama-server with template ``target`` (a bundled stem or a path; default
    ``name``) and compare verdicts per field, the findings named ``name``; ``switch_on``
    False starts it with the profile's off flag."""
    from reasonwire.localserver.server import LocalServer

    switch = LLAMA_SERVER.switch
    flipped = switch_on != switch.default_on
    setting = (switch.on_flag if switch_on else switch.off_flag) if flipped else DEFAULT_SETTING
    findings: list[Finding] = []
    args = (setting,) if flipped else ()
    target = target or name
    path = Path(target) if Path(target).is_file() else None
    with LocalServer(target, build_if_missing=False, extra_args=args) as server:
        tok = server.post("/tokenize", {"content": fixture.trace})
        trace_tokens = len(tok.json().get("tokens", [])) if tok.status_code == 200 else None
        t_count = trace_tokens or math.ceil(len(fixture.trace) / 4)
        threshold = math.ceil(ratio * t_count)
        base: dict[str, tuple[int | None, str | None]] = {
            p: _prompt_tokens(server, fixture.messages("none", p)) for p in POSITIONS
        }
        for fld in FIELDS:
            row = offline.get(fld)
            deltas: dict[str, int] = {}
            note: str | None = None
            for p in POSITIONS:
                base_tokens, base_err = base[p]
                if base_tokens is None:
                    note = _with_template_line(f"baseline {p}: {base_err}", path)
                    break
                got, err = _prompt_tokens(server, fixture.messages(fld, p))
                if got is None:
                    note = f"{p}: {err}"
                    break
                if err is not None or base_err is not None:
                    note = _VIA_APPLY
                deltas[p] = got - base_tokens
            srv: str
            if len(deltas) == len(POSITIONS):
                srv = verdict(deltas["in_loop"], deltas["cross_turn"], threshold)
            elif note and note.startswith("baseline"):
                srv = "baseline-failed"
            else:
                srv = "rejected"
            findings.append(
                _finding(row, name, fld, srv, (deltas.get("in_loop"), deltas.get("cross_turn")),
                         trace_tokens, note, setting, flipped)
            )  # fmt: skip
    return findings


def _finding(
    row: Row | None,
    name: str,
    fld: str,
    srv: str,
    deltas: tuple[int | None, int | None],
    trace_tokens: int | None,
    note: str | None,
    setting: str,
    flipped: bool,
) -> Finding:
    """One comparison: the plain verdict, the profile's prediction for ``setting``, the
    server's verdict."""
    plain = row.verdict if row is not None else "missing"
    predicted: str = ABSENT
    why: tuple[str, ...] = ABSENT
    if row is not None and row.server is not ABSENT:
        guess = row.server.switch_off_verdict if flipped else row.server.verdict
        predicted = guess if guess is not None else "missing"
        why = row.server.switch_off_causes if flipped else row.server.causes
    explained: bool = ABSENT
    if predicted is not ABSENT and srv not in _UNSERVED:
        explained = srv == predicted
    return Finding(
        name, fld, plain, srv, deltas[0], deltas[1], trace_tokens, srv == plain, note,
        setting, predicted, explained, why,
    )  # fmt: skip


class CrossCheckOptions(TypedDict, total=False):
    """The keywords of :func:`cross_check` and :func:`timed_cross_check` (one declaration for
    both): the scan's ``ratio`` (default :data:`DEFAULT_RATIO`) that turns token counts into
    verdicts, and a ``progress`` callback told each template as it starts."""

    ratio: float
    progress: Callable[[str], None] | None


def cross_check(
    rows: Sequence[Row],
    fixture: Fixture,
    templates: Sequence[str] | None = None,
    **options: Unpack[CrossCheckOptions],
) -> list[Finding]:
    """Cross-check each template (default: every template in ``rows``) at the server's
    default settings, and once more with the switch flipped where the template reads a
    switch variable. A template whose server cannot start is one finding per field with
    server verdict ``error`` and the server's reason."""
    ratio = options.get("ratio", DEFAULT_RATIO)
    progress = options.get("progress")
    by: dict[str, dict[str, Row]] = {}
    for r in rows:
        by.setdefault(r.template, {})[r.field] = r
    names = list(by) if templates is None else list(templates)
    default_on = LLAMA_SERVER.switch.default_on
    out: list[Finding] = []
    for name in names:
        fields = by.get(name, {})
        target = _server_target(name, fields)
        settings = [default_on]
        if any(r.server is not ABSENT and r.server.switches for r in fields.values()):
            settings.append(not default_on)
        for on in settings:
            if progress is not None:
                progress(name if on == default_on else f"{name} ({LLAMA_SERVER.switch.off_flag})")
            try:
                out.extend(
                    cross_check_template(name, fields, fixture, ratio, switch_on=on, target=target)
                )
            except ReasonwireError as exc:
                reason = str(exc).splitlines()[0][:300]
                setting = DEFAULT_SETTING if on == default_on else LLAMA_SERVER.switch.off_flag
                out.extend(
                    _finding(fields.get(f), name, f, "error", (None, None), None, reason,
                             setting, on != default_on)
                    for f in FIELDS
                )  # fmt: skip
    return out


def _server_target(name: str, fields: dict[str, Row]) -> str:
    """What ``LocalServer`` loads: the row's source file when it has one, else the name."""
    source = next(iter(fields.values())).source if fields else ""
    return source if source and Path(source).is_file() else name


def timed_cross_check(
    rows: Sequence[Row],
    fixture: Fixture,
    templates: Sequence[str] | None = None,
    **options: Unpack[CrossCheckOptions],
) -> tuple[list[Finding], float]:
    """:func:`cross_check` and the seconds it took (the report states them)."""
    start = time.perf_counter()
    found = cross_check(rows, fixture, templates, **options)
    return found, time.perf_counter() - start


def unserved(findings: Sequence[Finding]) -> dict[tuple[str, str], str]:
    """(template, setting) the server served no request for, and its reason."""
    return {
        (f.template, f.setting if f.setting is not ABSENT else DEFAULT_SETTING): f.note or ""
        for f in findings
        if f.server in _UNSERVED
    }


def findings_markdown(findings: Sequence[Finding], seconds: float | None = None) -> str:
    """The cross-check section appended to ``templates.md``: every comparison, then the
    differences from the plain render with their causes, then the unexplained ones."""
    lines = [
        "## Cross-check against the real llama-server",
        "",
        "plain: the transformers-style render; predicted: the scan under the llama-server "
        "render profile; server: the real llama-server.",
        "",
        "| template | field | setting | plain | predicted | server | server deltas "
        "(in_loop/cross_turn) | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in findings:
        mark = "" if f.explained is not False else " **(unexplained)**"
        pred = "" if f.predicted is ABSENT else f.predicted
        setting = "" if f.setting is ABSENT else f.setting
        lines.append(
            f"| {f.template} | {f.field} | {setting} | {f.offline} | {pred} | {f.server}{mark} | "
            f"{f.server_in_loop_delta}/{f.server_cross_turn_delta} | {f.note or ''} |"
        )
    refused = unserved(findings)
    differ = [f for f in findings if not f.agree and f.server not in _UNSERVED]
    unexplained = [f for f in findings if f.explained is False]
    lines += ["", "### Templates the server cannot serve (its reason)", ""]
    lines += [f"- {t} ({s}): {note}" for (t, s), note in refused.items()] or ["- none"]
    lines += ["", "### Where the server differs from the plain render", ""]
    lines += [
        f"- {f.template} / {f.field} ({f.setting if f.setting is not ABSENT else DEFAULT_SETTING})"
        f": plain {f.offline}, server {f.server}"
        + (f"; cause: {'; '.join(f.causes)}" if f.causes else "")
        + ("" if f.explained is not False else " **(not predicted)**")
        for f in differ
    ] or ["- none"]
    timing = f" in {seconds:.1f} s" if seconds is not None else ""
    lines += [
        "",
        f"{len(findings)} comparisons over {len({f.template for f in findings})} templates"
        f"{timing}: {len(differ)} differ from the plain render, {len(unexplained)} not "
        f"predicted by the llama-server profile; {len({t for t, _ in refused})} template(s) "
        "the server cannot serve.",
        "",
    ]
    return "\n".join(lines)
