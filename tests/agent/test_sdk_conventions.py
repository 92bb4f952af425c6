"""Keys and base URLs as the official SDKs document them, for every model constructor.

Each case is written from the SDK's documented convention only: the key passed by value
(``api_key=``), the key in the SDK's variable, the base URL in the SDK's variable, and a
``base_url`` argument with the SDK's meaning (OpenAI: with ``/v1``; Anthropic: without, the
client adds ``/v1/messages``; google-genai: the host, the API version is added). Every case
runs a full tool loop against the simulator. The official SDKs themselves are run under the
very same environment to show the environment is what they document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import _api_client as genai_api_client

from reasonwire import agent, credentials
from reasonwire.errors import ConfigError, CredentialError
from reasonwire.routes import Route, get_route
from reasonwire.sim.server import SimServer
from tests.agent.conftest import FAST, TOOLS, Recorder

DEAD = "http://127.0.0.1:9"  # nothing listens on the discard port: a request there fails


def make_key(prefix: str, n: int = 40) -> str:
    return prefix + "k" * (n // 2) + "7" * (n - n // 2)


@dataclass(frozen=True)
class Case:
    make: Callable[..., agent.Model]
    key_env: str
    header: str
    scheme: str
    base_env: str
    sdk_base: Callable[[SimServer], str]
    """The base URL with the SDK's meaning that reaches the simulator."""
    builtin: str
    """The route base URL (where request paths are appended) with nothing configured."""
    extra_env: tuple[tuple[str, str], ...] = ()
    """Other variables the SDK documents for this setup (google-genai's API version)."""


def _v1(s: SimServer) -> str:
    return s.root_url + "/v1"


def _root(s: SimServer) -> str:
    return s.root_url


CASES: dict[str, Case] = {
    "openai": Case(
        lambda **kw: agent.openai("sim-gpt", **kw), "OPENAI_API_KEY", "authorization",
        "Bearer ", "OPENAI_BASE_URL", _v1, "https://api.openai.com/v1",
    ),
    "openai-store-false": Case(
        lambda **kw: agent.openai("sim-gpt", store=False, **kw), "OPENAI_API_KEY",
        "authorization", "Bearer ", "OPENAI_BASE_URL", _v1, "https://api.openai.com/v1",
    ),
    "openrouter": Case(
        lambda **kw: agent.openrouter("sim-gpt", effort="low", **kw), "OPENROUTER_API_KEY",
        "authorization", "Bearer ", "OPENROUTER_BASE_URL", _v1, "https://openrouter.ai/api/v1",
    ),
    "openrouter-chat": Case(
        lambda **kw: agent.openrouter("sim-openrouter", api="chat", effort="high", **kw),
        "OPENROUTER_API_KEY", "authorization", "Bearer ", "OPENROUTER_BASE_URL", _v1,
        "https://openrouter.ai/api/v1",
    ),
    "openai_compatible": Case(
        lambda **kw: agent.openai_compatible(
            model="sim-deepseek", profile="deepseek", effort="high", **kw
        ),
        "OPENAI_API_KEY", "authorization", "Bearer ", "OPENAI_BASE_URL", _v1, "",
    ),
    "anthropic": Case(
        lambda **kw: agent.anthropic("sim-claude", **kw), "ANTHROPIC_API_KEY", "x-api-key", "",
        "ANTHROPIC_BASE_URL", _root, "https://api.anthropic.com/v1",
    ),
    "gemini": Case(
        lambda **kw: agent.gemini("sim-gemini", effort="high", **kw), "GOOGLE_API_KEY",
        "x-goog-api-key", "", "GOOGLE_GEMINI_BASE_URL", _root,
        "https://generativelanguage.googleapis.com/v1beta",
        (("GOOGLE_GENAI_API_VERSION", "v1beta"),),
    ),
    "gemini-GEMINI_API_KEY": Case(
        lambda **kw: agent.gemini("sim-gemini", **kw), "GEMINI_API_KEY", "x-goog-api-key", "",
        "GOOGLE_GEMINI_BASE_URL", _root, "https://generativelanguage.googleapis.com/v1beta",
    ),
    "from_route-openai-responses": Case(
        lambda **kw: agent.from_route("openai-responses", "sim-gpt", store=False, **kw),
        "OPENAI_API_KEY", "authorization", "Bearer ", "OPENAI_BASE_URL", _v1,
        "https://api.openai.com/v1",
    ),
    "from_route-openai-chat": Case(
        lambda **kw: agent.from_route("openai-chat", "sim-plain", **kw), "OPENAI_API_KEY",
        "authorization", "Bearer ", "OPENAI_BASE_URL", _v1, "https://api.openai.com/v1",
    ),
    "from_route-anthropic": Case(
        lambda **kw: agent.from_route("anthropic", "sim-claude", effort="adaptive", **kw),
        "ANTHROPIC_API_KEY", "x-api-key", "", "ANTHROPIC_BASE_URL", _root,
        "https://api.anthropic.com/v1",
    ),
    "from_route-gemini-native": Case(
        lambda **kw: agent.from_route("gemini-native", "sim-gemini", **kw), "GOOGLE_API_KEY",
        "x-goog-api-key", "", "GOOGLE_GEMINI_BASE_URL", _root,
        "https://generativelanguage.googleapis.com/v1beta",
    ),
}  # fmt: skip


