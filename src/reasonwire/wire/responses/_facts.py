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

from reasonwire.wire import shape as sh
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

_IN_PART = sh.Tagged(
    {
        "input_text": sh.Obj({"type": sh.Str(), "text": sh.Str()}),
        "output_text": sh.Obj({"type": sh.Str(), "text": sh.Str(), "annotations": sh.Anything()}),
        "refusal": sh.Obj({"type": sh.Str(), "refusal": sh.Str()}),
        "input_image": sh.Obj(
            {"type": sh.Str(), "image_url": sh.Str(), "file_id": sh.Str(), "detail": sh.Str()}
        ),
        "input_file": sh.Obj(
            {"type": sh.Str(), "file_id": sh.Str(), "file_data": sh.Str(), "filename": sh.Str()}
        ),
    }
)
_FUNCTION_CALL = MappingProxyType(
    {
        "type": sh.Str(),
        "id": sh.Str(),
        "call_id": sh.Str(),
        "name": sh.Str(),
        "arguments": sh.Str(),
        "status": sh.Str(),
    }
)
"""A function call item's fields, the same sent back and shown; only a sent one must name
its call (``call_id``, ``name``, ``arguments``)."""
_MESSAGE_IN = sh.Obj(
    {
        "type": sh.Str(),
        "id": sh.Str(),
        "role": sh.Const(frozenset({"system", "developer", "user", "assistant"})),
        "content": sh.OneOf((sh.Str(), sh.ListOf(_IN_PART))),
        "status": sh.Str(),
    },
    frozenset({"role", "content"}),
)
_ITEM_IN = sh.Tagged(
    {
        "message": _MESSAGE_IN,
        "function_call": sh.Obj(_FUNCTION_CALL, frozenset({"call_id", "name", "arguments"})),
        "function_call_output": sh.Obj(
            {
                "type": sh.Str(),
                "id": sh.Str(),
                "call_id": sh.Str(),
                "output": sh.OneOf((sh.Str(), sh.ListOf(_IN_PART))),
                "status": sh.Str(),
            },
            frozenset({"call_id", "output"}),
        ),
        # Looked up in the vault by id; never forwarded as the client sent it.
        "reasoning": sh.Obj(
            {
                "type": sh.Str(),
                "id": sh.Str(),
                "encrypted_content": sh.Nullable(sh.Str()),
                "summary": sh.Anything(),
                "content": sh.Anything(),
                "status": sh.Str(),
            }
        ),
        "item_reference": sh.Obj({"type": sh.Str(), "id": sh.Str()}, frozenset({"id"})),
    },
    untagged=_MESSAGE_IN,
)
REQUEST = sh.Obj(
    {
        "model": sh.Str(),
        "input": sh.OneOf((sh.Str(), sh.ListOf(_ITEM_IN))),
        "instructions": sh.Nullable(sh.Str()),
        "tools": sh.ListOf(sh.Anything()),
        "tool_choice": sh.Anything(),
        "parallel_tool_calls": sh.Bool(),
        "stream": sh.Bool(),
        "stream_options": sh.Anything(),
        "store": sh.Bool(),
        "previous_response_id": sh.Nullable(sh.Str()),
        "include": sh.ListOf(sh.Str()),
        "max_output_tokens": sh.Int(lo=1),
        "max_tool_calls": sh.Int(lo=1),
        "temperature": sh.Num(),
        "top_p": sh.Num(),
        "metadata": sh.Anything(),
        "text": sh.Anything(),
        "truncation": sh.Str(),
        "user": sh.Str(),
        "service_tier": sh.Str(),
        "prompt_cache_key": sh.Str(),
        "safety_identifier": sh.Str(),
        **{c.path[0]: sh.Anything() for c in CONTROLS},
    },
    frozenset({"model", "input"}),
)

# -- visible projection ---------------------------------------------------------------------

