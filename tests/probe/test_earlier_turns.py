"""The dialects' earlier-turn rules (``Dialect.earlier_turns``) against the documented table.

Expected verdicts are written out from the sources, not read from the facts: OpenAI's
reasoning guide (earlier reasoning discarded) and OpenRouter's ``ReasoningContext``
(``all_turns`` keeps it); Anthropic's context-windows page (earlier thinking not carried
forward) and its thinking block preservation list (Opus 4.5+, Sonnet 4.6+ keep it); the Gemini
recording ``pai__test_google__test_google_model_thinking_part.yaml`` (an earlier signature is
not billed as its thoughts, the thought text beside it is); Qwen3's chat template (reasoning
only after the last user query); Chat Completions otherwise: the template decides (unknown).
"""

from __future__ import annotations

from typing import Any

import pytest

from reasonwire.wire.registry import get_dialect

TABLE: list[tuple[str, str, dict[str, Any], str, str]] = [
    ("responses", "gpt-5.1", {}, "encrypted_content", "dropped"),
    ("responses", "gpt-5.1", {"reasoning": {"context": "all_turns"}}, "encrypted_content", "kept"),
    ("responses", "gpt-5.1", {"reasoning": {"context": "current_turn"}}, "summary_text",
     "dropped"),
    ("anthropic", "claude-sonnet-4-5-20250929", {}, "signature", "dropped"),
    ("anthropic", "claude-3-7-sonnet-20250219", {}, "thinking", "dropped"),
    ("anthropic", "claude-opus-4-5-20251101", {}, "signature", "kept"),
    ("anthropic", "claude-sonnet-4-6", {}, "thinking", "kept"),
    ("gemini", "gemini-3-pro-preview", {}, "thoughtSignature", "dropped"),
    ("gemini", "gemini-3-pro-preview", {}, "thought", "kept"),
    ("chat", "Qwen/Qwen3-8B", {}, "reasoning_content", "dropped"),
    ("chat", "deepseek-reasoner", {}, "reasoning_content", "unknown"),
]  # fmt: skip


@pytest.mark.parametrize(("dialect", "model", "body", "kind", "want"), TABLE)
def test_the_documented_verdict(
    dialect: str, model: str, body: dict[str, Any], kind: str, want: str
) -> None:
    rule = get_dialect(dialect).earlier_turns  # type: ignore[arg-type]
    assert rule.verdict_for(model, body, kind) == want
    assert rule.source


def test_a_dialect_without_a_rule_says_unknown() -> None:
    assert get_dialect("interactions").earlier_turns.verdict_for("gemini-3", {}, "x") == "unknown"