def _run(model: agent.Model, rec: Recorder) -> agent.RunResult:
    return agent.Agent(model, TOOLS).run("What is the weather in Paris?")


def _loop(case: Case, rec: Recorder, **kw: Any) -> agent.RunResult:
    with rec.client() as c:
        result = _run(case.make(http_client=c, retries=FAST, **kw), rec)
    assert rec.statuses == [200, 200, 200]
    assert result.rounds == 2 and "sunny" in result.answer
    return result


def _sent_key(case: Case, rec: Recorder) -> set[str | None]:
    return {h.get(case.header) for h in rec.headers}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    def setenv(**values: str) -> None:
        for k, v in values.items():
            monkeypatch.setenv(k, v)

    yield setenv


@pytest.mark.parametrize("name", list(CASES))
def test_key_by_value(sim_server: SimServer, recorder: Recorder, name: str) -> None:
    case = CASES[name]
    k = make_key("sk-value-")
    _loop(case, recorder, api_key=k, base_url=case.sdk_base(sim_server))
    assert _sent_key(case, recorder) == {case.scheme + k}


@pytest.mark.parametrize("name", list(CASES))
def test_key_from_the_sdk_variable_and_base_url_from_the_sdk_variable(
    sim_server: SimServer, recorder: Recorder, env: Callable[..., None], name: str
) -> None:
    case = CASES[name]
    k = make_key("sk-env-")
    env(**{case.key_env: k, case.base_env: case.sdk_base(sim_server)}, **dict(case.extra_env))
    result = _loop(case, recorder)
    assert _sent_key(case, recorder) == {case.scheme + k}
    assert all(u.startswith(case.sdk_base(sim_server) + "/") for u in recorder.urls)
    assert k not in repr(result) and k not in json.dumps(result.as_dict())


@pytest.mark.parametrize("name", list(CASES))
def test_base_url_argument_has_the_sdk_meaning_and_beats_the_variable(
    sim_server: SimServer, recorder: Recorder, env: Callable[..., None], name: str
) -> None:
    case = CASES[name]
    env(**{case.base_env: DEAD})
    _loop(case, recorder, api_key=make_key("sk-arg-"), base_url=case.sdk_base(sim_server))
    assert not any(u.startswith(DEAD) for u in recorder.urls)


@pytest.mark.parametrize("name", [n for n in CASES if CASES[n].builtin])
def test_built_in_base_url_when_nothing_is_configured(name: str) -> None:
    model = CASES[name].make(api_key=make_key("sk-none-"))
    assert model.base_url == CASES[name].builtin


