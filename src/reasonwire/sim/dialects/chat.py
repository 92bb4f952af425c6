"""Chat Completions as the simulated provider speaks it (``POST /v1/chat/completions``).

Reads every reasoning field the clients in the wild send back (``reasoning_content``,
``reasoning``, ``reasoning_details``) and lets the behaviour's ``truth`` decide, per field and
per position (in the loop / across turns), whether it reaches the prompt, is dropped, or fails
the request. Response and chunk shapes follow the recorded DeepSeek/OpenRouter traffic.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from reasonwire.errors import SimError
from reasonwire.sim.behaviours import Behaviour
from reasonwire.sim.dialects import Reply, check_params, need_dict, need_list, sse, text_of
from reasonwire.sim.engine import Plan, Seen, SimState, plan
from reasonwire.sim.pricing import cost
from reasonwire.sim.tokens import chunks, count

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, JsonObject

NAME = "chat"
FIELDS = ("reasoning_content", "reasoning", "reasoning_details")
_ENC_AAD = "reasoning.encrypted"


def error_body(err: SimError) -> JsonObject:
    return {
        "error": {
            "message": err.message,
            "type": err.etype,
            "param": err.param,
            "code": err.code,
        }
    }


def _details_text(value: JSON, beh: Behaviour, state: SimState, where: str) -> str:
    if not isinstance(value, list):
        raise SimError(400, f"{where}.reasoning_details must be an array", param="messages")
    out = []
    for entry in value:
        if not isinstance(entry, dict):
            continue
        typ = entry.get("type")
        if typ == "reasoning.text" and isinstance(entry.get("text"), str):
            out.append(entry["text"])
        elif typ == "reasoning.summary" and isinstance(entry.get("summary"), str):
            out.append(entry["summary"])
        elif typ == "reasoning.encrypted":
            plain = state.sealer.unseal(str(entry.get("data")), _ENC_AAD)
            if plain is None and "reasoning.encrypted" in beh.emits:
                raise SimError(
                    400,
                    f"Invalid reasoning.encrypted data in {where}.reasoning_details: the "
                    "encrypted reasoning was modified or comes from another provider",
                    param="messages",
                    code="invalid_encrypted_content",
                )
            out.append(plain or "")
    return "\n".join(out)


def read(body: JsonObject, beh: Behaviour, state: SimState) -> tuple[Seen, str, str, bool]:
    """Fill a :class:`Seen` from ``messages``; return it with (task, last input, fresh)."""
    messages = need_list(body.get("messages"), "messages")
    if not messages:
        raise SimError(400, "'messages' must not be empty", param="messages")
    last_user = max(
        (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"),
        default=-1,
    )
    seen = Seen()
    for i, m in enumerate(messages):
        m = need_dict(m, f"messages[{i}]")
        seen.message()
        seen.add(text_of(m.get("content")))
        if m.get("role") != "assistant":
            continue
        calls = m.get("tool_calls") or []
        for tc in calls if isinstance(calls, list) else []:
            fn = tc.get("function") if isinstance(tc, dict) else None
            if isinstance(fn, dict):
                seen.add(str(fn.get("name", "")))
                seen.add(str(fn.get("arguments", "")))
        in_loop = i > last_user
        for fld in FIELDS:
            if fld not in m:
                if fld == "reasoning_content" and beh.require_after_tool and calls:
                    raise SimError(
                        400,
                        beh.missing_message.format(i=i)
                        or "Missing `reasoning_content` field in the assistant message at "
                        f"message index {i}. For more information, please refer to "
                        "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
                        param="messages",
                    )
                continue
            value = m[fld]
            if value is None:
                if fld == "reasoning_content" and beh.null_500:
                    raise SimError(
                        500,
                        "[json.exception.type_error.302] type must be string, but is null",
                        etype="server_error",
                    )
                continue
            truth = beh.truth.get(fld)
            verdict = (truth.in_loop if in_loop else truth.cross_turn) if truth else "dropped"
            if verdict == "rejected":
                raise SimError(
                    400,
                    f"The `{fld}` field is not allowed in input messages (message index {i}); "
                    "remove it from the assistant message",
                    param=f"messages[{i}].{fld}",
                )
            text = (
                _details_text(value, beh, state, f"messages[{i}]")
                if fld == "reasoning_details"
                else value
                if isinstance(value, str)
                else json.dumps(value)
            )
            if verdict == "consumed" and (calls or not beh.tool_turns_only):
                seen.add(text)
    tools: list[tuple[str, JSON]] = []
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            tools.append((fn["name"], fn.get("parameters") or {}))
            seen.add(fn["name"] + " " + str(fn.get("description", "")))
            seen.add(json.dumps(fn.get("parameters") or {}))
    task = text_of(messages[last_user].get("content")) if last_user >= 0 else ""
    last = text_of(messages[-1].get("content"))
    fresh = messages[-1].get("role") == "user"
    return seen, task, last, fresh and bool(tools)


def _message(p: Plan, beh: Behaviour, state: SimState, hexid: str) -> JsonObject:
    msg: JsonObject = {"role": "assistant", "content": p.text}
    if p.reasoning:
        if "reasoning_content" in beh.emits:
            msg["reasoning_content"] = p.reasoning
        if "reasoning" in beh.emits:
            msg["reasoning"] = p.reasoning
        if "reasoning_details" in beh.emits:
            msg["reasoning_details"] = _details(p, beh, state, hexid)
    if p.tool:
        msg["tool_calls"] = [
            {
                "id": f"call_{hexid[:24]}",
                "type": "function",
                "index": 0,
                "function": {"name": p.tool[0], "arguments": p.tool[1]},
            }
        ]
    return msg


def _details(p: Plan, beh: Behaviour, state: SimState, hexid: str) -> list[JsonObject]:
    sig = state.sealer.sign(beh.model, p.reasoning)
    out: list[JsonObject] = [
        {
            "type": "reasoning.text",
            "text": p.reasoning,
            "signature": sig,
            "format": "unknown",
            "index": 0,
        }
    ]
    if "reasoning.encrypted" in beh.emits:
        out.append(
            {
                "type": "reasoning.encrypted",
                "data": state.sealer.seal(p.reasoning, _ENC_AAD),
                "id": f"rs_{hexid[:40]}",
                "format": "openai-responses-v1",
                "index": 1,
            }
        )
    return out


def _usage(seen: Seen, p: Plan, beh: Behaviour, model: str) -> JsonObject:
    reasoning = count(p.reasoning)
    completion = reasoning + count(p.text) + (count(p.tool[1]) + 2 if p.tool else 0)
    usage: JsonObject = {
        "prompt_tokens": seen.tokens,
        "completion_tokens": completion,
        "total_tokens": seen.tokens + completion,
        "prompt_tokens_details": {"cached_tokens": seen.cached(beh.cache)},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }
    if beh.cost:
        usage["cost"] = float(cost(model, seen.tokens, completion))
    return usage


def handle(body: JsonObject, beh: Behaviour, state: SimState, model: str, stream: bool) -> Reply:
    check_params(body, beh.reject_params)
    lane = beh
    if beh.lanes:
        lane = beh.lanes[state.lane(list(beh.lanes))]
    seen, task, last, fresh = read(body, lane, state)
    p = plan(state.seed, task, last, fresh, _tools(body), seen, lane.reasons)
    if p.earlier and lane.refuse_probe:
        raise SimError(403, "I'm sorry, I can't help with that request.", etype="forbidden")
    hexid = state.ident(model, lane.id_prefix, task, last, len(seen.texts))
    created = int(time.time())
    rid = {
        "gen-": f"gen-{created}-{hexid[:20]}",
        "chatcmpl-": f"chatcmpl-{hexid[:29]}",
    }.get(lane.id_prefix, f"{hexid[:8]}-{hexid[8:12]}-{hexid[12:16]}-{hexid[16:20]}-{hexid[20:32]}")
    filtered = p.earlier and lane.filter_probe
    if filtered:
        p = Plan(reasoning="", text="", tool=None, probe=True)
    finish = "content_filter" if filtered else "tool_calls" if p.tool else "stop"
    head: JsonObject = {"id": rid}
    if lane.provider:
        head["provider"] = lane.provider
    head.update({"model": model, "created": created})
    usage = None if filtered else _usage(seen, p, lane, model)
    if not stream:
        out = dict(head, object="chat.completion")
        out["choices"] = [
            {
                "index": 0,
                "message": _message(p, lane, state, hexid),
                "finish_reason": finish,
                "logprobs": None,
            }
        ]
        if usage is not None:
            out["usage"] = usage
        return Reply(body=out)
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return Reply(events=_stream(head, p, lane, state, hexid, finish, usage, include_usage))


def _tools(body: JsonObject) -> list[tuple[str, JSON]]:
    out = []
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            out.append((fn["name"], fn.get("parameters") or {}))
    return out


def _stream(
    head: JsonObject,
    p: Plan,
    beh: Behaviour,
    state: SimState,
    hexid: str,
    finish: str,
    usage: JsonObject | None,
    include_usage: bool,
) -> list[bytes]:
    base = dict(head, object="chat.completion.chunk")

    def chunk(delta: JsonObject, fin: str | None = None) -> bytes:
        c = dict(base)
        c["choices"] = [{"index": 0, "delta": delta, "finish_reason": fin, "logprobs": None}]
        return sse(c)

    ev = [chunk({"role": "assistant", "content": ""})]
    if p.reasoning:
        pieces = chunks(p.reasoning)
        for k, piece in enumerate(pieces):
            d: JsonObject = {}
            if "reasoning_content" in beh.emits:
                d["reasoning_content"] = piece
            if "reasoning" in beh.emits:
                d["reasoning"] = piece
            if "reasoning_details" in beh.emits:
                detail = {"type": "reasoning.text", "text": piece, "format": "unknown", "index": 0}
                if k == len(pieces) - 1:  # the signature rides on the last fragment
                    detail["signature"] = state.sealer.sign(beh.model, p.reasoning)
                d["reasoning_details"] = [detail]
            if d:
                ev.append(chunk(d))
        if "reasoning.encrypted" in beh.emits:
            ev.append(chunk({"reasoning_details": _details(p, beh, state, hexid)[1:]}))
    for piece in chunks(p.text):
        ev.append(chunk({"content": piece}))
    if p.tool:
        call = {
            "index": 0,
            "id": f"call_{hexid[:24]}",
            "type": "function",
            "function": {"name": p.tool[0], "arguments": ""},
        }
        ev.append(chunk({"tool_calls": [call]}))
        for piece in chunks(p.tool[1], 3):
            ev.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    ev.append(chunk({}, finish))
    if include_usage and usage is not None:
        last = dict(base)
        last["choices"] = []
        last["usage"] = usage
        ev.append(sse(last))
    ev.append(b"data: [DONE]\n\n")
    return ev


def count_tokens(body: JsonObject, beh: Behaviour, state: SimState, model: str) -> JsonObject:
    return {"prompt_tokens": read(body, beh, state)[0].tokens}
