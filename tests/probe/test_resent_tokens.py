"""Re-sent reasoning in tokens (issue 26 point 4): the probe over recorded OpenAI Responses
sessions that send ``encrypted_content`` back (``include: [reasoning.encrypted_content]``),
and the share's bound on ledgers built by hand.

Expected figures come from the recordings through a small oracle of this file (plain YAML/JSON
and SSE reading; a later request's reasoning item is the one an answer produced when its
``id`` is that answer's reasoning item's), never from the probe, the report or the wire
decoders: a re-sent reasoning item counts the ``output_tokens_details.reasoning_tokens`` of
the call whose answer held it, and billed input is the recorded ``input_tokens`` (OpenAI's
count includes ``cached_tokens``).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from reasonwire.probe import observe_bytes
from reasonwire.probe.cli import app
from reasonwire.probe.ledger import append_row
from tests.conformance.corpus import Interaction, load_cassette
from tests.probe.streams import rows_now

# (cassette, session): the recorded sessions whose later request re-sends a reasoning item.
SESSIONS = [
    ("pai__test_openai_responses__test_openai_responses_thinking_with_tool_calls.yaml", "tools"),
    ("pai__test_openai_responses__test_openai_responses_phase_streamed_on_part_start.yaml", "sse"),
    ("pai__test_openai_responses__test_openai_responses_phase_live.yaml", "live"),
]
# Its second request re-sends the item but was refused (HTTP 400, no usage): the call adds to
# neither side of the share, and the third request sends no item.
REFUSED = "pai__test_openai_responses__test_openai_responses_thinking_with_modified_history.yaml"


def _sse_completed(text: str) -> dict[str, Any]:
    """The ``response`` of the stream's ``response.completed`` event (plain SSE reading)."""
    for block in text.replace("\r\n", "\n").split("\n\n"):
        for line in block.split("\n"):
            if line.startswith("data:"):
                data = json.loads(line[5:])
                if data.get("type") == "response.completed":
                    return dict(data["response"])
    raise AssertionError("no response.completed in the recording")


def _answer(it: Interaction) -> dict[str, Any] | None:
    if it.status >= 400:
        return None
    if it.response_text is not None:
        return _sse_completed(it.response_text)
    return dict(it.response_json)


def _oracle(its: list[Interaction]) -> list[dict[str, Any]]:
    """Per call: billed input (None without usage) and the re-sent reasoning tokens, from
    the recorded reasoning tokens of the call whose answer held the re-sent item."""
    produced: dict[str, int] = {}  # reasoning item id -> reasoning tokens of its call
    out = []
    for it in its:
        answer = _answer(it)
        usage = answer.get("usage") if answer else None
        resent = 0
        for item in it.request.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "reasoning":
                resent += produced.get(item.get("id") or "", 0)
        out.append(
            {"billed": usage["input_tokens"] if usage else None, "resent": resent if usage else 0,
             "reasoning": usage["output_tokens_details"]["reasoning_tokens"] if usage else None}
        )  # fmt: skip
        if answer and usage:
            items = [o for o in answer["output"] if o.get("type") == "reasoning"]
            assert len(items) <= 1  # one reasoning item per answer: the whole figure is its
            for o in items:
                produced[o["id"]] = usage["output_tokens_details"]["reasoning_tokens"]
    return out


def _run(its: list[Interaction], session: str, ledger: Path) -> None:
    for it in its:
        body = (
            it.response_text.encode("utf-8")
            if it.response_text is not None
            else json.dumps(it.response_json).encode()
        )
        list(
            observe_bytes(
                [body],
                dialect="responses",
                session_id=session,
                provider="openai",
                stream=it.response_text is not None,
                request_body=json.dumps(it.request).encode(),
                ledger_dir=ledger,
            )
        )


def _report(ledger: Path) -> dict[str, Any]:
    res = CliRunner().invoke(app, ["report", "--dir", str(ledger), "--json"])
    assert res.exit_code == 0, res.output
    return dict(json.loads(res.output))


