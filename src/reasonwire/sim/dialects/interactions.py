"""The Gemini Interactions API as the simulated provider speaks it.

``POST /v1beta/interactions`` (and ``/v1/interactions``), a whole interaction or, with
``stream: true``, SSE events. Shapes follow the recordings
(``cassettes-2026/vercel__google-interactions__*``) and the google-genai SDK's types.
Documented rules imitated:

- thought steps carry a ``signature`` that must come back ("Every thought step contains ...
  ``signature`` ✅ Required", ai.google.dev/gemini-api/docs/interactions/thinking); in the
  current turn (after the last ``user_input`` holding text) a thought step whose signature is
  missing, altered or truncated is a 400 ``INVALID_ARGUMENT``, and so is a ``function_call``
  step not preceded in its step by a signed thought ("you must pass back thought signatures
  during function calling, otherwise you will get a validation error (4xx)",
  ai.google.dev/gemini-api/docs/thought-signatures);
- server-side state is on by default (``store: true``): ``previous_interaction_id`` puts the
  stored history (input and answer steps) before the new input; ``store: false`` answers
  without an ``id`` and keeps nothing, so a stateless client resends the history with its
  signatures (ai.google.dev/gemini-api/docs/interactions, "Server-side history management");
- a summary comes back when ``generation_config.thinking_summaries`` is ``auto``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from reasonwire.errors import SimError
from reasonwire.sim.behaviours import Behaviour
from reasonwire.sim.dialects import Reply, check_params, need_dict, need_list, sse, text_of
from reasonwire.sim.dialects.gemini import STATUS
from reasonwire.sim.engine import Seen, SimState, plan
from reasonwire.sim.tokens import chunks, count

if TYPE_CHECKING:
    from reasonwire.wire.model import JSON, JsonObject

NAME = "interactions"
_AAD = "interactions.thought"
_STORE_PREFIX = "interaction:"
"""Key prefix of stored interactions in the simulator's shared store table."""


def error_body(err: SimError) -> JsonObject:
    """``error.code`` is a string on this API (the google-genai SDK's ``interactions.Error``
    has ``code: str``; generateContent's integer code fails that schema)."""
    name = STATUS.get(err.status, "UNKNOWN")
    return {"error": {"code": name, "message": err.message, "status": name}}


def _steps(body: JsonObject) -> list[JsonObject]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "user_input", "content": [{"type": "text", "text": raw}]}]
    if isinstance(raw, dict):
        raw = [raw]
    items = need_list(raw, "input")
    if items and all(isinstance(i, dict) and i.get("type") == "text" for i in items):
        return [{"type": "user_input", "content": items}]
    return [need_dict(s, f"input[{i}]") for i, s in enumerate(items)]


def _is_user_turn(step: JsonObject) -> bool:
    return step.get("type") == "user_input" and bool(text_of(step.get("content")))


def _tools(body: JsonObject) -> list[tuple[str, JSON]]:
    return [
        (t["name"], t.get("parameters") or {})
        for t in body.get("tools") or []
        if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("name"), str)
    ]


def _history(body: JsonObject, state: SimState) -> list[JsonObject]:
    prev = body.get("previous_interaction_id")
    if prev is None:
        return []
    stored = state.responses.get(_STORE_PREFIX + str(prev))
    if stored is None:
        raise SimError(404, f"Interaction {prev!r} not found.")
    return list(stored)


def read(
    steps: list[JsonObject], body: JsonObject, beh: Behaviour, state: SimState, model: str
) -> tuple[Seen, str, str, bool]:
    seen = Seen()
    system = body.get("system_instruction")
    if isinstance(system, str):
        seen.message()
        seen.add(system)
    last_user = max((i for i, s in enumerate(steps) if _is_user_turn(s)), default=-1)
    if last_user < 0:
        raise SimError(400, "input must hold a user_input step with text")
    signed = False  # a signed thought opened the current model step
    for i, step in enumerate(steps):
        kind = step.get("type")
        in_loop = i > last_user
        seen.message()
        if kind in ("user_input", "model_output"):
            seen.add(text_of(step.get("content")))
            signed = False
        elif kind == "function_result":
            result = step.get("result")
            seen.add(result if isinstance(result, str) else json.dumps(result))
            signed = False
        elif kind == "thought":
            sig = step.get("signature")
            plain = state.sealer.unseal(str(sig), f"{_AAD}|{model}") if sig else None
            if plain is None and in_loop:
                what = "missing" if not sig else "not valid"
                raise SimError(400, f"Thought signature is {what} (input[{i}]).")
            signed = plain is not None
            truth = beh.truth.get("thought_signature")
            if plain and truth and (truth.in_loop if in_loop else truth.cross_turn) == "consumed":
                seen.add(plain)
            summary = beh.truth.get("thought_summary")
            if summary and (summary.in_loop if in_loop else summary.cross_turn) == "consumed":
                seen.add(text_of(step.get("summary")))
        elif kind == "function_call":
            if in_loop and not signed:
                raise SimError(
                    400,
                    f"Function call at input[{i}] is not preceded by its thought step with a "
                    "signature. See https://ai.google.dev/gemini-api/docs/thought-signatures",
                )
            seen.add(str(step.get("name", "")))
            seen.add(json.dumps(step.get("arguments", {})))
        else:
            raise SimError(400, f"input[{i}].type {kind!r} is not a known step type")
    for name, schema in _tools(body):
        seen.add(name)
        seen.add(json.dumps(schema))
    task = text_of(steps[last_user].get("content"))
    tail = steps[-1]
    result = tail.get("result")
    last = text_of(tail.get("content")) if "content" in tail else str(result or "")
    return seen, task, last, last_user == len(steps) - 1


