"""Every chat behaviour's designed truth, shown through real HTTP requests.

For each model and each reasoning field, a transcript carries the canary sentence only in that
field; the prompt-token delta against the same request without the field, and the probe
answer, must match the behaviour's ``truth`` (consumed / dropped / rejected).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from reasonwire.sim import BEHAVIOURS

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look something up.",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
            },
        },
    }
]
TASK = "Find the population of Lyon."
PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."
CANARY = "I plan the lookup. The verification word for this task is quartz."


def carrier(field: str) -> Any:
    if field == "reasoning_details":
        return [{"type": "reasoning.text", "text": CANARY, "format": "unknown", "index": 0}]
    return CANARY


def transcript(field: str | None, position: str, blank: bool) -> list[dict[str, Any]]:
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q":"Lyon"}'},
            }
        ],
    }
    if blank:
        assistant["reasoning_content"] = ""
    if field is not None:
        assistant[field] = carrier(field)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": TASK}, assistant]
    if position == "in_loop":
        msgs.append({"role": "tool", "tool_call_id": "call_1", "content": "522000. " + PROBE})
    else:
        msgs += [
            {"role": "tool", "tool_call_id": "call_1", "content": "522000"},
            {"role": "assistant", "content": "Lyon has about 522000 people."},
            {"role": "user", "content": PROBE},
        ]
    return msgs


def ask(client: httpx.Client, model: str, msgs: list[dict[str, Any]]) -> httpx.Response:
    return client.post(
        "/v1/chat/completions", json={"model": model, "messages": msgs, "tools": TOOLS}
    )


CASES = [
    (b.model, fld, pos)
    for b in BEHAVIOURS.values()
    if b.dialect == "chat" and b.truth
    for fld in b.truth
    for pos in ("in_loop", "cross_turn")
]


@pytest.mark.parametrize(("model", "field", "position"), CASES)
def test_truth_matches_the_wire(
    client: httpx.Client, model: str, field: str, position: str
) -> None:
    beh = BEHAVIOURS[model]
    expected = getattr(beh.truth[field], position)
    blank = beh.require_after_tool
    with_field = ask(client, model, transcript(field, position, blank))
    if expected == "rejected":
        assert with_field.status_code == 400, with_field.text
        assert field in with_field.json()["error"]["message"]
        return
    assert with_field.status_code == 200, with_field.text
    base = ask(client, model, transcript(None, position, blank))
    assert base.status_code == 200, base.text
    delta = with_field.json()["usage"]["prompt_tokens"] - base.json()["usage"]["prompt_tokens"]
    answer = with_field.json()["choices"][0]["message"]["content"]
    if expected == "consumed":
        assert delta > 0 and answer == "quartz"
    else:
        assert delta == 0 and answer == "NONE"
    assert base.json()["choices"][0]["message"]["content"] == "NONE"


def test_deepseek_requires_reasoning_content_after_tool_call(client: httpx.Client) -> None:
    r = ask(client, "sim-deepseek", transcript(None, "in_loop", blank=False))
    assert r.status_code == 400
    assert r.json()["error"]["message"].startswith(
        "Missing `reasoning_content` field in the assistant message at message index 1"
    )


def test_llamacpp_null_reasoning_content_is_500(client: httpx.Client) -> None:
    msgs = transcript(None, "in_loop", blank=False)
    msgs[1]["reasoning_content"] = None
    r = ask(client, "sim-llamacpp", msgs)
    assert r.status_code == 500
    assert "type must be string, but is null" in r.json()["error"]["message"]
    assert ask(client, "sim-qwen3", msgs).status_code == 200  # others accept null


def test_emitted_fields_per_model(client: httpx.Client) -> None:
    first = [{"role": "user", "content": TASK}]
    for model in ("sim-qwen3", "sim-vllm", "sim-openrouter", "sim-plain"):
        msg = ask(client, model, first).json()["choices"][0]["message"]
        emitted = {k for k in ("reasoning_content", "reasoning", "reasoning_details") if k in msg}
        want = {e for e in BEHAVIOURS[model].emits if e != "reasoning.encrypted"}
        assert emitted == want, model
        assert msg["tool_calls"][0]["function"] == {
            "name": "lookup",
            "arguments": '{"q":"q value"}',
        }


def test_openrouter_encrypted_details_must_come_back_intact(client: httpx.Client) -> None:
    first = ask(client, "sim-openrouter", [{"role": "user", "content": TASK}]).json()
    msg = first["choices"][0]["message"]
    enc = [d for d in msg["reasoning_details"] if d["type"] == "reasoning.encrypted"]
    assert len(enc) == 1 and first["id"].startswith("gen-") and first["usage"]["cost"] > 0
    loop = [
        {"role": "user", "content": TASK},
        msg,
        {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": "1. " + PROBE},
    ]
    ok = ask(client, "sim-openrouter", loop)
    assert ok.status_code == 200
    # the word sits in both the text entry and the sealed entry: drop the text entry and the
    # sealed one alone still carries it (the server unsealed it)
    msg["reasoning_details"] = enc
    only_sealed = ask(client, "sim-openrouter", loop).json()["choices"][0]["message"]["content"]
    assert only_sealed != "NONE"
    tampered = dict(enc[0], data=enc[0]["data"][:-8] + "AAAAAAA=")
    msg["reasoning_details"] = [tampered]
    bad = ask(client, "sim-openrouter", loop)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_encrypted_content"


def test_portal_switches_lanes_call_by_call(client: httpx.Client) -> None:
    seen: dict[str, set[str]] = {}
    for _ in range(16):
        body = ask(client, "sim-portal", [{"role": "user", "content": TASK}]).json()
        lane = "gen-" if body["id"].startswith("gen-") else "chatcmpl-"
        assert body["id"].startswith(lane)
        msg = body["choices"][0]["message"]
        seen.setdefault(lane, set()).update(
            k for k in ("reasoning_content", "reasoning", "reasoning_details") if k in msg
        )
    assert seen == {
        "gen-": {"reasoning", "reasoning_details"},
        "chatcmpl-": {"reasoning_content"},
    }
