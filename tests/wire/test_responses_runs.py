"""The Responses decoder's run path (a batch of text-piece events of one learned template
taken at once) gives what the plain rule gives, at any split: each payload parsed by the
stdlib (``json.loads`` of the text, undecodable bytes replaced), its ``delta`` a reasoning or
text delta by the event type (an empty one adds no event), the turn the concatenation. The
hostile events below sit in the middle of long runs; each one's expected result comes from
``json.loads`` here, never from the decoder."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reasonwire.errors import MalformedBody
from reasonwire.wire import get_dialect
from reasonwire.wire.model import ReasoningDelta, TextDelta
from reasonwire.wire.runs import learn_template

D = get_dialect("responses")
SUMMARY = "response.reasoning_summary_text.delta"
TEXT = "response.output_text.delta"
RS = '"item_id":"rs_1","output_index":0,"summary_index":0'
MSG = '"item_id":"msg_1","output_index":1,"content_index":0'


def frame(payload: bytes) -> bytes:
    return b"event: x\ndata: " + payload + b"\n\n"


def js(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def piece(typ: str, seq: int, delta: str, obf: str) -> bytes:
    where = RS if typ == SUMMARY else MSG
    body = {"delta": delta, "obfuscation": obf}
    return f'{{"type":"{typ}","sequence_number":{seq},{where},'.encode() + js(body)[1:]


OPEN = [
    js({"type": "response.created", "sequence_number": 0, "response": {"id": "r", "output": []}}),
    js({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
        "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
    js({"type": "response.output_item.added", "sequence_number": 2, "output_index": 1,
        "item": {"id": "msg_1", "type": "message", "content": []}}),
]  # fmt: skip


def stream(summary_hostile: bytes, text_hostile: bytes) -> list[bytes]:
    """Payloads: 300 summary pieces, a hostile one, 300 more; the same for text."""
    words = [" step", " é", "", " 世界 🧠", " obfuscation:", " 007", " sequence_number"]
    runs: list[bytes] = []
    seq = 3
    for typ, hostile in ((SUMMARY, summary_hostile), (TEXT, text_hostile)):
        for i in range(601):
            if i == 300:
                runs.append(hostile)
            else:  # an empty word stays empty: a piece that adds no event
                word = words[i % len(words)]
                runs.append(piece(typ, seq, (word and word + str(i)), f"o{i}Xy"[: 1 + i % 5]))
            seq += 1
    return [*OPEN, *runs]  # no terminal event: the partial turn shows the pieces


def expected(payloads: list[bytes]) -> tuple[list[tuple[type, str]], str, str]:
    """The plain rule: the events, and the partial turn's reasoning (summary parts of item 0
    in part order, non-empty ones joined by a blank line) and text (item 1's pieces)."""
    events: list[tuple[type, str]] = []
    parts: dict[int, str] = {}
    text = ""
    for raw in payloads:
        p = json.loads(raw.decode("utf-8", "replace"))
        kind = {SUMMARY: ReasoningDelta, TEXT: TextDelta}.get(p["type"])
        delta = p.get("delta")
        if kind is None or not isinstance(delta, str):
            continue
        if delta:
            events.append((kind, delta))
        if kind is ReasoningDelta and p["output_index"] == 0:
            k = p.get("summary_index", 0)
            parts[k] = parts.get(k, "") + delta
        elif kind is TextDelta and p["output_index"] == 1:
            text += delta
    reasoning = "\n\n".join(parts[k] for k in sorted(parts) if parts[k])
    return events, reasoning, text


def deltas(events: list[Any]) -> list[tuple[type, str]]:
    return [(type(e), e.text) for e in events if isinstance(e, (ReasoningDelta, TextDelta))]


def decode(payloads: list[bytes], step: int) -> tuple[list[Any], Any]:
    data = b"".join(map(frame, payloads))
    dec = D.stream_decoder()
    events: list[Any] = []
    for i in range(0, len(data), step):
        events += dec.feed(data[i : i + step])
    return events, dec


def _sum(seq: int) -> bytes:
    return piece(SUMMARY, seq, " plain", "ab")


HOSTILE = {
    # the template's own bytes as keys: a second "delta" after the obfuscation (last one wins)
    "duplicate delta key": f'{{"type":"{SUMMARY}","sequence_number":303,{RS},"delta":" a",'
    '"obfuscation":"q","delta":" evil"}',
    # a renamed key: no delta, no event
    "renamed key": f'{{"type":"{SUMMARY}","sequence_number":303,{RS},"deltb":" a",'
    '"obfuscation":"q"}',
    # an escaped quote in the obfuscation and in the delta
    "escaped quote": f'{{"type":"{SUMMARY}","sequence_number":303,{RS},"delta":" a\\"b",'
    '"obfuscation":"q\\"r"}',
    # an escape that is not a quote: the plain rule unescapes it
    "escaped newline": f'{{"type":"{SUMMARY}","sequence_number":303,{RS},"delta":" a\\nb",'
    '"obfuscation":"q"}',
    "negative number": f'{{"type":"{SUMMARY}","sequence_number":-303,{RS},"delta":" neg",'
    '"obfuscation":"q"}',
    "long number": f'{{"type":"{SUMMARY}","sequence_number":123456789012345678901234,{RS},'
    '"delta":" big","obfuscation":"q"}',
    "fraction": f'{{"type":"{SUMMARY}","sequence_number":3.5,{RS},"delta":" frac",'
    '"obfuscation":"q"}',
    "non-ascii obfuscation": f'{{"type":"{SUMMARY}","sequence_number":303,{RS},'
    '"delta":" x","obfuscation":"é→"}',
    "whitespace": f'{{"type":"{SUMMARY}", "sequence_number":303,{RS},"delta":" ws",'
    '"obfuscation":"q"}',
    "other type": f'{{"type":"{TEXT}","sequence_number":303,{RS},"delta":" as text",'
    '"obfuscation":"q"}',
    "other part": f'{{"type":"{SUMMARY}","sequence_number":303,"item_id":"rs_1",'
    '"output_index":0,"summary_index":1,"delta":" part1","obfuscation":"q"}',
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
@pytest.mark.parametrize("step", [13, 4096, 65536, 10**9])
def test_hostile_events_in_runs_decode_as_the_plain_rule(case: str, step: int) -> None:
    hostile = HOSTILE[case].encode()
    payloads = stream(hostile, piece(TEXT, 700, " fine", "z"))
    want, reasoning, text = expected(payloads)
    events, dec = decode(payloads, step)
    assert deltas(events) == want
    turn = dec.partial_turn()
    assert (turn.reasoning_text, turn.text) == (reasoning, text)


def test_invalid_utf8_in_a_delta_is_replaced_as_the_plain_rule_says() -> None:
    bad = piece(TEXT, 700, " caf", "z").replace(b" caf", b" caf\xe9")
    payloads = stream(_sum(303), bad)
    want, _, text = expected(payloads)
    assert any("\ufffd" in t for _, t in want)
    events, dec = decode(payloads, 65536)
    assert deltas(events) == want
    assert dec.partial_turn().text == text


@pytest.mark.parametrize(
    "bad",
    [
        # a leading zero, a cut inside the delta string, a raw tab in the obfuscation
        f'{{"type":"{SUMMARY}","sequence_number":0303,{RS},"delta":" a","obfuscation":"q"}}',
        f'{{"type":"{SUMMARY}","sequence_number":303,{RS},"delta":" a',
        f'{{"type":"{SUMMARY}","sequence_number":303,{RS},"delta":" a","obfuscation":"q\tr"}}',
        f'{{"type":"{SUMMARY}","sequence_number":,{RS},"delta":" a","obfuscation":"q"}}',
    ],
)
@pytest.mark.parametrize("step", [4096, 10**9])
def test_a_broken_event_in_a_run_is_malformed_as_in_json(bad: str, step: int) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    with pytest.raises(MalformedBody):
        decode(stream(bad.encode(), piece(TEXT, 700, " fine", "z")), step)


def test_every_split_of_a_short_run_gives_the_rule_s_events() -> None:
    payloads = stream(HOSTILE["duplicate delta key"].encode(), HOSTILE["escaped quote"].encode())
    want, reasoning, text = expected(payloads)
    data = b"".join(map(frame, payloads))
    for cut in range(0, 4000, 7):  # cuts through the first runs' events, at every offset mod 7
        dec = D.stream_decoder()
        events = dec.feed(data[:cut]) + dec.feed(data[cut:])
        assert deltas(events) == want, cut
        assert (dec.partial_turn().reasoning_text, dec.partial_turn().text) == (reasoning, text)


def test_the_run_path_is_taken_on_long_runs() -> None:
    """Whether the path is taken (a learned template), not how fast it is."""
    _, dec = decode(stream(_sum(303), piece(TEXT, 700, " fine", "z")), 4096)
    assert dec.bulk_events > 900


LEARNED = piece(SUMMARY, 42, " hi", "ob")


def _loads(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8", "replace"))


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (LEARNED.replace(b'"ob"}', b'"ob","delta":" hi"}'), "duplicate: the hole is not the value"),
        (LEARNED.replace(b'"ob"}', b'"ob","x":{"delta":" hi"}}'), "the delta twice"),
        (
            LEARNED.replace(b'" hi"', b'" h\\u0069"').replace(
                b'"ob"}', b'"ob","x":{"delta":" hi"}}'
            ),
            "the one raw needle is in a nested object (the proof finds it is not the delta)",
        ),
        (LEARNED.replace(b'"type"', b'"t\xffpe"'), "a literal that is not UTF-8"),
        (LEARNED.replace(b'"sequence_number":42', b'"sequence_number": 42'), "not compact"),
    ],
)
def test_no_template_when_the_holes_cannot_be_proved(data: bytes, why: str) -> None:
    payload = _loads(data)
    holes = ["sequence_number", "delta", "obfuscation"]
    assert learn_template(data, payload, holes, "delta", _loads) is None, why


def test_a_template_takes_only_its_own_shape() -> None:
    holes = ["sequence_number", "delta", "obfuscation"]
    tpl = learn_template(LEARNED, _loads(LEARNED), holes, "delta", _loads)
    assert tpl is not None
    same = [
        piece(SUMMARY, n, d, o) for n, d, o in [(0, "", ""), (7, " é 世界", "Zz9"), (10, "a", "b")]
    ]
    assert tpl.captured(same) == ["", " é 世界", "a"]
    for other in [
        piece(SUMMARY, 1, " a", "b") + b"\n" + piece(SUMMARY, 2, " c", "d"),  # two in one line
        piece(SUMMARY, 1, " a", "b").replace(b":1,", b":01,"),  # leading zero
        piece(SUMMARY, 1, " a", "b").replace(b":1,", b":,"),  # no digits
        piece(SUMMARY, 1, " a\x01", "b").replace(b"\\u0001", b"\x01"),  # raw control byte
        piece(SUMMARY, 1, " a", "é"),  # a non-ASCII uncaptured hole
        piece(SUMMARY, 1, " a", "b").replace(b" a", b" \xff"),  # not UTF-8
        piece(SUMMARY, 1, " a", "b").replace(b'"b"}', b'"b"} '),  # a byte after the end
    ]:
        assert tpl.captured([same[0], other]) is None, other


def test_runs_after_the_terminal_event_change_nothing() -> None:
    done = js({"type": "response.completed", "sequence_number": 9000,
               "response": {"id": "r", "status": "completed", "output": []}})  # fmt: skip
    first = stream(_sum(303), piece(TEXT, 700, " fine", "z"))
    late = [piece(TEXT, 9001 + i, f" late{i}", "q") for i in range(300)]
    _, dec = decode(first, 4096)
    dec.feed(frame(done))
    assert dec.feed(b"".join(map(frame, late))) == []
    assert dec.bulk_events > 900  # the template was learned before the end


def test_a_run_of_a_second_summary_part_goes_to_that_part() -> None:
    part1 = [
        piece(SUMMARY, 2000 + i, f" p{i}", "q").replace(b'"summary_index":0', b'"summary_index":1')
        for i in range(600)
    ]
    payloads = [*stream(_sum(303), piece(TEXT, 700, " fine", "z")), *part1]
    want, reasoning, text = expected(payloads)
    events, dec = decode(payloads, 4096)
    assert deltas(events) == want
    assert (dec.partial_turn().reasoning_text, dec.partial_turn().text) == (reasoning, text)
    assert dec.bulk_events > 1300


def test_a_payload_holding_a_newline_is_not_two_lines_of_the_batch() -> None:
    holes = ["sequence_number", "delta", "obfuscation"]
    tpl = learn_template(LEARNED, _loads(LEARNED), holes, "delta", _loads)
    assert tpl is not None
    assert tpl.captured([LEARNED + b"\n" + LEARNED, b"{}"]) is None