_OUT_PART = sh.Tagged(
    {
        "output_text": sh.Obj(
            {"type": sh.Str(), "text": sh.Str(text=True), "annotations": sh.ListOf(sh.Anything())}
        ),
        "refusal": sh.Obj({"type": sh.Str(), "refusal": sh.Str()}),
    }
)
_ITEM_OUT = sh.Tagged(
    {
        "message": sh.Obj(
            {
                "type": sh.Str(),
                "id": sh.Str(),
                "role": sh.Str(),
                "status": sh.Str(),
                "content": sh.ListOf(_OUT_PART),
            }
        ),
        "function_call": sh.Obj(_FUNCTION_CALL),
        # The opaque part only: id and encrypted_content; every text part is emptied.
        "reasoning": sh.Obj(
            {
                "type": sh.Str(),
                "id": sh.Str(),
                "encrypted_content": sh.Nullable(sh.Str()),
                "summary": sh.ListOf(sh.Tagged({})),
                "status": sh.Str(),
            }
        ),
    }
)
_USAGE = sh.Obj(
    {
        "input_tokens": sh.Int(),
        "input_tokens_details": sh.Obj({"cached_tokens": sh.Int()}),
        "output_tokens": sh.Int(),
        "output_tokens_details": sh.Obj({"reasoning_tokens": sh.Int()}),
        "total_tokens": sh.Int(),
        "cost": sh.Num(),
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
_ERROR = sh.Obj({"code": sh.Const(ERROR_TYPES), "type": sh.Const(ERROR_TYPES)})
VISIBLE = sh.Obj(
    {
        "id": sh.Str(),
        "object": sh.Str(),
        "created_at": sh.Num(),
        "completed_at": sh.Nullable(sh.Num()),
        "status": sh.Str(),
        "model": sh.Str(),
        "output": sh.ListOf(_ITEM_OUT),
        "usage": sh.Nullable(_USAGE),
        "error": sh.Nullable(_ERROR),
        "incomplete_details": sh.Nullable(sh.Obj({"reason": sh.Str()})),
        "previous_response_id": sh.Nullable(sh.Str()),
        "parallel_tool_calls": sh.Bool(),
        "tool_choice": sh.Anything(),
        "tools": sh.ListOf(sh.Anything()),
        "store": sh.Bool(),
        "max_output_tokens": sh.Nullable(sh.Int()),
        "temperature": sh.Nullable(sh.Num()),
        "top_p": sh.Nullable(sh.Num()),
        "truncation": sh.Nullable(sh.Str()),
        "metadata": sh.Anything(),
    }
)
"""What a governed client sees of a response: ids, status, message text, function calls,
reasoning items reduced to id + encrypted_content, usage."""

_SEQ = {"type": sh.Str(), "sequence_number": sh.Int()}
_AT = {**_SEQ, "item_id": sh.Str(), "output_index": sh.Int(), "content_index": sh.Int()}
_RESPONSE_EVENT = sh.Obj({**_SEQ, "response": VISIBLE})
_ITEM_EVENT = sh.Obj({**_SEQ, "output_index": sh.Int(), "item": _ITEM_OUT}, frozenset({"item"}))
_PART_EVENT = sh.Obj({**_AT, "part": _OUT_PART}, frozenset({"part"}))
STREAM_EVENT = sh.Tagged(
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
        "response.output_text.delta": sh.Obj({**_AT, "delta": sh.Str(text=True)}),
        "response.output_text.done": sh.Obj({**_AT, "text": sh.Str(text=True)}),
        "response.output_text.annotation.added": sh.Obj(
            {**_AT, "annotation_index": sh.Int(), "annotation": sh.Anything()}
        ),
        "response.refusal.delta": sh.Obj({**_AT, "delta": sh.Str()}),
        "response.refusal.done": sh.Obj({**_AT, "refusal": sh.Str()}),
        "response.function_call_arguments.delta": sh.Obj(
            {**_SEQ, "item_id": sh.Str(), "output_index": sh.Int(), "delta": sh.Str()}
        ),
        "response.function_call_arguments.done": sh.Obj(
            {
                **_SEQ,
                "item_id": sh.Str(),
                "output_index": sh.Int(),
                "arguments": sh.Str(),
                "name": sh.Str(),
            }
        ),
        "error": sh.Obj({**_SEQ, "code": sh.Const(ERROR_TYPES)}),
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