def test_an_openai_compatible_server_needs_a_base_url() -> None:
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        agent.openai_compatible(model="m")


def test_the_request_paths_are_the_sdks(sim_server: SimServer) -> None:
    """The SDKs' own paths: /v1/responses, /v1/chat/completions, /v1/messages,
    /v1beta/models/{model}:generateContent."""
    r = sim_server.root_url
    cases = [
        (agent.openai("m", base_url=r + "/v1"), "/v1/responses"),
        (agent.openai_compatible(model="m", base_url=r + "/v1"), "/v1/chat/completions"),
        (agent.anthropic("m", base_url=r), "/v1/messages"),
        (agent.anthropic("m", base_url=r + "/"), "/v1/messages"),
        (agent.gemini("m", base_url=r), "/v1beta/models/m:generateContent"),
        (agent.gemini("m", base_url=r, api_version="v1alpha"), "/v1alpha/models/m:generateContent"),
    ]
    for model, path in cases:
        assert agent.Agent(model).session("hi").prepare().url == r + path


def test_gemini_api_version_variable_and_its_beta_alias(env: Callable[..., None]) -> None:
    env(GOOGLE_GENAI_API_VERSION="beta")
    assert agent.gemini("m").base_url.endswith("/v1beta")
    env(GOOGLE_GENAI_API_VERSION="v1")
    assert agent.gemini("m").base_url.endswith("/v1")
    assert agent.gemini("m", api_version="v1alpha").base_url.endswith("/v1alpha")
    with pytest.raises(ConfigError):
        agent.from_route("anthropic", "m", api_version="v1")


# -- the SDKs agree ---------------------------------------------------------------------------


def test_openai_sdk_reads_the_same_variables(
    sim_server: SimServer, env: Callable[..., None]
) -> None:
    env(OPENAI_API_KEY=make_key("sk-sdk-"), OPENAI_BASE_URL=sim_server.root_url + "/v1")
    client = openai.OpenAI(max_retries=0)
    assert str(client.base_url).rstrip("/") == agent.openai("m").base_url
    resp = client.responses.create(model="sim-gpt", input="hi", store=False)
    assert resp.output_text
    client.close()


def test_anthropic_sdk_reads_the_same_variables(
    sim_server: SimServer, env: Callable[..., None]
) -> None:
    env(ANTHROPIC_API_KEY=make_key("sk-sdk-"), ANTHROPIC_BASE_URL=sim_server.root_url)
    client = anthropic.Anthropic(max_retries=0)
    assert str(client.base_url).rstrip("/") + "/v1" == agent.anthropic("m").base_url
    msg = client.messages.create(
        model="sim-claude", max_tokens=512, messages=[{"role": "user", "content": "hi"}]
    )
    assert msg.content
    client.close()


def test_google_genai_reads_the_same_variables(
    sim_server: SimServer, env: Callable[..., None]
) -> None:
    env(
        GOOGLE_API_KEY=make_key("sk-google-"),
        GEMINI_API_KEY=make_key("sk-gemini-"),
        GOOGLE_GEMINI_BASE_URL=sim_server.root_url,
        GOOGLE_GENAI_API_VERSION="v1beta",
    )
    client = genai.Client()
    opts = client._api_client._http_options
    assert f"{str(opts.base_url).rstrip('/')}/{opts.api_version}" == agent.gemini("m").base_url
    assert genai_api_client.get_env_api_key() == agent.gemini("m").read_key()
    assert agent.gemini("m").read_key() == make_key("sk-google-")  # GOOGLE_API_KEY wins
    resp = client.models.generate_content(model="sim-gemini", contents="hi")
    assert resp.candidates


# -- key precedence and sources ---------------------------------------------------------------


