"""An interaction body -> :class:`~reasonwire.wire.model.Turn`.

The answer is the interaction's ``steps`` [REC]: ``thought`` steps (a ``signature``, an
optional ``summary`` of text items), ``function_call`` steps (``id``, ``name``, ``arguments``
as a JSON object) and ``model_output`` steps (``content`` items of ``type: text``). The steps
are kept verbatim as the turn's native payload, so a replay sends each signature back on the
step it came on. Server tool steps (``google_search_call`` ...) are kept in the native payload
and read as neither text nor reasoning.
"""

from __future__ import annotations

from collections.abc import Sequence

from reasonwire.errors import MalformedBody
from reasonwire.wire.google_usage import UsageNames, google_usage
from reasonwire.wire.jsontext import arguments_text, json_object
from reasonwire.wire.model import JSON, Carrier, JsonObject, Native, ToolCall, Turn, Usage

DIALECT = "interactions"


def parse_usage(usage: JSON) -> Usage | None:
    """``usage`` -> :class:`Usage`.

    ``total_input_tokens`` includes ``total_cached_tokens`` (as ``promptTokenCount`` does on
    generateContent): input_uncached = input - cached + tool use, cache_read = cached.
    Thought tokens are reported apart from output and billed as output: the recordings add
    up as ``total_tokens = total_input_tokens + total_output_tokens + total_thought_tokens``
    (109 = 53 + 15 + 41) [REC], so output = output + thought, reasoning = thought.
    """
    return google_usage(usage, _USAGE)


_USAGE = UsageNames(
    where="interactions usage",
    input="total_input_tokens",
    cached="total_cached_tokens",
    tool_use="total_tool_use_tokens",
    output="total_output_tokens",
    thoughts="total_thought_tokens",
)


def is_thought(step: JSON) -> bool:
    return isinstance(step, dict) and step.get("type") == "thought"


def text_items(items: JSON) -> list[JsonObject]:
    """The ``{"type": "text", "text": str}`` items of a content or summary list."""
    if not isinstance(items, list):
        return []
    return [
        i
        for i in items
        if isinstance(i, dict) and i.get("type") == "text" and isinstance(i.get("text"), str)
    ]


def summary_texts(step: JsonObject) -> list[str]:
    return [i["text"] for i in text_items(step.get("summary"))]


def step_carriers(step: JsonObject, i: int, call: ToolCall | None = None) -> list[Carrier]:
    """The carriers of answer step ``i``: a thought's signature and summary texts, a
    function call's own signature (when not empty)."""
    out: list[Carrier] = []
    sig = step.get("signature")
    if isinstance(sig, str) and sig:
        out.append(
            Carrier(
                DIALECT, "thought_signature", f"steps[{i}].signature", sig, True,
                tool_call_id=call.id if call is not None else None,
            )
        )  # fmt: skip
    if call is None:
        for j, said in enumerate(summary_texts(step)):
            path = f"steps[{i}].summary[{j}].text"
            out.append(Carrier(DIALECT, "thought_summary", path, said, False, said))
    return out


def output_texts(step: JsonObject) -> list[str]:
    return [i["text"] for i in text_items(step.get("content"))]


def read_steps(steps: Sequence[JSON]) -> tuple[str, str, list[ToolCall], list[Carrier]]:
    """(text, reasoning text, tool calls, carriers) of a list of answer steps."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    carriers: list[Carrier] = []
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise MalformedBody(f"interactions steps[{i}] must be an object")
        kind = step.get("type")
        if kind == "thought":
            reasoning.extend(summary_texts(step))
            carriers.extend(step_carriers(step, i))
        elif kind == "function_call":
            call = tool_call_of(step, i)
            calls.append(call)
            carriers.extend(step_carriers(step, i, call))
        elif kind == "model_output":
            text.extend(output_texts(step))
    return "".join(text), "".join(reasoning), calls, carriers


def tool_call_of(step: JsonObject, i: int) -> ToolCall:
    call_id, name = step.get("id"), step.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise MalformedBody(f"interactions steps[{i}]: a function_call needs a string id and name")
    args = step.get("arguments")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise MalformedBody(f"interactions steps[{i}].arguments must be a JSON object")
    return ToolCall(call_id, name, arguments_text(args))


def parse_body(body: bytes | str | JSON) -> Turn:
    """A whole interaction (JSON body, or a stream's assembled state) -> Turn."""
    body = json_object(body, "interactions body")
    if body.get("object") not in (None, "interaction") or "status" not in body:
        raise MalformedBody("not an interaction: no 'status' (or 'object' is not 'interaction')")
    steps = body.get("steps")
    if steps is None:
        steps = []
    if not isinstance(steps, list):
        raise MalformedBody("interactions 'steps' must be a list")
    text, reasoning, calls, carriers = read_steps(steps)
    rid = body.get("id")
    model = body.get("model")
    status = body.get("status")
    return Turn(
        dialect=DIALECT,
        text=text,
        reasoning_text=reasoning,
        tool_calls=tuple(calls),
        carriers=tuple(carriers),
        usage=parse_usage(body.get("usage")),
        response_id=rid if isinstance(rid, str) and rid else None,
        model=model if isinstance(model, str) else None,
        finish_reason=status if isinstance(status, str) else None,
        native=Native(DIALECT, tuple(steps)),
        raw=body,
    )
