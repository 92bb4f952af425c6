"""``GET /v1/models``: an OpenRouter-style catalog of the simulated models.

Besides every behaviour model it lists what catalog filters must cope with: a ``~`` alias, a
``:batch`` variant, a non-reasoning model and a model whose output is not text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reasonwire.sim.behaviours import BEHAVIOURS, Behaviour
from reasonwire.sim.pricing import PRICES

if TYPE_CHECKING:
    from reasonwire.wire.model import JsonObject

#: extra ids the catalog lists and the server resolves to a behaviour model
ALIASES: dict[str, str] = {
    "~sim/chat-latest": "sim-chat-all",
    "~sim/claude-latest": "sim-claude-preserve",
    "sim-chat-all:batch": "sim-chat-all",
    "sim-gpt:batch": "sim-gpt",
}
#: catalog-only models that no endpoint serves (non-text output)
NON_TEXT: dict[str, list[str]] = {"sim-image": ["image"], "sim-tts": ["audio"]}

_SUPPORTED = {
    "chat": [
        "max_tokens",
        "temperature",
        "tools",
        "tool_choice",
        "stream",
        "reasoning",
        "include_reasoning",
        "reasoning_effort",
        "response_format",
    ],
    "responses": [
        "max_output_tokens",
        "tools",
        "tool_choice",
        "stream",
        "reasoning",
        "include",
        "store",
        "previous_response_id",
    ],
    "anthropic": ["max_tokens", "tools", "tool_choice", "stream", "thinking", "temperature"],
    "gemini": ["maxOutputTokens", "tools", "thinkingConfig", "temperature"],
    "interactions": ["generation_config", "tools", "stream", "store", "previous_interaction_id"],
}


def resolve(model: str) -> Behaviour | None:
    """The behaviour for a requested id (aliases and ``:batch`` variants included)."""
    return BEHAVIOURS.get(ALIASES.get(model, model))


def _entry(mid: str, beh: Behaviour | None, modalities: list[str]) -> JsonObject:
    base = ALIASES.get(mid, mid)
    pin, pout = PRICES.get(base, (1e-6, 0.0))
    params = [p for p in _SUPPORTED[beh.dialect] if p not in beh.reject_params] if beh else []
    if beh is not None and not beh.reasons:
        params = [p for p in params if "reason" not in p and p != "thinking"]
    return {
        "id": mid,
        "canonical_slug": base,
        "name": f"Simulator: {mid}",
        "created": 1767225600,
        "description": beh.description if beh else f"catalog-only {modalities[0]} model",
        "context_length": 131072,
        "architecture": {
            "modality": f"text->{'+'.join(modalities)}",
            "input_modalities": ["text"],
            "output_modalities": modalities,
            "tokenizer": "sim",
        },
        "pricing": {
            "prompt": f"{pin:.10f}".rstrip("0").rstrip(".") or "0",
            "completion": f"{pout:.10f}".rstrip("0").rstrip(".") or "0",
            "request": "0",
            "image": "0",
        },
        "top_provider": {"context_length": 131072, "max_completion_tokens": 32768},
        "supported_parameters": params,
        "dialect": beh.dialect if beh else None,
    }


def catalog() -> JsonObject:
    data = [_entry(m, b, ["text"]) for m, b in BEHAVIOURS.items()]
    data += [_entry(a, BEHAVIOURS[t], ["text"]) for a, t in ALIASES.items()]
    data += [_entry(m, None, mods) for m, mods in NON_TEXT.items()]
    return {"data": data}
