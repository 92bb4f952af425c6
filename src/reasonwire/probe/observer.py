"""One observed call: counts what passes, builds the ledger row, writes it once.

A :class:`CallObserver` is created per call and shared with nothing else. Its methods never
raise: anything that goes wrong inside the probe is kept as a note in the row (``probeError``)
and the bytes keep flowing to the caller untouched.

Counting is incremental: chunks are fed to the dialect's own stream decoder (``wire/``) as
they pass, in batches of at most :data:`DECODE_BATCH` bytes, so when the call ends at most one
batch is left to decode - the turn is then assembled (pieces joined) and the row written. The
decoder is fed through its ``absorb`` where it has one (nobody reads the events here, so it may
take uniform runs of events in bulk; Chat Completions does). Durability: the row is written by
:meth:`CallObserver.finish`, which the wrapped stream calls in a ``finally`` when it ends, is
closed, fails or is abandoned, so the row is on disk (one ``O_APPEND`` write) by the time the
caller's response is closed. A non-streaming body is kept (up to :data:`MAX_PARSE_BYTES`) and
parsed once at the end, as the caller's own client parses it.

Ledger row (one JSON line per model call), the method's keys first, in this order::

    {"ts": "2026-09-10T12:00:00.000Z", "sessionId", "provider", "model", "purpose",
     "reasoningBytes", "textBytes",
     "usage": {"inputTokens", "outputTokens", "totalTokens", "cacheReadTokens",
               "cacheWriteTokens", "reasoningTokens"},          # omitted without usage
     ...our keys: "dialect", "stream", "status", "httpStatus", "toolBytes", "wireBytes",
     "sentReasoningBytes", "sentReasoning", "sentCarriers", "producedCarriers",
     "requestModel", "responseModel", "durationMs", "error", "probeError"}

``ts`` is the call's start in UTC with milliseconds and ``Z``. ``inputTokens`` is uncached
input only; billed input = ``inputTokens + cacheReadTokens + cacheWriteTokens``. The four
billing figures are 0 when the provider reported usage without that figure (it billed none
of it); ``totalTokens`` and ``reasoningTokens`` are the provider's own figures and are absent
when it did not report them (never computed). ``sentCarriers`` lists each carrier the request
sent back (kind, bytes, opaque, digest; a text carrier's ``tokenCount`` when the route's
tokenizer was given, ``promptCount`` when that count is the server's own; ``earlierTurn``
and the dialect's documented verdict ``earlierTurns`` for a carrier sent back from an earlier
turn) and ``producedCarriers`` each opaque carrier the answer returned (kind, bytes, digests):
the report ties the two by digest (:mod:`reasonwire.probe.carriers`).
``model`` is the answer's model, else the request's; ``requestModel`` and ``responseModel``
keep each apart (``None`` when not known), for the OTel GenAI attributes.
Rows written before this schema (``uncached``, ``cacheRead``, ``billedInput``...,
``+00:00``) stay readable: see :func:`reasonwire.probe.ledger.row_usage`.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reasonwire.errors import TruncatedStream
from reasonwire.probe.carriers import PromptCounter, Tokenizer, produced_carriers, sent_carriers
from reasonwire.wire.dialect import Dialect, StreamDecoder
from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import DialectName, Turn, Usage
from reasonwire.wire.registry import get_dialect

# A non-streaming body larger than this is passed through but not parsed.
MAX_PARSE_BYTES = 64 * 1024 * 1024

# Stream chunks are decoded once at least this many bytes wait. Why: a provider flushes one
# SSE event per chunk, and the decoder's fixed cost per call then outweighs its cost per
# byte (one-event chunks cost about 2.7x what 64 KB chunks cost per MB). The lag is bounded:
# at most this much is left to decode when the call ends (about 0.2 ms), so there is no
# end-of-call spike, and a chunk is counted within 32 KB of passing.
DECODE_BATCH = 32 * 1024


def ts_utc(epoch: float) -> str:
    """``2026-09-10T12:00:00.000Z``: UTC, milliseconds, ``Z``."""
    stamp = datetime.fromtimestamp(epoch, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


def usage_row(usage: Usage | None, dialect: Dialect | None = None) -> dict[str, int] | None:
    """The method's usage object (key order fixed; see the module docstring)."""
    if usage is None:
        return None
    out = {"inputTokens": usage.input_uncached or 0, "outputTokens": usage.output or 0}
    total = dialect.total_tokens(usage) if dialect is not None else None
    if total is not None:
        out["totalTokens"] = total
    out["cacheReadTokens"] = usage.cache_read or 0
    out["cacheWriteTokens"] = usage.cache_write or 0
    if usage.reasoning is not None:
        out["reasoningTokens"] = usage.reasoning
    return out


