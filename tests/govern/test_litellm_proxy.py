"""reasonwire inside a real LiteLLM proxy: the proxy (its own venv, `make lane-litellm`) loads
``reasonwire.govern.litellm_hook`` from its config and forwards to the simulator; the openai SDK
is the client. Governed effort is injected, forged controls are stripped, a bad or missing
binding is refused before the upstream, and evidence rows are written."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from reasonwire.govern import carry
from reasonwire.govern.binding import KeyRing, issue
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from reasonwire.sim.app import build_app
from tests.govern.conftest import Recorder, ThreadServer

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ("hermes", "1.4.2")
SIM_KEY_ENV = "RW_LITELLM_TEST_UPSTREAM_KEY"
FORGED: Any = {
    "reasoning_effort": "high",
    "chat_template_kwargs": {"enable_thinking": True},
    "thinking": {"type": "enabled", "budget_tokens": 30000},
    "reasoning": {"effort": "high"},
}


def _venv_python() -> Path:
    env = os.environ.get("REASONWIRE_LITELLM_PYTHON")
    if env:
        return Path(env)
    cache = os.environ.get("REASONWIRE_CACHE") or str(Path.home() / ".cache" / "reasonwire")
    return Path(cache) / "litellm-venv" / "bin" / "python"


PYTHON = _venv_python()
pytestmark = pytest.mark.skipif(
    not (PYTHON.exists() and (PYTHON.parent / "litellm").exists()),
    reason=f"no LiteLLM venv at {PYTHON.parent.parent}: make lane-litellm",
)

POLICY_MODULE = """
from reasonwire.govern.levels import LEVELS
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration, RuntimeAdapter

REGISTRY = Registry(
    adapters=[RuntimeAdapter("hermes", "1.4.2", "qualified", "Q-RT-hermes", frozenset(LEVELS))]
)
for model in ("sim-chat-all", "sim-deepseek"):
    REGISTRY.add_route(
        RouteRegistration(
            route_id="chat/" + model,
            provider="sim",
            model=model,
            dialect="chat",
            upstream_base_url="http://litellm-calls-the-upstream/v1",
            qualification_id="Q-ROUTE-" + model,
            levels={lv: {"reasoning_effort": lv} for lv in LEVELS},
            price_per_mtok={"input_uncached": 1.0, "output": 4.0},
        )
    )
POLICY = OrgPolicy(allowed=frozenset({"low", "medium", "high"}), maximum="high")
"""


def _config(upstream: str) -> str:
    models = "".join(
        f"""
  - model_name: {m}
    litellm_params:
      model: openai/{m}
      api_base: {upstream}
      api_key: os.environ/{SIM_KEY_ENV}
"""
        for m in ("sim-chat-all", "sim-deepseek")
    )
    return f"""model_list:{models}
litellm_settings:
  callbacks: reasonwire.govern.litellm_hook.proxy_handler
  drop_params: false
