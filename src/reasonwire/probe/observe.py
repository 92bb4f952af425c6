"""Observe a byte stream without httpx: for stacks that hand us an iterable of bytes.

``observe_bytes(chunks, dialect="anthropic", session_id="s1")`` returns an iterator (or an
async iterator, for an async iterable) that yields the very same chunks in order and writes
one ledger row when the stream ends, fails or is abandoned (the row is on disk when the
iterator is exhausted, closed or collected).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import overload

from reasonwire.probe.carriers import PromptCounter, Tokenizer
from reasonwire.probe.observer import (
    CallObserver,
    RowHook,
    arelay,
    make_writer,
    relay,
    request_side,
)
from reasonwire.probe.settings import ledger_dir, load_settings
from reasonwire.wire.model import DialectName


def _observer(
    dialect: DialectName,
    session_id: str,
    purpose: str | None,
    provider: str | None,
    model: str | None,
    request_body: bytes | None,
    stream: bool,
    ledger: str | os.PathLike[str] | None,
    tokenizer: Tokenizer | PromptCounter | None = None,
    on_row: RowHook | None = None,
) -> CallObserver | None:
    try:
        settings = load_settings()
        if not settings.observes(provider or "", provider or ""):
            return None
        body, sent, entries = request_side(request_body, dialect, tokenizer)
        if model is None and isinstance(body, dict) and isinstance(body.get("model"), str):
            model = body["model"]
        return CallObserver(
            session_id=session_id,
            dialect=dialect,
            provider=provider,
            model=model,
            purpose=purpose,
            stream=stream,
            sent=sent,
            sent_entries=entries,
            http_status=200,
            writer=make_writer(Path(ledger_dir(ledger)), session_id, settings.cap_bytes, on_row),
        )
    except Exception:
        return None


def _sync(chunks: Iterable[bytes], obs: CallObserver | None) -> Iterator[bytes]:
    if obs is None:
        return iter(chunks)
    return relay(chunks, obs)


async def _passthrough(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    async for chunk in chunks:
        yield chunk


def _async(chunks: AsyncIterable[bytes], obs: CallObserver | None) -> AsyncIterator[bytes]:
    if obs is None:
        return _passthrough(chunks)
    return arelay(chunks, obs)


@overload
def observe_bytes(
    chunks: AsyncIterable[bytes],
    *,
    dialect: DialectName,
    session_id: str,
    purpose: str | None = ...,
    provider: str | None = ...,
    model: str | None = ...,
    request_body: bytes | None = ...,
    stream: bool = ...,
    ledger_dir: str | os.PathLike[str] | None = ...,
    tokenizer: Tokenizer | PromptCounter | None = ...,
    on_row: RowHook | None = ...,
) -> AsyncIterator[bytes]: ...


@overload
def observe_bytes(
    chunks: Iterable[bytes],
    *,
    dialect: DialectName,
    session_id: str,
    purpose: str | None = ...,
    provider: str | None = ...,
    model: str | None = ...,
    request_body: bytes | None = ...,
    stream: bool = ...,
    ledger_dir: str | os.PathLike[str] | None = ...,
    tokenizer: Tokenizer | PromptCounter | None = ...,
    on_row: RowHook | None = ...,
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
    obs = _observer(
        dialect,
        session_id,
        purpose,
        provider,
        model,
        request_body,
        stream,
        ledger_dir,
        tokenizer,
        on_row,
    )
    if hasattr(chunks, "__aiter__"):
        return _async(chunks, obs)  # type: ignore[arg-type]
    return _sync(chunks, obs)


__all__ = ["observe_bytes"]
