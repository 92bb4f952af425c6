"""Shared pieces for the agent tests: the simulator, a request-recording client, tools."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from reasonwire import agent
from reasonwire.http import RetryPolicy
from reasonwire.sim.pytest_plugin import sim_server  # noqa: F401  (the shared fixture)
from reasonwire.sim.server import SimServer

TEST_KEY = "sk-agenttest-0123456789abcdefghij"
FAST = RetryPolicy(retries=2, backoff_base=0.0, jitter=0.0)


def key() -> str:
    return TEST_KEY


class Recorder:
    """Keeps every request body and response status a client saw, in order."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.urls: list[str] = []
        self.headers: list[httpx.Headers] = []
        self.statuses: list[int] = []

    def on_request(self, request: httpx.Request) -> None:
        self.bodies.append(request.content)
        self.urls.append(str(request.url))
        self.headers.append(request.headers)

    def on_response(self, response: httpx.Response) -> None:
        self.statuses.append(response.status_code)

    async def aon_request(self, request: httpx.Request) -> None:
        self.on_request(request)

    async def aon_response(self, response: httpx.Response) -> None:
        self.on_response(response)

    def json(self, i: int) -> Any:
        return json.loads(self.bodies[i])

    def client(self) -> httpx.Client:
        return httpx.Client(
            timeout=10,
            event_hooks={"request": [self.on_request], "response": [self.on_response]},
        )

    def async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=10,
            event_hooks={"request": [self.aon_request], "response": [self.aon_response]},
        )


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: found; next tool: weather"


def weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


TOOLS = (lookup, weather)

ModelFactory = Callable[[SimServer, Any], agent.Model]

SIM_MODELS: dict[str, ModelFactory] = {
    "responses-store": lambda s, c: agent.openai(
        "sim-gpt", base_url=s.base_url, key=key, http_client=c, retries=FAST
    ),
    "responses-replay": lambda s, c: agent.openai(
        "sim-gpt", store=False, base_url=s.base_url, key=key, http_client=c, retries=FAST
    ),
    "openrouter-responses": lambda s, c: agent.openrouter(
        "sim-gpt", effort="low", base_url=s.base_url, key=key, http_client=c, retries=FAST
    ),
    "chat-deepseek": lambda s, c: agent.openai_compatible(
        base_url=s.base_url, model="sim-deepseek", profile="deepseek", effort="high",
        http_client=c, retries=FAST,
    ),
    "chat-openrouter-details": lambda s, c: agent.openai_compatible(
        base_url=s.base_url, model="sim-openrouter", profile="openrouter", effort="high",
        http_client=c, retries=FAST,
    ),
    "chat-llamacpp": lambda s, c: agent.openai_compatible(
        base_url=s.base_url, model="sim-llamacpp", profile="llamacpp", http_client=c,
        retries=FAST,
    ),
    "anthropic-thinking": lambda s, c: agent.anthropic(
        "sim-claude", base_url=s.root_url, key=key, http_client=c, retries=FAST
    ),
    "anthropic-redacted": lambda s, c: agent.anthropic(
        "sim-claude-redacted", base_url=s.root_url, key=key, http_client=c, retries=FAST
    ),
    "gemini": lambda s, c: agent.gemini(
        "sim-gemini", effort="high", base_url=s.root_url, key=key, http_client=c, retries=FAST
    ),
    "interactions-store": lambda s, c: agent.gemini_interactions(
        "sim-gemini-interactions", effort="high", base_url=s.root_url, key=key, http_client=c,
        retries=FAST,
    ),
    "interactions-stateless": lambda s, c: agent.gemini_interactions(
        "sim-gemini-interactions", store=False, effort="high", base_url=s.root_url, key=key,
        http_client=c, retries=FAST,
    ),
}  # fmt: skip


SDK_ENV = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
    "GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_API_VERSION",
    "OPENROUTER_API_KEY", "OPENROUTER_BASE_URL",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _hermetic_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No SDK variable of the machine running the tests, and no ~/.hermes/.env, leaks in."""
    for name in SDK_ENV:
        monkeypatch.delenv(name, raising=False)
    missing = tmp_path_factory.getbasetemp() / "no-such-dir" / ".env"
    monkeypatch.setattr(agent.models, "DOTENV_FALLBACK", str(missing))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    yield Recorder()
