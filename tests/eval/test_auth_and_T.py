"""Keys on a 401 (re-read once, wait when unchanged, then a recorded auth error) and T from a
count endpoint, against the simulator app behind a transport that checks the key."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.credentials import AuthFileKey, EnvKey
from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._embedded import sim_targets
from reasonwire.eval._records import CALLS, RUNS, read_jsonl
from reasonwire.eval.runner import Target
from reasonwire.routes import Route
from reasonwire.sim.app import build_app

OLD = "rwtest-old-3b9e1f0c7a5d4e2b8c6f"
NEW = "rwtest-new-9d8c7b6a5f4e3d2c1b0a"
BASE = "http://sim.test/v1"


class KeyGate(httpx.AsyncBaseTransport):
    """The simulator, answering 401 unless the bearer key equals ``valid``."""

    def __init__(self, valid: str, on_401: Callable[[], None] = lambda: None) -> None:
        self.valid = valid
        self.on_401 = on_401
        self.inner = httpx.ASGITransport(app=build_app(seed=0))
        self.seen: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        got = request.headers.get("authorization", "").removeprefix("Bearer ")
        self.seen.append(got)
        if got != self.valid:
            self.on_401()
            body = {"error": {"message": "invalid api key", "type": "auth"}}
            return httpx.Response(401, json=body)
        return await self.inner.handle_async_request(request)


def _auth_file(path: Path, key: str) -> None:
    path.write_text(json.dumps({"providers": {"nous": {"access_token": key}}}))


def _target(auth: Path) -> Target:
    src = AuthFileKey(str(auth), ("providers.nous.agent_key", "providers.nous.access_token"))
    return Target(Route("portal-test", "chat", BASE, key=src), "sim-qwen3")


def _run(tmp: Path, gate: KeyGate, auth: Path, sleep: Callable[[float], Awaitable[None]]) -> Path:
    out = tmp / "out"
    cfg = EvalConfig(targets=[_target(auth)], out=out, transport=gate, workers=4, sleep=sleep)
    run_eval(cfg)
    return out


def _no_key_anywhere(out: Path) -> None:
    for f in out.iterdir():
        text = f.read_text()
        assert OLD not in text and NEW not in text, f.name


def test_rotated_key_is_reread_without_waiting(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    _auth_file(auth, OLD)
    gate = KeyGate(NEW, on_401=lambda: _auth_file(auth, NEW))  # the owner rotates it
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    out = _run(tmp_path, gate, auth, sleep)
    calls = [r for r in read_jsonl(out / CALLS) if r.get("type") == "call"]
    assert calls and all(r["ok"] for r in calls), [r.get("error") for r in calls]
    assert waits == []
    assert gate.seen.count(OLD) >= 1 and gate.seen[-1] == NEW
    _no_key_anywhere(out)


def test_unchanged_key_waits_15s_then_rereads(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    _auth_file(auth, OLD)
    gate = KeyGate(NEW)
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)
        _auth_file(auth, NEW)  # refreshed while the runner waits

    out = _run(tmp_path, gate, auth, sleep)
    calls = [r for r in read_jsonl(out / CALLS) if r.get("type") == "call"]
    assert calls and all(r["ok"] for r in calls)
    assert waits and set(waits) == {15.0}
    _no_key_anywhere(out)


def test_still_401_is_a_recorded_auth_error_and_resume_resends(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    _auth_file(auth, OLD)
    gate = KeyGate(NEW)
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    out = _run(tmp_path, gate, auth, sleep)
    calls = [r for r in read_jsonl(out / CALLS) if r.get("type") == "call"]
    assert calls and all(r["error_kind"] == "auth" and r["status"] == 401 for r in calls)
    assert all(not r["ok"] for r in calls) and waits
    # each failed cell: first try, then exactly one retry after the wait
    assert len(gate.seen) == 2 * len(calls)
    _no_key_anywhere(out)
    matrix = build_matrix(out)
    cell = matrix["rows"][0]["text"]["reasoning_content"]["in_loop"]
    assert cell["outcome"] == "baseline-failed" and cell["status"] == 401
    # the key is fixed: a resumed run sends the cells again and they pass
    _auth_file(auth, NEW)
    gate.seen.clear()
    _run(tmp_path, gate, auth, sleep)
    again = build_matrix(out)
    assert again["rows"][0]["text"]["reasoning_content"]["verdict"] == "in-loop-only"
    _no_key_anywhere(out)


def test_key_falls_back_to_the_configured_dotenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / "keys.env"
    env.write_text(f"RW_TEST_KEY={NEW}\n")
    route = Route("r", "chat", BASE, key=EnvKey("RW_TEST_KEY"))
    monkeypatch.delenv("RW_TEST_KEY", raising=False)
    assert route.read_key(dotenv=str(env)) == NEW
    monkeypatch.setenv("RW_TEST_KEY", OLD)
    assert route.read_key(dotenv=str(env)) == OLD  # the process environment comes first


def test_T_from_the_count_endpoint(sim_run: tuple[Path, dict[str, Any]]) -> None:
    """Responses models: T measured on /responses/input_tokens (with - without carrier);
    chat (no endpoint) and gemini (the endpoint drops thought parts) keep chars/4, with why."""
    out, matrix = sim_run
    t_recs = {r["model"]: r for r in read_jsonl(out / RUNS) if r.get("type") == "T"}
    rows = {(r["model"], r["lane"]): r for r in matrix["rows"]}
    gpt = t_recs["sim-gpt"]
    assert gpt["T_source"] == "count-endpoint"
    assert gpt["T"] == gpt["count"]["with"] - gpt["count"]["without"] > 0
    assert gpt["T"] != gpt["T_estimate"]
    assert rows[("sim-gpt", "direct")]["T"] == gpt["T"]
    assert rows[("sim-gpt", "direct")]["T_source"] == "count-endpoint"
    calls = [r for r in read_jsonl(out / CALLS) if r.get("model") == "sim-gpt"]
    assert {(r["T"], r["T_source"]) for r in calls} == {(gpt["T"], "count-endpoint")}
    assert t_recs["sim-qwen3"]["T_source"] == "chars/4"
    assert "no count endpoint" in t_recs["sim-qwen3"]["T_note"]
    assert t_recs["sim-gemini"]["T_source"] == "chars/4"
    assert "counted none" in t_recs["sim-gemini"]["T_note"]
    assert rows[("sim-gemini", "direct")]["T_note"] == t_recs["sim-gemini"]["T_note"]


def test_T_falls_back_when_the_count_endpoint_fails(tmp_path: Path) -> None:
    """A count endpoint that answers 404 (a gateway without one): chars/4, reason recorded,
    and the generation cells still run."""

    class NoCount(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.ASGITransport(app=build_app(seed=0))

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path.endswith("/input_tokens"):
                return httpx.Response(404, json={"error": {"message": "no such route"}})
            return await self.inner.handle_async_request(request)

    targets = [t for t in sim_targets(BASE, "http://sim.test") if t.model == "sim-gpt"]
    out = tmp_path / "out"
    run_eval(EvalConfig(targets=targets, out=out, transport=NoCount()))
    t = next(r for r in read_jsonl(out / RUNS) if r.get("type") == "T")
    assert t["T_source"] == "chars/4" and t["T"] == t["T_estimate"]
    assert "404" in t["T_note"] and "no such route" in t["T_note"]
    row = build_matrix(out)["rows"][0]
    assert row["T_source"] == "chars/4"
    assert row["text"]["content_item"]["verdict"] == "in-loop-only"


def _env_run(tmp: Path, monkeypatch: pytest.MonkeyPatch, in_env: bool) -> tuple[Path, list[float]]:
    dotenv = tmp / "keys.env"
    dotenv.write_text(f"RW_TEST_401_KEY={OLD}\n")
    if in_env:
        monkeypatch.setenv("RW_TEST_401_KEY", OLD)
    else:
        monkeypatch.delenv("RW_TEST_401_KEY", raising=False)
    waits: list[float] = []

    async def sleep(s: float) -> None:
        waits.append(s)

    route = Route("r", "chat", BASE, key=EnvKey("RW_TEST_401_KEY"))
    out = tmp / "out"
    cfg = EvalConfig(
        targets=[Target(route, "sim-qwen3")], out=out, transport=KeyGate(NEW), workers=2,
        sleep=sleep, dotenv=str(dotenv),
    )  # fmt: skip
    run_eval(cfg)
    return out, waits


def test_a_401_with_a_key_from_the_environment_does_not_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment variable cannot change under the running process: no 15 s wait, no
    second request with the same key; the cell is a recorded auth error (sent again on
    resume, once the user has fixed the key)."""
    out, waits = _env_run(tmp_path, monkeypatch, in_env=True)
    calls = [r for r in read_jsonl(out / CALLS) if r.get("type") == "call"]
    assert calls and all(r["error_kind"] == "auth" and r["status"] == 401 for r in calls)
    assert waits == []


def test_a_401_with_a_key_from_the_dotenv_file_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dotenv file can be edited while the run waits: the wait applies."""
    _, waits = _env_run(tmp_path, monkeypatch, in_env=False)
    assert waits and set(waits) == {15.0}
