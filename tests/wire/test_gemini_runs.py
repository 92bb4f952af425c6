"""The Gemini SSE decoder's run path (a batch of chunks of the learned shape taken at once, and
the per-chunk shape test) gives what the plain rule gives, at any split. The rule is written
here from the module's merge rule and each payload is parsed by the stdlib (``json.loads`` of
the text, undecodable bytes replaced); nothing expected is read from the decoder. Each hostile
chunk sits in the middle of long uniform runs, where the learned shape is in force."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.errors import MalformedBody
from reasonwire.wire import get_dialect
from reasonwire.wire.model import Done, ReasoningDelta, TextDelta, UsageEvent
from tests.wire.batch_spy import batches_taken

D = get_dialect("gemini")
USAGE = {"promptTokenCount": 29, "totalTokenCount": 29}
LATE = {"promptTokenCount": 29, "totalTokenCount": 99}
WORDS = [" step", " é", " 世界 🧠", " text", " thought", " 007", " model", "x"]


def payload(
    part: dict[str, Any], usage: dict[str, int] | None = None, finish: bool = False
) -> bytes:
    cand: dict[str, Any] = {"content": {"parts": [part], "role": "model"}, "index": 0}
    if finish:
        cand["finishReason"] = "STOP"
    body = {"candidates": [cand], "usageMetadata": usage or USAGE, "modelVersion": "gemini-3",
            "responseId": "r1"}  # fmt: skip
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def run(thought: bool, n: int, tag: str) -> list[bytes]:
    part = {"thought": True} if thought else {}
    return [payload({"text": WORDS[i % len(WORDS)] + tag + str(i), **part}) for i in range(n)]


def raw_text(text: bytes, thought: bool = False) -> bytes:
    """A uniform chunk's bytes around ``text`` as written (no escaping: hostile middles)."""
    marker = "\x01MARK\x01"
    base = payload({"text": marker, **({"thought": True} if thought else {})})
    return base.replace(json.dumps(marker)[1:-1].encode(), text)


def frame(payloads: list[bytes]) -> bytes:
    return b"".join(b"data: " + p + b"\r\n\r\n" for p in payloads)


def expected(payloads: list[bytes]) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    """The plain rule: per payload (json.loads), a usage event when usageMetadata changed,
    then a delta per non-empty text part of candidate 0 (reasoning when ``thought`` is true);
    the parts merged by rules 1-4 of the decoder's module."""
    events: list[tuple[str, Any]] = []
    parts: list[dict[str, Any]] = []
    last_usage: Any = None
    for raw in payloads:
        p = json.loads(raw.decode("utf-8", "replace"))
        for cand in p.get("candidates", []):
            if cand.get("index", 0) != 0:
                continue
            for part in cand.get("content", {}).get("parts", []):
                text = part.get("text")
                plain = isinstance(text, str) and set(part) <= {"text", "thought"}
                if plain and text == "":
                    continue  # rule 3
                prev = parts[-1] if parts else None
                if (
                    plain
                    and prev is not None
                    and isinstance(prev.get("text"), str)
                    and set(prev) <= {"text", "thought", "thoughtSignature"}
                    and bool(prev.get("thought")) == bool(part.get("thought"))
                ):
                    prev["text"] += text  # rule 1
                else:
                    parts.append(dict(part))  # rules 2 and 4
                if isinstance(text, str) and text:
                    kind = "reasoning" if part.get("thought") is True else "text"
                    events.append((kind, text))
        usage = p.get("usageMetadata")
        if usage is not None and usage != last_usage:
            last_usage = usage
            events.append(("usage", usage))
    return events, parts


def split(data: bytes, step: int) -> list[bytes]:
    return [data[i : i + step] for i in range(0, len(data), step)]


def pairs(payloads: list[bytes], offset: int) -> list[bytes]:
    """The stream fed two whole events at a time (after ``offset`` single ones): a batch
    then starts at every event, at one offset or the other."""
    head = [frame([p]) for p in payloads[:offset]]
    rest = payloads[offset:]
    return head + [frame(rest[i : i + 2]) for i in range(0, len(rest), 2)]


def decoded(
    data: bytes | list[bytes], step: int = 0
) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    dec = D.stream_decoder()
    got: list[Any] = []
    for feed in split(data, step) if isinstance(data, bytes) else data:
        got += dec.feed(feed)
    got += dec.close()
    done = got[-1]
    assert isinstance(done, Done)
    events: list[tuple[str, Any]] = []
    for e in got:
        if isinstance(e, ReasoningDelta):
            events.append(("reasoning", e.text))
        elif isinstance(e, TextDelta):
            events.append(("text", e.text))
        elif isinstance(e, UsageEvent):
            events.append(("usage", e.usage.raw))
    (replayed,) = D.replay(done.turn)
    return events, replayed["parts"]


