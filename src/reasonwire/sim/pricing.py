"""Per-token prices of the simulated models (USD), shared by the catalog and usage.cost."""

from __future__ import annotations

#: model id -> (prompt USD/token, completion USD/token)
PRICES: dict[str, tuple[float, float]] = {
    "sim-chat-all": (1e-7, 4e-7),
    "sim-qwen3": (2e-7, 6e-7),
    "sim-vllm": (0.0, 0.0),
    "sim-chat-ignore": (1e-7, 2e-7),
    "sim-r1": (5.5e-7, 2.19e-6),
    "sim-deepseek": (2.8e-7, 4.2e-7),
    "sim-llamacpp": (0.0, 0.0),
    "sim-openrouter": (1.1e-6, 4.4e-6),
    "sim-portal": (1e-6, 3e-6),
    "sim-grok-refuse": (3e-6, 1.5e-5),
    "sim-chat-filter": (1e-6, 5e-6),
    "sim-o-strict": (2e-6, 8e-6),
    "sim-plain": (1.5e-7, 6e-7),
    "sim-gpt": (1.25e-6, 1e-5),
    "sim-gpt-allturns": (1.25e-6, 1e-5),
    "sim-gpt-lowskip": (2.5e-7, 2e-6),
    "sim-claude": (3e-6, 1.5e-5),
    "sim-claude-preserve": (3e-6, 1.5e-5),
    "sim-claude-redacted": (3e-6, 1.5e-5),
    "sim-gemini": (2e-6, 1.2e-5),
    "sim-gemini-25": (1.25e-6, 1e-5),
}


def cost(model: str, prompt: int, completion: int) -> float:
    pin, pout = PRICES.get(model, (0.0, 0.0))
    return round(prompt * pin + completion * pout, 10)
