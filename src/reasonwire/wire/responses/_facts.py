"""Responses API facts as data: carriers, controls, server state, count endpoint, the request
shape, the visible projection (answers and stream events) and the harness variants.

Source: OpenAI's Responses API reference (create, streaming events, input token counts,
conversation state) and ``shared/WIRE.md``.

Allow-list notes (found by the hostile-client tests, ``tests/govern/test_hostile_client.py``):
``function_call_output.output`` is a string or a list of input parts, typed like a message's
content, so a reasoning part a client puts there is dropped like any unknown part (reasoning
items are the only place reasoning is accepted, and those go through the vault).
"""

from __future__ import annotations

import re
from types import MappingProxyType

from reasonwire.wire.count_tokens import CountSpec
from reasonwire.wire.facts import (
    CarrierKind,
    CarrierSpec,
    Control,
    EarlierTurns,
    ServerState,
    Variants,
)
from reasonwire.wire.model import JSON
from reasonwire.wire.shape import (
    Anything,
    Bool,
    Const,
    Int,
    ListOf,
    Nullable,
    Num,
    Obj,
    OneOf,
    Str,
    Tagged,
)

CARRIERS = (
    CarrierKind("encrypted_content", True, "output[i](type=reasoning).encrypted_content"),
    CarrierKind("summary_text", False, "output[i](type=reasoning).summary[j].text"),
    CarrierKind("reasoning_text", False, "output[i](type=reasoning).content[j].text"),
)

FOLD_WHERE = MappingProxyType(
    {
        "summary_text": "input[i](type=reasoning).summary[j](type=summary_text).text",
        "reasoning_text": "input[i](type=reasoning).content[j](type=reasoning_text).text",
    }
)
"""Where the text carriers sit in a request (``Dialect.fold_where``); the item's
``encrypted_content`` is opaque and never listed."""

_REF = "OpenAI Responses API reference"
CONTROLS = (
    Control(("reasoning",), _REF, "effort, summary and context (all_turns) of reasoning"),
    Control(("reasoning_effort",), "OpenAI Chat Completions (foreign field)", "effort"),
    Control(("thinking",), "Anthropic / DeepSeek (foreign field)", "thinking switch"),
)

COUNT = CountSpec(
    "/responses/input_tokens",
    frozenset(
        {"model", "input", "instructions", "tools", "tool_choice", "reasoning", "text"}
        | {"parallel_tool_calls", "truncation"}
    ),
    "input_tokens",
)

SERVER_STATE = ServerState(
    store_field="store",
    previous_field="previous_response_id",
    store_default=True,
    stateful_profile="bare",
    stateless_profile="default",
    stateless_include=("reasoning.encrypted_content",),
)

# -- request shape --------------------------------------------------------------------------

