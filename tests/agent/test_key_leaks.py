"""Property: a key handed to the agent API, in any of the ways a key source is accepted, never
reaches an exception message, a repr, a log record or a file the run writes.

Keys of every common shape are generated at run time (no key-shaped literal in this file):
``sk-``, ``sk-ant-``, ``sk-or-``, ``AIza``, ``xai-``, ``hf_``, ``ghp_``, ``AKIA`` and a JWT.
Each is passed as ``api_key=``, through ``key_env=``, the SDK's own variable, a callable,
``credentials`` source objects, and in wrong places (``key=`` as a string, ``key_env=``, an
``EnvKey`` named after it, a header-unsafe form). Good sources run a request against the
simulator through the probe, which writes a ledger; a server that echoes the key back in a
401 covers the error path, through ``run`` and through the ``stream`` iterator.
"""

from __future__ import annotations

import json
import logging
import string
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonwire import agent, credentials
from reasonwire.errors import ReasonwireError
from reasonwire.probe import ProbeTransport, flush
from reasonwire.sim.server import SimServer
from tests.agent.conftest import FAST, SDK_ENV
from tests.agent.test_sdk_conventions import CASES, Case

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"


def _shape(prefix: str, alphabet: str, n: int) -> st.SearchStrategy[tuple[str, str]]:
    return st.text(alphabet, min_size=n, max_size=n).map(lambda body: (prefix + body, body))


def _jwt() -> st.SearchStrategy[tuple[str, str]]:
    part = st.text(B64URL, min_size=16, max_size=40)
    return st.tuples(part, part, part).map(
        lambda p: ("eyJ" + p[0] + ".eyJ" + p[1] + "." + p[2], p[0] + p[1] + p[2])
    )


SHAPES: dict[str, st.SearchStrategy[tuple[str, str]]] = {
    "sk": _shape("sk-", ALNUM, 48),
    "sk-ant": _shape("sk-ant-api03-", B64URL, 80),
    "sk-or": _shape("sk-or-v1-", "0123456789abcdef", 64),
    "AIza": _shape("AIza", B64URL, 35),
    "xai": _shape("xai-", ALNUM, 80),
    "hf": _shape("hf_", ALNUM, 34),
    "ghp": _shape("ghp_", ALNUM, 36),
    "AKIA": _shape("AKIA", string.ascii_uppercase + string.digits, 16),
    "jwt": _jwt(),
}
KEYS = st.sampled_from(sorted(SHAPES)).flatmap(lambda name: SHAPES[name])
CASE_NAMES = st.sampled_from(sorted(CASES))
VAR = "RW_LEAK_TEST_KEY"


def _texts_of(exc: BaseException) -> list[str]:
    out = ["".join(traceback.format_exception(exc))]
    e: BaseException | None = exc
    while e is not None:
        out += [str(e), repr(e), repr(e.args)]
        e = e.__cause__ or e.__context__
    return out


class Check:
    """Collects every place a key could surface and asserts the key is in none of them."""

    def __init__(self, key: str, body: str, caplog: pytest.LogCaptureFixture) -> None:
        self.needles = [key] + ([body] if len(body) >= 8 else [])
        self.caplog = caplog
        self.texts: list[str] = []

    def add(self, *texts: object) -> None:
        self.texts += [t if isinstance(t, str) else repr(t) for t in texts]

    def files(self, root: Path) -> None:
        for p in root.rglob("*"):
            if p.is_file():
                self.texts.append(p.read_bytes().decode("utf-8", "replace"))

    def done(self) -> None:
        for r in self.caplog.records:
            self.texts += [r.getMessage(), repr(r.args), r.exc_text or ""]
        for text in self.texts:
            for needle in self.needles:
                assert needle not in text


def _env(monkeypatch: pytest.MonkeyPatch, case: Case, sim: SimServer) -> None:
    for name in (*SDK_ENV, VAR):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(case.base_env, case.sdk_base(sim))
    for k, v in case.extra_env:
        monkeypatch.setenv(k, v)


GOOD: dict[str, Callable[[str, Case, pytest.MonkeyPatch, Path], dict[str, Any]]] = {
    "api_key": lambda k, c, mp, d: {"api_key": k},
    "api_key_padded": lambda k, c, mp, d: {"api_key": "  " + k + "\n"},
    "callable": lambda k, c, mp, d: {"key": lambda: k},
    "key_env": lambda k, c, mp, d: (mp.setenv(VAR, k), {"key_env": VAR})[1],
    "sdk_variable": lambda k, c, mp, d: (mp.setenv(c.key_env, k), {})[1],
    "EnvKey": lambda k, c, mp, d: (mp.setenv(VAR, k), {"key": credentials.EnvKey(VAR)})[1],
    "DotenvKey": lambda k, c, mp, d: {
        "key": credentials.DotenvKey(_write(d / "secrets.env", f"{VAR}={k}\n"), VAR)
    },
    "AuthFileKey": lambda k, c, mp, d: {
        "key": credentials.AuthFileKey(
            _write(d / "auth.json", json.dumps({"p": {"key": k}})), ("p.key",)
        )
    },
}


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


