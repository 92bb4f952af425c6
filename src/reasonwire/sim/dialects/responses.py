"""The Responses API as the simulated provider speaks it (``POST /v1/responses``).

Reasoning items are sealed into ``encrypted_content`` (when ``include`` asks for it) with the
server's key; replayed items are unsealed and, as the behaviour's truth says, enter the prompt.
State: ``store`` keeps a response's items for ``previous_response_id``, and every output item
(``rs_``, ``fc_``, ``msg_``) for ``item_reference`` input entries and for reasoning items
replayed by id without their encrypted content: OpenAI stores the whole response, and the
Vercel AI SDK (``@ai-sdk/openai`` with store=true) sends references to all three kinds. A
reference resolves to the stored item before any other check, so the pairing rule (items that
followed a reasoning item must be replayed with it) holds alike for items sent whole and by
reference. An id never handed out is a 404. Shapes follow the recorded OpenAI traffic.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from reasonwire.errors import SimError
from reasonwire.sim.behaviours import Behaviour
from reasonwire.sim.dialects import Reply, check_params, need_dict, sse, text_of
from reasonwire.sim.dialects.chat import error_body as error_body
from reasonwire.sim.engine import Plan, Seen, SimState, plan
from reasonwire.sim.tokens import chunks, count

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, JsonObject

NAME = "responses"
_AAD = "responses.reasoning"


def _items(body: JsonObject, state: SimState) -> list[JSON]:
    items: list[JSON] = []
    prev = body.get("previous_response_id")
    if prev is not None:
        stored = state.responses.get(str(prev))
        if stored is None:
            raise SimError(
                400,
                f"Previous response with id '{prev}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        items.extend(stored)
    inp = body.get("input")
    if isinstance(inp, str):
        items.append({"role": "user", "content": inp})
    elif isinstance(inp, list):
        items.extend(inp)
    elif inp is not None:
        raise SimError(400, "'input' must be a string or an array", param="input")
    return items


def _kind(item: JsonObject) -> str:
    typ = item.get("type")
    return typ if isinstance(typ, str) else "message" if "role" in item else "unknown"


def read(
    body: JsonObject, beh: Behaviour, state: SimState
) -> tuple[Seen, str, str, bool, list[JSON]]:
    items = _items(body, state)
    if isinstance(body.get("instructions"), str):
        items_seen = Seen()
        items_seen.message()
        items_seen.add(body["instructions"])
    else:
        items_seen = Seen()
    seen = items_seen
    # resolve item references first so positions are those of the real items
    resolved: list[JsonObject] = []
    for i, raw in enumerate(items):
        item = need_dict(raw, f"input[{i}]")
        if _kind(item) == "item_reference":
            ref = state.items.get(str(item.get("id")))
            if ref is None:
                raise _not_found(item.get("id"))
            item = ref[0]
        resolved.append(item)
    last_user = max(
        (i for i, it in enumerate(resolved) if _kind(it) == "message" and it.get("role") == "user"),
        default=-1,
    )
    ids: set[str] = set()
    truth = beh.truth.get("encrypted_content")
    for i, item in enumerate(resolved):
        kind = _kind(item)
        seen.message()
        iid = item.get("id")
        if isinstance(iid, str) and iid in state.pairs and state.pairs[iid] not in ids:
            raise SimError(
                400,
                f"Item '{iid}' of type '{kind}' was provided without its required 'reasoning' "
                f"item: '{state.pairs[iid]}'.",
                param="input",
            )
        if kind == "message":
            seen.add(text_of(item.get("content")))
        elif kind == "function_call":
            seen.add(str(item.get("name", "")))
            seen.add(str(item.get("arguments", "")))
        elif kind == "function_call_output":
            out = item.get("output")
            seen.add(out if isinstance(out, str) else text_of(out))
        elif kind == "reasoning":
            if isinstance(iid, str):
                ids.add(iid)
            plain = _reasoning_text(item, state, body)
            in_loop = i > last_user
            verdict = (truth.in_loop if in_loop else truth.cross_turn) if truth else "dropped"
            if verdict == "consumed":
                seen.add(plain)
    tools = _tools(body)
    for name, desc, params in tools:
        seen.add(f"{name} {desc} {params}")
    task = text_of(resolved[last_user].get("content")) if last_user >= 0 else ""
    last = ""
    if resolved:
        tail = resolved[-1]
        last = (
            text_of(tail.get("content"))
            if _kind(tail) == "message"
            else str(tail.get("output", ""))
        )
    fresh = (
        bool(resolved) and _kind(resolved[-1]) == "message" and resolved[-1].get("role") == "user"
    )
    return seen, task, last, fresh, resolved


def _reasoning_text(item: JsonObject, state: SimState, body: JsonObject) -> str:
    iid = item.get("id")
    enc = item.get("encrypted_content")
    if isinstance(enc, str):
        plain = state.sealer.unseal(enc, _AAD)
        if plain is None:
            raise SimError(
                400,
                f"The encrypted content for item {iid} could not be verified.",
                param="input",
                code="invalid_encrypted_content",
            )
        return plain
    if isinstance(iid, str) and iid.startswith("rs_"):
        ref = state.items.get(iid)
        if ref is None or ref[0].get("type") != "reasoning":
            raise _not_found(iid)
        return str(ref[1])
    return text_of(item.get("content"))  # raw reasoning_text content (no id, no seal)


def _not_found(iid: object) -> SimError:
    """The 404 for an item id the server does not hold, in the wording OpenAI answers with
    (quoted in public issue threads, e.g. anomalyco/opencode#7724, earendil-works/pi#5059)."""
    return SimError(
        404,
        f"Item with id '{iid}' not found. Items are not persisted when `store` is set "
        "to false. Try again with `store` set to true, or remove this item from your "
        "input.",
        param="input",
    )


def _tools(body: JsonObject) -> list[tuple[str, str, JSON]]:
    out = []
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("name"), str):
            out.append((t["name"], str(t.get("description") or ""), t.get("parameters") or {}))
    return out


