"""The governance path end to end on two gateway replicas sharing one PostgreSQL database:
sign (control.minter) -> carry (the openai and anthropic SDKs through the carry helper, each
call going to the next replica in turn) -> gateway -> simulator, every level and Auto, resume,
concurrent conversations and the negative cases (the qualification method of
``test_collect``), then ``qualify collect`` from the PostgreSQL evidence and vault ->
``qualify validate`` PASS; the same file with one claim tampered FAILs."""

from __future__ import annotations

import itertools
import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from typer.testing import CliRunner

from reasonwire.govern import carry
from reasonwire.govern.cli.qualify import app
from reasonwire.govern.control import minter
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.stores import PostgresEvidenceStore, PostgresVault
from reasonwire.sim.app import build_app
from tests import pg
from tests.govern.conftest import (
    ROOMY,
    RUNTIME,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    Recorder,
    ThreadServer,
)
from tests.govern.test_collect import MEDIUM, POLICY_MODULE, ROOT, ROUTE, _Method, pinned_registry


class _Alternating(_Method):
    """The same method, each call to the next replica (a round-robin load balancer)."""

    def __init__(self, gw: Gateway, urls: list[str], ring: Any, out: Path) -> None:
        super().__init__(gw, urls[0], ring, out)
        self._urls = itertools.cycle(urls)
        self._turn = threading.Lock()

    @property  # type: ignore[override]
    def url(self) -> str:
        with self._turn:
            return next(self._urls)

    @url.setter
    def url(self, value: str) -> None:
        pass


@pytest.fixture(scope="module")
def e2e(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    dsn = pg.fresh_dsn()
    tmp = tmp_path_factory.mktemp("e2e")
    name = "rw_e2e_policy_" + uuid.uuid4().hex[:8]
    (tmp / f"{name}.py").write_text(POLICY_MODULE)
    mp = pytest.MonkeyPatch()
    mp.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    mp.syspath_prepend(str(tmp))
    recorder = Recorder(build_app(seed=0))
    opened: list[Any] = []
    try:
        with ThreadServer(recorder) as upstream:
            from reasonwire.govern.binding import KeyRing

            ring = KeyRing.generate("k1")
            gws, servers = [], []
            for _ in range(2):
                store, vault = PostgresEvidenceStore(dsn), PostgresVault(dsn)
                opened += [store, vault]
                gw = Gateway(
                    pinned_registry(upstream.url + "/v1"),
                    MEDIUM,
                    ring,
                    store,
                    vault=vault,
                    store_settings=ROOMY,
                )
                gws.append(gw)
                servers.append(ThreadServer(gw.app).__enter__())
            urls = [s.url for s in servers]
            method = _Alternating(gws[0], urls, ring, tmp)
            method.run()
            claude = _anthropic_turns(gws[0], ring, urls)
            for s in servers:
                s.__exit__(None, None, None)
        (tmp / "transcript.jsonl").write_text("\n".join(method.transcript))
        (tmp / "activity.jsonl").write_text("\n".join(method.activity))
        # what a runtime would log: every request it sent and every answer it got
        (tmp / "client.log").write_text("\n".join(method.activity + method.transcript))
        (tmp / "artifacts").mkdir()
        (tmp / "artifacts" / "summary.txt").write_text(f"{len(method.transcript)} calls\n")
        yield {"dsn": dsn, "policy": name, "tmp": tmp, "claude": claude, "stores": opened[::2]}
    finally:
        for o in opened:
            o.close()
        mp.undo()
        pg.drop(dsn)


def _anthropic_turns(gw: Gateway, ring: Any, urls: list[str]) -> list[int]:
    """An anthropic SDK conversation through the carry helper, one call per replica."""
    conv = "q-claude-" + uuid.uuid4().hex[:8]
    route = "anthropic/sim-claude"
    mint = minter(
        gw.registry, gw.policy, ring, conversation_id=conv, task_id="task-" + conv,
        runtime_id=RUNTIME[0], runtime_version=RUNTIME[1], route_id=route, requested="low",
    )  # fmt: skip
    c = carry(conv, mint)
    statuses = []
    messages: list[Any] = [{"role": "user", "content": f"[{conv}] Say hi."}]
    for url in urls:
        client = anthropic.Anthropic(
            base_url=url, api_key="runtime-holds-no-provider-key", max_retries=0,
            http_client=c.client(package=httpx2),
        )  # fmt: skip
        r = client.messages.with_raw_response.create(
            model="sim-claude", max_tokens=256, messages=messages
        )
        statuses.append(r.status_code)
        messages += [
            {"role": "assistant", "content": [b.model_dump() for b in r.parse().content]},
            {"role": "user", "content": "again"},
        ]
        c.new_turn()
    return statuses


def _collect(e2e: dict[str, Any], out: Path) -> Any:
    tmp = e2e["tmp"]
    return CliRunner().invoke(
        app,
        ["collect", "--evidence-db", e2e["dsn"], "--out", str(out), "--policy", e2e["policy"],
         "--deployment-id", "gw-replicas", "--route", ROUTE, "--vault-db", e2e["dsn"],
         "--transcript", str(tmp / "transcript.jsonl"), "--activity",
         str(tmp / "activity.jsonl"), "--logs", str(tmp / "client.log"), "--artifacts",
         str(tmp / "artifacts"), "--repo", str(ROOT)],
    )  # fmt: skip


def test_both_replicas_served_and_share_one_record(e2e: dict[str, Any]) -> None:
    assert e2e["claude"] == [200, 200]
    one, two = e2e["stores"]
    assert len(one.rows()) == len(two.rows()) > 20  # one database: each sees every row


def test_collect_then_validate_pass_and_a_tampered_file_fails(
    e2e: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "evidence.json"
    res = _collect(e2e, out)
    assert res.exit_code == 0, res.output
    assert "PASS" in res.stdout
    ok = CliRunner().invoke(
        app, ["validate", "--evidence", str(out), "--repo", str(ROOT), "--policy", e2e["policy"]]
    )
    assert ok.exit_code == 0, ok.output
    doc = json.loads(out.read_text())
    assert doc["resume"]["turns"] == 3 and doc["isolation"]["conversations"] >= 2
    doc["observations"][0]["resolved"] = "high"  # a claim the rows do not support
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(doc))
    fail = CliRunner().invoke(
        app, ["validate", "--evidence", str(bad), "--repo", str(ROOT), "--policy", e2e["policy"]]
    )
    assert fail.exit_code != 0 and "FAIL" in fail.output
