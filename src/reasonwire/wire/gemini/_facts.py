"""Gemini facts as data: carriers, controls, count endpoint, detection, the visible
projection and the harness variants.

Source: the Gemini API reference (generateContent, streamGenerateContent, countTokens,
thinking, thought signatures) and ``shared/WIRE.md``. Gemini's REST surface accepts
lowerCamelCase and snake_case field names alike, so both spellings are listed.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from reasonwire.wire.count_tokens import CountSpec
from reasonwire.wire.facts import CarrierKind, CarrierSpec, Control, EarlierTurns, Variants
from reasonwire.wire.model import JSON
from reasonwire.wire.shape import (
    Anything,
    Const,
    Int,
    ListOf,
    Nullable,
    Num,
    Obj,
    Str,
    Tagged,
)

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

_IN_PART = Tagged(
    {},
    key="thought",
    # A part marked ``thought`` is reasoning text a client replays: dropped (Gemini needs the
    # signatures, which ride on the other parts, not the thought summaries).
    untagged=Obj(
        {
            "text": Str(),
            "functionCall": Anything(),
            "function_call": Anything(),
            "functionResponse": Anything(),
            "function_response": Anything(),
            "inlineData": Anything(),
            "inline_data": Anything(),
            "fileData": Anything(),
            "file_data": Anything(),
            "thoughtSignature": Str(),
            "thought_signature": Str(),
        }
    ),
)
_CONTENT = Obj({"role": Const(frozenset({"user", "model"})), "parts": ListOf(_IN_PART)})
_GEN_CONFIG = Obj(
    {
        key: Anything()
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
REQUEST = Obj(
    {
        "contents": ListOf(_CONTENT),
        "systemInstruction": Anything(),
        "system_instruction": Anything(),
        "tools": ListOf(Anything()),
        "toolConfig": Anything(),
        "tool_config": Anything(),
        "safetySettings": ListOf(Anything()),
        "safety_settings": ListOf(Anything()),
        "generationConfig": _GEN_CONFIG,
        "generation_config": _GEN_CONFIG,
        "cachedContent": Str(),
        "cached_content": Str(),
        "labels": Anything(),
    },
    frozenset({"contents"}),
)
"""The generateContent request a governed client may send (both spellings: the REST surface
takes lowerCamelCase and snake_case alike)."""

GATEWAY_PATH = re.compile(r"^/v1beta/models/[^/:]+:(streamGenerateContent|generateContent)$")
STREAM_PATH = re.compile(r":streamGenerateContent$")

# -- visible projection ---------------------------------------------------------------------

_CALL = Obj({"name": Str(), "args": Anything(), "id": Str()})
_PART = Tagged(
    {},
    key="thought",
    # Parts without ``thought``: text, function calls, their opaque signatures.
    untagged=Obj(
        {
            "text": Str(text=True),
            "functionCall": _CALL,
            "function_call": _CALL,
            "thoughtSignature": Str(),
            "thought_signature": Str(),
        }
    ),
)
"""A part marked ``thought`` (any value) is dropped whole; others keep text, calls and the
signature that rides on them."""
_USAGE = Obj(
    {
        "promptTokenCount": Int(),
        "candidatesTokenCount": Int(),
        "thoughtsTokenCount": Int(),
        "cachedContentTokenCount": Int(),
        "totalTokenCount": Int(),
    }
)
VISIBLE = Obj(
    {
        "candidates": ListOf(
            Obj(
                {
                    "content": Obj({"role": Str(), "parts": ListOf(_PART)}),
                    "finishReason": Str(),
                    "index": Int(),
                }
            )
        ),
        "usageMetadata": _USAGE,
        "modelVersion": Str(),
        "responseId": Str(),
        "createTime": Str(),
        "avgLogprobs": Nullable(Num()),
    }
)

ERROR_TYPES = frozenset(
    {
        "INVALID_ARGUMENT",
        "FAILED_PRECONDITION",
        "PERMISSION_DENIED",
        "NOT_FOUND",
        "RESOURCE_EXHAUSTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DEADLINE_EXCEEDED",
    }
)


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