def handle(body: JsonObject, beh: Behaviour, state: SimState, model: str, stream: bool) -> Reply:
    check_params(body, beh.reject_params)
    new = _steps(body)
    steps = _history(body, state) + new
    seen, task, last, fresh = read(steps, body, beh, state, model)
    p = plan(state.seed, task, last, fresh, _tools(body), seen, beh.reasons)
    config = body.get("generation_config")
    config = config if isinstance(config, dict) else {}
    summaries = config.get("thinking_summaries") == "auto"
    h = state.ident(model, task, last, seen.tokens)
    out: list[JsonObject] = []
    if p.reasoning:
        thought: JsonObject = {
            "signature": state.sealer.seal(p.reasoning, f"{_AAD}|{model}"),
            "type": "thought",
        }
        if summaries:
            thought["summary"] = [{"type": "text", "text": p.reasoning}]
        out.append(thought)
    if p.tool:
        out.append(
            {"id": h[:8], "type": "function_call", "name": p.tool[0], "arguments": p.tool_args}
        )
    else:
        out.append({"content": [{"text": p.text, "type": "text"}], "type": "model_output"})
    thoughts = count(p.reasoning)
    output = count(p.text) if not p.tool else count(p.tool[1])
    usage = {
        "total_tokens": seen.tokens + output + thoughts,
        "total_input_tokens": seen.tokens,
        "input_tokens_by_modality": [{"modality": "text", "tokens": seen.tokens}],
        "total_cached_tokens": 0,
        "total_output_tokens": output,
        "total_tool_use_tokens": 0,
        "total_thought_tokens": thoughts,
    }
    store = body.get("store", True) is not False
    iid = f"v1_{h[:40]}"
    if store:
        state.remember(state.responses, _STORE_PREFIX + iid, steps + out)
    status = "requires_action" if p.tool else "completed"
    top: JsonObject = {"id": iid} if store else {}
    top.update(status=status, usage=usage)
    tail = {"object": "interaction", "model": model}
    if not stream:
        return Reply(body={**top, "steps": out, **tail})
    return Reply(events=_events(top, out, tail))


def _events(top: JsonObject, out: list[JsonObject], tail: JsonObject) -> list[bytes]:
    """The answer as the recorded stream sends it: created, status update, each step as
    start / delta(s) / stop (a call opens with ``arguments: {}`` and ``signature: ""``, its
    arguments follow as one ``arguments_delta``), then ``interaction.completed`` with usage."""
    head = {k: v for k, v in top.items() if k == "id"}
    frames = [
        sse({"interaction": {**head, "status": "in_progress", **tail},
             "event_type": "interaction.created"}),
        sse({"interaction_id": head.get("id", ""), "status": "in_progress",
             "event_type": "interaction.status_update"}),
    ]  # fmt: skip
    for index, step in enumerate(out):
        kind = step["type"]
        if kind == "thought":
            frames.append(
                sse({"index": index, "step": {"type": "thought"}, "event_type": "step.start"})
            )
            for piece in step.get("summary", ()):
                for text in chunks(piece["text"], 8):
                    delta = {"content": {"type": "text", "text": text}, "type": "thought_summary"}
                    frames.append(sse({"index": index, "delta": delta, "event_type": "step.delta"}))
            delta = {"signature": step["signature"], "type": "thought_signature"}
            frames.append(sse({"index": index, "delta": delta, "event_type": "step.delta"}))
        elif kind == "function_call":
            start = {"id": step["id"], "signature": "", "type": kind, "name": step["name"],
                     "arguments": {}}  # fmt: skip
            frames.append(sse({"index": index, "step": start, "event_type": "step.start"}))
            delta = {"arguments": json.dumps(step["arguments"], separators=(",", ":")),
                     "type": "arguments_delta"}  # fmt: skip
            frames.append(sse({"index": index, "delta": delta, "event_type": "step.delta"}))
        else:
            frames.append(
                sse(
                    {
                        "index": index,
                        "step": {"type": kind, "content": []},
                        "event_type": "step.start",
                    }
                )
            )
            for text in chunks(step["content"][0]["text"], 6):
                frames.append(
                    sse(
                        {
                            "index": index,
                            "delta": {"text": text, "type": "text"},
                            "event_type": "step.delta",
                        }
                    )
                )
        frames.append(sse({"index": index, "event_type": "step.stop"}))
    frames.append(sse({"interaction": {**top, **tail}, "event_type": "interaction.completed"}))
    return frames