@pytest.mark.parametrize(("name", "session"), SESSIONS)
def test_recorded_session_attributes_the_producers_reasoning_tokens(
    tmp_path: Path, name: str, session: str
) -> None:
    its = load_cassette(name)
    want = _oracle(its)
    assert sum(w["resent"] for w in want) > 0  # the recording does re-send a reasoning item
    # The recordings' own fact behind the rule: the next call's input grew by at least the
    # re-sent call's reasoning tokens.
    for prev, nxt in itertools.pairwise(want):
        if nxt["resent"] and prev["billed"] is not None:
            assert nxt["billed"] - prev["billed"] >= nxt["resent"]
    _run(its, session, tmp_path)
    report = _report(tmp_path)
    calls = [c for c in report["calls"] if c["session"] == session]
    assert [c["billed_input"] for c in calls] == [w["billed"] for w in want]
    assert [c["resent_measured"] for c in calls] == [float(w["resent"]) for w in want]
    assert all(c["resent_estimated"] == 0 for c in calls)  # nothing but text summaries left
    assert all(c["unattributed_opaque_bytes"] == 0 for c in calls)
    billed = sum(w["billed"] or 0 for w in want)
    resent = sum(w["resent"] for w in want)
    (group,) = [g for g in report["groups"] if g["session"] == session]
    assert group["provider"] == "openai"
    assert group["billed_input"] == billed
    assert group["measured_resent_reasoning_tokens"] == resent
    assert 0 < group["resent_share_of_billed_input"] == resent / billed <= 1


def test_text_summaries_re_sent_with_their_item_are_not_counted_twice(tmp_path: Path) -> None:
    """The tool-loop recording re-sends the item's summary text with its encrypted_content:
    the producer's reasoning tokens cover it (the recorded input grew by those alone)."""
    its = load_cassette(SESSIONS[0][0])
    sent_summary = [
        part["text"]
        for item in its[1].request["input"]
        if isinstance(item, dict) and item.get("type") == "reasoning"
        for part in item.get("summary") or []
    ]
    assert sent_summary  # the recording does send summary text back
    _run(its, "tools", tmp_path)
    rows = rows_now(tmp_path).rows
    kinds = [e["kind"] for e in rows[1]["sentCarriers"]]
    assert "encrypted_content" in kinds and "summary_text" in kinds
    call2 = _report(tmp_path)["calls"][1]
    assert call2["resent_measured"] == float(its[0].response_json["usage"][
        "output_tokens_details"]["reasoning_tokens"])  # fmt: skip
    assert call2["resent_estimated"] == 0


def test_the_rows_hold_digests_never_the_carrier(tmp_path: Path) -> None:
    its = load_cassette(SESSIONS[0][0])
    _run(its, "tools", tmp_path)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("*.jsonl"))
    enc = next(o for o in its[0].response_json["output"] if o["type"] == "reasoning")
    assert enc["encrypted_content"].encode() not in raw
    assert enc["encrypted_content"][:40].encode() not in raw


# -- the bound, on ledgers built by hand (expected values worked out here) ----------------------


def _row(i: int, billed: int | None, sent: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"ts": f"2026-01-01T00:00:{i:02d}.000Z", "sessionId": "b",
                           "provider": "p", "model": "m", "status": "ok",
                           "sentCarriers": sent}  # fmt: skip
    usage = extra.pop("usage", {})
    if billed is not None:
        row["usage"] = {"inputTokens": billed, "outputTokens": 1, "cacheReadTokens": 0,
                        "cacheWriteTokens": 0, **usage}  # fmt: skip
    row.update(extra)
    return row


def _write(ledger: Path, rows: list[dict[str, Any]]) -> None:
    for r in rows:
        append_row(ledger, str(r["sessionId"]), r, cap_bytes=1 << 30)


@pytest.mark.parametrize(
    ("text_bytes", "billed", "share", "capped"),
    [(400, 100, 1.0, 0), (404, 100, 1.0, 1), (396, 100, 0.99, 0)],
)
def test_the_share_is_capped_at_billed_input(
    tmp_path: Path, text_bytes: int, billed: int, share: float, capped: int
) -> None:
    """bytes/4 of 400 bytes is 100 tokens: exactly the billed input is 100%, not capped; 4
    bytes more would be 101 tokens and is capped at 100%."""
    _write(
        tmp_path, [_row(1, billed, [{"kind": "thinking", "bytes": text_bytes, "opaque": False}])]
    )
    (g,) = _report(tmp_path)["groups"]
    assert g["resent_share_of_billed_input"] == share
    assert g["capped_calls"] == capped
    assert g["estimated_share_of_billed_input"] == share


def test_measured_is_kept_first_when_capping(tmp_path: Path) -> None:
    rows = [
        _row(1, 10, [], usage={"reasoningTokens": 90},
             producedCarriers=[{"kind": "x", "bytes": 50, "digests": ["d1"]}]),
        _row(2, 100, [{"kind": "x", "bytes": 50, "opaque": True, "digest": "d1"},
                      {"kind": "t", "bytes": 80, "opaque": False}]),
    ]  # fmt: skip
    _write(tmp_path, rows)
    calls = _report(tmp_path)["calls"]
    # 90 measured (the producer's reasoning tokens) + 20 estimated (80 / 4) > 100: 90 + 10
    assert calls[1]["resent_measured"] == 90 and calls[1]["resent_estimated"] == 10
    assert calls[1]["capped"] is True


