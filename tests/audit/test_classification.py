"""The audit's verdicts on deliberately broken clients: hand-written httpx loops that drop a
carrier, alter one byte of it, move it to another message, move it inside its message, or
re-encode a base64 signature. Each verdict is asserted together with the evidence (JSON path,
byte offset), and apart from what the simulator answered, so a framework's verdict cannot be
an artefact of the audit: the same rule that flags these clients reads the frameworks."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from reasonwire.audit._json import Path, get, strings
from reasonwire.audit.recorder import AuditServer
from reasonwire.audit.report import build_cells
from reasonwire.audit.run import RunResult
from reasonwire.audit.trace import Observation, Trace, analyse

KEY = "reasonwire-audit-dummy-key"
TASK = "What is the weather in Paris?"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@dataclass(frozen=True)
class Client:
    """A minimal hand-written tool loop for one dialect (one tool round)."""

    path: Callable[[AuditServer], str]
    first: dict[str, Any]
    history: str  # the body key holding the conversation
    step: Callable[[dict[str, Any], dict[str, Any]], list[Any]]  # answer -> new history entries
    target: str  # the carrier kind attacked


def _anthropic_step(answer: dict[str, Any], _: dict[str, Any]) -> list[Any]:
    use = next(b for b in answer["content"] if b["type"] == "tool_use")
    return [
        {"role": "assistant", "content": answer["content"]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "sunny"}],
        },
    ]


def _gemini_step(answer: dict[str, Any], _: dict[str, Any]) -> list[Any]:
    parts = answer["candidates"][0]["content"]["parts"]
    call = next(p["functionCall"] for p in parts if "functionCall" in p)
    return [
        {"role": "model", "parts": parts},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": call["name"], "response": {"r": "sunny"}}}],
        },
    ]


def _responses_step(answer: dict[str, Any], _: dict[str, Any]) -> list[Any]:
    call = next(o for o in answer["output"] if o["type"] == "function_call")
    return [
        *answer["output"],
        {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"},
    ]


def _chat_step(answer: dict[str, Any], _: dict[str, Any]) -> list[Any]:
    msg = answer["choices"][0]["message"]
    call = msg["tool_calls"][0]
    return [msg, {"role": "tool", "tool_call_id": call["id"], "content": "sunny"}]


CLIENTS: dict[str, Client] = {
    "anthropic": Client(
        lambda s: s.base_url + "/messages",
        {
            "model": "sim-claude",
            "max_tokens": 1024,
            "thinking": {"type": "enabled", "budget_tokens": 512},
            "tools": [{"name": "lookup", "description": "Look up.", "input_schema": SCHEMA}],
            "messages": [{"role": "user", "content": TASK}],
        },
        "messages",
        _anthropic_step,
        "thinking.signature",
    ),
    "gemini": Client(
        lambda s: s.root_url + "/v1beta/models/sim-gemini:generateContent",
        {
            "contents": [{"role": "user", "parts": [{"text": TASK}]}],
            "tools": [{"functionDeclarations": [{"name": "lookup", "parameters": SCHEMA}]}],
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
        },
        "contents",
        _gemini_step,
        "thoughtSignature",
    ),
    "responses": Client(
        lambda s: s.base_url + "/responses",
        {
            "model": "sim-gpt",
            "store": False,
            "include": ["reasoning.encrypted_content"],
            "tools": [{"type": "function", "name": "lookup", "parameters": SCHEMA}],
            "input": [{"role": "user", "content": TASK}],
        },
        "input",
        _responses_step,
        "reasoning_item.encrypted_content",
    ),
    "chat": Client(
        lambda s: s.base_url + "/chat/completions",
        {
            "model": "sim-deepseek",
            "tools": [{"type": "function", "function": {"name": "lookup", "parameters": SCHEMA}}],
            "messages": [{"role": "user", "content": TASK}],
        },
        "messages",
        _chat_step,
        "reasoning_content",
    ),
}


def _where(body: Any, value: str, within: Path) -> Path:
    found = [p for p, s in strings(get(body, within), within) if s == value]
    assert found, f"{value[:20]}... not in {within}"
    return found[0]


def _parent(body: Any, path: Path) -> Any:
    return get(body, path[:-1])


def m_drop(body: dict[str, Any], path: Path, hist: str) -> None:
    del _parent(body, path)[path[-1]]


def m_alter(body: dict[str, Any], path: Path, hist: str) -> None:
    value = get(body, path)
    mid = len(value) // 2
    _parent(body, path)[path[-1]] = (
        value[:mid] + ("A" if value[mid] != "A" else "B") + value[mid + 1 :]
    )


def m_move(body: dict[str, Any], path: Path, hist: str) -> None:
    value = _parent(body, path).pop(path[-1])
    body[hist][0][path[-1]] = value  # onto the first user message


def m_reencode(body: dict[str, Any], path: Path, hist: str) -> None:
    value = get(body, path)
    raw = base64.b64decode(value)
    again = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert again != value and base64.urlsafe_b64decode(again + "=" * (-len(again) % 4)) == raw
    _parent(body, path)[path[-1]] = again


MUTATIONS: dict[str, Callable[[dict[str, Any], Path, str], None] | None] = {
    "control": None,
    "drop": m_drop,
    "alter": m_alter,
    "move": m_move,
    "reencode": m_reencode,
}


def _run(
    server: AuditServer, client: Client, mutate: Callable[[dict[str, Any], Path, str], None] | None
) -> tuple[Trace, Observation, dict[str, Any]]:
    """Two requests: the task, then the tool result with the answer's history (mutated)."""
    url = client.path(server)
    headers = {"x-api-key": KEY, "authorization": f"Bearer {KEY}", "x-goog-api-key": KEY}
    body = copy.deepcopy(client.first)
    with httpx.Client(timeout=10) as http:
        answer = http.post(url, json=body, headers=headers).json()
        first = analyse(server.exchanges)
        atom = next(a for a in first.atoms if a.kind == client.target)
        body[client.history] = [*body[client.history], *client.step(answer, body)]
        entry = len(client.first[client.history])  # the assistant entry just added
        path = _where(body, atom.value, (client.history, entry))
        if mutate is not None:
            mutate(body, path, client.history)
        http.post(url, json=body, headers=headers)
    trace = analyse(server.exchanges)
    obs = next(o for o in trace.requests[1].observations if o.atom.id == atom.id)
    return trace, obs, {"path": path, "value": atom.value, "body": body}


