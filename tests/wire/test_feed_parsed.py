"""Every stream decoder's ``feed_parsed`` (the events framed once by the relay and parsed once
by :func:`~reasonwire.wire.projection.parse_both`) against its own ``feed`` on the same bytes:
each recorded stream of each dialect (``cassettes/`` and ``cassettes-2026/``), split at several
sizes, gives the same events chunk by chunk and the same end (closing events and turn, or the
same error with the same partial turn). The oracle is the recording read by the decoder's
plain path, which the conformance suites hold to the providers' answers.

Bytes where the projector's read and a decoder's own read part ways (orjson refuses the bytes
but the stripped text parses) and integers of 19 digits or more (the decoders keep the exact
value, orjson would not) are checked on the same recordings, altered."""

from __future__ import annotations

import re

import pytest

from reasonwire.errors import TruncatedStream
from reasonwire.wire.model import JSON, Turn
from reasonwire.wire.projection import OneParse, parse_both
from reasonwire.wire.registry import get_dialect
from reasonwire.wire.sse import SSEDecoder
from tests.conformance import corpus

DIALECTS = ("chat", "responses", "anthropic", "gemini", "interactions")


def _recorded() -> list[tuple[str, str, bytes]]:
    """(dialect, id, stream bytes) of every recorded stream answered 200."""
    out: list[tuple[str, str, bytes]] = []
    if not corpus.PRESENT:
        return out
    for name in sorted(corpus.manifest_entries()):
        dialect = corpus.manifest_dialect(name)
        if name.endswith(".chunks.txt"):
            out.append((dialect, name, corpus.chunks_as_sse(name)))
        elif name.endswith(".yaml"):
            for i, it in enumerate(corpus.load_cassette(name)):
                if it.streamed and it.status == 200 and it.response_text:
                    out.append((dialect, f"{name}#{i}", it.response_text.encode()))
    return out


STREAMS = _recorded()
IDS = [f"{d}:{n}" for d, n, _ in STREAMS]


