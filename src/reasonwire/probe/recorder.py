"""Where a probe records and what it knows before the answer: the session, the ledger writer,
and a call's request side.

Both ways in - the httpx transports (:mod:`reasonwire.probe.transport`) and a bare byte
stream (:mod:`reasonwire.probe.byte_stream`) - hold one :class:`Recorder` (the session id,
purpose, ledger directory, tokenizer and row hook a user gave) and, per call, ask it to
:meth:`~Recorder.start` (settings read once: is this call observed, what did its body send
back) and then for the :class:`~reasonwire.probe.call.CallObserver` that counts the answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from reasonwire.probe.call import CallObserver, RowWriter
from reasonwire.probe.carriers import PromptCounter, Tokenizer, sent_carriers
from reasonwire.probe.settings import ProbeSettings, ledger_dir, load_settings
from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import JSON, DialectName, JsonObject
from reasonwire.wire.registry import get_dialect

RowHook = Callable[[JsonObject], object]
"""Called with each row (redacted, as written) on the probe's housekeeping thread, after the
row is on disk: e.g. :class:`reasonwire.probe.otel.LiveExporter`. Its failures are ignored."""


def parse_request_body(
    content: bytes | None, dialect: DialectName
) -> tuple[JSON, list[SentCarrier]]:
    """The decoded request body and the carriers it sends back ((None, []) if not JSON)."""
    if not content:
        return None, []
    try:
        body: JSON = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None, []
    if not isinstance(body, dict):
        return body, []
    return body, get_dialect(dialect).request_carriers(body)


def make_writer(
    directory: Path, session_id: str, cap_bytes: int, on_row: RowHook | None = None
) -> RowWriter:
    """A row writer for one call: redact, then append to the session file (one write, now);
    archive rotation, if the cap is passed, and ``on_row`` run later on the probe's
    housekeeping thread, never on the caller's path."""

    def write(row: JsonObject) -> None:
        from reasonwire.credentials import redact_obj
        from reasonwire.probe import worker
        from reasonwire.probe.ledger import append_row, rotate_later

        written = redact_obj(dict(row))
        path = append_row(directory, session_id, written, cap_bytes, rotate=False)
        worker.submit(rotate_later(directory, cap_bytes, path))
        if on_row is not None:
            hook = on_row

            def task() -> None:
                hook(written)

            worker.submit(task)

    return write


@dataclass(frozen=True)
class CallStart:
    """What is known of an observed call before its answer: the settings read at its start,
    its route, and what its request body sent back."""

    settings: ProbeSettings
    dialect: DialectName
    provider: str | None
    body: JSON
    sent: list[SentCarrier]
    sent_entries: list[JsonObject]


@dataclass(frozen=True)
class Recorder:
    """One probe's recording choices (see the module docstring)."""

    session_id: str
    purpose: str | None = None
    ledger_dir: str | os.PathLike[str] | None = None
    tokenizer: Tokenizer | PromptCounter | None = None
    on_row: RowHook | None = None

    def start(
        self,
        dialect: DialectName,
        provider: str | None,
        host: str,
        content: bytes | None,
        counter: Tokenizer | PromptCounter | None,
    ) -> CallStart | None:
        """The call's start (settings read once, here); None when the settings exclude it.
        ``content``: the request body, when it could be read; ``counter``: what counts its
        re-sent text for this request (:attr:`tokenizer`, or a counter bound to the request)."""
        settings = load_settings()
        if not settings.observes(provider or "", host):
            return None
        body, sent = parse_request_body(content, dialect)
        rule = get_dialect(dialect).earlier_turns
        named = body.get("model") if isinstance(body, dict) else None
        model = named if isinstance(named, str) else None
        try:
            entries = sent_carriers(body, sent, counter, rule, model)
        except Exception:  # the probe never breaks a call: sizes without digests
            entries = sent_carriers(None, sent, None, rule, model)
        return CallStart(settings, dialect, provider, body, sent, entries)

    def observer(
        self,
        start: CallStart,
        model: str | None,
        *,
        stream: bool,
        http_status: int | None,
        content_encoding: str | None = None,
    ) -> CallObserver:
        """The observer that counts the call's answer and writes its row to this ledger."""
        directory = Path(ledger_dir(self.ledger_dir))
        return CallObserver(
            session_id=self.session_id,
            dialect=start.dialect,
            provider=start.provider,
            model=model,
            purpose=self.purpose,
            stream=stream,
            sent=start.sent,
            sent_entries=start.sent_entries,
            http_status=http_status,
            content_encoding=content_encoding,
            writer=make_writer(directory, self.session_id, start.settings.cap_bytes, self.on_row),
        )


__all__ = ["CallStart", "Recorder", "RowHook", "make_writer", "parse_request_body"]
