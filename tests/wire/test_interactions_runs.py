"""The Interactions stream decoder's run path (a batch of text-piece ``step.delta`` events of one
learned shape taken at once) gives what the assembly rule gives, at any split. The rule is
written here from the decoder's module docstring (rules 1-3) and each payload is parsed by the
stdlib (``json.loads`` of the text, undecodable bytes replaced); nothing expected is read from
the decoder. Each hostile event sits in the middle of long runs, where a learned shape is in
force."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from reasonwire.errors import MalformedBody
from reasonwire.wire import get_dialect
from reasonwire.wire.model import Done, ReasoningDelta, TextDelta
from tests.wire.batch_spy import batches_taken

D = get_dialect("interactions")
WORDS = [" step", " é", " 世界 🧠", " text", " delta", " 007", " index", "x"]
IID = "v1_abc"


def js(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def text(piece: str, index: int = 1) -> bytes:
    return js(
        {"index": index, "delta": {"text": piece, "type": "text"}, "event_type": "step.delta"}
    )


def thought(piece: str, index: int = 0) -> bytes:
    d = {"content": {"type": "text", "text": piece}, "type": "thought_summary"}
    return js({"index": index, "delta": d, "event_type": "step.delta"})


def start(index: int, step: dict[str, Any]) -> bytes:
    return js({"index": index, "step": step, "event_type": "step.start"})


def stop(index: int) -> bytes:
    return js({"index": index, "event_type": "step.stop"})


def raw_text(middle: bytes) -> bytes:
    """A text event's bytes around ``middle`` as written (no escaping: hostile middles)."""
    return text("\x01M\x01").replace(json.dumps("\x01M\x01")[1:-1].encode(), middle)


OPEN = [
    js({"interaction": {"id": IID, "status": "in_progress"}, "event_type": "interaction.created"}),
    start(0, {"type": "thought"}),
]
SWITCH = [
    js({"index": 0, "delta": {"signature": "c2ln", "type": "thought_signature"},
        "event_type": "step.delta"}),
    stop(0),
    start(1, {"type": "model_output", "content": []}),
]  # fmt: skip
CLOSE = [
    stop(1),
    js({"interaction": {"id": IID, "status": "completed", "usage": {"total_tokens": 9}},
        "event_type": "interaction.completed"}),
]  # fmt: skip


def pieces(n: int, tag: str) -> list[str]:
    return [WORDS[i % len(WORDS)] + tag + str(i) for i in range(n)]


def frame(payloads: list[bytes]) -> bytes:
    return b"".join(b"data: " + p + b"\n\n" for p in payloads)


def grow(step: dict[str, Any], key: str, piece: str) -> None:
    """Rule 2: a text piece is appended to the last text item of ``key`` (or opens one)."""
    items = step.setdefault(key, [])
    last = items[-1] if items else None
    if isinstance(last, dict) and last.get("type") == "text" and isinstance(last.get("text"), str):
        last["text"] += piece
    else:
        items.append({"type": "text", "text": piece})


def expected(payloads: list[bytes]) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """The rule: the non-empty text and thought-summary deltas in order, and the steps."""
    events: list[tuple[str, str]] = []
    steps: dict[int, dict[str, Any]] = {}
    for raw in payloads:
        p = json.loads(raw.decode("utf-8", "replace"))
        kind = p.get("event_type")
        if kind == "step.start":
            steps[p["index"]] = copy.deepcopy(p["step"])  # rule 1
        elif kind == "step.delta":
            step, d = steps[p["index"]], p["delta"]
            if d.get("type") == "text" and isinstance(d.get("text"), str):
                grow(step, "content", d["text"])
                events.append(("text", d["text"]))
            elif d.get("type") == "thought_summary" and isinstance(d.get("content"), dict):
                item = d["content"]
                if item.get("type") == "text" and isinstance(item.get("text"), str):
                    grow(step, "summary", item["text"])
                    events.append(("reasoning", item["text"]))
                else:
                    step["summary"] = [*step.get("summary", []), item]
            elif d.get("type") == "thought_signature" and isinstance(d.get("signature"), str):
                step["signature"] = d["signature"]
    return [e for e in events if e[1]], [steps[i] for i in sorted(steps)]


def split(data: bytes, step: int) -> list[bytes]:
    return [data[i : i + step] for i in range(0, len(data), step)]


def pairs(payloads: list[bytes], offset: int) -> list[bytes]:
    """The stream fed two whole events at a time (after ``offset`` single ones): a batch
    then starts at every event, at one offset or the other."""
    head = [frame([p]) for p in payloads[:offset]]
    rest = payloads[offset:]
    return head + [frame(rest[i : i + 2]) for i in range(0, len(rest), 2)]


def decoded(data: bytes | list[bytes], step: int = 0) -> tuple[list[tuple[str, str]], list[Any]]:
    dec = D.stream_decoder()
    got: list[Any] = []
    for feed in split(data, step) if isinstance(data, bytes) else data:
        got += dec.feed(feed)
    got += dec.close()
    done = got[-1]
    assert isinstance(done, Done)
    events = [
        ("reasoning" if isinstance(e, ReasoningDelta) else "text", e.text)
        for e in got
        if isinstance(e, ReasoningDelta | TextDelta) and e.text
    ]
    assert isinstance(done.turn.raw, dict)
    return events, done.turn.raw["steps"]