def _cut(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _close(decoder: object, flush: list | None = None) -> object:
    """The decoder's end: its closing events, or the error's kind, text and partial turn."""
    try:
        tail = list(flush() if flush is not None else [])  # type: ignore[operator]
        return tail + decoder.close()  # type: ignore[attr-defined]
    except TruncatedStream as exc:
        return ("TruncatedStream", str(exc), exc.partial)
    except Exception as exc:
        return (type(exc).__name__, str(exc))


def _plain(dialect: str, chunks: list[bytes]) -> list[object]:
    decoder = get_dialect(dialect).stream_decoder()
    out: list[object] = []
    for chunk in chunks:
        try:
            out.append(decoder.feed(chunk))
        except Exception as exc:
            return [*out, (type(exc).__name__, str(exc))]
    return [*out, _close(decoder)]


def _parsed(dialect: str, chunks: list[bytes]) -> list[object]:
    """As a relay feeds it: one framing, one parse, the framing's last events at the end."""
    decoder = get_dialect(dialect).stream_decoder()
    sse = SSEDecoder()
    out: list[object] = []
    for chunk in chunks:
        events = sse.feed_raw(chunk)
        try:
            out.append(decoder.feed_parsed(chunk, events, parse_both(events)[1]))
        except Exception as exc:
            return [*out, (type(exc).__name__, str(exc))]

    def flush() -> list:
        events = sse.close_raw()
        return decoder.feed_parsed(b"", events, parse_both(events)[1])

    return [*out, _close(decoder, flush)]  # type: ignore[arg-type]


@pytest.mark.skipif(not corpus.PRESENT, reason=corpus.ABSENT)
def test_every_dialect_has_recorded_streams() -> None:
    assert {d for d, _, _ in STREAMS} == set(DIALECTS)


@pytest.mark.parametrize(("dialect", "name", "data"), STREAMS, ids=IDS)
@pytest.mark.parametrize("size", [7, 64, 1 << 20])
def test_feed_parsed_gives_what_feed_gives(dialect: str, name: str, data: bytes, size: int) -> None:
    chunks = _cut(data, size)
    plain = _plain(dialect, chunks)
    assert isinstance(plain[-1], list), plain[-1]  # a recording decodes to its end
    assert _parsed(dialect, chunks) == plain


@pytest.mark.parametrize(("dialect", "name", "data"), STREAMS, ids=IDS)
def test_one_event_per_chunk(dialect: str, name: str, data: bytes) -> None:
    """As most upstreams write: each chunk one whole event (the run paths see batches of
    one; the shapes are learned from the objects handed over)."""
    chunks = [e + b"\n\n" for e in re.split(rb"\r?\n\r?\n", data) if e.strip()]
    assert _parsed(dialect, chunks) == _plain(dialect, chunks)


@pytest.mark.parametrize(("dialect", "name", "data"), STREAMS, ids=IDS)
def test_last_event_without_its_blank_line(dialect: str, name: str, data: bytes) -> None:
    """The framing's last events come with an empty chunk, and are taken as the decoder's
    close takes its own (an Anthropic event cut there is a truncation)."""
    for cut in (data.rstrip(b"\r\n"), data.rstrip(b"\r\n")[:-3]):
        chunks = _cut(cut, 64)
        assert _parsed(dialect, chunks) == _plain(dialect, chunks)


def _events(data: bytes) -> list[bytes]:
    return [e for e in re.split(rb"\r?\n\r?\n", data) if e.strip()]


def _objects(data: bytes) -> list[int]:
    """The positions of the events whose data is one line holding a JSON object."""
    out = []
    for i, event in enumerate(_events(data)):
        lines = [line for line in event.split(b"\n") if line.startswith(b"data:")]
        if len(lines) == 1 and lines[0][5:].strip().startswith(b"{"):
            out.append(i)
    return out


def _altered(data: bytes, at: int, alter: object) -> bytes:
    """``data`` with its ``at``-th JSON object event's data line changed by ``alter``."""
    events = _events(data)
    where = _objects(data)[at]
    lines = events[where].split(b"\n")
    i = next(k for k, line in enumerate(lines) if line.startswith(b"data:"))
    lines[i] = b"data:" + alter(lines[i][5:].strip())  # type: ignore[operator]
    events[where] = b"\n".join(lines)
    return b"\n\n".join(events) + b"\n\n"


ODD = {
    "a vertical tab after the object": lambda raw: b" " + raw + b"\x0b",
    "two spaces before the object": lambda raw: b"  " + raw,
    "invalid UTF-8 inside a string": lambda raw: raw.replace(b'":"', b'":"\xff', 1),
    "a non-breaking space after it": lambda raw: b" " + raw + "\u00a0".encode(),
}


@pytest.mark.parametrize("alter", list(ODD), ids=list(ODD))
@pytest.mark.parametrize(("dialect", "name", "data"), STREAMS, ids=IDS)
def test_bytes_read_two_ways_are_left_to_the_decoder(
    dialect: str, name: str, data: bytes, alter: str
) -> None:
    """The projector reads such a payload from its stripped text; a decoder that does not
    strip refuses it, one that does reads the same: either way its own read decides."""
    for at in (0, len(_objects(data)) // 2):
        changed = _altered(data, at, ODD[alter])
        for size in (64, 1 << 20):
            chunks = _cut(changed, size)
            assert _parsed(dialect, chunks) == _plain(dialect, chunks)
            assert _shared(dialect, chunks) == _separate(dialect, chunks)  # the relay's way


def _ints(value: JSON) -> list[int]:
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ints(v)]
    if isinstance(value, list):
        return [i for v in value for i in _ints(v)]
    return [value] if type(value) is int else []


BIG = 123456789012345678901234567
"""Past 64 bits: orjson would make it a float."""
_COUNT = re.compile(rb'"(total_tokens|totalTokenCount|output_tokens|total_output_tokens)":\s*\d+')


@pytest.mark.parametrize(("dialect", "name", "data"), STREAMS, ids=IDS)
def test_a_long_integer_keeps_its_exact_value(dialect: str, name: str, data: bytes) -> None:
    """Token counts of 27 digits spliced into the recording: the turn holds them exactly."""
    changed, n = _COUNT.subn(lambda m: b'"' + m.group(1) + b'":' + str(BIG).encode(), data)
    if not n:
        pytest.skip("no token count in this recording")
    for size in (64, 1 << 20):
        chunks = _cut(changed, size)
        parsed = _parsed(dialect, chunks)
        assert parsed == _plain(dialect, chunks)
        end = parsed[-1]
        assert isinstance(end, list)
        turn = next(ev.turn for ev in end if ev.type == "done")
        assert isinstance(turn, Turn)
        assert BIG in _ints(turn.raw)


def test_a_json_array_gemini_stream_is_read_from_its_bytes() -> None:
    """Gemini's other stream form: the caller's SSE events are not its events, the bytes are."""
    payloads = corpus.load_chunks("vercel__google__google-tool-call-gemini3.chunks.txt")
    import json

    data = b"  \n[" + b",\n".join(json.dumps(p).encode() for p in payloads) + b"]"
    for size in (1, 7, 64, 1 << 20):
        chunks = _cut(data, size)
        plain = _plain("gemini", chunks)
        assert isinstance(plain[-1], list)
        assert _parsed("gemini", chunks) == plain


# -- the relay's framing (OneParse), every dialect ---------------------------------------------


def _separate(dialect: str, chunks: list[bytes]) -> tuple[bytes, object]:
    d = get_dialect(dialect)
    projector, decoder = d.stream_projector(), d.stream_decoder()
    out = b""
    for chunk in chunks:
        out += projector.feed(chunk)
        try:
            decoder.feed(chunk)
        except Exception as exc:  # the relay ends the stream here
            return out, (type(exc).__name__, str(exc))
    end = _close(decoder)
    return out + projector.close(), end


def _shared(dialect: str, chunks: list[bytes]) -> tuple[bytes, object]:
    """As the relay runs it: each chunk projected, then decoded; the flush, then the ends."""
    d = get_dialect(dialect)
    decoder = d.stream_decoder()
    framing = OneParse.of(d.stream_projector(), decoder)
    assert framing is not None
    out = b""
    for chunk in chunks:
        out += framing.feed(chunk)
        try:
            framing.decode()
        except Exception as exc:  # the relay ends the stream here
            return out, (type(exc).__name__, str(exc))
    end = _close(decoder, lambda: (framing.flush(), [])[1])  # type: ignore[arg-type]
    return out + framing.close(), end


@pytest.mark.parametrize(("dialect", "name", "data"), STREAMS, ids=IDS)
@pytest.mark.parametrize("size", [64, 1 << 20])
def test_one_parse_equals_separate_reads(dialect: str, name: str, data: bytes, size: int) -> None:
    chunks = _cut(data, size)
    assert _shared(dialect, chunks) == _separate(dialect, chunks)


_COUNTS = frozenset({"total_tokens", "totalTokenCount", "output_tokens", "total_output_tokens"})
DOCTORED = 424242


def _doctor(value: JSON) -> JSON:
    """``value`` with every token count of :data:`_COUNTS` set to :data:`DOCTORED`."""
    if isinstance(value, dict):
        return {
            k: DOCTORED if k in _COUNTS and type(v) is int else _doctor(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_doctor(v) for v in value]
    return value


def _counted(dialect: str) -> tuple[str, bytes]:
    return next(
        (n, data) for d, n, data in STREAMS if d == dialect and _COUNT.search(data) is not None
    )


@pytest.mark.skipif(not corpus.PRESENT, reason=corpus.ABSENT)
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("size", [64, 1 << 20])
def test_the_objects_handed_over_are_read_not_the_bytes_again(dialect: str, size: int) -> None:
    """Objects that differ from their bytes (token counts changed): the turn holds the
    objects' values, so the decoder took them (each event parsed once)."""
    _, data = _counted(dialect)
    decoder = get_dialect(dialect).stream_decoder()
    sse = SSEDecoder()
    end: list = []
    for chunk in [*_cut(data, size), b""]:
        events = sse.feed_raw(chunk) if chunk else sse.close_raw()
        doctored = [_doctor(p) if p is not None else None for p in parse_both(events)[1]]
        end += decoder.feed_parsed(chunk, events, doctored)  # type: ignore[arg-type]
    end += decoder.close()
    turn = next(ev.turn for ev in end if ev.type == "done")
    assert DOCTORED in _ints(turn.raw)


def _interactions_two_outputs() -> list[bytes]:
    """An interaction with two text steps growing alike, in chunks of two events: the shapes
    learned after a chunk are each its own event's (here the last two events have the same
    piece, on different steps: learned from the wrong one, the next chunk's pieces would grow
    the wrong step)."""

    def ev(payload: str) -> bytes:
        return b"data: " + payload.encode() + b"\n\n"

    def delta(index: int, text: str) -> bytes:
        return ev(
            f'{{"index":{index},"delta":{{"type":"text","text":"{text}"}},'
            '"event_type":"step.delta"}'
        )

    start = '{{"index":{i},"step":{{"type":"model_output"}},"event_type":"step.start"}}'
    events = [
        ev('{"interaction":{"id":"i1","status":"in_progress"},"event_type":"interaction.created"}'),
        ev(start.format(i=0)) + ev(start.format(i=1)),
        delta(0, "aa") + delta(1, "aa"),
        delta(1, "bb") + delta(1, "cc"),
        ev('{"index":0,"event_type":"step.stop"}') + ev('{"index":1,"event_type":"step.stop"}'),
        ev(
            '{"interaction":{"id":"i1","status":"completed","usage":{"total_tokens":7}},'
            '"event_type":"interaction.completed"}'
        ),
    ]
    return events


def test_shapes_are_learned_from_each_events_own_object() -> None:
    chunks = _interactions_two_outputs()
    plain = _plain("interactions", chunks)
    assert _parsed("interactions", chunks) == plain
    end = plain[-1]
    assert isinstance(end, list)
    turn = next(ev.turn for ev in end if ev.type == "done")
    assert turn.text == "aaaabbcc"  # step 0 "aa", then step 1 "aa" + "bb" + "cc"


def _anthropic_two_texts() -> list[bytes]:
    """An answer with two text blocks growing alike, in chunks of two events (as for
    :func:`_interactions_two_outputs`)."""

    def ev(payload: str) -> bytes:
        kind = payload.split('"type":"', 1)[1].split('"', 1)[0]
        return b"event: " + kind.encode() + b"\ndata: " + payload.encode() + b"\n\n"

    def delta(index: int, text: str) -> bytes:
        return ev(
            f'{{"type":"content_block_delta","index":{index},'
            f'"delta":{{"type":"text_delta","text":"{text}"}}}}'
        )

    def block(index: int, what: str) -> bytes:
        return ev(f'{{"type":"content_block_{what}","index":{index}}}')

    start = (
        '{{"type":"content_block_start","index":{i},"content_block":{{"type":"text","text":""}}}}'
    )
    return [
        ev(
            '{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant",'
            '"model":"m","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}'
        ),
        ev(start.format(i=0)) + ev(start.format(i=1)),
        delta(0, "aa") + delta(1, "aa"),
        delta(1, "bb") + delta(1, "cc"),
        block(0, "stop") + block(1, "stop"),
        ev(
            '{"type":"message_delta","delta":{"stop_reason":"end_turn"},'
            '"usage":{"output_tokens":7}}'
        )
        + ev('{"type":"message_stop"}'),
    ]


def test_anthropic_shapes_are_learned_from_each_events_own_object() -> None:
    chunks = _anthropic_two_texts()
    plain = _plain("anthropic", chunks)
    assert _parsed("anthropic", chunks) == plain
    end = plain[-1]
    assert isinstance(end, list)
    turn = next(ev.turn for ev in end if ev.type == "done")
    assert turn.text == "aaaabbcc"  # block 0 "aa", then block 1 "aa" + "bb" + "cc"
