"""Gemini Interactions facts as data: carriers, controls, server state, request shape, visible
projection, error types, detection.

Sources (each fact below names one):

- [THINK] https://ai.google.dev/gemini-api/docs/interactions/thinking - "Every thought step
  contains two fields": ``signature`` (required, "always present") and an optional
  ``summary`` array, whose presence follows ``thinking_summaries``.
- [SIG] https://ai.google.dev/gemini-api/docs/thought-signatures - signatures go back exactly
  as received; on Gemini 3 a missing one is a 4xx validation error, and (Vertex AI's page of
  the same rule) a truncated or altered one a 400 ``INVALID_ARGUMENT``.
- [OVERVIEW] https://ai.google.dev/gemini-api/docs/interactions - server-side state is on by
  default (``store=true``), ``previous_interaction_id`` continues it, ``store=false`` is
  stateless (the client resends the history).
- [SDK] the official google-genai SDK (3.x, ``google.genai._gaos.types.interactions``): the
  request fields (``CreateModelInteractionParam``), step types (``thought``,
  ``function_call``, ``function_result``, ``user_input``, ``model_output``),
  ``GenerationConfig.thinking_level`` (minimal, low, medium, high, xhigh) and
  ``thinking_summaries`` (auto, none), the stream deltas (``thought_signature``,
  ``thought_summary``, ``text``, ``arguments_delta``) and the usage counters.
- [REC] ``conformance/cassettes-2026/vercel__google-interactions__*``: real answers and a real
  stream (``object: "interaction"``, ``status: requires_action``, ``steps``, the
  ``event_type`` events, usage ``total_tokens = total_input_tokens + total_output_tokens +
  total_thought_tokens``).
"""

from __future__ import annotations

import re

from reasonwire.wire import shape as sh
from reasonwire.wire.facts import GOOGLE_RPC_STATUSES, CarrierKind, Control, ServerState, Variants
from reasonwire.wire.model import JSON

CARRIERS = (
    # [THINK] the signature is the model's reasoning state; it must come back [SIG]
    CarrierKind("thought_signature", True, "steps[i](type=thought).signature"),
    # [THINK] readable summary of the reasoning, optional
    CarrierKind("thought_summary", False, "steps[i](type=thought).summary[j].text"),
)

_SDK = "google-genai SDK, interactions GenerationConfig [SDK]"
_AGENT = "google-genai SDK, interactions CreateAgentInteraction [SDK]"
CONTROLS = (
    Control(("generation_config", "thinking_level"), _SDK, "thinking depth (minimal..xhigh)"),
    Control(("generation_config", "thinking_summaries"), _SDK, "auto | none: thought summaries"),
    Control(("agent",), _AGENT, "runs an agent (e.g. deep research) instead of the model"),
    Control(("agent_config",), _AGENT, "agent settings, incl. thinking_summaries"),
)
"""Every request field that sets or raises reasoning or changes what runs."""

SERVER_STATE = ServerState(
    store_field="store",
    previous_field="previous_interaction_id",
    store_default=True,  # [OVERVIEW]
    stateful_profile="default",
    stateless_profile="default",
    stateless_include=(),  # thought steps always carry their signature [THINK]
)

NO_EFFORT = frozenset({"none"})
"""Effort values that mean "send no thinking_level" (the model's own default applies)."""

VARIANTS = Variants(
    none_reason=(
        "a thought step without its signature is refused [THINK: signature required]: "
        "Interactions is measured by the opaque step"
    )
)

# -- request shape: what a governed client may send ---------------------------------------