@pytest.mark.parametrize("dialect", list(CLIENTS))
def test_untouched_replay_is_kept(audit_server: AuditServer, dialect: str) -> None:
    trace, obs, info = _run(audit_server, CLIENTS[dialect], None)
    assert trace.requests[1].status == 200
    assert obs.status == "kept"
    assert obs.found == info["path"] and obs.expected is not None
    assert all(o.status == "kept" for o in trace.requests[1].observations)


@pytest.mark.parametrize("dialect", list(CLIENTS))
def test_dropped_carrier(audit_server: AuditServer, dialect: str) -> None:
    _trace, obs, info = _run(audit_server, CLIENTS[dialect], m_drop)
    assert obs.status == "dropped"
    assert obs.found is None
    assert obs.expected is not None and obs.expected[-1] == info["path"][-1]


@pytest.mark.parametrize("dialect", list(CLIENTS))
def test_one_altered_byte(audit_server: AuditServer, dialect: str) -> None:
    trace, obs, info = _run(audit_server, CLIENTS[dialect], m_alter)
    assert obs.status == "altered"
    assert obs.found == info["path"]
    assert obs.diff is not None
    assert obs.diff["offset"] == len(info["value"]) // 2  # the values are ASCII
    assert obs.diff["reencoded"] is False
    assert obs.diff["expected_bytes"] == obs.diff["got_bytes"]
    # the simulator refuses an altered opaque carrier, and accepts altered reasoning text
    # (its verdict is the audit's own, not the server's)
    assert trace.requests[1].accepted is (dialect == "chat")


@pytest.mark.parametrize("dialect", list(CLIENTS))
def test_moved_to_another_message(audit_server: AuditServer, dialect: str) -> None:
    client = CLIENTS[dialect]
    _trace, obs, _info = _run(audit_server, client, m_move)
    assert obs.status == "moved"
    assert obs.found is not None and obs.item is not None
    assert obs.found[:2] == (client.history, 0)  # the first user message
    assert obs.item[:2] != (client.history, 0)
    assert obs.as_dict()["same_message"] is False


def test_moved_inside_its_message(audit_server: AuditServer) -> None:
    """The thinking block put after the text block: same message, another JSON path."""

    def reorder(body: dict[str, Any], path: Path, hist: str) -> None:
        msg = body[hist][path[1]]
        msg["content"] = [msg["content"][1], msg["content"][0], *msg["content"][2:]]

    trace, obs, _info = _run(audit_server, CLIENTS["anthropic"], reorder)
    assert obs.status == "moved"
    assert obs.found == ("messages", 1, "content", 1, "signature")
    assert obs.as_dict()["same_message"] is True
    assert trace.requests[1].status == 400  # the turn must start with its thinking block


@pytest.mark.parametrize("dialect", ["anthropic", "gemini", "responses"])
def test_reencoded_base64_is_not_kept(audit_server: AuditServer, dialect: str) -> None:
    trace, obs, _info = _run(audit_server, CLIENTS[dialect], m_reencode)
    assert obs.status == "altered"
    assert obs.diff is not None and obs.diff["reencoded"] is True
    # Gemini and Responses decode both alphabets; Anthropic compares the signature as text
    assert trace.requests[1].accepted is (dialect != "anthropic")
    run = RunResult("broken", [], 0, 0.0, audit_server.exchanges, trace)
    (cell,) = build_cells(run, 0)
    assert cell["kinds"][CLIENTS[dialect].target]["loop"] == "re-encoded"


