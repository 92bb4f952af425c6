"""One framing and one JSON parse per event for a relay's projector and evidence decoder
(:class:`~reasonwire.wire.projection.OneParse`): on every recorded chat stream, the client's
bytes and the decoded turn equal those of a projector and a decoder that each read the bytes
themselves (the path the gateway took before, held to the recordings by the conformance
suites), however the bytes are split; and the decoder keeps its exact integers."""

from __future__ import annotations

import pytest

from reasonwire.wire.model import Turn
from reasonwire.wire.projection import OneParse
from reasonwire.wire.registry import get_dialect
from tests.conformance import corpus

CHAT = get_dialect("chat")


def _streams() -> list[tuple[str, bytes]]:
    out = []
    for name in corpus.corpus_files("*.yaml"):
        if corpus.manifest_entries().get(name) is None or corpus.manifest_dialect(name) != "chat":
            continue
        out += [
            (name, it.response_text.encode())
            for it in corpus.load_cassette(name)
            if it.response_text is not None and it.status == 200
        ]
    return out


STREAMS = _streams()


def _turn(events: list) -> Turn:
    return next(ev.turn for ev in events if ev.type == "done")


def _separate(chunks: list[bytes]) -> tuple[bytes, Turn]:
    projector, decoder = CHAT.stream_projector(), CHAT.stream_decoder()
    out = b""
    for chunk in chunks:
        out += projector.feed(chunk)
        decoder.feed(chunk)
    turn = _turn(decoder.close())
    return out + projector.close(), turn


def _shared(chunks: list[bytes], *, stop_at_last: bool = False) -> tuple[bytes, Turn]:
    """``stop_at_last``: the client left at the last chunk's yield (no decode after it)."""
    decoder = CHAT.stream_decoder()
    framing = OneParse.of(CHAT.stream_projector(), decoder)
    assert framing is not None
    out = b""
    for i, chunk in enumerate(chunks):
        out += framing.feed(chunk)
        if not (stop_at_last and i == len(chunks) - 1):
            framing.decode()
    framing.flush()
    turn = _turn(decoder.close())
    return out + framing.close(), turn


def _cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.skipif(not corpus.PRESENT, reason=corpus.ABSENT)
def test_recorded_chat_streams_are_found() -> None:
    assert len(STREAMS) >= 3


@pytest.mark.parametrize(("name", "data"), STREAMS, ids=[n for n, _ in STREAMS])
@pytest.mark.parametrize("size", [7, 64, 1 << 20])
def test_one_parse_equals_separate_reads(name: str, data: bytes, size: int) -> None:
    chunks = _cut(data, size)
    assert _shared(chunks) == _separate(chunks)


@pytest.mark.parametrize(("name", "data"), STREAMS, ids=[n for n, _ in STREAMS])
def test_last_event_without_its_blank_line(name: str, data: bytes) -> None:
    """The events still framed at the end reach the projector's close and the decoder."""
    chunks = _cut(data.rstrip(b"\r\n"), 64)
    assert _shared(chunks) == _separate(chunks)


@pytest.mark.parametrize(("name", "data"), STREAMS, ids=[n for n, _ in STREAMS])
def test_a_chunk_the_client_stopped_at_is_decoded(name: str, data: bytes) -> None:
    """The relay decodes a chunk after the client's copy; a client that leaves at that
    yield leaves it undecoded, and the flush before the decoder's close takes it."""
    chunks = [data]  # one chunk: nothing of the stream decoded but by the flush
    assert _shared(chunks, stop_at_last=True) == _separate(chunks)


def test_a_long_integer_keeps_its_exact_value() -> None:
    """Past a run of 19 digits the decoder wants the stdlib's exact integer, not the float
    orjson makes of an integer past 64 bits: the projector's parse is not taken then."""
    big = 123456789012345678901234567
    data = (
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{"role":"assistant","content":"hi"}}]}\n\n'
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,'
        b'"completion_tokens":' + str(big).encode() + b',"total_tokens":5}}\n\n'
        b"data: [DONE]\n\n"
    )
    _, turn = _shared([data])
    assert isinstance(turn.raw, dict)
    assert turn.raw["usage"] == {"prompt_tokens": 3, "completion_tokens": big, "total_tokens": 5}


_HI_THEN_STOP = (
    b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":"hi"}}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"content":" there"},"finish_reason":"stop"}]}'
)


def test_the_last_framed_event_reaches_the_decoder() -> None:
    """No ``[DONE]`` and no blank line after the finishing event: only the flush frames it,
    and the decoder's turn is finished by it."""
    _, turn = _shared([_HI_THEN_STOP])
    assert (turn.text, turn.finish_reason) == ("hi there", "stop")


def test_a_chunk_fed_before_the_last_one_was_decoded_is_decoded_first() -> None:
    decoder = CHAT.stream_decoder()
    framing = OneParse.of(CHAT.stream_projector(), decoder)
    assert framing is not None
    head, tail = _HI_THEN_STOP.split(b"\n\n", 1)
    framing.feed(head + b"\n\n")
    framing.feed(tail + b"\n\n")  # no decode() between: the first chunk is not lost
    framing.flush()
    turn = _turn(decoder.close())
    assert (turn.text, turn.finish_reason) == ("hi there", "stop")