_TEXT = sh.Obj({"type": sh.Const(frozenset({"text"})), "text": sh.Str()})
_CONTENT = sh.ListOf(sh.Anything())
_FUNCTION_CALL = sh.Obj(
    {
        "type": sh.Str(),
        "id": sh.Str(),
        "name": sh.Str(),
        "arguments": sh.Anything(),
        "signature": sh.Str(),
    }
)
"""A function call step, as a client sends it back and as it is shown (the same fields)."""
_IN_STEP = sh.Tagged(
    {
        "user_input": sh.Obj({"type": sh.Str(), "content": _CONTENT}),
        "model_output": sh.Obj({"type": sh.Str(), "content": _CONTENT}),
        # a replayed thought keeps its opaque signature; its readable summary is dropped
        "thought": sh.Obj({"type": sh.Str(), "signature": sh.Str()}),
        "function_call": _FUNCTION_CALL,
        "function_result": sh.Obj(
            {"type": sh.Str(), "call_id": sh.Str(), "name": sh.Str(), "result": sh.Anything(),
             "is_error": sh.Anything()}
        ),
        # a bare content item (``input`` given as a list of contents) [SDK]
        "text": _TEXT,
    },
    key="type",
    closed=True,
)  # fmt: skip
_GEN_CONFIG = sh.Obj(
    {
        key: sh.Anything()
        for key in (
            "max_output_tokens", "seed", "stop_sequences", "temperature", "top_p",
            "tool_choice", "speech_config", "image_config",
            # controls, typed here and removed by the inventory
            "thinking_level", "thinking_summaries",
        )
    }
)  # fmt: skip
REQUEST = sh.Obj(
    {
        "model": sh.Str(),
        "input": sh.OneOf((sh.Str(), sh.ListOf(_IN_STEP), _TEXT)),  # text, steps or contents [SDK]
        "system_instruction": sh.Str(),
        "tools": sh.ListOf(sh.Anything()),
        "generation_config": _GEN_CONFIG,
        "response_format": sh.Anything(),
        "response_mime_type": sh.Str(),
        "response_modalities": sh.ListOf(sh.Str()),
        "safety_settings": sh.ListOf(sh.Anything()),
        "previous_interaction_id": sh.Str(),
        "store": sh.Anything(),
        "stream": sh.Anything(),
        "service_tier": sh.Str(),
        "labels": sh.Anything(),
        # controls
        "agent": sh.Anything(),
        "agent_config": sh.Anything(),
    },
    frozenset({"model"}),
)
"""The create-interaction body a governed client may send [SDK] (allow-list: a step or
content type not listed is refused, naming its path)."""

GATEWAY_PATH = "/v1beta/interactions"
PATH = re.compile(r"/interactions$")

# -- visible projection ---------------------------------------------------------------------

_OUT_TEXT = sh.Obj({"type": sh.Str(), "text": sh.Str(text=True), "annotations": sh.Anything()})
_OUT_STEP = sh.Tagged(
    {
        "model_output": sh.Obj({"type": sh.Str(), "content": sh.ListOf(_OUT_TEXT)}),
        # the signature stays visible (it is opaque and must come back [SIG]); the summary
        # is readable reasoning and is not shown
        "thought": sh.Obj({"type": sh.Str(), "signature": sh.Str()}),
        "function_call": _FUNCTION_CALL,
    },
    key="type",
)  # fmt: skip
_USAGE = sh.Obj(
    {
        key: sh.Int()
        for key in (
            "total_tokens", "total_input_tokens", "total_output_tokens", "total_thought_tokens",
            "total_cached_tokens", "total_tool_use_tokens",
        )
    }
)  # fmt: skip
_INTERACTION = sh.Obj(
    {
        "id": sh.Str(),
        "object": sh.Str(),
        "status": sh.Str(),
        "model": sh.Str(),
        "created": sh.Str(),
        "updated": sh.Str(),
        "service_tier": sh.Str(),
        "usage": _USAGE,
        "steps": sh.ListOf(_OUT_STEP),
    }
)
VISIBLE = _INTERACTION

_DELTA = sh.Tagged(
    {
        "text": sh.Obj({"type": sh.Str(), "text": sh.Str(text=True)}),
        "thought_signature": sh.Obj({"type": sh.Str(), "signature": sh.Str()}),
        "arguments_delta": sh.Obj({"type": sh.Str(), "arguments": sh.Str()}),
    },
    key="type",
)
STREAM = sh.Obj(
    {
        "event_type": sh.Const(
            frozenset(
                {
                    "interaction.created", "interaction.status_update", "step.start",
                    "step.delta", "step.stop", "interaction.completed", "error",
                }
            )
        ),
        "event_id": sh.Str(),
        "interaction": _INTERACTION,
        "interaction_id": sh.Str(),
        "status": sh.Str(),
        "index": sh.Int(),
        "step": _OUT_STEP,
        "delta": _DELTA,
        "error": sh.Obj({"code": sh.Anything(), "message": sh.Str()}),
    }
)  # fmt: skip
"""Each stream event a governed client may see [REC, SDK]; a thought summary delta or a
summary on a step start is dropped."""

ERROR_TYPES = GOOGLE_RPC_STATUSES

EVENT_TYPES = frozenset(
    {
        "interaction.created",
        "interaction.status_update",
        "step.start",
        "step.delta",
        "step.stop",
        "interaction.completed",
    }
)
"""The event types of the recorded stream [REC]."""


def detects(payload: JSON) -> bool:
    """An interaction body (``object: "interaction"``) or one of its stream events [REC]."""
    if not isinstance(payload, dict):
        return False
    return payload.get("object") == "interaction" or payload.get("event_type") in EVENT_TYPES