def _prepare(body: JsonObject, beh: Behaviour) -> tuple[JSON, JSON]:
    check_params(body, beh.reject_params)
    reasoning = body.get("reasoning") or {}
    if not isinstance(reasoning, dict):
        raise SimError(400, "'reasoning' must be an object", param="reasoning")
    if reasoning.get("context") is not None and not beh.all_turns_ok:
        raise SimError(
            400,
            "Unsupported parameter: 'reasoning.context' is not supported with this model.",
            param="reasoning.context",
            code="unsupported_parameter",
        )
    return reasoning.get("effort"), reasoning.get("summary")


def count_tokens(body: JsonObject, beh: Behaviour, state: SimState, model: str) -> JsonObject:
    _prepare(body, beh)
    return {"object": "response.input_tokens", "input_tokens": read(body, beh, state)[0].tokens}


def handle(body: JsonObject, beh: Behaviour, state: SimState, model: str, stream: bool) -> Reply:
    effort, summary = _prepare(body, beh)
    seen, task, last, fresh, items = read(body, beh, state)
    tools = [(n, p) for n, _, p in _tools(body)]
    p = plan(state.seed, task, last, fresh, tools, seen, beh.reasons)
    if effort == "none" or (effort == "low" and beh.skip_reasoning_at_low):
        p = Plan(reasoning="", text=p.text, tool=p.tool, probe=p.probe)
    store = body.get("store", True) is not False
    include = body.get("include") or []
    h = state.ident(model, task, last, len(items), seen.tokens)
    now = int(time.time())
    output: list[JsonObject] = []
    rs_id = f"rs_{h[:50]}"
    if p.reasoning:
        item: JsonObject = {"id": rs_id, "type": "reasoning"}
        if "reasoning.encrypted_content" in include:
            item["encrypted_content"] = state.sealer.seal(p.reasoning, _AAD)
        item["summary"] = [{"type": "summary_text", "text": p.reasoning}] if summary else []
        output.append(item)
    if p.tool:
        output.append(
            {
                "id": f"fc_{h[:50]}",
                "type": "function_call",
                "status": "completed",
                "arguments": p.tool[1],
                "call_id": f"call_{h[50:64]}",
                "name": p.tool[0],
            }
        )
    else:
        output.append(
            {
                "id": f"msg_{h[:50]}",
                "type": "message",
                "status": "completed",
                "content": [
                    {"type": "output_text", "annotations": [], "logprobs": [], "text": p.text}
                ],
                "role": "assistant",
            }
        )
    if p.reasoning:
        state.remember(state.pairs, output[-1]["id"], rs_id)
    rtoks = count(p.reasoning)
    out_toks = rtoks + count(p.text if not p.tool else p.tool[1])
    usage = {
        "input_tokens": seen.tokens,
        "input_tokens_details": {"cached_tokens": seen.cached(beh.cache)},
        "output_tokens": out_toks,
        "output_tokens_details": {"reasoning_tokens": rtoks},
        "total_tokens": seen.tokens + out_toks,
    }
    resp = _envelope(body, model, f"resp_{h[:50]}", now, effort, summary, store)
    if store:
        # every output item is stored, not only the reasoning one: a client may reference
        # any of them (``item_reference``) in a later request
        for it in output:
            plain = p.reasoning if it["type"] == "reasoning" else None
            state.remember(state.items, it["id"], (it, plain))
        state.remember(state.responses, resp["id"], [*items, *output])
    final = dict(resp, status="completed", completed_at=now, output=output, usage=usage)
    if not stream:
        return Reply(body=final)
    return Reply(events=_events(resp, final, output))


