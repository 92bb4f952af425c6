"""A re-sent text carrier counted as the server bills it (issue 26 point 4, "the provider's
count endpoint where the route has one"): :class:`reasonwire.probe.PromptCounter`.

Two counters: a toy template written here (its framing and its drop rule are the point: the
expected figures are worked out by hand from it), and the real llama-server with the real
Qwen3 chat template (``/apply-template`` + ``/tokenize``), whose figures must equal the
server's own ``usage.prompt_tokens`` delta between the same request without and with the
carrier.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from reasonwire.localserver.pytest_plugin import local_servers, qwen3_server
from reasonwire.probe import PromptCounter, observe_bytes
from reasonwire.probe.carriers import MAX_COUNTED_CARRIERS
from reasonwire.probe.cli import app
from tests.probe.streams import chat_stream, rows_now

__all__ = ["local_servers", "qwen3_server"]  # the real llama-server fixtures (session-scoped)


def _toy_render(body: dict[str, Any]) -> list[str]:
    """A template in the shape of Qwen3's: reasoning is rendered only after the last user
    message, framed as ``<think> ... </think>``; every word is one token."""
    messages = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    words: list[str] = []
    for i, m in enumerate(messages):
        words.append(m["role"] + ":")
        rc = m.get("reasoning_content")
        if i > last_user and rc:
            words += ["<think>", *rc.split(), "</think>"]
        words += str(m.get("content") or "").split()
    return words


TOY = PromptCounter("toy", lambda body: len(_toy_render(body)))


def _call(i: int, reasoning: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": "", "reasoning_content": reasoning,
         "tool_calls": [{"id": f"c{i}", "type": "function",
                         "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": "done"},
    ]  # fmt: skip


def _observe(ledger: Path, body: dict[str, Any], counter: PromptCounter | None) -> dict[str, Any]:
    list(observe_bytes([chat_stream([("content", "ok")])], dialect="chat", session_id="s",
                       provider="local", stream=True, request_body=json.dumps(body).encode(),
                       ledger_dir=ledger, tokenizer=counter))  # fmt: skip
    return dict(rows_now(ledger).rows[-1])


def test_in_the_loop_the_framing_counts(tmp_path: Path) -> None:
    body = {"messages": [{"role": "user", "content": "go"}, *_call(1, "alpha beta gamma")]}
    row = _observe(tmp_path, body, TOY)
    (entry,) = row["sentCarriers"]
    assert entry["tokenCount"] == 5  # three words plus <think> and </think>
    assert entry["tokenizer"] == "toy"


def test_a_carrier_the_template_drops_counts_zero(tmp_path: Path) -> None:
    body = {"messages": [{"role": "user", "content": "go"}, *_call(1, "alpha beta gamma"),
                         {"role": "assistant", "content": "fine"},
                         {"role": "user", "content": "again"}]}  # fmt: skip
    (entry,) = _observe(tmp_path, body, TOY)["sentCarriers"]
    assert entry["tokenCount"] == 0
    res = CliRunner().invoke(app, ["report", "--dir", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    (call,) = json.loads(res.output)["calls"]
    assert call["resent_measured"] == 0 and call["resent_estimated"] == 0


def test_at_most_the_cap_of_carriers_is_counted(tmp_path: Path) -> None:
    assert MAX_COUNTED_CARRIERS == 16
    calls = [m for i in range(17) for m in _call(i, f"w{i:02d} two three")]
    body = {"messages": [{"role": "user", "content": "go"}, *calls]}
    seen: list[int] = []

    def count(b: Any) -> int:
        seen.append(1)
        return len(_toy_render(b))

    entries = _observe(tmp_path, body, PromptCounter("toy", count))["sentCarriers"]
    assert [e.get("tokenCount") for e in entries] == [5] * 16 + [None]
    assert len(seen) == 17  # the whole prompt once, then one per counted carrier
    assert all("digest" in e for e in entries)


def test_a_failing_counter_leaves_the_estimate_and_the_body(tmp_path: Path) -> None:
    body = {"messages": [{"role": "user", "content": "go"}, *_call(1, "alpha beta gamma")]}
    bodies: list[str] = []

    def broken(b: Any) -> int:
        bodies.append(json.dumps(b))
        raise RuntimeError("count endpoint down")

    (entry,) = _observe(tmp_path, body, PromptCounter("down", broken))["sentCarriers"]
    assert "tokenCount" not in entry and entry["bytes"] == len(b"alpha beta gamma")
    assert bodies == [json.dumps(body)]


def test_the_counted_body_is_restored_between_counts(tmp_path: Path) -> None:
    """Each count sees the request with only one carrier emptied."""
    body = {"messages": [{"role": "user", "content": "go"}, *_call(1, "a b"), *_call(2, "c d e")]}
    seen: list[list[str]] = []

    def count(b: Any) -> int:
        seen.append([m.get("reasoning_content", "-") for m in b["messages"][1:] if
                     m["role"] == "assistant"])  # fmt: skip
        return len(_toy_render(b))

    entries = _observe(tmp_path, body, PromptCounter("toy", count))["sentCarriers"]
    assert seen == [["a b", "c d e"], ["", "c d e"], ["a b", ""]]
    assert [e["tokenCount"] for e in entries] == [4, 5]


# -- the real llama-server ------------------------------------------------------------------


def _messages(reasoning: str | None, across: bool) -> list[dict[str, Any]]:
    call: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}  # fmt: skip
    if reasoning is not None:
        call["reasoning_content"] = reasoning
    out = [
        {"role": "system", "content": "You are a concise weather assistant."},
        {"role": "user", "content": "What is the weather in Paris right now?"},
        call,
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 18, "sky": "clear"}'},
    ]
    if across:
        out += [{"role": "assistant", "content": "It is 18 C and clear in Paris."},
                {"role": "user", "content": "Should I take a jacket tonight?"}]  # fmt: skip
    return out


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
TRACE = ("The user asks for the weather in Paris. I called the weather tool and it says 18 "
         "degrees and a clear sky, so I should answer briefly with both facts. " * 6)  # fmt: skip


@pytest.mark.localserver
@pytest.mark.parametrize("across", [False, True], ids=["in-the-loop", "across-turns"])
def test_llama_server_counts_equal_its_prompt_tokens_delta(
    qwen3_server: Any, tmp_path: Path, across: bool
) -> None:
    from reasonwire.localserver.count import llama_server_counter
    from reasonwire.probe import ProbeTransport

    counter = llama_server_counter(qwen3_server.root_url)
    transport = ProbeTransport("llama", ledger_dir=tmp_path, tokenizer=counter)
    prompt: dict[str, int] = {}
    with httpx.Client(transport=transport, base_url=qwen3_server.base_url, timeout=120) as http:
        for name, reasoning in (("plain", None), ("carried", TRACE)):
            body = {"messages": _messages(reasoning, across), "tools": TOOLS,
                    "max_tokens": 1, "temperature": 0}  # fmt: skip
            resp = http.post("/chat/completions", json=body)
            assert resp.status_code == 200, resp.text
            prompt[name] = resp.json()["usage"]["prompt_tokens"]
    delta = prompt["carried"] - prompt["plain"]
    if across:
        assert delta == 0  # the Qwen3 template drops reasoning before the last user message
    else:
        # the trace's own tokens and the <think> framing (the trace alone is ~180 tokens)
        assert delta > len(TRACE) / 8
    res = CliRunner().invoke(app, ["report", "--dir", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    calls = json.loads(res.output)["calls"]
    assert [c["resent_measured"] for c in calls] == [0, delta]
    assert [c["resent_estimated"] for c in calls] == [0, 0]
