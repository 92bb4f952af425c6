"""One observed call: counts what passes, builds the ledger row, writes it once.

A :class:`CallObserver` is created per call and shared with nothing else. Its methods never
raise: anything that goes wrong inside the probe is kept as a note in the row (``probeError``)
and the bytes keep flowing to the caller untouched.

Caller's path: per chunk, one list append (see :func:`relay`); nothing is decoded there.
The chunks go to the probe worker after the call ends (or in batches while a large answer
streams), which feeds the dialect's own stream decoder (``wire/``). The byte counts are taken
once, from the turn the decoder assembled (UTF-8 bytes of the reasoning text, the visible text
and the tool-call arguments) - or from the partial turn when the call was cut short. A
non-streaming body is joined and parsed once at the end.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reasonwire.errors import TruncatedStream
from reasonwire.probe import worker
from reasonwire.wire.dialect import StreamDecoder
from reasonwire.wire.facts import SentCarrier
from reasonwire.wire.model import DialectName, Turn, Usage
from reasonwire.wire.registry import get_dialect

# A non-streaming body larger than this is passed through but not parsed.
MAX_PARSE_BYTES = 64 * 1024 * 1024
# A call hands its chunks to the worker once it holds more than this, else when it ends.
# Decoding while the caller still streams competes with it for the GIL (measured by
# bench/bench_probe.py --spill-mb 8: +5% to +40% caller wall time on a 50 MB stream, +190% to
# +390% when the client is CPU-bound), so by default a call is decoded after it ends and holds
# references to at most as many bytes as a non-streaming body may (MAX_PARSE_BYTES).
SPILL_BYTES = MAX_PARSE_BYTES
# The worker feeds the decoder slices of at most this size.
FEED_BYTES = 1024 * 1024


def usage_row(usage: Usage | None) -> dict[str, int | None] | None:
    if usage is None:
        return None
    return {
        "uncached": usage.input_uncached,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
        "billedInput": usage.billed_input,
        "output": usage.output,
        "reasoning": usage.reasoning,
    }


def sent_row(carriers: list[SentCarrier]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in carriers:
        entry = out.setdefault(c.kind, {"bytes": 0, "count": 0, "opaque": c.opaque})
        entry["bytes"] += c.size
        entry["count"] += 1
    return out


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


class CallObserver:
    """Counts one call. Create, :meth:`feed` chunks, then :meth:`finish` exactly once.

    The caller's side (:meth:`feed`, :meth:`mark_complete`, :meth:`mark_failed`,
    :meth:`finish`) only keeps references to the chunks; decoding, counting and the ledger
    write run on the probe worker (:mod:`reasonwire.probe.worker`), in order, after the call
    ends - or in batches of about :data:`SPILL_BYTES` while a large answer is still streaming,
    so one call never holds more than that. Chunks must be ``bytes`` (immutable): the worker
    reads them after the caller has passed them on.
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
        self.http_status = http_status
        self.started = time.time()
        self.ended: float | None = None
        self.wire_bytes = 0
        self.complete = False
        self.status: str | None = None
        self.error: str | None = None
        self.probe_error: str | None = None
        self.buffer: list[bytes] = []  # chunks passed on and not yet handed to the worker
        self._buffered = 0
        self._writer = writer
        self._lock = threading.Lock()
        self._finished = False
        self._decoder: StreamDecoder | None = None
        self._chunks: list[bytes] | None = None
        self._inflate: Any = None
        self._counting = True
        try:
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
                self._decoder = get_dialect(dialect).stream_decoder()
            else:
                self._chunks = []
        except Exception as exc:  # the probe never breaks a call
            self._counting = False
            self.probe_error = f"{type(exc).__name__}: {exc}"

    # -- caller's path -----------------------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        """Keep ``chunk`` for counting. Never raises. (:func:`relay` inlines this.)"""
        self.buffer.append(chunk)
        self._buffered += len(chunk)
        if self._buffered > SPILL_BYTES:
            self.spill()

    def spill(self) -> list[bytes]:
        """Hand the buffered chunks to the worker now; returns the new (empty) buffer."""
        batch, self.buffer, self._buffered = self.buffer, [], 0
        worker.submit(lambda: self._consume(batch), sum(map(len, batch)))  # never raises
        return self.buffer

    def mark_complete(self) -> None:
        self.complete = True

    def mark_failed(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = f"{type(exc).__name__}: {exc}"

    def finish(self, status: str | None = None) -> None:
        """Hand the rest of the call to the worker, which builds and writes the row, once.

        Never raises. The row lands asynchronously (see :func:`reasonwire.probe.flush`).
        """
        with self._lock:
            if self._finished:
                return
            self._finished = True
        try:
            self.ended = time.time()
            batch, self.buffer, self._buffered = self.buffer, [], 0
            worker.submit(lambda: self._complete(batch, status), sum(map(len, batch)))
        except Exception:
            pass

    # -- worker ------------------------------------------------------------------------------

    def _consume(self, batch: list[bytes]) -> None:
        """Decode one batch of chunks (worker thread, in call order). Never raises."""
        for chunk in batch:
            self.wire_bytes += len(chunk)
        if not self._counting or not batch:
            return
        try:
            data = b"".join(batch)
            if self._inflate is not None:
                data = self._inflate.decompress(data)
            if self._decoder is not None:
                for i in range(0, len(data), FEED_BYTES):
                    self._decoder.feed(data[i : i + FEED_BYTES])
            elif self._chunks is not None:
                if self.wire_bytes > MAX_PARSE_BYTES:
                    self._chunks = None
                    self._counting = False
                    self.probe_error = "body too large to parse: bytes not counted"
                else:
                    self._chunks.append(data)
        except Exception as exc:
            self._counting = False
            self.probe_error = f"{type(exc).__name__}: {exc}"

    def _complete(self, batch: list[bytes], status: str | None) -> None:
        self._consume(batch)
        self.build_and_write(status)

    def build_and_write(self, status: str | None = None) -> dict[str, Any] | None:
        """Build the row and hand it to the writer. Never raises."""
        row: dict[str, Any] | None = None
        try:
            row = self._row(status)
            if self._writer is not None:
                self._writer(row)
        except Exception:  # ledger I/O (read-only dir, disk full) never reaches the caller
            pass
        return row

    def _turn(self) -> tuple[Turn | None, str | None]:
        """The turn seen (complete or partial) and the decoder's complaint, if any."""
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
        model = self.model
        if turn is not None:
            reasoning = _nbytes(turn.reasoning_text)
            text = _nbytes(turn.text)
            tools = sum(_nbytes(tc.arguments) for tc in turn.tool_calls)
            usage = usage_row(turn.usage)
            model = turn.model or model
        error = self.error
        if error is None and self.http_status is not None and self.http_status >= 400:
            error = f"HTTP {self.http_status}"
        if error is None and complaint is not None and status != "aborted":
            error = complaint
        row: dict[str, Any] = {
            "ts": datetime.fromtimestamp(self.started, UTC).isoformat(timespec="milliseconds"),
            "sessionId": self.session_id,
            "provider": self.provider,
            "model": model,
            "purpose": self.purpose,
            "dialect": self.dialect,
            "stream": self.stream,
            "status": status,
            "httpStatus": self.http_status,
            "reasoningBytes": reasoning,
            "textBytes": text,
            "toolBytes": tools,
            "wireBytes": self.wire_bytes,
            "sentReasoningBytes": sum(c.size for c in self.sent),
            "sentReasoning": sent_row(self.sent),
            "durationMs": round(((self.ended or time.time()) - self.started) * 1000, 1),
        }
        if usage is not None:
            row["usage"] = usage
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


def make_writer(directory: Path, session_id: str, cap_bytes: int) -> Any:
    """A row writer for one call: redact, then append to the session file."""

    def write(row: Mapping[str, Any]) -> None:
        from reasonwire.credentials import redact_obj
        from reasonwire.probe.ledger import append_row

        append_row(directory, session_id, redact_obj(dict(row)), cap_bytes)

    return write


def relay(chunks: Iterable[bytes], obs: CallObserver) -> Iterator[bytes]:
    """Yield ``chunks`` unchanged and in order while ``obs`` keeps them; finish in any case.

    The per-chunk work on the caller's path is one list append and one length sum.
    """
    buf = obs.buffer
    size = 0
    try:
        for chunk in chunks:
            buf.append(chunk)
            size += len(chunk)
            if size > SPILL_BYTES:
                buf = obs.spill()
                size = 0
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
    buf = obs.buffer
    size = 0
    try:
        async for chunk in chunks:
            buf.append(chunk)
            size += len(chunk)
            if size > SPILL_BYTES:
                buf = obs.spill()
                size = 0
            yield chunk
        obs.mark_complete()
    except GeneratorExit:  # the consumer walked away: record what it saw
        raise
    except BaseException as exc:
        obs.mark_failed(exc)
        raise
    finally:
        obs.finish()