_IN_PART = Tagged(
    {
        "input_text": Obj({"type": Str(), "text": Str()}),
        "output_text": Obj({"type": Str(), "text": Str(), "annotations": Anything()}),
        "refusal": Obj({"type": Str(), "refusal": Str()}),
        "input_image": Obj({"type": Str(), "image_url": Str(), "file_id": Str(), "detail": Str()}),
        "input_file": Obj({"type": Str(), "file_id": Str(), "file_data": Str(), "filename": Str()}),
    }
)
_MESSAGE_IN = Obj(
    {
        "type": Str(),
        "id": Str(),
        "role": Const(frozenset({"system", "developer", "user", "assistant"})),
        "content": OneOf((Str(), ListOf(_IN_PART))),
        "status": Str(),
    },
    frozenset({"role", "content"}),
)
_ITEM_IN = Tagged(
    {
        "message": _MESSAGE_IN,
        "function_call": Obj(
            {
                "type": Str(),
                "id": Str(),
                "call_id": Str(),
                "name": Str(),
                "arguments": Str(),
                "status": Str(),
            },
            frozenset({"call_id", "name", "arguments"}),
        ),
        "function_call_output": Obj(
            {
                "type": Str(),
                "id": Str(),
                "call_id": Str(),
                "output": OneOf((Str(), ListOf(_IN_PART))),
                "status": Str(),
            },
            frozenset({"call_id", "output"}),
        ),
        # Looked up in the vault by id; never forwarded as the client sent it.
        "reasoning": Obj(
            {
                "type": Str(),
                "id": Str(),
                "encrypted_content": Nullable(Str()),
                "summary": Anything(),
                "content": Anything(),
                "status": Str(),
            }
        ),
        "item_reference": Obj({"type": Str(), "id": Str()}, frozenset({"id"})),
    },
    untagged=_MESSAGE_IN,
)
REQUEST = Obj(
    {
        "model": Str(),
        "input": OneOf((Str(), ListOf(_ITEM_IN))),
        "instructions": Nullable(Str()),
        "tools": ListOf(Anything()),
        "tool_choice": Anything(),
        "parallel_tool_calls": Bool(),
        "stream": Bool(),
        "stream_options": Anything(),
        "store": Bool(),
        "previous_response_id": Nullable(Str()),
        "include": ListOf(Str()),
        "max_output_tokens": Int(lo=1),
        "max_tool_calls": Int(lo=1),
        "temperature": Num(),
        "top_p": Num(),
        "metadata": Anything(),
        "text": Anything(),
        "truncation": Str(),
        "user": Str(),
        "service_tier": Str(),
        "prompt_cache_key": Str(),
        "safety_identifier": Str(),
        **{c.path[0]: Anything() for c in CONTROLS},
    },
    frozenset({"model", "input"}),
)

# -- visible projection ---------------------------------------------------------------------

_OUT_PART = Tagged(
    {
        "output_text": Obj(
            {"type": Str(), "text": Str(text=True), "annotations": ListOf(Anything())}
        ),
        "refusal": Obj({"type": Str(), "refusal": Str()}),
    }
)
_ITEM_OUT = Tagged(
    {
        "message": Obj(
            {
                "type": Str(),
                "id": Str(),
                "role": Str(),
                "status": Str(),
                "content": ListOf(_OUT_PART),
            }
        ),
        "function_call": Obj(
            {
                "type": Str(),
                "id": Str(),
                "call_id": Str(),
                "name": Str(),
                "arguments": Str(),
                "status": Str(),
            }
        ),
        # The opaque part only: id and encrypted_content; every text part is emptied.
        "reasoning": Obj(
            {
                "type": Str(),
                "id": Str(),
                "encrypted_content": Nullable(Str()),
                "summary": ListOf(Tagged({})),
                "status": Str(),
            }
        ),
    }
)
_USAGE = Obj(
    {
        "input_tokens": Int(),
        "input_tokens_details": Obj({"cached_tokens": Int()}),
        "output_tokens": Int(),
        "output_tokens_details": Obj({"reasoning_tokens": Int()}),
        "total_tokens": Int(),
        "cost": Num(),
    }
)
ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "permission_error",
        "not_found_error",
        "rate_limit_error",
        "server_error",
        "api_error",
        "rate_limit_exceeded",
        "invalid_encrypted_content",
        "context_length_exceeded",
        "invalid_prompt",
        "model_not_found",
    }
)
_ERROR = Obj({"code": Const(ERROR_TYPES), "type": Const(ERROR_TYPES)})
VISIBLE = Obj(
    {
        "id": Str(),
        "object": Str(),
        "created_at": Num(),
        "completed_at": Nullable(Num()),
        "status": Str(),
        "model": Str(),
        "output": ListOf(_ITEM_OUT),
        "usage": Nullable(_USAGE),
        "error": Nullable(_ERROR),
        "incomplete_details": Nullable(Obj({"reason": Str()})),
        "previous_response_id": Nullable(Str()),
        "parallel_tool_calls": Bool(),
        "tool_choice": Anything(),
        "tools": ListOf(Anything()),
        "store": Bool(),
        "max_output_tokens": Nullable(Int()),
        "temperature": Nullable(Num()),
        "top_p": Nullable(Num()),
        "truncation": Nullable(Str()),
        "metadata": Anything(),
    }
)
"""What a governed client sees of a response: ids, status, message text, function calls,
reasoning items reduced to id + encrypted_content, usage."""

