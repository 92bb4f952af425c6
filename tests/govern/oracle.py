"""An inventory of reasoning controls written apart from the code under test, from the vendor
documentation summarised in ``shared/WIRE.md`` ("Reasoning controls ... beyond the four
dialects' own fields"). Tests compare what reaches the upstream against this list, never
against the dialect objects' own tables."""

from __future__ import annotations

from typing import Any

CONTROL_PATHS: dict[str, list[tuple[str, ...]]] = {
    "chat": [
        ("reasoning_effort",),  # OpenAI
        ("reasoning",),  # OpenRouter {effort, max_tokens, exclude, enabled}
        ("include_reasoning",),  # OpenRouter
        ("models",),  # OpenRouter fallback list
        ("provider",),  # OpenRouter routing preferences
        ("extra_body", "google", "thinking_config"),  # Gemini OpenAI-compat, literal key
        ("google", "thinking_config"),  # Gemini OpenAI-compat, top level
        ("chat_template_kwargs", "enable_thinking"),  # vLLM / SGLang
        ("chat_template_kwargs", "thinking"),
        ("chat_template_kwargs", "thinking_budget"),
        ("chat_template",),  # vLLM per-request template
        ("separate_reasoning",),  # SGLang
        ("enable_thinking",),  # Qwen hosted
        ("thinking_budget",),  # Qwen hosted
        ("thinking",),  # Z.ai / DeepSeek
        ("think",),  # Ollama
    ],
    "responses": [("reasoning",)],
    "anthropic": [("thinking",), ("output_config", "effort")],
}


ALL_PATHS = sorted({p for paths in CONTROL_PATHS.values() for p in paths})


def found_controls(dialect: str, body: Any) -> dict[str, Any]:
    """Every oracle control present in ``body``, by dotted path (``dialect="any"``: every
    dialect's, since a client may send a foreign dialect's field)."""
    out: dict[str, Any] = {}
    for path in ALL_PATHS if dialect == "any" else CONTROL_PATHS[dialect]:
        node = body
        for key in path:
            if not isinstance(node, dict) or key not in node:
                break
            node = node[key]
        else:
            out[".".join(path)] = node
    return out