def test_split_unattributed_and_producer_without_reasoning_tokens(tmp_path: Path) -> None:
    rows = [
        # a producer of two opaque carriers (300 and 100 bytes) with 80 reasoning tokens
        _row(1, 1000, [], usage={"reasoningTokens": 80}, producedCarriers=[
            {"kind": "sig", "bytes": 300, "digests": ["a1"]},
            {"kind": "sig", "bytes": 100, "digests": ["b1"]}]),
        # a producer that reports no reasoning tokens: its carrier's re-sent text counts
        _row(2, 1000, [], producedCarriers=[
            {"kind": "thinking", "bytes": 500, "digests": ["c1", "c2"], "textBytes": 200}]),
        _row(3, 1000, [
            {"kind": "sig", "bytes": 100, "opaque": True, "digest": "b1"},  # 80 * 100/400
            {"kind": "thinking", "bytes": 200, "opaque": False, "digest": "c2"},  # 200 / 4
            {"kind": "signature", "bytes": 300, "opaque": True, "digest": "c1"},  # covered
            {"kind": "sig", "bytes": 77, "opaque": True, "digest": "zz"},  # no producer
            {"kind": "rc", "bytes": 40, "opaque": False, "tokenCount": 7, "tokenizer": "t"},
        ]),
    ]  # fmt: skip
    _write(tmp_path, rows)
    rep = _report(tmp_path)
    call3 = rep["calls"][2]
    assert call3["resent_estimated"] == 20 + 50  # the split, and bytes/4 of the text
    assert call3["resent_measured"] == 7  # the route's tokenizer
    assert call3["unattributed_opaque_bytes"] == 77
    (g,) = rep["groups"]
    assert g["resent_share_of_billed_input"] == 77 / 3000


def test_a_carrier_is_tied_only_to_an_earlier_call(tmp_path: Path) -> None:
    rows = [
        _row(1, 100, [{"kind": "sig", "bytes": 9, "opaque": True, "digest": "late"}]),
        _row(2, 100, [], usage={"reasoningTokens": 50},
             producedCarriers=[{"kind": "sig", "bytes": 9, "digests": ["late"]}]),
    ]  # fmt: skip
    _write(tmp_path, rows)
    call1 = _report(tmp_path)["calls"][0]
    assert call1["resent_measured"] == 0 and call1["unattributed_opaque_bytes"] == 9


_entry = st.fixed_dictionaries(
    {"kind": st.sampled_from(["a", "b"]), "bytes": st.integers(0, 10_000),
     "opaque": st.booleans(), "digest": st.sampled_from(["d0", "d1", "d2", "none"])},
    optional={"tokenCount": st.integers(0, 5_000)},
)  # fmt: skip
_call = st.fixed_dictionaries(
    {"billed": st.one_of(st.none(), st.integers(0, 3_000)),
     "reasoning": st.one_of(st.none(), st.integers(0, 10_000)),
     "sent": st.lists(_entry, max_size=5),
     "produced": st.lists(st.sampled_from(["d0", "d1", "d2"]), max_size=3)},
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(_call, min_size=1, max_size=6))
def test_the_share_never_passes_billed_input(tmp_path_factory: Any, calls: list[Any]) -> None:
    from reasonwire.probe.report import analyse

    rows = []
    for i, c in enumerate(calls):
        usage = {"reasoningTokens": c["reasoning"]} if c["reasoning"] is not None else {}
        produced = [{"kind": "a", "bytes": 10 + k, "digests": [d]}
                    for k, d in enumerate(c["produced"])]  # fmt: skip
        rows.append(_row(i, c["billed"], c["sent"], usage=usage, producedCarriers=produced))
    result = analyse(rows)
    for fig, c in zip(result.calls, calls, strict=True):
        if c["billed"] is not None:
            assert 0 <= fig.resent_measured + fig.resent_estimated <= c["billed"]
    for g in result.groups:
        share = g.resent_share
        assert share is None or 0 <= share <= 1