_SEQ = {"type": Str(), "sequence_number": Int()}
_AT = {**_SEQ, "item_id": Str(), "output_index": Int(), "content_index": Int()}
_RESPONSE_EVENT = Obj({**_SEQ, "response": VISIBLE})
_ITEM_EVENT = Obj({**_SEQ, "output_index": Int(), "item": _ITEM_OUT}, frozenset({"item"}))
_PART_EVENT = Obj({**_AT, "part": _OUT_PART}, frozenset({"part"}))
STREAM_EVENT = Tagged(
    {
        "response.created": _RESPONSE_EVENT,
        "response.in_progress": _RESPONSE_EVENT,
        "response.queued": _RESPONSE_EVENT,
        "response.completed": _RESPONSE_EVENT,
        "response.incomplete": _RESPONSE_EVENT,
        "response.failed": _RESPONSE_EVENT,
        "response.output_item.added": _ITEM_EVENT,
        "response.output_item.done": _ITEM_EVENT,
        "response.content_part.added": _PART_EVENT,
        "response.content_part.done": _PART_EVENT,
        "response.output_text.delta": Obj({**_AT, "delta": Str(text=True)}),
        "response.output_text.done": Obj({**_AT, "text": Str(text=True)}),
        "response.output_text.annotation.added": Obj(
            {**_AT, "annotation_index": Int(), "annotation": Anything()}
        ),
        "response.refusal.delta": Obj({**_AT, "delta": Str()}),
        "response.refusal.done": Obj({**_AT, "refusal": Str()}),
        "response.function_call_arguments.delta": Obj(
            {**_SEQ, "item_id": Str(), "output_index": Int(), "delta": Str()}
        ),
        "response.function_call_arguments.done": Obj(
            {**_SEQ, "item_id": Str(), "output_index": Int(), "arguments": Str(), "name": Str()}
        ),
        "error": Obj({**_SEQ, "code": Const(ERROR_TYPES)}),
    }
)
"""Every stream event a governed client may receive; reasoning summary and reasoning text
events, and any event kind not named here, are dropped whole."""


# -- the harness ----------------------------------------------------------------------------


def _text(trace: str) -> JSON:
    return trace


_TEXT_VARIANTS: dict[str, tuple[CarrierSpec, ...]] = {
    "none": (),
    "summary_item": (("summary_text", _text),),
    "content_item": (("reasoning_text", _text),),
}
VARIANTS = Variants(
    text=MappingProxyType(_TEXT_VARIANTS),
    opaque_extras=MappingProxyType(
        {"all_turns": MappingProxyType({"reasoning": {"context": "all_turns"}})}
    ),
)


def detects(payload: JSON) -> bool:
    if not isinstance(payload, dict):
        return False
    typ = payload.get("type")
    return (isinstance(typ, str) and typ.startswith("response.")) or payload.get(
        "object"
    ) == "response"


PATH = re.compile(r"/responses$", re.IGNORECASE)


EARLIER_TURNS = EarlierTurns(
    "dropped",
    "OpenAI reasoning guide, 'How reasoning works': 'Input and output tokens from each step "
    "are carried over, while reasoning tokens are discarded'; OpenRouter ReasoningContext: "
    "'all_turns includes reasoning from earlier turns passed in input' (reasoning.context); "
    "sim-gpt-allturns keeps every turn's (reasonwire.sim.behaviours)",
    models=(("sim-gpt-allturns", "kept"),),
    kept_when=((("reasoning", "context"), "all_turns"),),
)
"""Earlier-turn reasoning items on the Responses API are discarded from the context, unless
the request asks ``reasoning.context: all_turns``."""