def _envelope(
    body: JsonObject, model: str, rid: str, now: int, effort: JSON, summary: JSON, store: bool
) -> JsonObject:
    return {
        "id": rid,
        "object": "response",
        "created_at": now,
        "status": "in_progress",
        "background": False,
        "billing": {"payer": "developer"},
        "completed_at": None,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": model,
        "output": [],
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": None,
        "prompt_cache_retention": None,
        "reasoning": {"effort": effort, "summary": summary},
        "safety_identifier": None,
        "service_tier": "default",
        "store": store,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
    }


def _events(resp: JsonObject, final: JsonObject, output: list[JsonObject]) -> list[bytes]:
    ev: list[bytes] = []

    def emit(typ: str, **fields: JSON) -> None:
        payload = {"type": typ, "sequence_number": len(ev), **fields}
        ev.append(sse(payload, typ))

    def obf(i: int) -> str:
        return "x" * (4 + i % 9)

    resp = {k: v for k, v in resp.items() if k != "billing"}  # recorded streams have none
    final = {k: v for k, v in final.items() if k != "billing"}
    emit("response.created", response=resp)
    emit("response.in_progress", response=resp)
    for oi, item in enumerate(output):
        iid = item["id"]
        if item["type"] == "reasoning":
            emit("response.output_item.added", output_index=oi, item=dict(item, summary=[]))
            for si, part in enumerate(item["summary"]):
                base = {"item_id": iid, "output_index": oi, "summary_index": si}
                emit(
                    "response.reasoning_summary_part.added",
                    **base,
                    part={"type": "summary_text", "text": ""},
                )
                for j, d in enumerate(chunks(part["text"])):
                    emit(
                        "response.reasoning_summary_text.delta", **base, delta=d, obfuscation=obf(j)
                    )
                emit("response.reasoning_summary_text.done", **base, text=part["text"])
                emit("response.reasoning_summary_part.done", **base, part=part)
        elif item["type"] == "function_call":
            emit(
                "response.output_item.added",
                output_index=oi,
                item=dict(item, status="in_progress", arguments=""),
            )
            for j, d in enumerate(chunks(item["arguments"], 3)):
                emit(
                    "response.function_call_arguments.delta",
                    item_id=iid,
                    output_index=oi,
                    delta=d,
                    obfuscation=obf(j),
                )
            emit(
                "response.function_call_arguments.done",
                item_id=iid,
                output_index=oi,
                arguments=item["arguments"],
            )
        else:
            emit(
                "response.output_item.added",
                output_index=oi,
                item=dict(item, status="in_progress", content=[]),
            )
            part = item["content"][0]
            base = {"item_id": iid, "output_index": oi, "content_index": 0}
            emit("response.content_part.added", **base, part=dict(part, text=""))
            for j, d in enumerate(chunks(part["text"])):
                emit("response.output_text.delta", **base, delta=d, logprobs=[], obfuscation=obf(j))
            emit("response.output_text.done", **base, text=part["text"], logprobs=[])
            emit("response.content_part.done", **base, part=part)
        emit("response.output_item.done", output_index=oi, item=item)
    emit("response.completed", response=final)
    return ev
