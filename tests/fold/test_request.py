"""fold_request on request bodies of every dialect: text carriers folded, opaque carriers and
signed text never touched, the very same body back when nothing was folded, input never
mutated; which sites are folded comes from the dialect objects' facts."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonwire.wire import get_dialect
from reasonwire.wire.fold import FoldSettings, fold_request, fold_text, marker, text_sites
from reasonwire.wire.registry import dialects

S = FoldSettings(enabled=True, floor_chars=100, head_chars=30, tail_chars=20)
LONG = "H" * 30 + "m" * 200 + "T" * 20
SIG = "EqQBCkgIARABGAIiQL+/sig/" * 4


def chat_body(text: str = LONG) -> dict[str, Any]:
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "s" * 500},
            {"role": "user", "content": "u" * 500},
            {"role": "assistant", "content": None, "reasoning_content": text, "reasoning": text,
             "reasoning_details": [
                 {"type": "reasoning.text", "text": text, "signature": None, "index": 0},
                 {"type": "reasoning.text", "text": text, "signature": SIG, "index": 1},
                 {"type": "reasoning.summary", "summary": text, "index": 2},
                 {"type": "reasoning.encrypted", "data": SIG * 20, "index": 3}],
             "tool_calls": [{"id": "c1", "type": "function", "function": {
                 "name": "f", "arguments": "{}"}, "extra_content": {
                 "google": {"thought_signature": SIG}}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r" * 500},
        ],
    }  # fmt: skip


def responses_body(text: str = LONG) -> dict[str, Any]:
    return {
        "model": "m", "store": False,
        "input": [
            {"role": "user", "content": "u" * 500},
            {"type": "reasoning", "id": "rs_1", "encrypted_content": SIG * 20,
             "summary": [{"type": "summary_text", "text": text}],
             "content": [{"type": "reasoning_text", "text": text}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "o" * 500},
        ],
    }  # fmt: skip


def anthropic_body(text: str = LONG) -> dict[str, Any]:
    return {
        "model": "claude", "max_tokens": 10,
        "messages": [
            {"role": "user", "content": "u" * 500},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": text, "signature": SIG},
                {"type": "thinking", "thinking": text},
                {"type": "redacted_thinking", "data": SIG * 20},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": "r" * 500}]},
        ],
    }  # fmt: skip


def gemini_body(text: str = LONG) -> dict[str, Any]:
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "u" * 500}]},
            {"role": "model", "parts": [
                {"text": text, "thought": True},
                {"text": text, "thought": True, "thoughtSignature": SIG},
                {"text": text, "thought": True, "thought_signature": SIG},
                {"text": text},
                {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": SIG}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
        ],
    }  # fmt: skip


FOLDED = {
    "chat": ["messages[2].reasoning_content", "messages[2].reasoning",
             "messages[2].reasoning_details[0].text"],
    "responses": ["input[1].summary[0].text", "input[1].content[0].text"],
    "anthropic": [],
    "gemini": ["contents[1].parts[0].text"],
}  # fmt: skip
BODIES = {"chat": chat_body, "responses": responses_body, "anthropic": anthropic_body,
          "gemini": gemini_body}  # fmt: skip


def _get(body: Any, path: str) -> Any:
    node = body
    for part in path.replace("[", ".[").split("."):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


def _strings(node: Any, path: str = "") -> dict[str, str]:
    if isinstance(node, dict):
        out: dict[str, str] = {}
        for k, v in node.items():
            out.update(_strings(v, f"{path}.{k}" if path else k))
        return out
    if isinstance(node, list):
        out = {}
        for i, v in enumerate(node):
            out.update(_strings(v, f"{path}[{i}]"))
        return out
    return {path: node} if isinstance(node, str) else {}


@pytest.mark.parametrize("name", list(BODIES))
def test_text_carriers_folded_everything_else_untouched(name: str) -> None:
    body = BODIES[name]()
    before = copy.deepcopy(body)
    new, report = fold_request(name, body, S)
    assert body == before  # pure: the input is not mutated
    assert [t.path for t in report.texts] == FOLDED[name]
    want = "H" * 30 + marker(200) + "T" * 20
    old_s, new_s = _strings(before), _strings(new)
    assert old_s.keys() == new_s.keys()
    for path, value in new_s.items():
        if path in FOLDED[name]:
            assert value == want
        else:  # every other string (opaque carriers, signed text, prompts) exactly as it was
            assert value == old_s[path], path
    if not FOLDED[name]:
        assert new is body and not report.changed
    assert report.folded_chars == 200 * len(FOLDED[name])
    assert all((t.chars, t.kept, t.folded) == (250, 50, 200) for t in report.texts)


@pytest.mark.parametrize("name", list(BODIES))
def test_unfolded_body_is_the_same_object(name: str) -> None:
    short = BODIES[name]("short thought")
    new, report = fold_request(name, short, S)
    assert new is short and not report.changed and report.action == "fold"
    new, report = fold_request(name, BODIES[name](), FoldSettings())  # off by default
    assert not report.changed and report.reason == "fold disabled"


def test_only_containers_on_edited_paths_are_copied() -> None:
    body = chat_body()
    new, _ = fold_request("chat", body, S)
    assert new is not body and new["messages"] is not body["messages"]
    for i in (0, 1, 3):
        assert new["messages"][i] is body["messages"][i]
    rd_old, rd_new = (
        body["messages"][2]["reasoning_details"],
        new["messages"][2]["reasoning_details"],
    )
    assert all(rd_new[i] is rd_old[i] for i in (1, 2, 3))  # signed, summary, encrypted
    assert new["messages"][2]["tool_calls"] is body["messages"][2]["tool_calls"]


def test_facts_fold_only_text_carriers() -> None:
    for d in dialects():
        text = {c.name for c in d.carriers if not c.opaque}
        assert set(d.fold_where) <= text, d.name
    assert not get_dialect("anthropic").fold_where  # thinking is signed


def test_an_opaque_kind_listed_by_mistake_is_still_never_folded() -> None:
    """The fold acts on text carriers only, whatever a dialect's table says."""
    chat = get_dialect("chat")
    wrong = type(chat)()
    wrong.fold_where = {  # type: ignore[misc]
        **chat.fold_where,
        "extra_content": "messages[i](role=assistant).tool_calls[j].function.arguments",
    }
    body = chat_body()
    body["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{" + " " * 300 + "}"
    new, report = fold_request(wrong, body, S)
    assert [t.path for t in report.texts] == FOLDED["chat"]
    assert new["messages"][2]["tool_calls"] is body["messages"][2]["tool_calls"]


@pytest.mark.parametrize("name", ["chat", "responses", "gemini"])
def test_sites_agree_with_request_carriers(name: str) -> None:
    """Every foldable site is a text carrier the probe counts as re-sent reasoning."""
    d = get_dialect(name)
    body = BODIES[name]()
    sites = text_sites(d, body)
    counted = [c for c in d.request_carriers(body) if not c.opaque]
    assert len(sites) <= len(counted)
    assert sum(len(t.encode()) for _, _, t in sites) <= sum(c.size for c in counted)


def test_providers_and_drop() -> None:
    limited = FoldSettings(enabled=True, floor_chars=100, head_chars=30, tail_chars=20,
                           providers=frozenset({"openrouter/m", "api.example.com"}),
                           drop=frozenset({"cerebras"}))  # fmt: skip
    body = chat_body()
    assert fold_request("chat", body, limited)[0] is body  # no route given: no match
    assert fold_request("chat", body, limited, route="other", host="x")[0] is body
    assert fold_request("chat", body, limited, route="openrouter")[1].changed  # route/model
    assert fold_request("chat", body, limited, route="x", host="api.example.com")[1].changed
    assert fold_request("chat", body, limited, route="openrouter", model="n")[0] is body
    dropped, report = fold_request("chat", body, limited, route="cerebras")
    assert report.action == "drop" and [t.path for t in report.texts] == FOLDED["chat"]
    assert all(_get(dropped, p) == "" for p in FOLDED["chat"])
    assert dropped["messages"][2]["reasoning_details"][3] == body["messages"][2][
        "reasoning_details"][3]  # fmt: skip
    none_at_all = FoldSettings(enabled=True, providers=frozenset())
    assert fold_request("chat", body, none_at_all, route="openrouter")[0] is body


def test_toy_dialect_without_facts_folds_nothing() -> None:
    from reasonwire.wire import registry

    registry.TABLE["toy"] = "tests.wire.toy_dialect"
    try:
        body = {"model": "toy-1", "turns": [{"who": "bot", "mind": LONG, "seal": SIG}]}
        new, report = fold_request("toy", body, S)
        assert new is body and report.seen == 0
    finally:
        registry.TABLE.pop("toy", None)
        registry._LOADED.pop("toy", None)


opaque = st.text(alphabet="ABCDEFabcdef0123456789+/=", min_size=1, max_size=300)
lengths = st.integers(0, 400)


@settings(max_examples=150, deadline=None)
@given(sig=opaque, enc=opaque, n=lengths, name=st.sampled_from(list(BODIES)))
def test_opaque_carriers_byte_identical(sig: str, enc: str, n: int, name: str) -> None:
    text = ("é" * n)[:n]
    body = json.loads(json.dumps(BODIES[name](text)).replace(SIG * 20, enc).replace(SIG, sig))
    new, report = fold_request(name, body, S)
    opaque_paths = [p for p, v in _strings(body).items() if v in (sig, enc)]
    assert opaque_paths
    for p in opaque_paths:
        assert json.dumps(_get(new, p)).encode() == json.dumps(_get(body, p)).encode()
    if not report.changed:
        assert new is body
    for t in report.texts:
        assert _get(new, t.path) == fold_text(_get(body, t.path), S)
