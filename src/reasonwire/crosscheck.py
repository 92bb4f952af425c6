"""Cross-check the offline scan against the real llama.cpp server.

Why: the offline render says what a template *would* do with a field; the server decides
which fields reach the template at all (llama.cpp passes ``reasoning_content`` and drops
``reasoning`` and ``reasoning_details``). For a sample of templates a real ``llama-server
--jinja`` serving a tiny model with that template runs the harness's text step: each variant
at both positions, ``max_tokens: 1``, and the ``usage.prompt_tokens`` delta against ``none``
(T from the server's own ``/tokenize``). Where the server's verdict differs from the offline
one, that is a finding to list, not a failure.

The server counts with the tiny model's vocabulary (chosen by ``reasonwire.localserver``), so
deltas are compared through verdicts, never as raw numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from reasonwire.errors import ReasonwireError
from reasonwire.method.codec import JSONRecord
from reasonwire.templates.fixture import FIELDS, POSITIONS, TOOLS, Fixture
from reasonwire.templates.rows import Row
from reasonwire.templates.scan import DEFAULT_RATIO, verdict

SAMPLE: Final = (
    "Qwen-Qwen3-0.6B",
    "deepseek-ai-DeepSeek-V3.2",
    "openai-gpt-oss-120b",
    "Kimi-K3",
)


@dataclass(frozen=True, slots=True)
class Finding(JSONRecord):
    """One (template, field) compared, a ``crosscheck.json`` entry; ``agree`` false marks a
    disagreement. ``offline`` and ``server`` are verdict words, or an outcome (``missing``,
    ``baseline-failed``, ``rejected``) where a side has no verdict."""

    template: str
    field: str
    offline: str
    server: str
    server_in_loop_delta: int | None
    server_cross_turn_delta: int | None
    server_trace_tokens: int | None
    agree: bool
    note: str | None


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
    first = f"HTTP {resp.status_code}: {resp.text[:200]}"
    applied = server.post("/apply-template", {"messages": messages, "tools": TOOLS})
    if applied.status_code != 200:
        return None, f"{first}; /apply-template HTTP {applied.status_code}: {applied.text[:200]}"
    prompt = applied.json().get("prompt")
    tok = server.post("/tokenize", {"content": prompt, "add_special": True})
    if tok.status_code != 200 or not isinstance(prompt, str):
        return None, f"{first}; /tokenize HTTP {tok.status_code}"
    return len(tok.json().get("tokens", [])), _VIA_APPLY


_VIA_APPLY: Final = "counted via /apply-template + /tokenize (completion failed: tiny model)"


def cross_check_template(
    name: str, offline: dict[str, Row], fixture: Fixture, ratio: float = DEFAULT_RATIO
) -> list[Finding]:
    """Start a real llama-server with template ``name`` and compare verdicts per field."""
    from reasonwire.localserver.server import LocalServer

    findings: list[Finding] = []
    with LocalServer(name, build_if_missing=False) as server:
        tok = server.post("/tokenize", {"content": fixture.trace})
        trace_tokens = len(tok.json().get("tokens", [])) if tok.status_code == 200 else None
        t_count = trace_tokens or math.ceil(len(fixture.trace) / 4)
        threshold = math.ceil(ratio * t_count)
        base: dict[str, tuple[int | None, str | None]] = {
            p: _prompt_tokens(server, fixture.messages("none", p)) for p in POSITIONS
        }
        for fld in FIELDS:
            off = offline[fld].verdict if fld in offline else "missing"
            deltas: dict[str, int] = {}
            note: str | None = None
            for p in POSITIONS:
                base_tokens, base_err = base[p]
                if base_tokens is None:
                    note = f"baseline {p}: {base_err}"
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
                Finding(
                    name, fld, off, srv, deltas.get("in_loop"), deltas.get("cross_turn"),
                    trace_tokens, srv == off, note,
                )
            )  # fmt: skip
    return findings


def cross_check(
    rows: Sequence[Row],
    fixture: Fixture,
    templates: Sequence[str] = SAMPLE,
    *,
    ratio: float = DEFAULT_RATIO,
    progress: Callable[[str], None] | None = None,
) -> list[Finding]:
    """Cross-check each sampled template; a template whose server cannot start is one
    finding per field with verdict ``error`` and the reason."""
    by: dict[str, dict[str, Row]] = {}
    for r in rows:
        by.setdefault(r.template, {})[r.field] = r
    out: list[Finding] = []
    for name in templates:
        if progress is not None:
            progress(name)
        try:
            out.extend(cross_check_template(name, by.get(name, {}), fixture, ratio))
        except ReasonwireError as exc:
            out.extend(
                Finding(name, f, by.get(name, {}).get(f, _MISSING).verdict, "error",
                        None, None, None, False, str(exc).splitlines()[0][:300])
                for f in FIELDS
            )  # fmt: skip
    return out


class _Missing:
    verdict = "missing"


_MISSING: Final = _Missing()


def findings_markdown(findings: Sequence[Finding]) -> str:
    """The cross-check section appended to ``templates.md``."""
    lines = [
        "## Cross-check against the real llama-server",
        "",
        "| template | field | offline | server | server deltas (in_loop/cross_turn) | note |",
        "|---|---|---|---|---|---|",
    ]
    for f in findings:
        mark = "" if f.agree else " **(disagrees)**"
        lines.append(
            f"| {f.template} | {f.field} | {f.offline} | {f.server}{mark} | "
            f"{f.server_in_loop_delta}/{f.server_cross_turn_delta} | {f.note or ''} |"
        )
    n = sum(not f.agree for f in findings)
    lines += ["", f"{n} disagreement(s) of {len(findings)} comparisons.", ""]
    return "\n".join(lines)
