"""Anthropic Messages as the simulated provider speaks it (``POST /v1/messages``).

Thinking blocks carry an HMAC signature over (model, thinking text); every replayed thinking
block is verified and any change is a 400 ("Invalid signature in thinking block"), as is a
``redacted_thinking`` block whose sealed data was altered. When thinking is enabled, the final
assistant tool-use turn must come back starting with its thinking block. Whether replayed
thinking enters the prompt is the behaviour's truth (older regime strips earlier turns;
preserved thinking keeps and bills them). Shapes follow the recorded Anthropic traffic.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from reasonwire.errors import SimError
from reasonwire.sim.behaviours import Behaviour
from reasonwire.sim.dialects import Reply, check_params, need_dict, need_list, sse, text_of
from reasonwire.sim.engine import Plan, Seen, SimState, plan
from reasonwire.sim.tokens import chunks, count

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, JsonObject

NAME = "anthropic"
_REDACTED_AAD = "anthropic.redacted"
_ETYPES = {
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    404: "not_found_error",
}


def error_body(err: SimError) -> JsonObject:
    etype = _ETYPES.get(err.status, "invalid_request_error")
    if err.status == 403:
        etype = "permission_error"
    return {"type": "error", "error": {"type": etype, "message": err.message}}


def _is_user_turn(m: JsonObject) -> bool:
    """A user message that starts a turn (has content other than tool results)."""
    if m.get("role") != "user":
        return False
    c = m.get("content")
    if isinstance(c, str):
        return True
    return isinstance(c, list) and any(
        isinstance(b, dict) and b.get("type") != "tool_result" for b in c
    )


def _thinking_on(body: JsonObject) -> bool:
    t = body.get("thinking")
    return isinstance(t, dict) and t.get("type") in ("enabled", "adaptive")


EFFORTS = ("low", "medium", "high", "xhigh", "max")
"""``output_config.effort`` values the API takes: anthropic SDK 2.16.0 ``OutputConfigParam``
("Valid values are `low`, `medium`, `high`, `xhigh`, or `max`"); recorded: ``high``
(``cassettes-2026/..._opus_46_adaptive_thinking_accepts_tool_output(unified).yaml``) and
``xhigh`` (``..._opus_5_features.yaml``)."""


def check_thinking(body: JsonObject) -> None:
    """400 for an adaptive ``thinking`` with a ``budget_tokens`` (adaptive thinking takes its
    depth from ``output_config.effort``: the SDK's ``ThinkingConfigAdaptiveParam`` has only
    ``type`` and ``display``, and clients that left the budget in got a 400 on every call, per
    github.com/sherifkozman/the-llm-council release v0.7.11) and for an effort level
    outside :data:`EFFORTS`."""
    thinking = body.get("thinking")
    if (
        isinstance(thinking, dict)
        and thinking.get("type") == "adaptive"
        and "budget_tokens" in thinking
    ):
        raise SimError(
            400,
            "thinking.budget_tokens: not permitted with thinking.type adaptive (its depth "
            "is output_config.effort)",
            param="thinking.budget_tokens",
        )
    config = body.get("output_config")
    effort = config.get("effort") if isinstance(config, dict) else None
    if effort is not None and effort not in EFFORTS:
        allowed = ", ".join(f"'{e}'" for e in EFFORTS)
        raise SimError(
            400, f"output_config.effort: Input should be {allowed}", param="output_config.effort"
        )


def read(
    body: JsonObject, beh: Behaviour, state: SimState, model: str
) -> tuple[Seen, str, str, bool]:
    messages = need_list(body.get("messages"), "messages")
    if not messages:
        raise SimError(400, "messages: at least one message is required")
    seen = Seen()
    if body.get("system"):
        seen.message()
        seen.add(text_of(body["system"]))
    msgs = [need_dict(m, f"messages.{i}") for i, m in enumerate(messages)]
    last_user = max((i for i, m in enumerate(msgs) if _is_user_turn(m)), default=-1)
    thinking_on = _thinking_on(body)
    for i, m in enumerate(msgs):
        seen.message()
        content = m.get("content")
        if isinstance(content, str):
            seen.add(content)
            continue
        blocks = need_list(content, f"messages.{i}.content")
        in_loop = i > last_user
        if (
            m.get("role") == "assistant"
            and in_loop
            and thinking_on
            and beh.reasons
            and i == len(msgs) - 2
            and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
            and blocks
            and isinstance(blocks[0], dict)
            and blocks[0].get("type") not in ("thinking", "redacted_thinking")
        ):
            raise SimError(
                400,
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                f"found `{blocks[0].get('type')}`. When `thinking` is enabled, a final "
                "`assistant` message must start with a thinking block (preceeding the "
                "lastmost set of `tool_use` and `tool_result` blocks).",
            )
        for j, b in enumerate(blocks):
            b = need_dict(b, f"messages.{i}.content.{j}")
            typ = b.get("type")
            if typ == "text":
                seen.add(str(b.get("text", "")))
            elif typ == "tool_use":
                seen.add(str(b.get("name", "")))
                seen.add(json.dumps(b.get("input", {})))
            elif typ == "tool_result":
                seen.add(text_of(b.get("content")))
            elif typ in ("thinking", "redacted_thinking"):
                if typ == "thinking":
                    text = b.get("thinking")
                    if not isinstance(text, str) or not state.sealer.verify(
                        b.get("signature"), model, text
                    ):
                        raise SimError(
                            400, f"messages.{i}.content.{j}: Invalid signature in thinking block"
                        )
                else:
                    text = state.sealer.unseal(str(b.get("data")), f"{_REDACTED_AAD}|{model}")
                    if text is None:
                        raise SimError(
                            400,
                            f"messages.{i}.content.{j}: Invalid `data` in redacted_thinking block",
                        )
                truth = beh.truth.get(typ)
                verdict = (truth.in_loop if in_loop else truth.cross_turn) if truth else "dropped"
                if verdict == "consumed":
                    seen.add(text)
    tools = _tools(body)
    for name, schema in tools:
        seen.add(name)
        seen.add(json.dumps(schema))
    task = text_of(msgs[last_user].get("content")) if last_user >= 0 else ""
    last = text_of(msgs[-1].get("content"))
    return seen, task, last, last_user == len(msgs) - 1


def _tools(body: JsonObject) -> list[tuple[str, JSON]]:
    return [
        (t["name"], t.get("input_schema") or {})
        for t in body.get("tools") or []
        if isinstance(t, dict) and isinstance(t.get("name"), str)
    ]


def count_tokens(body: JsonObject, beh: Behaviour, state: SimState, model: str) -> JsonObject:
    return {"input_tokens": read(body, beh, state, model)[0].tokens}


def handle(body: JsonObject, beh: Behaviour, state: SimState, model: str, stream: bool) -> Reply:
    check_params(body, beh.reject_params)
    check_thinking(body)
    seen, task, last, fresh = read(body, beh, state, model)
    p = plan(state.seed, task, last, fresh, _tools(body), seen, beh.reasons)
    if not _thinking_on(body):
        p = Plan(reasoning="", text=p.text, tool=p.tool, probe=p.probe)
    h = state.ident(model, task, last, seen.tokens)
    content: list[JsonObject] = []
    if p.reasoning:
        if "redacted_thinking" in beh.emits:
            data = state.sealer.seal(p.reasoning, f"{_REDACTED_AAD}|{model}")
            content.append({"type": "redacted_thinking", "data": data})
        else:
            sig = state.sealer.sign(model, p.reasoning)
            content.append({"type": "thinking", "thinking": p.reasoning, "signature": sig})
    if p.text:
        content.append({"type": "text", "text": p.text})
    if p.tool:
        content.append(
            {"type": "tool_use", "id": f"toolu_{h[:24]}", "name": p.tool[0], "input": p.tool_args}
        )
    cached = seen.cached(beh.cache)
    out_toks = count(p.reasoning) + count(p.text) + (count(p.tool[1]) if p.tool else 0)
    usage = {
        "input_tokens": seen.tokens - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": out_toks,
        "service_tier": "standard",
    }
    stop = "tool_use" if p.tool else "end_turn"
    msg = {
        "model": model,
        "id": f"msg_{h[24:48]}",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }
    if not stream:
        return Reply(body=msg)
    return Reply(events=_events(msg, usage))


def _events(msg: JsonObject, usage: JsonObject) -> list[bytes]:
    ev: list[bytes] = []

    def emit(typ: str, **fields: JSON) -> None:
        ev.append(sse({"type": typ, **fields}, typ))

    start_usage = dict(usage, output_tokens=1)
    emit("message_start", message=dict(msg, content=[], stop_reason=None, usage=start_usage))
    for idx, block in enumerate(msg["content"]):
        typ = block["type"]
        if typ == "thinking":
            emit(
                "content_block_start",
                index=idx,
                content_block={"type": "thinking", "thinking": "", "signature": ""},
            )
            if idx == 0:
                emit("ping")
            for d in chunks(block["thinking"]):
                emit(
                    "content_block_delta",
                    index=idx,
                    delta={"type": "thinking_delta", "thinking": d},
                )
            emit(
                "content_block_delta",
                index=idx,
                delta={"type": "signature_delta", "signature": block["signature"]},
            )
        elif typ == "redacted_thinking":
            emit("content_block_start", index=idx, content_block=block)
            if idx == 0:
                emit("ping")
        elif typ == "text":
            emit("content_block_start", index=idx, content_block={"type": "text", "text": ""})
            if idx == 0:
                emit("ping")
            for d in chunks(block["text"]):
                emit("content_block_delta", index=idx, delta={"type": "text_delta", "text": d})
        else:
            emit("content_block_start", index=idx, content_block=dict(block, input={}))
            for d in chunks(json.dumps(block["input"], separators=(",", ":")), 3):
                emit(
                    "content_block_delta",
                    index=idx,
                    delta={"type": "input_json_delta", "partial_json": d},
                )
        emit("content_block_stop", index=idx)
    final_usage = {
        "input_tokens": usage["input_tokens"],
        "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
        "cache_read_input_tokens": usage["cache_read_input_tokens"],
        "output_tokens": usage["output_tokens"],
    }
    emit(
        "message_delta",
        delta={"stop_reason": msg["stop_reason"], "stop_sequence": None},
        usage=final_usage,
    )
    emit("message_stop")
    return ev
