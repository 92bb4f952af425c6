"""Structural diff: simulator responses and stream events against the recorded corpus.

For each dialect, every (key path, value type) in a simulator body or stream event must occur
in the recorded traffic of that dialect, and every key the corpus always has (in every
recorded instance of that object) must be present in ours. List items that carry a ``type``
are told apart by it (``output[type=reasoning]``); echoed request data (tool schemas,
function-call arguments, metadata) is not compared.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import httpx
import pytest

from reasonwire.wire.sse import SSEDecoder
from tests.conformance.corpus import (
    corpus_dir,
    corpus_files,
    load_cassette,
    load_chunks,
    load_json,
    manifest_dialect,
)

Model = tuple[dict[str, set[str]], dict[str, set[str] | None]]  # types, required keys
OPAQUE = (".tools", ".args", ".metadata", "[type=tool_use].input", ".content_block.input")
# The corpus records no streamed Anthropic tool use: a streamed block is checked against the
# same block in recorded bodies, and the tool-input delta is named with the reason it is absent.
FALLBACK = {"event:content_block_start.content_block": "body.content[type=tool_use]"}
UNRECORDED = {
    "event:content_block_delta.delta.partial_json": "input_json_delta of a streamed tool_use "
    "block (Anthropic streaming docs); the corpus has no streamed tool use",
}


def recorded(path: str, c_types: dict[str, set[str]]) -> set[str] | None:
    if path in c_types:
        return c_types[path]
    for prefix, alt in FALLBACK.items():
        if path.startswith(prefix + ".") and alt + path[len(prefix) :] in c_types:
            return c_types[alt + path[len(prefix) :]]
    return None


def walk(
    value: Any, path: str, types: dict[str, set[str]], keys: dict[str, list[set[str]]]
) -> None:
    types.setdefault(path, set()).add(type(value).__name__)
    if path.endswith(OPAQUE):
        return
    if isinstance(value, dict):
        keys.setdefault(path, []).append(set(value))
        for k, v in value.items():
            walk(v, f"{path}.{k}", types, keys)
    elif isinstance(value, list):
        for v in value:
            tag = (
                f"[type={v['type']}]"
                if isinstance(v, dict) and isinstance(v.get("type"), str)
                else "[]"
            )
            walk(v, path + tag, types, keys)


def kind(payload: Any) -> str:
    return (
        payload["type"]
        if isinstance(payload, dict) and isinstance(payload.get("type"), str)
        else "chunk"
    )


def build(
    docs: list[Any], events: list[list[Any]]
) -> tuple[dict[str, set[str]], dict[str, list[set[str]]], list[list[str]]]:
    types: dict[str, set[str]] = {}
    keys: dict[str, list[set[str]]] = {}
    for d in docs:
        walk(d, "body", types, keys)
    orders = []
    for stream in events:
        orders.append([kind(e) for e in stream])
        for e in stream:
            walk(e, f"event:{kind(e)}", types, keys)
    return types, keys, orders


def dialect_of_uri(uri: str) -> str:
    if "chat/completions" in uri:
        return "chat"
    if uri.split("?")[0].endswith("/responses"):
        return "responses"
    if "/messages" in uri:
        return "anthropic"
    return "gemini"


def sse_payloads(raw: bytes) -> list[Any]:
    dec = SSEDecoder()
    evs = dec.feed(raw) + dec.close()
    return [json.loads(e.data) for e in evs if e.data.strip() and e.data.strip() != "[DONE]"]


def corpus() -> dict[str, tuple[list[Any], list[list[Any]]]]:
    corpus_dir()
    out: dict[str, tuple[list[Any], list[list[Any]]]] = defaultdict(lambda: ([], []))
    for name in corpus_files("*.yaml"):
        for it in load_cassette(name):
            d = dialect_of_uri(it.uri)
            if it.status != 200:
                continue
            if it.streamed and it.response_text:
                out[d][1].append(sse_payloads(it.response_text.encode()))
            elif it.response_json is not None:
                out[d][0].append(it.response_json)
    for name in corpus_files("vercel__*"):
        d = manifest_dialect(name)
        if name.endswith(".chunks.txt"):
            out[d][1].append(load_chunks(name))
        else:
            out[d][0].append(load_json(name))
    return out


PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."
TASK = "Find the population of Lyon."


def sim_traffic(c: httpx.Client, dialect: str) -> tuple[list[Any], list[list[Any]]]:
    """Tool turns and final answers, streamed and not, from every model of ``dialect``."""
    from reasonwire.sim import BEHAVIOURS

    docs: list[Any] = []
    streams: list[list[Any]] = []

    def call(path: str, body: dict[str, Any], stream: bool) -> Any:
        if stream:
            r = c.post(
                path.replace(":generateContent", ":streamGenerateContent?alt=sse"), json=body
            )
            assert r.status_code == 200, r.text
            streams.append(sse_payloads(r.content))
            return None
        r = c.post(path, json=body)
        assert r.status_code == 200, r.text
        docs.append(r.json())
        return r.json()

    for model, beh in BEHAVIOURS.items():
        if beh.dialect != dialect:
            continue
        for stream in (False, True):
            if dialect == "chat":
                tools = [
                    {
                        "type": "function",
                        "function": {"name": "f", "parameters": {"type": "object"}},
                    }
                ]
                for msgs in (
                    [{"role": "user", "content": TASK}],
                    [{"role": "user", "content": PROBE}],
                ):
                    call(
                        "/v1/chat/completions",
                        {
                            "model": model,
                            "messages": msgs,
                            "tools": tools,
                            "stream": stream,
                            "stream_options": {"include_usage": True},
                        },
                        stream,
                    )
            elif dialect == "responses":
                tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
                for inp in (TASK, PROBE):
                    call(
                        "/v1/responses",
                        {
                            "model": model,
                            "input": inp,
                            "tools": tools,
                            "stream": stream,
                            "include": ["reasoning.encrypted_content"],
                            "store": False,
                            "reasoning": {"effort": "high", "summary": "auto"},
                        },
                        stream,
                    )
            elif dialect == "anthropic":
                tools = [{"name": "f", "input_schema": {"type": "object"}}]
                for text in (TASK, PROBE):
                    call(
                        "/v1/messages",
                        {
                            "model": model,
                            "max_tokens": 100,
                            "stream": stream,
                            "tools": tools,
                            # Opus 4.7 refuses the budget form (WIRE.md, the 2026 wire)
                            **(
                                {
                                    "thinking": {"type": "adaptive"},
                                    "output_config": {"effort": "high"},
                                }
                                if "opus-4-7" in model
                                else {"thinking": {"type": "enabled", "budget_tokens": 50}}
                            ),
                            "messages": [{"role": "user", "content": text}],
                        },
                        stream,
                    )
            else:
                tools = [
                    {"functionDeclarations": [{"name": "f", "parameters": {"type": "object"}}]}
                ]
                for text in (TASK, PROBE):
                    call(
                        f"/v1beta/models/{model}:generateContent",
                        {
                            "tools": tools,
                            "contents": [{"role": "user", "parts": [{"text": text}]}],
                            "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
                        },
                        stream,
                    )
    return docs, streams


@pytest.mark.parametrize("dialect", ["chat", "responses", "anthropic", "gemini"])
def test_simulator_shapes_match_corpus(client: httpx.Client, dialect: str) -> None:
    rec_docs, rec_streams = corpus()[dialect]
    assert rec_docs or rec_streams, f"no recorded {dialect} traffic"
    c_types, c_keys, c_orders = build(rec_docs, rec_streams)
    s_docs, s_streams = sim_traffic(client, dialect)
    s_types, s_keys, s_orders = build(s_docs, s_streams)
    problems = []
    for path, typs in sorted(s_types.items()):
        known = recorded(path, c_types)
        if path in UNRECORDED:
            continue
        if known is None:
            problems.append(f"unknown key path {path}")
        elif not typs <= known:
            problems.append(f"{path}: types {sorted(typs)} vs recorded {sorted(known)}")
    for path, instances in s_keys.items():
        if path not in c_keys:
            continue
        required = set.intersection(*c_keys[path])
        for inst in instances:
            if required - inst:
                problems.append(f"{path}: missing always-present keys {sorted(required - inst)}")
                break
    if rec_streams:
        kinds = {k for o in c_orders for k in o}
        firsts = {o[0] for o in c_orders if o}
        lasts = {o[-1] for o in c_orders if o}
        for order in s_orders:
            assert set(order) <= kinds, f"unrecorded event kinds {set(order) - kinds}"
            assert order[0] in firsts and order[-1] in lasts, (order[0], order[-1])
    assert not problems, "\n".join(problems)
