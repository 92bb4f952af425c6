"""Aggregate ledger rows per session, provider and model: how much reasoning flows, and how
many of the billed input tokens were reasoning sent back.

The denominator is billed input (uncached + cache read + cache write), never uncached input
alone: a re-sent carrier is often served from cache and is still paid for. Rows of both
ledger schemas are read (:func:`reasonwire.probe.ledger.row_usage`).

Re-sent reasoning in tokens, per call (:func:`analyse`), each figure labelled:

- An **opaque** carrier (``encrypted_content``, a signature) is tied by digest to the earlier
  call of the same session that produced it (:mod:`reasonwire.probe.carriers`) and counts that
  call's ``reasoningTokens``: *measured* when that call produced one opaque carrier, split by
  byte size and *estimated* when it produced several. Text parts re-sent with it (a summary, a
  thinking block's text) are covered by that figure and not counted again. When the producing
  call reported no reasoning tokens its re-sent text is counted as a text carrier; an opaque
  carrier with no producer in the ledger (or no text) is left *unattributed*, shown in bytes.
- A **text** carrier counts the tokens the route's own tokenizer gave when the row was written
  (*measured*), else its bytes / :data:`BYTES_PER_TOKEN` (*estimated*).
- A carrier from an **earlier turn** (before the request's last user message) follows the
  dialect's documented rule (``Dialect.earlier_turns``, written in the row as
  ``earlierTurns``): *dropped* counts 0 tokens, labelled *documented* (its bytes and carriers
  are counted apart); *kept* counts as above; *unknown* counts as above but *estimated* (the
  server may drop it). A server's own count of the prompt with and without the carrier
  (``promptCount``: a count endpoint, llama-server's tokenizer) stays *measured* whatever the
  rule, as it is the server's figure.
- A call's re-sent reasoning is capped at its billed input (measured first, then estimated),
  so every share is at most 100% by construction; the calls capped are counted. A call
  without usage adds to neither side of the share.

:func:`report_html` draws one chart per session (billed input and re-sent reasoning per call)
as inline SVG in one self-contained HTML page.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from reasonwire.probe.ledger import row_usage

BYTES_PER_TOKEN = 4.0
"""Bytes of reasoning text per token used for the estimate (a common figure for English
text with BPE tokenizers; CJK text has fewer bytes per token, so more tokens than estimated)."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass
class CallFigures:
    """One call of a session, with its re-sent reasoning in tokens (see the module doc)."""

    session: str
    index: int
    ts: str
    provider: str
    model: str
    status: str
    billed_input: int | None
    reasoning_tokens: int | None
    sent_text_bytes: int = 0
    sent_opaque_bytes: int = 0
    resent_measured: float = 0.0
    resent_estimated: float = 0.0
    unattributed_opaque_bytes: int = 0
    attributed_carriers: int = 0
    documented_carriers: int = 0
    """Earlier-turn carriers counted as 0 tokens by the dialect's documented drop."""
    documented_bytes: int = 0
    capped: bool = False
    row_index: int = -1
    """Where the row was in the rows given to :func:`analyse`."""

    @property
    def resent(self) -> float:
        return self.resent_measured + self.resent_estimated


