"""Gemini facts as data: carriers, controls, count endpoint, detection, the visible
projection and the harness variants.

Source: the Gemini API reference (generateContent, streamGenerateContent, countTokens,
thinking, thought signatures) and ``shared/WIRE.md``. Gemini's REST surface accepts
lowerCamelCase and snake_case field names alike, so both spellings are listed.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from reasonwire.wire import shape as sh
from reasonwire.wire.count_tokens import CountSpec
from reasonwire.wire.facts import (
    GOOGLE_RPC_STATUSES,
    CarrierKind,
    CarrierSpec,
    Control,
    EarlierTurns,
    Variants,
)
from reasonwire.wire.model import JSON

CARRIERS = (
    CarrierKind("thought", False, "candidates[0].content.parts[i](thought=true).text"),
    CarrierKind("thoughtSignature", True, "candidates[0].content.parts[i].thoughtSignature"),
)

FOLD_WHERE = MappingProxyType(
    {
        # a thought part that carries a signature on itself is left whole (signed)
        "thought": (
            "contents[i](role=model).parts[j](thought=true,!thoughtSignature,!thought_signature)"
            ".text"
        ),
    }
)
"""Where the text carriers sit in a request (``Dialect.fold_where``)."""

_REF = "Gemini API reference (thinking)"
CONTROLS = (
    Control(("generationConfig", "thinkingConfig"), _REF, "thinkingBudget, thinkingLevel"),
    Control(("generation_config", "thinking_config"), _REF, "the same, snake_case"),
)

COUNT = CountSpec("/models/{model}:countTokens", frozenset({"contents"}), "totalTokens")
"""countTokens takes ``contents`` alone (system and tools only inside a nested
generateContentRequest); a with/without difference needs nothing else."""

# -- request shape: what a governed client may send ---------------------------------------

_IN_PART = sh.Tagged(
    {},
    key="thought",
    # A part marked ``thought`` is reasoning text a client replays: dropped (Gemini needs the
    # signatures, which ride on the other parts, not the thought summaries).
    untagged=sh.Obj(
        {
            "text": sh.Str(),
            "functionCall": sh.Anything(),
            "function_call": sh.Anything(),
            "functionResponse": sh.Anything(),
            "function_response": sh.Anything(),
            "inlineData": sh.Anything(),
            "inline_data": sh.Anything(),
            "fileData": sh.Anything(),
            "file_data": sh.Anything(),
            "thoughtSignature": sh.Str(),
            "thought_signature": sh.Str(),
        }
    ),
)
_CONTENT = sh.Obj({"role": sh.Const(frozenset({"user", "model"})), "parts": sh.ListOf(_IN_PART)})
_GEN_CONFIG = sh.Obj(
    {
        key: sh.Anything()
        for key in (
            "temperature", "topP", "top_p", "topK", "top_k", "maxOutputTokens",
            "max_output_tokens", "candidateCount", "candidate_count", "stopSequences",
            "stop_sequences", "responseMimeType", "response_mime_type", "responseSchema",
            "response_schema", "responseJsonSchema", "response_json_schema", "seed",
            "presencePenalty", "presence_penalty", "frequencyPenalty", "frequency_penalty",
            # controls, typed here and removed by the inventory
            "thinkingConfig", "thinking_config",
        )
    }
)  # fmt: skip
REQUEST = sh.Obj(
    {
        "contents": sh.ListOf(_CONTENT),
        "systemInstruction": sh.Anything(),
        "system_instruction": sh.Anything(),
        "tools": sh.ListOf(sh.Anything()),
        "toolConfig": sh.Anything(),
        "tool_config": sh.Anything(),
        "safetySettings": sh.ListOf(sh.Anything()),
        "safety_settings": sh.ListOf(sh.Anything()),
        "generationConfig": _GEN_CONFIG,
        "generation_config": _GEN_CONFIG,
        "cachedContent": sh.Str(),
        "cached_content": sh.Str(),
        "labels": sh.Anything(),
    },
    frozenset({"contents"}),
)
"""The generateContent request a governed client may send (both spellings: the REST surface
takes lowerCamelCase and snake_case alike)."""

GATEWAY_PATH = re.compile(r"^/v1beta/models/[^/:]+:(streamGenerateContent|generateContent)$")
STREAM_PATH = re.compile(r":streamGenerateContent$")

# -- visible projection ---------------------------------------------------------------------

_CALL = sh.Obj({"name": sh.Str(), "args": sh.Anything(), "id": sh.Str()})
_PART = sh.Tagged(
    {},
    key="thought",
    # Parts without ``thought``: text, function calls, their opaque signatures.
    untagged=sh.Obj(
        {
            "text": sh.Str(text=True),
            "functionCall": _CALL,
            "function_call": _CALL,
            "thoughtSignature": sh.Str(),
            "thought_signature": sh.Str(),
        }
    ),
)
"""A part marked ``thought`` (any value) is dropped whole; others keep text, calls and the
signature that rides on them."""
_USAGE = sh.Obj(
    {
        "promptTokenCount": sh.Int(),
        "candidatesTokenCount": sh.Int(),
        "thoughtsTokenCount": sh.Int(),
        "cachedContentTokenCount": sh.Int(),
        "totalTokenCount": sh.Int(),
    }
)
VISIBLE = sh.Obj(
    {
        "candidates": sh.ListOf(
            sh.Obj(
                {
                    "content": sh.Obj({"role": sh.Str(), "parts": sh.ListOf(_PART)}),
                    "finishReason": sh.Str(),
                    "index": sh.Int(),
                }
            )
        ),
        "usageMetadata": _USAGE,
        "modelVersion": sh.Str(),
        "responseId": sh.Str(),
        "createTime": sh.Str(),
        "avgLogprobs": sh.Nullable(sh.Num()),
    }
)

ERROR_TYPES = GOOGLE_RPC_STATUSES


def _text(trace: str) -> JSON:
    return trace


_TEXT_VARIANTS: dict[str, tuple[CarrierSpec, ...]] = {
    "none": (),
    "thought_part": (("thought", _text),),
}
VARIANTS = Variants(text=MappingProxyType(_TEXT_VARIANTS), stand_in=True)


def detects(payload: JSON) -> bool:
    return isinstance(payload, dict) and ("candidates" in payload or "usageMetadata" in payload)


PATH = re.compile(r":(stream)?generatecontent$", re.IGNORECASE)
JSON_STREAM_PATH = re.compile(r":streamgeneratecontent$", re.IGNORECASE)
"""Endpoints that stream as one progressively delivered JSON array over application/json
(without ``?alt=sse``), so the content type alone does not reveal the stream."""
MODEL_IN_PATH = re.compile(r"/models/([^/:]+):", re.IGNORECASE)


EARLIER_TURNS = EarlierTurns(
    "dropped",
    "WIRE.md > Gemini: a signature is required for 'each step of the current turn'; recording "
    "pai__test_google__test_google_model_thinking_part.yaml: after an answer of 1001 thought "
    "and 736 text tokens, the next turn's input grew by 1251 tokens, so the earlier turn's "
    "signature did not bring its thoughts back as input, while the 2238 characters of thought "
    "text re-sent beside it were (1251 = 736 text + the new question + about 500)",
    kinds=(("thought", "kept"),),
)
"""Earlier-turn signatures on Gemini: not billed as the thoughts they seal (in the current
turn's loop they are: the signature recordings show the prompt growing by the producer's
``thoughtsTokenCount``)."""