FINISH = payload({"text": " end", "thoughtSignature": "c2ln"}, finish=True)

HOSTILE: dict[str, list[bytes]] = {
    "escaped quote": [payload({"text": ' a "q" b'})],
    "unicode escape": [payload({"text": " caf\u00e9"}).replace("é".encode(), b"\\u00e9")],
    "renamed key": [payload({"text": " w"}).replace(b'"text":', b'"txt":')],
    "extra key": [payload({"text": " w", "lang": "en"})],
    "explicit thought false": [payload({"text": " w", "thought": False})],
    "changed usage, then back": [payload({"text": " late"}, usage=LATE)],
    "empty piece": [payload({"text": ""})],
    "invalid utf-8": [raw_text(b" bad \xff byte")],
    "quote injection": [raw_text(b'a","thought":true,"b":"c')],
    "duplicate key": [raw_text(b'x","text":"y')],
    "spaced key": [payload({"text": " w"}).replace(b'"text":', b'"text": ')],
    "thought chunk in the text run": [payload({"text": " think", "thought": True})],
    "piece that is also a key": [payload({"text": "model"}), payload({"text": "model"})],
    "negative index": [payload({"text": " w"}).replace(b'"index":0', b'"index":-0')],
    "another usage, its piece also a key": [payload({"text": "model"}, usage=LATE)],
    "renamed key, same length": [payload({"text": " w"}).replace(b'"parts":', b'"party":')],
    "another usage, same length": [
        payload({"text": " w"}).replace(b'"totalTokenCount":29', b'"totalTokenCount":39')
    ],
}


@pytest.mark.parametrize("step", [7, 4096, 65536, 10**9])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_chunk_mid_run_gives_the_rule(name: str, step: int) -> None:
    payloads = [*run(True, 300, "t"), *run(False, 300, "a"), *HOSTILE[name]]
    payloads += [*run(False, 300, "b"), *run(True, 300, "c"), *run(False, 300, "d"), FINISH]
    want_events, want_parts = expected(payloads)
    got_events, got_parts = decoded(frame(payloads), step)
    assert got_parts == want_parts
    assert got_events == want_events


@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_chunk_at_every_batch_boundary_gives_the_rule(name: str, offset: int) -> None:
    payloads = [*run(True, 40, "t"), *run(False, 40, "a"), *HOSTILE[name]]
    payloads += [*run(False, 40, "b"), *run(True, 40, "c"), *run(False, 40, "d"), FINISH]
    assert decoded(pairs(payloads, offset)) == expected(payloads)


def test_a_raw_control_byte_mid_run_is_malformed_as_for_the_stdlib() -> None:
    bad = raw_text(b" tab\there")
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    data = frame([*run(False, 300, "a"), bad, *run(False, 300, "b"), FINISH])
    dec = D.stream_decoder()
    with pytest.raises(MalformedBody):
        for i in range(0, len(data), 4096):
            dec.feed(data[i : i + 4096])
        dec.close()


def test_a_shape_learned_before_another_usage_is_not_used_after_it() -> None:
    """A chunk of the first usage after one of another: the rule reports the usage again,
    with that chunk (a shape is the last parsed chunk's, never an older one's)."""
    payloads = [*run(False, 300, "a"), payload({"text": " late"}, usage=LATE)]
    payloads += [*run(False, 300, "b"), FINISH]
    want_events, _ = expected(payloads)
    at = want_events.index(("text", " late"))
    assert want_events[at : at + 4] == [
        ("text", " late"),
        ("usage", LATE),
        ("text", " stepb0"),
        ("usage", USAGE),
    ]
    got_events, _ = decoded(frame(payloads), 4096)
    assert got_events == want_events


def test_a_long_uniform_run_is_taken_in_batches() -> None:
    """Not how fast: that the batch path is the one taken on a long uniform run."""
    taken = batches_taken(D.stream_decoder(), frame([*run(False, 3000, "a"), FINISH]))
    assert sum(taken) >= len(taken) - 3  # all but the batches holding the run's ends


def test_prefix_and_suffix_sharing_the_quote_is_malformed_as_for_the_stdlib() -> None:
    """The learned prefix ends with the piece's opening quote and the suffix starts with its
    closing one: a payload of the prefix and the suffix sharing one quote starts with the one
    and ends with the other, and is not JSON."""
    uniform = payload({"text": "MARK"})
    prefix, suffix = uniform.split(b"MARK")
    bad = prefix + suffix[1:]
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    data = frame([*run(False, 300, "a"), *[bad] * 3, *run(False, 300, "b"), FINISH])
    for step in (4096, 10**9):
        dec = D.stream_decoder()
        with pytest.raises(MalformedBody):
            for i in range(0, len(data), step):
                dec.feed(data[i : i + step])
            dec.close()