@dataclass
class Group:
    session: str
    provider: str
    model: str
    calls: int = 0
    failed: int = 0
    reasoning_bytes: int = 0
    text_bytes: int = 0
    tool_bytes: int = 0
    reasoning_tokens: int = 0
    billed_input: int = 0
    calls_with_usage: int = 0
    sent_text_bytes: int = 0
    sent_opaque_bytes: int = 0
    resent_measured: float = 0.0
    resent_estimated: float = 0.0
    unattributed_opaque_bytes: int = 0
    attributed_carriers: int = 0
    documented_carriers: int = 0
    documented_bytes: int = 0
    capped_calls: int = 0

    @property
    def resent_tokens(self) -> float:
        return self.resent_measured + self.resent_estimated

    def _share(self, tokens: float) -> float | None:
        return tokens / self.billed_input if self.billed_input > 0 else None

    @property
    def resent_share(self) -> float | None:
        """Share of billed input that was re-sent reasoning (None: no call with usage)."""
        return self._share(self.resent_tokens)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["resent_reasoning_tokens"] = round(self.resent_tokens, 1)
        out["measured_resent_reasoning_tokens"] = round(self.resent_measured, 1)
        out["est_resent_reasoning_tokens"] = round(self.resent_estimated, 1)
        out["resent_share_of_billed_input"] = self.resent_share
        out["measured_share_of_billed_input"] = self._share(self.resent_measured)
        out["estimated_share_of_billed_input"] = self._share(self.resent_estimated)
        return out


@dataclass
class Analysis:
    groups: list[Group] = field(default_factory=list)
    calls: list[CallFigures] = field(default_factory=list)

    def sessions(self) -> dict[str, list[CallFigures]]:
        out: dict[str, list[CallFigures]] = {}
        for c in self.calls:
            out.setdefault(c.session, []).append(c)
        return out


