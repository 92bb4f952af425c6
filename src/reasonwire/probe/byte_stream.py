"""The probe for a bare byte stream, without httpx: for stacks that hand over an iterable of
bytes.

``observe_bytes(chunks, dialect="anthropic", session_id="s1")`` returns an iterator (or an
async iterator, for an async iterable) that yields the very same chunks in order and writes
one ledger row when the stream ends, fails or is abandoned (the row is on disk when the
iterator is exhausted, closed or collected).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import TypedDict, Unpack, overload

from reasonwire.probe.call import CallObserver, arelay, relay
from reasonwire.probe.carriers import PromptCounter, Tokenizer
from reasonwire.probe.recorder import Recorder, RowHook
from reasonwire.wire.model import DialectName


def _observer(
    recorder: Recorder,
    dialect: DialectName,
    provider: str | None,
    model: str | None,
    request_body: bytes | None,
    stream: bool,
) -> CallObserver | None:
    try:
        start = recorder.start(dialect, provider, provider or "", request_body, recorder.tokenizer)
        if start is None:
            return None
        body = start.body
        if model is None and isinstance(body, dict) and isinstance(body.get("model"), str):
            model = body["model"]
        return recorder.observer(start, model, stream=stream, http_status=200)
    except Exception:
        return None


async def _passthrough(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        yield chunk


class _Options(TypedDict, total=False):
    """The keyword options of :func:`observe_bytes` (named once for both overloads)."""

    purpose: str | None
    provider: str | None
    model: str | None
    request_body: bytes | None
    stream: bool
    ledger_dir: str | os.PathLike[str] | None
    tokenizer: Tokenizer | PromptCounter | None
    on_row: RowHook | None


@overload
def observe_bytes(
    chunks: AsyncIterable[bytes], *, dialect: DialectName, session_id: str, **kw: Unpack[_Options]
) -> AsyncIterator[bytes]: ...


@overload
def observe_bytes(
    chunks: Iterable[bytes], *, dialect: DialectName, session_id: str, **kw: Unpack[_Options]
) -> Iterator[bytes]: ...


def observe_bytes(
    chunks: Iterable[bytes] | AsyncIterable[bytes],
    *,
    dialect: DialectName,
    session_id: str,
    purpose: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    request_body: bytes | None = None,
    stream: bool = True,
    ledger_dir: str | os.PathLike[str] | None = None,
    tokenizer: Tokenizer | PromptCounter | None = None,
    on_row: RowHook | None = None,
) -> Iterator[bytes] | AsyncIterator[bytes]:
    """Yield ``chunks`` unchanged while counting them as one call of ``dialect``.

    ``request_body`` (the JSON sent) lets the row include the carriers the call sent back;
    ``stream=False`` treats the bytes as one non-streaming JSON body; ``tokenizer`` (the
    route's own token counter, when known) counts re-sent reasoning text in tokens;
    ``on_row`` is called with the row once written, off the caller's path.
    """
    recorder = Recorder(session_id, purpose, ledger_dir, tokenizer, on_row)
    obs = _observer(recorder, dialect, provider, model, request_body, stream)
    if isinstance(chunks, AsyncIterable):
        return _passthrough(chunks) if obs is None else arelay(chunks, obs)
    return iter(chunks) if obs is None else relay(chunks, obs)


__all__ = ["observe_bytes"]