"""


@dataclass
class Proxy:
    url: str
    ring: KeyRing
    db: Path
    recorder: Recorder
    log: Path
    master_key: str

    def token(self, conv: str, requested: Any = "low", **over: Any) -> str:
        from reasonwire.govern.control import project

        claims = {
            "conversation_id": conv,
            "task_id": "task-" + conv,
            "runtime_id": RUNTIME[0],
            "runtime_version": RUNTIME[1],
            "route_id": "chat/sim-chat-all",
            "requested": requested,
        }
        claims.update(over)
        ring = claims.pop("ring", self.ring)
        if "ceiling" in claims:
            return issue(ring, **claims)
        return project(_REGISTRY, _POLICY, ring, **claims)

    def client(self, conv: str, token: str | None) -> openai.OpenAI:
        http = carry(conv, token).client() if token else httpx.Client()
        return openai.OpenAI(
            base_url=self.url + "/v1", api_key=self.master_key, max_retries=0, http_client=http
        )

    def rows(self, conv: str, n: int, timeout: float = 20.0) -> list[EvidenceRow]:
        """The conversation's rows once there are ``n`` and none is ``pending`` (LiteLLM
        reports outcomes after it answers, and the hook completes a row on a store thread
        that nobody waits for)."""
        deadline = time.monotonic() + timeout
        while True:
            store = SQLiteStore(self.db)
            try:
                rows = store.rows(conv)
            finally:
                store.close()
            settled = all(r.outcome != "pending" for r in rows)
            if (len(rows) >= n and settled) or time.monotonic() > deadline:
                return rows
            time.sleep(0.1)


_REGISTRY: Any = None
_POLICY: Any = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    global _REGISTRY, _POLICY
    tmp = tmp_path_factory.mktemp("litellm")
    name = "rw_litellm_policy_" + uuid.uuid4().hex[:8]
    (tmp / f"{name}.py").write_text(POLICY_MODULE)
    ns: dict[str, Any] = {}
    exec(POLICY_MODULE, ns)
    _REGISTRY, _POLICY = ns["REGISTRY"], ns["POLICY"]
    ring = KeyRing.generate("k1")
    keys = tmp / "keys"
    ring.save_dir(keys)
    for f in keys.glob("*.key.pem"):
        f.unlink()  # the proxy verifies: public keys only
    db = tmp / "evidence.sqlite"
    SQLiteStore(db).close()
    recorder = Recorder(build_app(seed=0))
    with ThreadServer(recorder) as upstream:
        cfg = tmp / "config.yaml"
        cfg.write_text(_config(upstream.url + "/v1"))
        port = _free_port()
        log = tmp / "litellm.log"
        master_key = "sk-" + secrets.token_hex(32)  # the proxy's own client auth, made here
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))},
            "PYTHONPATH": os.pathsep.join([str(tmp), str(ROOT / "src")]),
            SIM_KEY_ENV: "sim-" + uuid.uuid4().hex,
            "REASONWIRE_POLICY": name,
            "REASONWIRE_KEYS": str(keys),
            "REASONWIRE_EVIDENCE": str(db),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY": "False",
            "LITELLM_MASTER_KEY": master_key,
        }
        args = [str(PYTHON.parent / "litellm"), "--config", str(cfg), "--host", "127.0.0.1"]
        args += ["--port", str(port), "--num_workers", "1"]
        with log.open("wb") as out:
            proc = subprocess.Popen(
                args,
                cwd=tmp,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                if proc.poll() is not None:
                    pytest.fail(f"the LiteLLM proxy exited: {log.read_text()[-3000:]}")
                try:
                    if httpx.get(url + "/health/liveliness", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"the LiteLLM proxy did not start: {log.read_text()[-3000:]}")
                time.sleep(0.5)
            yield Proxy(url, ring, db, recorder, log, master_key)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)


def _conv() -> str:
    return "ll-" + uuid.uuid4().hex[:12]


def _ask(client: openai.OpenAI, conv: str, **kw: Any) -> Any:
    return client.chat.completions.create(
        model=kw.pop("model", "sim-chat-all"),
        messages=[{"role": "user", "content": f"[{conv}] What is 2+2?"}],
        **kw,
    )


def test_governed_effort_injected_and_forged_controls_stripped(proxy: Proxy) -> None:
    conv = _conv()
    r = _ask(proxy.client(conv, proxy.token(conv, "low")), conv, extra_body=FORGED)
    assert r.choices[0].message.content
    (up,) = proxy.recorder.find(conv)
    assert up["body"]["reasoning_effort"] == "low"
    for name in ("chat_template_kwargs", "thinking", "reasoning"):
        assert name not in up["body"], up["body"]
    assert not any(h.startswith("x-reasonwire") for h in up["headers"])
    (row,) = proxy.rows(conv, 1)
    assert (row.outcome, row.requested, row.resolved, row.status_code) == (
        "forwarded",
        "low",
        "low",
        200,
    )
    assert set(row.controls_removed.split(",")) == set(FORGED)
    assert row.usage_status == "reported" and row.output_tokens
    assert row.cost_status == "estimated" and row.cost_usd
    assert row.runtime_qualification == "Q-RT-hermes" and row.route_id == "chat/sim-chat-all"


def test_auto_resolves_to_the_maximum_and_streams_with_usage(proxy: Proxy) -> None:
    conv = _conv()
    client = proxy.client(conv, proxy.token(conv, "auto"))
    text = ""
    for chunk in _ask(client, conv, stream=True):
        for ch in chunk.choices:
            text += ch.delta.content or ""
    assert text
    (up,) = proxy.recorder.find(conv)
    assert up["body"]["reasoning_effort"] == "high"
    assert up["body"]["stream_options"] == {"include_usage": True}
    (row,) = proxy.rows(conv, 1)
    assert (row.requested, row.resolved, row.stream) == ("auto", "high", True)


@pytest.mark.parametrize("case", ["missing", "tampered", "unknown-key", "other-conversation"])
def test_bad_or_missing_binding_is_refused_before_the_upstream(proxy: Proxy, case: str) -> None:
    conv = _conv()
    good = proxy.token(conv)
    token: str | None = {
        "missing": None,
        "tampered": good[:-6] + ("AAAAAA" if not good.endswith("AAAAAA") else "BBBBBB"),
        "unknown-key": proxy.token(conv, ring=KeyRing.generate("k-stranger"), ceiling="high"),
        "other-conversation": proxy.token(conv + "-x"),
    }[case]
    with pytest.raises(openai.APIStatusError) as e:
        _ask(proxy.client(conv, token) if token else _headers_only(proxy, conv), conv)
    reason = {
        "missing": "binding-missing",
        "tampered": "binding-bad-signature",
        "unknown-key": "binding-unknown-key",
        "other-conversation": "conversation-mismatch",
    }[case]
    assert e.value.status_code == 403
    assert f"reasonwire refused: {reason}" in str(e.value)  # the code and the message
    if token:
        assert token not in str(e.value)
    assert proxy.recorder.find(conv) == []
    (row,) = proxy.rows(conv, 1)
    assert (row.outcome, row.reason) == ("refused", reason)


def _headers_only(proxy: Proxy, conv: str) -> openai.OpenAI:
    """A client that names its conversation but carries no binding."""
    return openai.OpenAI(
        base_url=proxy.url + "/v1",
        api_key=proxy.master_key,
        max_retries=0,
        default_headers={"x-reasonwire-conversation": conv},
    )


def test_effort_fixed_at_creation_and_the_model_bound_to_the_route(proxy: Proxy) -> None:
    conv = _conv()
    _ask(proxy.client(conv, proxy.token(conv, "low")), conv)
    with pytest.raises(openai.PermissionDeniedError) as e:
        _ask(proxy.client(conv, proxy.token(conv, "medium")), conv)
    assert "effort-changed" in str(e.value)
    with pytest.raises(openai.PermissionDeniedError) as e:
        _ask(proxy.client(conv, proxy.token(conv, "low")), conv, model="sim-deepseek")
    assert "provider-mismatch" in str(e.value)
    rows = proxy.rows(conv, 3)
    assert [(r.outcome, r.reason) for r in rows] == [
        ("forwarded", None),
        ("refused", "effort-changed"),
        ("refused", "provider-mismatch"),
    ]
    assert len(proxy.recorder.find(conv)) == 1


def test_the_binding_is_not_left_in_litellms_logs(proxy: Proxy) -> None:
    conv = _conv()
    token = proxy.token(conv)
    _ask(proxy.client(conv, token), conv)
    proxy.rows(conv, 1)
    assert token not in proxy.log.read_text(errors="replace")
    assert json.dumps(token)[1:-1] not in proxy.log.read_text(errors="replace")