SLOW = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("source", list(GOOD))
@SLOW
@given(key=KEYS, name=CASE_NAMES)
def test_a_key_from_a_good_source_is_sent_and_shows_up_nowhere(
    sim_server: SimServer,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    key: tuple[str, str],
    name: str,
) -> None:
    k, body = key
    case = CASES[name]
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    check = Check(k, body, caplog)
    _env(monkeypatch, case, sim_server)
    with tempfile.TemporaryDirectory() as secrets, tempfile.TemporaryDirectory() as out:
        kwargs = GOOD[source](k, case, monkeypatch, Path(secrets))
        sent: list[str | None] = []
        client = httpx.Client(
            transport=ProbeTransport("leak", purpose="leak", ledger_dir=out),
            event_hooks={"request": [lambda r: sent.append(r.headers.get(case.header))]},
        )
        with client:
            model = case.make(http_client=client, retries=FAST, **kwargs)
            bot = agent.Agent(model)
            result = bot.run("hi")
            events = list(bot.stream("again"))
        assert flush(timeout=30)
        assert sent == [case.scheme + k] * 2  # the key was used, as the SDK would send it
        check.add(model, str(model), model.key, model.route, result, bot.transcript, *events)
        check.add(json.dumps(result.as_dict()))
        check.files(Path(out))
        assert any(Path(out).rglob("*.jsonl"))  # the probe did write its ledger
    check.done()


BAD: dict[str, Callable[[str], dict[str, Any]]] = {
    "key=str": lambda k: {"key": k},
    "key_env=key": lambda k: {"key_env": k},
    "EnvKey(key)": lambda k: {"key": credentials.EnvKey(k)},
    "DotenvKey(name=key)": lambda k: {"key": credentials.DotenvKey("/tmp/x.env", k)},
    "AuthFileKey(path=key)": lambda k: {"key": credentials.AuthFileKey(k, ("a.b",))},
    "api_key with a newline inside": lambda k: {"api_key": k[:10] + "\n" + k[10:]},
    "api_key with a space inside": lambda k: {"api_key": k[:10] + " " + k[10:]},
    "api_key not a str": lambda k: {"api_key": k.encode()},
    "two sources": lambda k: {"api_key": k, "key_env": k},
}


@pytest.mark.parametrize("where", list(BAD))
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=KEYS, name=CASE_NAMES)
def test_a_key_in_the_wrong_place_is_refused_without_showing_it(
    caplog: pytest.LogCaptureFixture, where: str, key: tuple[str, str], name: str
) -> None:
    k, body = key
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    check = Check(k, body, caplog)
    with pytest.raises(ReasonwireError) as err:
        CASES[name].make(**BAD[where](k))
    check.add(*_texts_of(err.value))
    check.done()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=KEYS)
def test_parse_source_never_quotes_a_bad_spec(
    caplog: pytest.LogCaptureFixture, key: tuple[str, str]
) -> None:
    k, body = key
    check = Check(k, body, caplog)
    for spec in (k, "dotenv:" + k, "authfile:" + k, "env:", k + ":" + k):
        try:
            credentials.parse_source(spec)
        except credentials.CredentialError as exc:
            check.add(*_texts_of(exc))
            assert "bad key source" in str(exc) and "character" in str(exc)
    check.done()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=KEYS, name=CASE_NAMES)
def test_a_callable_returning_an_unusable_key_fails_without_showing_it(
    caplog: pytest.LogCaptureFixture, key: tuple[str, str], name: str
) -> None:
    k, body = key
    caplog.clear()
    check = Check(k, body, caplog)
    model = CASES[name].make(key=lambda: k + "\t" + k, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ReasonwireError) as err:
        agent.Agent(model).run("hi")
    check.add(*_texts_of(err.value), model, model.key)
    check.done()


def _echo(request: httpx.Request) -> httpx.Response:
    """A server that repeats every header it got, the key included, in a 401."""
    dump = {k: v for k, v in request.headers.items()}
    return httpx.Response(
        401,
        json={"error": {"message": f"invalid credentials: {json.dumps(dump)}"}},
        headers={"x-echo": json.dumps(dump)},
    )


@pytest.mark.parametrize("mode", ["run", "stream", "astream"])
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(key=KEYS, name=CASE_NAMES)
def test_a_server_echoing_the_key_cannot_put_it_in_our_errors(
    caplog: pytest.LogCaptureFixture, mode: str, key: tuple[str, str], name: str
) -> None:
    import asyncio

    k, body = key
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    check = Check(k, body, caplog)
    case = CASES[name]
    with pytest.raises(ReasonwireError) as err:
        if mode == "astream":

            async def go() -> None:
                transport = httpx.MockTransport(_echo)
                async with httpx.AsyncClient(transport=transport) as c:
                    model = case.make(api_key=k, http_client=c, retries=0, base_url="http://h/v1")
                    async for _ in agent.Agent(model).astream("hi"):
                        pass

            asyncio.run(go())
        else:
            with httpx.Client(transport=httpx.MockTransport(_echo)) as c:
                model = case.make(api_key=k, http_client=c, retries=0, base_url="http://h/v1")
                bot = agent.Agent(model)
                if mode == "run":
                    bot.run("hi")
                else:
                    list(bot.stream("hi"))
    assert getattr(err.value, "status", None) == 401
    check.add(*_texts_of(err.value))
    check.done()