def sent_row(carriers: list[SentCarrier]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in carriers:
        entry = out.setdefault(c.kind, {"bytes": 0, "count": 0, "opaque": c.opaque})
        entry["bytes"] += c.size
        entry["count"] += 1
    return out


def _ignore(data: bytes) -> None:
    """The absorb of an observer without a stream decoder."""


def _nbytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class CallObserver:
    """Counts one call. Create, :meth:`feed` chunks, then :meth:`finish` exactly once.

    :meth:`feed` decodes the chunk at once (the dialect's incremental decoder) and
    :meth:`finish` builds the row and hands it to ``writer`` before it returns.
    """

    def __init__(
        self,
        *,
        session_id: str,
        dialect: DialectName,
        provider: str | None,
        model: str | None,
        purpose: str | None,
        stream: bool,
        sent: list[SentCarrier] | None = None,
        sent_entries: list[dict[str, Any]] | None = None,
        http_status: int | None = None,
        content_encoding: str | None = None,
        writer: Any = None,
    ) -> None:
        self.session_id = session_id
        self.dialect: DialectName = dialect
        self.provider = provider
        self.model = model
        self.purpose = purpose
        self.stream = stream
        self.sent = sent or []
        self.sent_entries = (
            sent_entries if sent_entries is not None else sent_carriers(None, self.sent)
        )
        self.http_status = http_status
        self.started = time.time()
        self.ended: float | None = None
        self.wire_bytes = 0
        self.complete = False
        self.status: str | None = None
        self.error: str | None = None
        self.probe_error: str | None = None
        self.row: dict[str, Any] | None = None
        self._writer = writer
        self._lock = threading.Lock()
        self._finished = False
        self._dialect: Dialect | None = None
        self._decoder: StreamDecoder | None = None
        self._absorb: Callable[[bytes], object] = _ignore
        self._chunks: list[bytes] | None = None
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.decoded_bytes = 0
        """Stream bytes handed to the decoder so far (at most :data:`DECODE_BATCH` behind
        :attr:`wire_bytes` while the call runs)."""
        self._inflate: Any = None
        self._counting = True
        try:
            self._dialect = get_dialect(dialect)
            enc = (content_encoding or "").strip().lower()
            if enc in ("gzip", "x-gzip"):
                self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            elif enc == "deflate":
                self._inflate = zlib.decompressobj()
            elif enc not in ("", "identity"):
                self._counting = False
                self.probe_error = f"content-encoding {enc} not decoded: bytes not counted"
            if http_status is not None and http_status >= 400:
                self._counting = False  # an error body holds no turn: count its bytes only
            elif stream:
                self._decoder = self._dialect.stream_decoder()
                # a decoder may take events in bulk when nobody reads them (see absorb)
                self._absorb = getattr(self._decoder, "absorb", self._decoder.feed)
            else:
                self._chunks = []
        except Exception as exc:  # the probe never breaks a call
            self._counting = False
            self.probe_error = f"{type(exc).__name__}: {exc}"

    # -- the call's path ---------------------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        """Count ``chunk`` (decoded incrementally, in batches of :data:`DECODE_BATCH`
        bytes). Never raises."""
        n = len(chunk)
        self.wire_bytes += n
        if not self._counting:
            return
        if self._decoder is not None:
            self._pending.append(chunk)
            self._pending_bytes += n
            if self._pending_bytes >= DECODE_BATCH:
                self._drain()
            return
        try:
            data = self._inflate.decompress(chunk) if self._inflate is not None else chunk
            if self._chunks is not None:
                if self.wire_bytes > MAX_PARSE_BYTES:
                    self._chunks = None
                    self._counting = False
                    self.probe_error = "body too large to parse: bytes not counted"
                else:
                    self._chunks.append(data)
        except Exception as exc:
            self._counting = False
            self.probe_error = f"{type(exc).__name__}: {exc}"

    def _drain(self) -> None:
        """Decode what waits. Never raises: a decoder error stops counting, with a note."""
        pending = self._pending
        if not pending or self._decoder is None:
            return
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        self.decoded_bytes += self._pending_bytes
        self._pending = []
        self._pending_bytes = 0
        try:
            if self._inflate is not None:
                data = self._inflate.decompress(data)
            self._absorb(data)
        except Exception as exc:
            self._counting = False
            self.probe_error = f"{type(exc).__name__}: {exc}"

    def mark_complete(self) -> None:
        self.complete = True

    def mark_failed(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = f"{type(exc).__name__}: {exc}"

    def finish(self, status: str | None = None) -> None:
        """Build the row and write it, once; it is on disk when this returns (unless the
        ledger cannot be written: the probe never fails a call). Never raises."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
        try:
            self.ended = time.time()
            self.build_and_write(status)
        except Exception:
            pass

    def build_and_write(self, status: str | None = None) -> dict[str, Any] | None:
        """Build the row and hand it to the writer. Never raises."""
        row: dict[str, Any] | None = None
        try:
            row = self.row = self._row(status)
            if self._writer is not None:
                self._writer(row)
        except Exception:  # ledger I/O (read-only dir, disk full) never reaches the caller
            pass
        return row

    def _turn(self) -> tuple[Turn | None, str | None]:
        """The turn seen (complete or partial) and the decoder's complaint, if any."""
        if self._counting:
            self._drain()
        if not self._counting:
            if self._decoder is not None:
                try:
                    return self._decoder.partial_turn(), None
                except Exception:
                    return None, None
            return None, None
        if self._decoder is not None:
            if self._inflate is not None:
                self._decoder.feed(self._inflate.flush())
            try:
                for ev in self._decoder.close():
                    turn = getattr(ev, "turn", None)
                    if isinstance(turn, Turn):
                        return turn, None
            except TruncatedStream as exc:
                partial = exc.partial if isinstance(exc.partial, Turn) else None
                return partial or self._decoder.partial_turn(), str(exc)
            except Exception as exc:
                return self._decoder.partial_turn(), f"{type(exc).__name__}: {exc}"
            return self._decoder.partial_turn(), None
        if self._chunks is not None and self.http_status is not None and self.http_status < 400:
            body = b"".join(self._chunks)
            if self._inflate is not None:
                body += self._inflate.flush()
            self._chunks = None
            if not body.strip():
                return None, "empty body"
            try:
                return get_dialect(self.dialect).parse_response(body), None
            except Exception as exc:
                return None, f"{type(exc).__name__}: {exc}"
        return None, None

    def _row(self, status: str | None) -> dict[str, Any]:
        turn, complaint = None, None
        try:
            turn, complaint = self._turn()
        except Exception as exc:
            complaint = f"{type(exc).__name__}: {exc}"
        if status is None:
            if self.error is not None:
                status = "failed"
            elif self.http_status is not None and self.http_status >= 400:
                status = "http_error"
            elif complaint is None and (turn is not None or self.complete):
                status = "ok"  # the answer's terminal event came (an SDK may close after it)
            elif not self.complete:
                status = "aborted"
            else:
                status = "incomplete"
        reasoning = text = tools = 0
        usage = None
        produced: list[dict[str, Any]] = []
        model = self.model
        if turn is not None:
            reasoning = _nbytes(turn.reasoning_text)
            text = _nbytes(turn.text)
            tools = sum(_nbytes(tc.arguments) for tc in turn.tool_calls)
            usage = usage_row(turn.usage, self._dialect)
            model = turn.model or model
            try:
                produced = produced_carriers(turn)
            except Exception as exc:
                self.probe_error = self.probe_error or f"{type(exc).__name__}: {exc}"
        error = self.error
        if error is None and self.http_status is not None and self.http_status >= 400:
            error = f"HTTP {self.http_status}"
        if error is None and complaint is not None and status != "aborted":
            error = complaint
        row: dict[str, Any] = {
            "ts": ts_utc(self.started),
            "sessionId": self.session_id,
            "provider": self.provider,
            "model": model,
            "purpose": self.purpose,
            "reasoningBytes": reasoning,
            "textBytes": text,
        }
        if usage is not None:
            row["usage"] = usage
        row.update(
            {
                "dialect": self.dialect,
                "stream": self.stream,
                "status": status,
                "httpStatus": self.http_status,
                "toolBytes": tools,
                "wireBytes": self.wire_bytes,
                "sentReasoningBytes": sum(c.size for c in self.sent),
                "sentReasoning": sent_row(self.sent),
                "sentCarriers": self.sent_entries,
                "producedCarriers": produced,
                "requestModel": self.model,
                "responseModel": turn.model if turn is not None else None,
                "durationMs": round(((self.ended or time.time()) - self.started) * 1000, 1),
            }
        )
        if error is not None:
            row["error"] = error[:500]
        if self.probe_error is not None:
            row["probeError"] = self.probe_error[:500]
        return row