def _sent_entries(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The row's sent carriers: ``sentCarriers``, else (older rows) ``sentReasoning`` by kind,
    which has bytes and no digests."""
    sent = row.get("sentCarriers")
    if isinstance(sent, list):
        return [e for e in sent if isinstance(e, dict)]
    by_kind = row.get("sentReasoning")
    if not isinstance(by_kind, dict):
        return []
    return [
        {"kind": k, "bytes": _int(e.get("bytes")), "opaque": bool(e.get("opaque"))}
        for k, e in by_kind.items()
        if isinstance(e, dict)
    ]


def _produced(row: dict[str, Any]) -> list[dict[str, Any]]:
    out = row.get("producedCarriers")
    return [e for e in out if isinstance(e, dict)] if isinstance(out, list) else []


def _server_count(entry: dict[str, Any]) -> bool:
    """Whether the entry's token count is the server's own (its count of the prompt)."""
    count = entry.get("tokenCount")
    return entry.get("promptCount") is True and isinstance(count, int) and count >= 0


def _text_tokens(entry: dict[str, Any]) -> tuple[float, bool]:
    """(tokens, measured) of a re-sent text carrier (an earlier-turn carrier whose rule is
    unknown is estimated unless the server counted it)."""
    count = entry.get("tokenCount")
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return float(count), _server_count(entry) or _earlier(entry) != "unknown"
    return _int(entry.get("bytes")) / BYTES_PER_TOKEN, False


def _earlier(entry: dict[str, Any]) -> str | None:
    """The earlier-turn verdict of a sent carrier: None for one in the current turn (or a row
    written before positions were), ``unknown`` when the row names no rule."""
    if entry.get("earlierTurn") is not True:
        return None
    verdict = entry.get("earlierTurns")
    return verdict if verdict in ("dropped", "kept") else "unknown"


class SessionAttribution:
    """Re-sent reasoning per call of one session, one row at a time (:meth:`add`), in the
    order the calls started (the report) or ended (a live export: a carrier can only be sent
    back once the call that produced it has ended, so either order ties the same carriers).
    Keeps, per call, only its reasoning tokens and its produced carriers' digests."""

    def __init__(self, session: str) -> None:
        self.session = session
        self._registry: dict[str, tuple[int, int]] = {}
        self._produced: list[list[dict[str, Any]]] = []
        self._reasoning: list[int | None] = []

    def add(self, row: dict[str, Any]) -> CallFigures:
        idx = len(self._produced)
        usage = row_usage(row)
        fig = CallFigures(
            session=self.session,
            index=idx + 1,
            ts=str(row.get("ts") or ""),
            provider=str(row.get("provider") or "-"),
            model=str(row.get("model") or "-"),
            status=str(row.get("status") or "-"),
            billed_input=usage.billed_input if usage is not None else None,
            reasoning_tokens=usage.reasoning if usage is not None else None,
        )
        tied: dict[tuple[int, int], list[dict[str, Any]]] = {}
        loose: list[dict[str, Any]] = []
        for entry in _sent_entries(row):
            if entry.get("opaque"):
                fig.sent_opaque_bytes += _int(entry.get("bytes"))
            else:
                fig.sent_text_bytes += _int(entry.get("bytes"))
            if _earlier(entry) == "dropped" and not _server_count(entry):
                fig.documented_carriers += 1
                fig.documented_bytes += _int(entry.get("bytes"))
                continue
            d = entry.get("digest")
            hit = self._registry.get(d) if isinstance(d, str) else None
            if hit is not None:
                tied.setdefault(hit, []).append(entry)
            else:
                loose.append(entry)
        measured = estimated = 0.0
        for (p, c), entries in tied.items():
            reasoning = self._reasoning[p]
            carrier = self._produced[p][c]
            carriers = self._produced[p]
            if reasoning is not None:
                total = sum(_int(e.get("bytes")) for e in carriers)
                share = _int(carrier.get("bytes")) / total if total > 0 else 1 / len(carriers)
                tokens = reasoning * share
                unknown = any(_earlier(e) == "unknown" for e in entries)
                if len(carriers) == 1 and not unknown:
                    measured += tokens
                else:
                    estimated += tokens
                fig.attributed_carriers += 1
                continue
            texts = [e for e in entries if not e.get("opaque")]
            if not texts:
                fig.unattributed_opaque_bytes += sum(_int(e.get("bytes")) for e in entries)
            for e in texts:
                tokens, is_measured = _text_tokens(e)
                if is_measured:
                    measured += tokens
                else:
                    estimated += tokens
        for e in loose:
            if e.get("opaque"):
                fig.unattributed_opaque_bytes += _int(e.get("bytes"))
                continue
            tokens, is_measured = _text_tokens(e)
            if is_measured:
                measured += tokens
            else:
                estimated += tokens
        if fig.billed_input is not None and measured + estimated > fig.billed_input:
            fig.capped = True
            measured = min(measured, float(fig.billed_input))
            estimated = min(estimated, fig.billed_input - measured)
        fig.resent_measured, fig.resent_estimated = measured, estimated
        produced = _produced(row)
        self._produced.append(produced)
        self._reasoning.append(fig.reasoning_tokens)
        for c, entry in enumerate(produced):
            for d in entry.get("digests") or ():
                if isinstance(d, str):
                    self._registry.setdefault(d, (idx, c))
        return fig


def _session_calls(session: str, rows: list[dict[str, Any]]) -> list[CallFigures]:
    """Re-sent reasoning per call of one session (rows in the order the calls started)."""
    attribution = SessionAttribution(session)
    return [attribution.add(row) for row in rows]


def analyse(rows: Iterable[dict[str, Any]]) -> Analysis:
    """Per-call figures (sessions in first-seen order, calls by start time) and one group per
    (session, provider, model), in first-seen order."""
    by_session: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for i, row in enumerate(rows):
        by_session.setdefault(str(row.get("sessionId") or "-"), []).append((i, row))
    out = Analysis()
    groups: dict[tuple[str, str, str], Group] = {}
    for session, srows in by_session.items():
        indexed = sorted(srows, key=lambda ir: str(ir[1].get("ts") or ""))  # stable
        ordered = [r for _, r in indexed]
        calls = _session_calls(session, ordered)
        for (i, _), fig in zip(indexed, calls, strict=True):
            fig.row_index = i
        out.calls.extend(calls)
        for row, fig in zip(ordered, calls, strict=True):
            key = (session, fig.provider, fig.model)
            g = groups.get(key)
            if g is None:
                g = groups[key] = Group(*key)
            g.calls += 1
            if row.get("status") not in ("ok", None):
                g.failed += 1
            g.reasoning_bytes += _int(row.get("reasoningBytes"))
            g.text_bytes += _int(row.get("textBytes"))
            g.tool_bytes += _int(row.get("toolBytes"))
            g.sent_text_bytes += fig.sent_text_bytes
            g.sent_opaque_bytes += fig.sent_opaque_bytes
            g.unattributed_opaque_bytes += fig.unattributed_opaque_bytes
            g.attributed_carriers += fig.attributed_carriers
            g.documented_carriers += fig.documented_carriers
            g.documented_bytes += fig.documented_bytes
            if fig.billed_input is not None:
                g.calls_with_usage += 1
                g.reasoning_tokens += fig.reasoning_tokens or 0
                g.billed_input += fig.billed_input
                g.resent_measured += fig.resent_measured
                g.resent_estimated += fig.resent_estimated
                g.capped_calls += int(fig.capped)
    out.groups = list(groups.values())
    return out


def aggregate(rows: Iterable[dict[str, Any]]) -> list[Group]:
    """One group per (session, provider, model), in first-seen order."""
    return analyse(rows).groups


NOTE = (
    "re-sent reasoning over billed input (uncached + cache read + cache write), capped at "
    "each call's billed input; measured: an opaque carrier counts the reasoning tokens of "
    "the call that produced it (tied by digest), a text carrier the route's tokenizer; "
    f"estimated: text bytes / {BYTES_PER_TOKEN:g}, or a producer's reasoning tokens split "
    "over several carriers by size, or a figure for an earlier turn whose rule is unknown; "
    "documented: carriers of an earlier turn the dialect's documented rule drops, 0 tokens; "
    "unattributed opaque carriers are bytes only"
)


def report_json(analysis: Analysis | list[Group], skipped: int, files: int) -> dict[str, Any]:
    if isinstance(analysis, list):
        analysis = Analysis(groups=analysis)
    return {
        "bytes_per_token": BYTES_PER_TOKEN,
        "note": NOTE,
        "files": files,
        "skipped_lines": skipped,
        "groups": [g.as_dict() for g in analysis.groups],
        "calls": [{**asdict(c), "resent": round(c.resent, 1)} for c in analysis.calls],
    }


# -- HTML ----------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}
.billed{fill:#c8ccd2}.resent-measured{fill:#1f6fb2}.resent-estimated{fill:#f0a030}
.axis{stroke:#444;stroke-width:1}.label{font-size:11px;fill:#333}
.nousage{fill:#b00;font-size:10px}
"""

CHART_W, CHART_H, PAD_L, PAD_B, PAD_T = 720, 240, 56, 28, 16


def _chart(session: str, calls: list[CallFigures]) -> str:
    """Billed input (grey) per call, with its re-sent reasoning drawn inside it from the
    bottom: measured (blue) then estimated (orange). Re-sent never exceeds billed input."""
    top = max([c.billed_input or 0 for c in calls] + [1])
    inner_w, inner_h = CHART_W - PAD_L - 8, CHART_H - PAD_B - PAD_T
    slot = inner_w / max(len(calls), 1)
    bar = max(min(slot * 0.7, 48.0), 1.0)

    def y(v: float) -> float:
        return PAD_T + inner_h - inner_h * (v / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{CHART_W}" '
        f'height="{CHART_H}" viewBox="0 0 {CHART_W} {CHART_H}" role="img" '
        f'data-session="{html.escape(session, quote=True)}" '
        f'aria-label="billed input and re-sent reasoning per call, session '
        f'{html.escape(session, quote=True)}">',
        f'<line class="axis" x1="{PAD_L}" y1="{PAD_T + inner_h}" x2="{CHART_W - 8}" '
        f'y2="{PAD_T + inner_h}"/>',
        f'<line class="axis" x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{PAD_T + inner_h}"/>',
        f'<text class="label" x="{PAD_L - 4}" y="{PAD_T + 4}" text-anchor="end">{top}</text>',
        f'<text class="label" x="{PAD_L - 4}" y="{PAD_T + inner_h}" text-anchor="end">0</text>',
        f'<text class="label" x="12" y="{PAD_T + inner_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {PAD_T + inner_h / 2:.0f})">tokens</text>',
        f'<text class="label" x="{PAD_L - 4}" y="{CHART_H - 10}" text-anchor="end">call</text>',
    ]
    every = max(1, len(calls) // 20)  # a long session labels every n-th call only
    for i, c in enumerate(calls):
        x = PAD_L + slot * i + (slot - bar) / 2
        cx = x + bar / 2
        if i % every == 0:
            parts.append(
                f'<text class="label" x="{cx:.1f}" y="{CHART_H - 10}" '
                f'text-anchor="middle">{c.index}</text>'
            )
        if c.billed_input is None:
            parts.append(
                f'<text class="nousage" x="{cx:.1f}" y="{PAD_T + inner_h - 4}" '
                f'text-anchor="middle">no usage</text>'
            )
            continue
        layers = [
            ("billed", 0.0, float(c.billed_input), "billed input"),
            ("resent-measured", 0.0, c.resent_measured, "re-sent reasoning, measured"),
            (
                "resent-estimated",
                c.resent_measured,
                c.resent_measured + c.resent_estimated,
                "re-sent reasoning, estimated",
            ),
        ]
        for cls, lo, hi, what in layers:
            value = hi - lo
            height = y(lo) - y(hi) if hi > lo else 0.0
            parts.append(
                f'<rect class="{cls}" data-call="{c.index}" data-value="{value:.1f}" '
                f'x="{x:.1f}" y="{y(hi):.1f}" width="{bar:.1f}" '
                f'height="{height:.1f}"><title>call {c.index}: {what} {value:.0f} tokens'
                f"</title></rect>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _pct(v: float | None) -> str:
    return f"{v:.1%}" if v is not None else "-"


def report_html(analysis: Analysis, skipped: int = 0, title: str = "probe ledger") -> str:
    """One self-contained page: per session a table of its (provider, model) groups and a
    chart of billed input and re-sent reasoning per call. No script, no external asset."""
    esc = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f'<p class="note">{esc(NOTE)}.</p>',
        '<p class="legend"><svg width="12" height="12"><rect class="billed" width="12" '
        'height="12"/></svg> billed input <svg width="12" height="12"><rect '
        'class="resent-measured" width="12" height="12"/></svg> re-sent reasoning, measured '
        '<svg width="12" height="12"><rect class="resent-estimated" width="12" height="12"/>'
        "</svg> re-sent reasoning, estimated</p>",
    ]
    if skipped:
        out.append(f"<p>Skipped {skipped} unparseable line(s).</p>")
    for session, calls in analysis.sessions().items():
        out.append(f'<section class="session" data-session="{esc(session, quote=True)}">')
        out.append(f"<h2>session {esc(session)}</h2>")
        out.append(
            "<table><tr><th>provider / model</th><th>calls</th><th>billed input</th>"
            "<th>re-sent measured</th><th>re-sent estimated</th><th>share</th>"
            "<th>dropped carriers (documented)</th><th>unattributed opaque bytes</th></tr>"
        )
        for g in analysis.groups:
            if g.session != session:
                continue
            out.append(
                f"<tr><td>{esc(g.provider)} / {esc(g.model)}</td><td>{g.calls}</td>"
                f"<td>{g.billed_input}</td><td>{g.resent_measured:.0f}</td>"
                f"<td>{g.resent_estimated:.0f}</td><td>{_pct(g.resent_share)}</td>"
                f"<td>{g.documented_carriers}</td><td>{g.unattributed_opaque_bytes}</td></tr>"
            )
        out.append("</table>")
        out.append(_chart(session, calls))
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
