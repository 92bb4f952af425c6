"""Gemini generateContent as the simulated provider speaks it.

``POST /v1beta/models/{model}:generateContent``, ``:streamGenerateContent`` (SSE with
``?alt=sse``; without it one JSON array whose elements are flushed one by one, as Gemini
does) and ``:countTokens``. The first ``functionCall`` part of each model step in the
current turn must carry a ``thoughtSignature`` (400 otherwise); the literal
``skip_thought_signature_validator`` is accepted; signatures are sealed thoughts, compared
after base64 decoding (urlsafe accepted) and unsealed into the prompt as the behaviour's
truth says. ``{text, thought: true}`` parts come back when ``thinkingConfig.includeThoughts``
is set. Shapes follow the recorded traffic.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from reasonwire.errors import SimError
from reasonwire.sim.behaviours import Behaviour
from reasonwire.sim.dialects import Reply, check_params, need_dict, need_list, sse
from reasonwire.sim.engine import Plan, Seen, SimState, plan
from reasonwire.sim.tokens import chunks, count

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, JsonObject

NAME = "gemini"
SKIP = "skip_thought_signature_validator"
_AAD = "gemini.thought"
STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def error_body(err: SimError) -> JsonObject:
    return {
        "error": {
            "code": err.status,
            "message": err.message,
            "status": STATUS.get(err.status, "UNKNOWN"),
        }
    }


def _get(part: JsonObject, camel: str, snake: str) -> JSON:
    return part.get(camel, part.get(snake))


def _is_user_turn(c: JsonObject) -> bool:
    if c.get("role", "user") != "user":
        return False
    parts = c.get("parts") or []
    return any(isinstance(p, dict) and "text" in p for p in parts)


def read(
    body: JsonObject, beh: Behaviour, state: SimState, model: str
) -> tuple[Seen, str, str, bool]:
    contents = [
        need_dict(c, f"contents[{i}]")
        for i, c in enumerate(need_list(body.get("contents"), "contents"))
    ]
    if not contents:
        raise SimError(400, "* GenerateContentRequest.contents: contents is not specified")
    seen = Seen()
    sysi = _get(body, "systemInstruction", "system_instruction")
    if isinstance(sysi, dict):
        seen.message()
        for p in sysi.get("parts") or []:
            if isinstance(p, dict):
                seen.add(str(p.get("text", "")))
    last_user = max((i for i, c in enumerate(contents) if _is_user_turn(c)), default=-1)
    texts: list[str] = []
    for i, c in enumerate(contents):
        seen.message()
        in_loop = i > last_user
        first_call = True
        for j, p in enumerate(need_list(c.get("parts") or [], f"contents[{i}].parts")):
            p = need_dict(p, f"contents[{i}].parts[{j}]")
            fc = _get(p, "functionCall", "function_call")
            fr = _get(p, "functionResponse", "function_response")
            sig = _get(p, "thoughtSignature", "thought_signature")
            if p.get("thought") is True:
                truth = beh.truth.get("thought")
                if truth and (truth.in_loop if in_loop else truth.cross_turn) == "consumed":
                    seen.add(str(p.get("text", "")))
            elif "text" in p:
                seen.add(str(p["text"]))
                texts.append(str(p["text"]))
            if isinstance(fc, dict):
                seen.add(str(fc.get("name", "")))
                seen.add(json.dumps(fc.get("args", {})))
                if first_call and in_loop and c.get("role") == "model" and sig is None:
                    raise SimError(
                        400,
                        "Function call is missing a thought_signature in functionCall parts. "
                        "This is required for tools to work correctly, and missing "
                        "thought_signature may lead to degraded model performance. Additional "
                        f"data, function call `default_api:{fc.get('name')}` , position {i + 1}. "
                        "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures "
                        "for more details.",
                    )
                first_call = False
            if isinstance(fr, dict):
                resp = fr.get("response")
                seen.add(json.dumps(resp) if not isinstance(resp, str) else resp)
                texts.append(json.dumps(resp) if not isinstance(resp, str) else resp)
            if sig is not None and sig != SKIP:
                plain = state.sealer.unseal(str(sig), f"{_AAD}|{model}")
                if plain is None:
                    if in_loop:
                        raise SimError(
                            400, f"Thought signature is not valid (contents[{i}].parts[{j}])."
                        )
                else:
                    truth = beh.truth.get("thoughtSignature")
                    if truth and (truth.in_loop if in_loop else truth.cross_turn) == "consumed":
                        seen.add(plain)
    tools = _tools(body)
    for name, schema in tools:
        seen.add(name)
        seen.add(json.dumps(schema))
    task = ""
    if last_user >= 0:
        task = "\n".join(
            str(p.get("text", ""))
            for p in contents[last_user].get("parts") or []
            if isinstance(p, dict)
        )
    last_parts = contents[-1].get("parts") or []
    last = "\n".join(
        str(p["text"])
        if "text" in p
        else json.dumps((_get(p, "functionResponse", "function_response") or {}).get("response"))
        for p in last_parts
        if isinstance(p, dict)
    )
    return seen, task, last, last_user == len(contents) - 1


def _tools(body: JsonObject) -> list[tuple[str, JSON]]:
    out = []
    for t in body.get("tools") or []:
        decls = (
            _get(t, "functionDeclarations", "function_declarations")
            if isinstance(t, dict)
            else None
        )
        for d in decls or []:
            if isinstance(d, dict) and isinstance(d.get("name"), str):
                params = (
                    d.get("parameters")
                    or _get(d, "parametersJsonSchema", "parameters_json_schema")
                    or {}
                )
                out.append((d["name"], params))
    return out


def _thinking(body: JsonObject) -> JsonObject:
    gc = _get(body, "generationConfig", "generation_config") or {}
    tc = _get(gc, "thinkingConfig", "thinking_config") if isinstance(gc, dict) else None
    return tc if isinstance(tc, dict) else {}


def count_tokens(body: JsonObject, beh: Behaviour, state: SimState, model: str) -> JsonObject:
    return {"totalTokens": read(body, beh, state, model)[0].tokens}


def handle(body: JsonObject, beh: Behaviour, state: SimState, model: str, stream: bool) -> Reply:
    check_params(body, beh.reject_params)
    seen, task, last, fresh = read(body, beh, state, model)
    p = plan(state.seed, task, last, fresh, _tools(body), seen, beh.reasons)
    tc = _thinking(body)
    include = _get(tc, "includeThoughts", "include_thoughts") is True
    budget = _get(tc, "thinkingBudget", "thinking_budget")
    if budget == 0:
        p = Plan(reasoning="", text=p.text, tool=p.tool, probe=p.probe)
    sig = state.sealer.seal(p.reasoning, f"{_AAD}|{model}") if p.reasoning else None
    parts: list[JsonObject] = []
    if p.reasoning and include:
        parts.append({"text": p.reasoning, "thought": True})
    if p.tool:
        fc: JsonObject = {"functionCall": {"name": p.tool[0], "args": p.tool_args}}
        if sig:
            fc["thoughtSignature"] = sig
        parts.append(fc)
    else:
        tp: JsonObject = {"text": p.text}
        if sig:
            tp["thoughtSignature"] = sig
        parts.append(tp)
    thoughts = count(p.reasoning)
    cand = count(p.text) if not p.tool else count(p.tool[1])
    h = state.ident(model, task, last, seen.tokens)
    usage: JsonObject = {
        "promptTokenCount": seen.tokens,
        "candidatesTokenCount": cand,
        "totalTokenCount": seen.tokens + cand + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": seen.tokens}],
    }
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    version = model
    rid = h[:22]
    if not stream:
        return Reply(
            body={
                "candidates": [
                    {
                        "content": {"parts": parts, "role": "model"},
                        "finishReason": "STOP",
                        "index": 0,
                    }
                ],
                "usageMetadata": usage,
                "modelVersion": version,
                "responseId": rid,
            }
        )
    # stream: thought chunks, then the answer part(s), finishReason on the last chunk
    items: list[JsonObject] = []
    pieces: list[JsonObject] = []
    if p.reasoning and include:
        pieces += [{"text": d, "thought": True} for d in chunks(p.reasoning, 8)]
    if p.tool:
        pieces.append(parts[-1])
    else:
        texts = chunks(p.text, 6) or [""]
        pieces += [{"text": d} for d in texts[:-1]]
        pieces.append(dict(parts[-1], text=texts[-1]))
    for k, piece in enumerate(pieces):
        cand_obj: JsonObject = {"content": {"parts": [piece], "role": "model"}, "index": 0}
        if k == len(pieces) - 1:
            cand_obj["finishReason"] = "STOP"
        items.append(
            {
                "candidates": [cand_obj],
                "usageMetadata": usage,
                "modelVersion": version,
                "responseId": rid,
            }
        )
    return Reply(events=[sse(item) for item in items], items=items)