def parse_request_body(
    content: bytes | None, dialect: DialectName
) -> tuple[Any, list[SentCarrier]]:
    """The decoded request body and the carriers it sends back ((None, []) if not JSON)."""
    if not content:
        return None, []
    try:
        body = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None, []
    if not isinstance(body, dict):
        return body, []
    return body, get_dialect(dialect).request_carriers(body)


def request_side(
    content: bytes | None, dialect: DialectName, tokenizer: Tokenizer | PromptCounter | None = None
) -> tuple[Any, list[SentCarrier], list[dict[str, Any]]]:
    """:func:`parse_request_body` plus the row's ``sentCarriers`` (digests, token counts)."""
    body, sent = parse_request_body(content, dialect)
    rule = get_dialect(dialect).earlier_turns
    model = body.get("model") if isinstance(body, dict) else None
    model = model if isinstance(model, str) else None
    try:
        entries = sent_carriers(body, sent, tokenizer, rule, model)
    except Exception:  # the probe never breaks a call: sizes without digests
        entries = sent_carriers(None, sent, None, rule, model)
    return body, sent, entries


RowHook = Callable[[dict[str, Any]], object]
"""Called with each row (redacted, as written) on the probe's housekeeping thread, after the
row is on disk: e.g. :class:`reasonwire.probe.otel.LiveExporter`. Its failures are ignored."""