def test_gemini_prefers_google_api_key_and_falls_back_to_gemini_api_key(
    env: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    google, gem = make_key("sk-g-"), make_key("sk-m-")
    env(GEMINI_API_KEY=gem)
    assert agent.gemini("m").read_key() == gem
    env(GOOGLE_API_KEY=google)
    assert agent.gemini("m").read_key() == google
    assert agent.gemini("m").headers()["x-goog-api-key"] == google
    monkeypatch.delenv("GEMINI_API_KEY")
    assert agent.gemini("m").read_key() == google


@pytest.mark.parametrize("name", list(CASES))
def test_api_key_beats_the_sdk_variable_and_sources_are_exclusive(
    env: Callable[..., None], name: str
) -> None:
    case = CASES[name]
    env(**{case.key_env: make_key("sk-env-")}, **{case.base_env: "http://x/v1"})
    given = make_key("sk-given-")
    assert case.make(api_key=given).read_key() == given
    env(OTHER_KEY=make_key("sk-other-"))
    assert case.make(key_env="OTHER_KEY").read_key() == make_key("sk-other-")
    assert case.make(key=lambda: given).read_key() == given
    assert case.make(key=credentials.EnvKey("OTHER_KEY")).read_key() == make_key("sk-other-")
    with pytest.raises(ConfigError, match="one key source"):
        case.make(api_key=given, key_env="OTHER_KEY")


def test_key_is_read_at_call_time(env: Callable[..., None]) -> None:
    model = agent.anthropic("m")
    env(ANTHROPIC_API_KEY=make_key("sk-one-"))
    assert model.read_key() == make_key("sk-one-")
    env(ANTHROPIC_API_KEY=make_key("sk-two-"))
    assert model.read_key() == make_key("sk-two-")


def test_a_missing_key_names_the_sdk_variables() -> None:
    with pytest.raises(CredentialError) as err:
        agent.gemini("m").read_key()
    assert "GOOGLE_API_KEY or GEMINI_API_KEY" in str(err.value)
    assert "api_key=" in str(err.value)


def test_the_dotenv_fallback_is_read_when_the_variable_is_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"ANTHROPIC_API_KEY={make_key('sk-dot-')}\n")
    monkeypatch.setattr(agent.models, "DOTENV_FALLBACK", str(dotenv))
    assert agent.anthropic("m").read_key() == make_key("sk-dot-")
    assert agent.anthropic("m", key_env="ANTHROPIC_API_KEY").read_key() == make_key("sk-dot-")
    source = credentials.EnvKey("ANTHROPIC_API_KEY")  # any variable, however it is named
    assert agent.anthropic("m", key=source).read_key() == make_key("sk-dot-")


def test_openai_compatible_sends_openai_api_key_only_with_openai_base_url(
    env: Callable[..., None],
) -> None:
    k = make_key("sk-openai-")
    env(OPENAI_API_KEY=k)
    explicit = agent.openai_compatible(model="m", base_url="http://elsewhere/v1")
    assert explicit.read_key() is None and "authorization" not in explicit.headers()
    env(OPENAI_BASE_URL="http://vllm.local/v1")
    paired = agent.openai_compatible(model="m")
    assert paired.base_url == "http://vllm.local/v1" and paired.read_key() == k
    with_key = agent.openai_compatible(model="m", base_url="http://elsewhere/v1", api_key=k)
    assert with_key.headers()["authorization"] == "Bearer " + k


def test_a_route_of_ones_own_keeps_its_base_url_and_key_source(
    env: Callable[..., None],
) -> None:
    env(ANTHROPIC_BASE_URL="http://ignored", MY_KEY=make_key("sk-mine-"))
    mine = Route(
        name="anthropic",
        dialect="anthropic",
        base_url="https://proxy.example/anthropic/v1",
        key=credentials.EnvKey("MY_KEY"),
        auth_header="x-api-key",
        auth_scheme="",
    )
    model = agent.from_route(mine, "m")
    assert model.base_url == "https://proxy.example/anthropic/v1"
    assert model.read_key() == make_key("sk-mine-")
    assert agent.from_route(mine, "m", base_url="http://h/v1").base_url == "http://h/v1"
    assert agent.from_route("deepseek", "m", base_url="http://h").base_url == "http://h"