def test_text_dropped_by_placeholder_and_emptied(audit_server: AuditServer) -> None:
    """A documented stand-in or an empty string where a carrier was is a drop (with a note),
    not an alteration."""

    def stand_in(body: dict[str, Any], path: Path, hist: str) -> None:
        _parent(body, path)[path[-1]] = "skip_thought_signature_validator"

    _, obs, _ = _run(audit_server, CLIENTS["gemini"], stand_in)
    assert obs.status == "dropped" and "placeholder" in obs.note


def test_emptied_text_carrier(audit_server: AuditServer) -> None:
    def empty(body: dict[str, Any], path: Path, hist: str) -> None:
        _parent(body, path)[path[-1]] = ""

    trace, obs, _ = _run(audit_server, CLIENTS["chat"], empty)
    assert obs.status == "dropped" and "empty string" in obs.note
    assert trace.requests[1].status == 200  # the field is there: the simulator accepts it


def test_server_held_by_previous_response_id(audit_server: AuditServer) -> None:
    """store=true with previous_response_id: not sent, held by the server."""
    url = audit_server.base_url + "/responses"
    body = {
        "model": "sim-gpt",
        "tools": [{"type": "function", "name": "lookup", "parameters": SCHEMA}],
        "input": TASK,
        "reasoning": {"summary": "auto"},
    }
    with httpx.Client(timeout=10) as http:
        first = http.post(url, json=body).json()
        call = next(o for o in first["output"] if o["type"] == "function_call")
        nxt = dict(body, previous_response_id=first["id"])
        nxt["input"] = [{"type": "function_call_output", "call_id": call["call_id"], "output": "x"}]
        assert http.post(url, json=nxt).status_code == 200
    trace = analyse(audit_server.exchanges)
    assert {o.status for o in trace.requests[1].observations} == {"server"}
    assert trace.requests[1].variant == "responses store=true"


def test_evidence_is_json_serialisable(audit_server: AuditServer) -> None:
    trace, _, _ = _run(audit_server, CLIENTS["anthropic"], m_alter)
    text = json.dumps(trace.as_dict())
    assert '"status": "altered"' in text and '"offset"' in text


def _referencing_client(
    audit_server: AuditServer, store: bool, reasoning_entry: Callable[[dict[str, Any]], Any]
) -> Trace:
    """Two Responses requests: the task, then the tool result after the answer's items sent
    back by ``item_reference`` (the reasoning item as ``reasoning_entry`` makes it)."""
    url = audit_server.base_url + "/responses"
    body = {
        "model": "sim-gpt",
        "store": store,
        "include": ["reasoning.encrypted_content"],
        "tools": [{"type": "function", "name": "lookup", "parameters": SCHEMA}],
        "input": [{"role": "user", "content": TASK}],
        "reasoning": {"summary": "auto"},
    }
    with httpx.Client(timeout=10) as http:
        rs, fc = http.post(url, json=body).json()["output"]
        body["input"] = [
            *body["input"],
            reasoning_entry(rs),
            {"type": "item_reference", "id": fc["id"]},
            {"type": "function_call_output", "call_id": fc["call_id"], "output": "sunny"},
        ]
        http.post(url, json=body)
    return analyse(audit_server.exchanges)


def _status(trace: Trace, kind: str) -> Observation:
    return next(o for o in trace.requests[1].observations if o.atom.kind == kind)


def test_reference_to_a_stored_reasoning_item_is_held_by_the_server(
    audit_server: AuditServer,
) -> None:
    """store=true and ``{"type": "item_reference", "id": "rs_..."}``: the carrier is not sent
    but the server holds the item (OpenAI stores every output item of a stored response)."""
    trace = _referencing_client(
        audit_server, True, lambda rs: {"type": "item_reference", "id": rs["id"]}
    )
    assert trace.requests[1].status == 200
    obs = _status(trace, "reasoning_item.encrypted_content")
    assert obs.status == "server" and obs.item == ("input", 1)
    assert _status(trace, "reasoning_item.id").status == "kept"
    run = RunResult(label="ref", argv=[], exit_code=0, seconds=0.0, exchanges=[], trace=trace)
    (cell,) = build_cells(run, 0)
    assert cell["verdict"] == "kept"


def test_stripped_reasoning_item_is_no_reference(audit_server: AuditServer) -> None:
    """The item sent whole minus its encrypted content (it still has ``summary``) is the
    "half" replay WIRE.md warns of, not a reference: dropped, even though the server (store
    on) could look the id up."""
    trace = _referencing_client(
        audit_server, True, lambda rs: {k: v for k, v in rs.items() if k != "encrypted_content"}
    )
    assert _status(trace, "reasoning_item.encrypted_content").status == "dropped"


def test_reference_to_an_unstored_answer_is_dropped(audit_server: AuditServer) -> None:
    """store=false: the server kept nothing, so a reference stands for nothing (the simulator
    answers 404, as OpenAI does) and the carrier is dropped."""
    trace = _referencing_client(
        audit_server, False, lambda rs: {"type": "item_reference", "id": rs["id"]}
    )
    assert trace.requests[1].status == 404
    assert _status(trace, "reasoning_item.encrypted_content").status == "dropped"