def make_writer(
    directory: Path, session_id: str, cap_bytes: int, on_row: RowHook | None = None
) -> Any:
    """A row writer for one call: redact, then append to the session file (one write, now);
    archive rotation, if the cap is passed, and ``on_row`` run later on the probe's
    housekeeping thread, never on the caller's path."""

    def write(row: Mapping[str, Any]) -> None:
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


def relay(chunks: Iterable[bytes], obs: CallObserver) -> Iterator[bytes]:
    """Yield ``chunks`` unchanged and in order, counting each before it is handed on; the
    row is written in the ``finally``, whichever way the iteration ends."""
    feed = obs.feed
    try:
        for chunk in chunks:
            feed(chunk)
            yield chunk
        obs.mark_complete()
    except GeneratorExit:  # the consumer walked away: record what it saw
        raise
    except BaseException as exc:
        obs.mark_failed(exc)
        raise
    finally:
        obs.finish()


async def arelay(chunks: AsyncIterable[bytes], obs: CallObserver) -> AsyncIterator[bytes]:
    """The async twin of :func:`relay`."""
    feed = obs.feed
    try:
        async for chunk in chunks:
            feed(chunk)
            yield chunk
        obs.mark_complete()
    except GeneratorExit:  # the consumer walked away: record what it saw
        raise
    except BaseException as exc:
        obs.mark_failed(exc)
        raise
    finally:
        obs.finish()