def test_a_refused_re_send_adds_to_neither_side(tmp_path: Path) -> None:
    its = load_cassette(REFUSED)
    want = _oracle(its)
    assert its[1].status == 400 and any(
        isinstance(i, dict) and i.get("type") == "reasoning" for i in its[1].request["input"]
    )
    assert [w["resent"] for w in want] == [0, 0, 0]
    _run(its, "mod", tmp_path)
    report = _report(tmp_path)
    assert [c["billed_input"] for c in report["calls"]] == [w["billed"] for w in want]
    # the refused call did send the item back, from an earlier turn (a user message follows
    # it): the Responses API discards earlier reasoning (OpenAI reasoning guide), so 0 tokens,
    # its carriers counted as documented...
    sent = its[1].request["input"]
    assert [i.get("role") for i in sent[2:]] == ["assistant", "user"]
    item = next(i for i in sent if i.get("type") == "reasoning")
    texts = [p["text"] for p in item.get("summary") or ()]
    assert report["calls"][1]["billed_input"] is None
    assert report["calls"][1]["resent_measured"] == 0
    assert report["calls"][1]["documented_carriers"] == len(texts) + 1
    assert report["calls"][1]["documented_bytes"] == sum(
        len(t.encode()) for t in [*texts, item["encrypted_content"]]
    )
    # ...and it was not billed: the groups' figures leave it out
    billed = sum(w["billed"] or 0 for w in want)
    groups = report["groups"]
    assert sum(g["billed_input"] for g in groups) == billed
    assert all(g["resent_share_of_billed_input"] in (0, None) for g in groups)
    assert sum(g["resent_reasoning_tokens"] for g in groups) == 0


def test_text_carrier_with_the_routes_tokenizer_equals_the_servers_delta(
    sim_server: Any, tmp_path: Path
) -> None:
    """The simulator counts prompt tokens with its own tokenizer (reasonwire.sim.tokens):
    given that tokenizer, the probe's measured re-sent figure is the server's own
    ``prompt_tokens`` delta between the same turn sent without and with the carrier. Without
    it, the figure is bytes / 4 and labelled estimated."""
    import httpx

    from reasonwire.probe import ProbeTransport, Tokenizer
    from reasonwire.sim import tokens

    trace = "Let me think about the lookup carefully: first the key, then the value."
    base: list[dict[str, Any]] = [{"role": "user", "content": "hello there"}]
    plain = [*base, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    carried = [*base, {"role": "assistant", "content": "ok", "reasoning_content": trace},
               {"role": "user", "content": "more"}]  # fmt: skip
    prompt = {}
    for session, tok in (("tok", Tokenizer("sim", tokens.count)), ("est", None)):
        transport = ProbeTransport(session, ledger_dir=tmp_path, tokenizer=tok)
        with httpx.Client(transport=transport, base_url=sim_server.base_url,
                          headers={"authorization": "Bearer sk-test"}) as http:  # fmt: skip
            for name, messages in (("plain", plain), ("carried", carried)):
                resp = http.post("/chat/completions",
                                 json={"model": "sim-chat-all", "messages": messages})  # fmt: skip
                assert resp.status_code == 200, resp.text
                prompt[(session, name)] = resp.json()["usage"]["prompt_tokens"]
    delta = prompt[("tok", "carried")] - prompt[("tok", "plain")]
    assert delta > 0
    calls = {(c["session"], c["index"]): c for c in _report(tmp_path)["calls"]}
    assert calls[("tok", 2)]["resent_measured"] == delta
    assert calls[("tok", 2)]["resent_estimated"] == 0
    assert calls[("est", 2)]["resent_measured"] == 0
    assert calls[("est", 2)]["resent_estimated"] == len(trace.encode()) / 4


GEMINI = "pai__test_google__test_google_model_thinking_part.yaml"


def test_an_earlier_turn_gemini_signature_is_not_its_producers_thoughts(tmp_path: Path) -> None:
    """The recording: after an answer of N thought tokens the next turn's input grew by less
    than N plus the answer's text tokens, so the thoughtSignature re-sent from the earlier
    turn is not billed as the thoughts: the documented drop (0 tokens, its bytes counted as
    documented); the thought text re-sent beside it is estimated at bytes / 4."""
    first, second = load_cassette(GEMINI)
    u1, u2 = first.response_json["usageMetadata"], second.response_json["usageMetadata"]
    growth = u2["promptTokenCount"] - u1["promptTokenCount"]
    assert growth < u1["thoughtsTokenCount"] + u1["candidatesTokenCount"]
    parts = [p for c in second.request["contents"] if c.get("role") == "model"
             for p in c["parts"]]  # fmt: skip
    thought = sum(len(p["text"].encode()) for p in parts if p.get("thought"))
    signature = sum(len(p["thoughtSignature"].encode()) for p in parts if "thoughtSignature" in p)
    assert thought > 0 and signature > 0
    for it in (first, second):
        list(observe_bytes([json.dumps(it.response_json).encode()], dialect="gemini",
                           session_id="g", stream=False, ledger_dir=tmp_path,
                           request_body=json.dumps(it.request).encode()))  # fmt: skip
    call2 = _report(tmp_path)["calls"][1]
    assert call2["billed_input"] == u2["promptTokenCount"]
    assert call2["resent_measured"] == 0
    assert call2["resent_estimated"] == thought / 4
    assert call2["unattributed_opaque_bytes"] == 0
    assert call2["documented_carriers"] == 1
    assert call2["documented_bytes"] == signature