ODD_ITEM = {"content": {"type": "image", "text": "x"}, "type": "thought_summary"}
HOSTILE: dict[str, list[bytes]] = {
    "text deltas whose text is a number": [
        js({"index": 1, "delta": {"text": i, "type": "text"}, "event_type": "step.delta"})
        for i in range(60)
    ],
    "non-text summary items between pieces, then a run of them": [
        *(
            e
            for i in range(30)
            for e in (
                js({"index": 0, "delta": ODD_ITEM, "event_type": "step.delta"}),
                thought(f" t{i}"),
            )
        ),
        *[js({"index": 0, "delta": ODD_ITEM, "event_type": "step.delta"})] * 60,
    ],
    "text type renamed, same length": [text(" w").replace(b'"type":"text"', b'"type":"txet"')],
    "a run of events of another kind": [
        text(f" w{i}").replace(b'"step.delta"', b'"step.notes"') for i in range(60)
    ],
    "a run of non-text summary items": [
        js({"index": 0, "delta": ODD_ITEM, "event_type": "step.delta"}).replace(
            b'"x"', f'"x{i}"'.encode()
        )
        for i in range(60)
    ],
    "escaped quote": [text(' a "q" b')],
    "unicode escape": [text(" caf\u00e9").replace("é".encode(), b"\\u00e9")],
    "renamed key": [text(" w").replace(b'"text":', b'"txt":')],
    "another step's index": [text(" on the thought", index=0)],
    "stop then more pieces": [stop(1)],
    "a new step then pieces of the old": [stop(1), start(2, {"type": "model_output"})],
    "empty piece": [text("")],
    "invalid utf-8": [raw_text(b" bad \xff byte")],
    "quote injection": [raw_text(b'a","type":"thought_summary","x":"b')],
    "duplicate key": [raw_text(b'x","text":"y')],
    "spaced key": [text(" w").replace(b'"text":', b'"text": ')],
    "thought piece in the text run": [thought(" late thought")],
    "piece that is also a key": [text("delta"), text("delta")],
    "a non-text summary item": [
        js(
            {
                "index": 0,
                "delta": {"content": {"type": "image"}, "type": "thought_summary"},
                "event_type": "step.delta",
            }
        )
    ],
}


@pytest.mark.parametrize("step", [7, 4096, 65536, 10**9])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_event_mid_run_gives_the_rule(name: str, step: int) -> None:
    payloads = [*OPEN, *map(thought, pieces(400, "t")), *SWITCH, *map(text, pieces(400, "a"))]
    payloads += [*HOSTILE[name], *map(text, pieces(400, "b")), *CLOSE]
    want_events, want_steps = expected(payloads)
    got_events, got_steps = decoded(frame(payloads), step)
    assert got_steps == want_steps
    assert got_events == want_events


@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_event_at_every_batch_boundary_gives_the_rule(name: str, offset: int) -> None:
    payloads = [*OPEN, *map(thought, pieces(40, "t")), *SWITCH, *map(text, pieces(40, "a"))]
    payloads += [*HOSTILE[name], *map(text, pieces(40, "b")), *CLOSE]
    assert decoded(pairs(payloads, offset)) == expected(payloads)


def test_a_hostile_event_mid_thought_run_gives_the_rule() -> None:
    payloads = [*OPEN, *map(thought, pieces(400, "t")), thought(' a "q"'), thought("")]
    payloads += [*map(thought, pieces(400, "u")), *SWITCH, *map(text, pieces(10, "a")), *CLOSE]
    want_events, want_steps = expected(payloads)
    for step in (4096, 65536):
        assert decoded(frame(payloads), step) == (want_events, want_steps)


def test_a_raw_control_byte_mid_run_is_malformed_as_for_the_stdlib() -> None:
    bad = raw_text(b" tab\there")
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    data = frame([*OPEN, *SWITCH, *map(text, pieces(400, "a")), bad, *map(text, pieces(400, "b"))])
    dec = D.stream_decoder()
    with pytest.raises(MalformedBody):
        for i in range(0, len(data), 4096):
            dec.feed(data[i : i + 4096])


def test_a_long_uniform_run_is_taken_in_batches() -> None:
    """Not how fast: that the batch path is the one taken on a long uniform run."""
    taken = batches_taken(
        D.stream_decoder(), frame([*OPEN, *SWITCH, *map(text, pieces(5000, "a")), *CLOSE])
    )
    assert sum(taken) >= len(taken) - 2  # all but the first batch and the one with the end


def test_prefix_and_suffix_sharing_the_quote_is_malformed_as_for_the_stdlib() -> None:
    """A payload of the learned prefix and suffix sharing one quote (see the Gemini test of
    the same name) is not JSON."""
    prefix, suffix = text("MARK").split(b"MARK")
    bad = prefix + suffix[1:]
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    payloads = [*OPEN, *SWITCH, *map(text, pieces(400, "a")), *[bad] * 3, *CLOSE]
    data = frame(payloads)
    for feeds in (split(data, 4096), [data], pairs(payloads, 0), pairs(payloads, 1)):
        dec = D.stream_decoder()
        with pytest.raises(MalformedBody):
            for feed in feeds:
                dec.feed(feed)
            dec.close()