@pytest.mark.parametrize(
    ("bad", "kind"),
    [
        (lambda: make_key("sk-ant-api03-", 40), "a key-shaped string of 53 characters"),
        (lambda: "x", "a string of 1 character"),
        (lambda: "ANTHROPIC_API_KEY", "a string of 17 characters"),
    ],
)
def test_a_string_as_key_is_refused_by_kind_and_length(bad: Callable[[], str], kind: str) -> None:
    value = bad()
    with pytest.raises(ConfigError) as err:
        agent.anthropic("m", key=value)  # type: ignore[arg-type]
    msg = str(err.value)
    assert "api_key=" in msg and "key_env=" in msg and kind in msg
    assert value not in msg and value not in repr(err.value)


def test_a_key_in_key_env_is_refused_without_showing_it() -> None:
    for value in (make_key("sk-ant-"), "AKIA" + "Q" * 16, "ghp_" + "aB3" * 12):
        with pytest.raises(ConfigError) as err:
            agent.openai("m", key_env=value)
        assert value not in str(err.value) and "key-shaped" in str(err.value)


def test_an_unusable_api_key_is_refused_without_showing_it() -> None:
    for value in ("", "   ", make_key("sk-a ") + "b", make_key("sk-") + "\n" + "x" * 9):
        with pytest.raises(ConfigError) as err:
            agent.openai("m", api_key=value)
        assert not value.strip() or value not in str(err.value)
    assert agent.openai("m", api_key="  " + make_key("sk-") + "\n").read_key() == make_key("sk-")


def test_a_base_url_that_is_not_a_url_is_refused(env: Callable[..., None]) -> None:
    env(ANTHROPIC_BASE_URL="api.anthropic.com")
    with pytest.raises(ConfigError, match="ANTHROPIC_BASE_URL"):
        agent.anthropic("m")


def test_conventions_are_one_table_entry_per_constructor() -> None:
    assert set(agent.CONVENTIONS) == {
        "openai", "openrouter", "openai_compatible", "anthropic", "gemini", "gemini_interactions"
    }  # fmt: skip
    for route, conv in agent.conventions.ROUTE_CONVENTIONS.items():
        if conv.default_base is not None:
            built = agent.from_route(route, "m", api_key=make_key("sk-"))
            assert built.base_url == get_route(route).base_url, route


def test_the_mock_transport_sees_the_key_header_only() -> None:
    """The key goes in the header and nowhere else of the request."""
    k = make_key("sk-hdr-")
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            200,
            json={"id": "m1", "type": "message", "role": "assistant", "model": "m",
                  "stop_reason": "end_turn", "content": [{"type": "text", "text": "ok"}],
                  "usage": {"input_tokens": 1, "output_tokens": 1}},
        )  # fmt: skip

    with httpx.Client(transport=httpx.MockTransport(handler)) as c:
        agent.Agent(agent.anthropic("m", api_key=k, http_client=c)).run("hi")
    (req,) = seen
    assert req.headers["x-api-key"] == k
    assert k not in str(req.url) and k.encode() not in req.content


def test_the_constructors_share_one_set_of_keywords() -> None:
    """Every constructor takes the keywords of ``ModelOptions``, and refuses one it does not
    know as Python refuses an unexpected keyword."""
    assert set(agent.ModelOptions.__optional_keys__) == {
        "base_url", "extra_body", "max_tokens", "api_key", "key", "key_env", "http_client",
        "retries", "timeout",
    }  # fmt: skip
    for name in CASES:
        with pytest.raises(TypeError, match="api_kye"):
            CASES[name].make(api_kye=make_key("sk-typo-"))
    model = agent.gemini("m", api_key=make_key("sk-"), max_tokens=7, timeout=3.0, retries=2)
    assert (model.max_tokens, model.timeout, model.retries.retries) == (7, 3.0, 2)
