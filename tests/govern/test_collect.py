"""``reasonwire qualify collect`` end to end: a governed run through the real gateway (the
openai SDK as the runtime, the simulator upstream, SQLite evidence), then the evidence file
built from its rows, which the validator accepts against the registry; and the collector's
honesty on rows that lack something (nothing invented, the validator says what is missing)."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import jwt
import openai
import pytest
from typer.testing import CliRunner

from reasonwire.errors import EvidenceError
from reasonwire.govern import carry
from reasonwire.govern.binding import HEADER, KeyRing, issue
from reasonwire.govern.carry import CONVERSATION_HEADER
from reasonwire.govern.cli.qualify import app
from reasonwire.govern.collect import CollectOptions, collect
from reasonwire.govern.control import minter
from reasonwire.govern.evidence import EvidenceRow, SQLiteStore
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import ArtifactPin, Registry, RuntimePin
from reasonwire.govern.stores import SQLiteVault
from reasonwire.govern.validator import mapping_id, validate_text
from reasonwire.sim.app import build_app
from tests.govern.conftest import (
    ROOMY,
    RUNTIME,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    Recorder,
    ThreadServer,
    make_registry,
)

ROOT = Path(__file__).resolve().parents[2]
PIN = RuntimePin(
    version=RUNTIME[1],
    source_tag="v1.4.2",
    source_commit="3" * 40,
    artifacts=(ArtifactPin("hermes-1.4.2-py3-none-any.whl", "a" * 64),),
)
MEDIUM = OrgPolicy(allowed=frozenset({"low", "medium"}), maximum="medium")
ROUTE = "chat/sim-chat-all"
RUNTIME_KEY = "runtime-holds-no-provider-key"

POLICY_MODULE = (
    "from dataclasses import replace\n"
    "from reasonwire.govern.policy import OrgPolicy\n"
    "from tests.govern.conftest import make_registry\n"
    "from tests.govern.test_collect import PIN\n"
    "REGISTRY = make_registry('http://127.0.0.1:9/v1')\n"
    "REGISTRY.adapters[0] = replace(REGISTRY.adapters[0], pin=PIN)\n"
    "POLICY = OrgPolicy(allowed=frozenset({'low', 'medium'}), maximum='medium')\n"
)


def pinned_registry(upstream: str) -> Registry:
    reg = make_registry(upstream)
    assert reg.adapters[0].version == RUNTIME[1]
    reg.adapters[0] = replace(reg.adapters[0], pin=PIN)
    return reg


@dataclass
class Run:
    """What a governed qualification run leaves behind."""

    db: Path
    vault_db: Path
    policy: str
    out: Path
    transcript: Path
    activity: Path
    logs: Path
    extra: dict[str, Any] = field(default_factory=dict)


def _conv(tag: str) -> str:
    return f"q-{tag}-{uuid.uuid4().hex[:8]}"


class _Method:
    """The method's calls against one gateway."""

    def __init__(self, gw: Gateway, url: str, ring: KeyRing, out: Path) -> None:
        self.gw, self.url, self.ring = gw, url, ring
        self.transcript: list[str] = []
        self.activity: list[str] = []
        self._lock = threading.Lock()
        self.out = out

    def client(self, conv: str, requested: Any) -> tuple[Any, Any]:
        c = carry(
            conv,
            minter(
                self.gw.registry,
                self.gw.policy,
                self.ring,
                conversation_id=conv,
                task_id="task-" + conv,
                runtime_id=RUNTIME[0],
                runtime_version=RUNTIME[1],
                route_id=ROUTE,
                requested=requested,
            ),
        )
        sdk = openai.OpenAI(
            base_url=self.url + "/v1", api_key=RUNTIME_KEY, max_retries=0, http_client=c.client()
        )
        return c, sdk

    def ask(self, sdk: Any, messages: list[Any]) -> Any:
        body = {"model": "sim-chat-all", "messages": messages}
        r = sdk.chat.completions.create(**body, extra_body={"reasoning_effort": "high"})
        with self._lock:
            self.activity.append(json.dumps(body))
            self.transcript.append(r.model_dump_json())
        return r

    def raw(self, conv: str, token: str, path: str = "/v1/chat/completions") -> int:
        body = {"model": "sim-chat-all", "messages": [{"role": "user", "content": conv}]}
        r = httpx.post(
            self.url + path,
            json=body,
            headers={HEADER: token, CONVERSATION_HEADER: conv},
            timeout=30,
        )
        with self._lock:
            self.activity.append(json.dumps(body))
            self.transcript.append(r.text)
        return r.status_code

    def token(self, conv: str, **over: Any) -> str:
        claims: dict[str, Any] = {
            "conversation_id": conv,
            "task_id": "task-" + conv,
            "runtime_id": RUNTIME[0],
            "runtime_version": RUNTIME[1],
            "route_id": ROUTE,
            "requested": "low",
            "ceiling": "medium",
        }
        ring = over.pop("ring", self.ring)
        claims.update(over)
        return issue(ring, **claims)

    def run(self) -> None:
        # one observation per level, and Auto
        for lv in ("low", "medium", "auto"):
            conv = _conv(lv)
            _, sdk = self.client(conv, lv)
            self.ask(sdk, [{"role": "user", "content": f"[{conv}] What is 2+2?"}])
        # resume: three turns with a new binding each, the history replayed, then a turn
        # asking for another effort
        conv = _conv("resume")
        c, sdk = self.client(conv, "auto")
        messages: list[Any] = [{"role": "user", "content": f"[{conv}] Plan a trip."}]
        for turn in range(3):
            if turn:
                c.new_turn()
            r = self.ask(sdk, messages)
            messages += [
                {"role": "assistant", "content": r.choices[0].message.content},
                {"role": "user", "content": f"and step {turn + 2}?"},
            ]
        c.new_turn(self.token(conv, requested="low"))
        with pytest.raises(openai.PermissionDeniedError):
            self.ask(sdk, messages)
        # isolation: conversations at once, each with its own client
        convs = [_conv(f"iso{i}") for i in range(6)]
        barrier = threading.Barrier(len(convs))
        errors: list[BaseException] = []

        def one(conv: str, lv: str) -> None:
            try:
                _, sdk = self.client(conv, lv)
                barrier.wait(timeout=30)
                for _ in range(2):
                    self.ask(sdk, [{"role": "user", "content": f"[{conv}] slow@x"}])
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=one, args=(cv, ("low", "medium")[i % 2]))
            for i, cv in enumerate(convs)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        # negative cases
        conv = _conv("neg")
        good = self.token(conv)
        head, payload, sig = good.split(".")
        claims = jwt.api_jws.base64url_decode(payload.encode()).replace(b'"low"', b'"medium"')
        tampered = ".".join([head, jwt.utils.base64url_encode(claims).decode(), sig])
        alg_none = jwt.encode(
            jwt.decode(good, options={"verify_signature": False}),
            None,
            algorithm="none",
            headers={"kid": self.ring.active},
        )
        statuses = {
            "tampered": self.raw(conv, tampered),
            "expired": self.raw(conv, self.token(conv, now=time.time() - 3600, ttl_seconds=60)),
            "alg-none": self.raw(conv, alg_none),
            "wrong-key": self.raw(conv, self.token(conv, ring=KeyRing.generate("k-other"))),
            "other-conversation": self.raw(conv, self.token(conv + "-x")),
            "stale": self.raw(conv, self.token(conv, runtime_version="1.4.1-old")),
            "route": self.raw(conv, self.token(conv, route_id="chat/nope")),
            "provider": self.raw(conv, good, "/v1/messages"),
            "over-policy": self.raw(conv, self.token(conv, requested="high")),
        }
        assert set(statuses.values()) == {403}, statuses
        rev = _conv("revoked")
        tok = self.token(rev, route_id="chat/sim-openrouter")
        body = {"model": "sim-openrouter", "messages": [{"role": "user", "content": rev}]}
        hdrs = {HEADER: tok, CONVERSATION_HEADER: rev}
        assert httpx.post(self.url + "/v1/chat/completions", json=body, headers=hdrs).is_success
        self.gw.registry.revoke("chat/sim-openrouter")
        assert httpx.post(self.url + "/v1/chat/completions", json=body, headers=hdrs).status_code
        assert self.gw.store.rows(rev)[-1].reason == "route-revoked"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("qualify")
    name = "rw_collect_policy_" + uuid.uuid4().hex[:8]
    (tmp / f"{name}.py").write_text(POLICY_MODULE)
    mp = pytest.MonkeyPatch()
    mp.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    mp.syspath_prepend(str(tmp))
    log_file = tmp / "client.log"
    handler = logging.FileHandler(log_file)
    loggers = [logging.getLogger(n) for n in ("openai", "httpx")]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    recorder = Recorder(build_app(seed=0))
    db = tmp / "evidence.sqlite"
    try:
        with ThreadServer(recorder) as upstream:
            ring = KeyRing.generate("k1")
            store = SQLiteStore(db)
            gw = Gateway(
                pinned_registry(upstream.url + "/v1"), MEDIUM, ring, store, store_settings=ROOMY
            )
            with ThreadServer(gw.app) as gsrv:
                method = _Method(gw, gsrv.url, ring, tmp)
                method.run()
            # The gateway's vault (in memory today) copied where collect can read it.
            vault = SQLiteVault(tmp / "vault.sqlite")
            for conv, entries in gw.vault._data.items():
                vault.put(conv, list(entries.items()))
            vault.close()
            store.close()
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
        handler.close()
    (tmp / "transcript.jsonl").write_text("\n".join(method.transcript))
    (tmp / "activity.jsonl").write_text("\n".join(method.activity))
    (tmp / "artifacts").mkdir()
    (tmp / "artifacts" / "summary.txt").write_text(f"{len(method.transcript)} calls\n")
    yield Run(
        db,
        tmp / "vault.sqlite",
        name,
        tmp / "evidence.json",
        tmp / "transcript.jsonl",
        tmp / "activity.jsonl",
        log_file,
        {"recorder": recorder},
    )
    mp.undo()


def _collect(r: Run, *extra: str) -> Any:
    args = [
        "collect",
        "--evidence-db",
        str(r.db),
        "--out",
        str(r.out),
        "--policy",
        r.policy,
        "--deployment-id",
        "gw-test-1",
        "--route",
        ROUTE,
        "--vault-db",
        str(r.vault_db),
        "--transcript",
        str(r.transcript),
        "--activity",
        str(r.activity),
        "--logs",
        str(r.logs),
        "--artifacts",
        str(r.db.parent / "artifacts"),
        "--repo",
        str(ROOT),
        *extra,
    ]
    return CliRunner().invoke(app, args)


def test_collect_builds_evidence_the_validator_accepts(run: Run) -> None:
    res = _collect(run)
    assert res.exit_code == 0, res.output
    assert "PASS: wrote" in res.stdout
    doc = json.loads(run.out.read_text())
    assert doc["schema_version"] == 2
    assert doc["subject"]["deployment_id"] == "gw-test-1"
    assert doc["subject"]["runtime_source_commit"] == PIN.source_commit
    reg = pinned_registry("http://x/v1")
    assert doc["subject"]["mapping_id"] == mapping_id(reg.routes[ROUTE])
    assert doc["proposed_levels"] == ["low", "medium"]
    for ob in doc["observations"]:
        assert ob["usage_status"] == "reported" and ob["usage"]["output_tokens"] > 0
        assert ob["cost_status"] == "estimated" and ob["cost_usd"] > 0
        assert 0 < ob["latency"]["total_ms"] <= doc["latency_bound_ms"]
    assert doc["auto_resolution"]["resolved"] == "medium"
    assert doc["resume"]["turns"] == 3 and doc["resume"]["changed_effort_refused"]
    assert doc["isolation"]["conversations"] >= 2
    assert sorted(doc["hidden_reasoning"]) == ["activity", "artifacts", "logs", "transcript"]
    assert set(doc["hidden_reasoning"].values()) == {"absent"}
    # the validator, on its own, against the registry too
    res = CliRunner().invoke(
        app, ["validate", "--evidence", str(run.out), "--repo", str(ROOT), "--policy", run.policy]
    )
    assert res.exit_code == 0, res.output
    assert "registry and policy checked" in res.stdout


def test_the_hidden_reasoning_is_really_looked_for(run: Run, tmp_path: Path) -> None:
    """The same run, with the vault's reasoning pasted into the logs: present, refused."""
    vault = SQLiteVault(run.vault_db)
    texts = [t for v in vault.values() for t in _long_strings(v)]
    vault.close()
    assert texts, "the run stored no hidden reasoning to look for"
    leaky = tmp_path / "leaky.log"
    leaky.write_text("debug: " + json.dumps({"echo": texts[0]}))
    out = tmp_path / "ev.json"
    res = _collect(replace(run, logs=leaky, out=out))
    assert res.exit_code == 1, res.output
    assert "hidden reasoning in logs: present" in res.stderr
    assert texts[0] not in res.output and texts[0] not in out.read_text()


def _long_strings(v: Any) -> list[str]:
    from reasonwire.govern.collect import strings_in

    return list(strings_in(v))


def test_no_places_given_means_not_checked(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "ev.json"
    args = ["collect", "--evidence-db", str(run.db), "--out", str(out)]
    args += ["--policy", run.policy, "--deployment-id", "d", "--repo", str(ROOT), "--route", ROUTE]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1
    for place in ("transcript", "activity", "logs", "artifacts"):
        assert f"hidden reasoning in {place}: not checked" in res.stderr


# -- honesty on synthetic rows ---------------------------------------------------------------


def _row(**kw: Any) -> EvidenceRow:
    base: dict[str, Any] = {
        "outcome": "forwarded",
        "conversation_id": "c-low",
        "task_id": "task-c-low",
        "runtime_id": RUNTIME[0],
        "runtime_version": RUNTIME[1],
        "runtime_qualification": "Q-RT-hermes-1.4.2",
        "route_id": ROUTE,
        "route_qualification": "Q-ROUTE-sim-chat-all",
        "requested": "low",
        "resolved": "low",
        "latency_ms": 5.0,
        "ttfb_ms": 4.0,
    }
    base.update(kw)
    return EvidenceRow(**base)


def _doc(rows: list[EvidenceRow], **opts: Any) -> dict[str, Any]:
    return collect(
        rows,
        pinned_registry("http://x/v1"),
        MEDIUM,
        head="0" * 40,
        options=CollectOptions(deployment_id="d", **opts),
    )


def test_unreported_figures_stay_null_never_zero() -> None:
    rows = [
        _row(
            usage_status="reported",
            input_uncached=12,
            cache_read=None,
            cache_write=None,
            output_tokens=3,
            reasoning_tokens=None,
            cost_status="unavailable",
        ),
        _row(conversation_id="c-med", requested="medium", resolved="medium"),
    ]
    low, med = _doc(rows)["observations"]
    assert low["usage"] == {
        "input_uncached_tokens": 12,
        "cache_read_tokens": None,
        "cache_write_tokens": None,
        "output_tokens": 3,
        "reasoning_tokens": None,
    }
    assert (low["cost_status"], low["cost_usd"]) == ("unavailable", None)
    assert (med["usage_status"], med["usage"], med["cost_usd"]) == ("unavailable", None, None)


def test_cache_units_and_confirmed_cost_are_carried() -> None:
    rows = [
        _row(
            usage_status="reported",
            input_uncached=1,
            cache_read=900,
            cache_write=50,
            output_tokens=7,
            reasoning_tokens=5,
            cost_status="confirmed",
            cost_usd=0.0042,
        )
    ]
    (ob,) = _doc(rows, levels=["low"])["observations"]
    assert ob["usage"]["cache_read_tokens"] == 900 and ob["usage"]["cache_write_tokens"] == 50
    assert (ob["cost_status"], ob["cost_usd"]) == ("confirmed", 0.0042)


def test_missing_pieces_are_left_for_the_validator_to_name() -> None:
    rows = [_row(latency_ms=90_000.0)]
    doc = _doc(rows, latency_bound_ms=1000.0)
    assert [o["level"] for o in doc["observations"]] == ["low"]  # nothing made up for medium
    assert doc["negative_cases"] == {} and doc["hidden_reasoning"] == {}
    assert "auto_resolution" not in doc
    with pytest.raises(EvidenceError) as e:
        validate_text(json.dumps(doc), "0" * 40)
    text = "; ".join(e.value.problems)
    assert "auto_resolution" in text and "resume.turns" in text


def test_over_the_bound_fails_and_a_call_within_it_is_preferred() -> None:
    slow = _row(latency_ms=90_000.0)
    fast = _row(latency_ms=20.0, conversation_id="c-low-2")
    doc = _doc([slow, fast], latency_bound_ms=1000.0, levels=["low"])
    assert doc["observations"][0]["evidence_call_ids"] == [fast.call_id]
    doc = _doc([slow], latency_bound_ms=1000.0, levels=["low"])
    assert doc["observations"][0]["latency"]["total_ms"] == 90_000.0


def test_a_crossed_binding_is_counted() -> None:
    t = time.time()
    rows = [
        _row(conversation_id="a", task_id="task-a", ts=t, latency_ms=1000.0),
        _row(conversation_id="b", task_id="task-b", ts=t + 0.1, latency_ms=1000.0),
        _row(conversation_id="a", task_id="task-b", ts=t + 0.2, latency_ms=1000.0),
    ]
    iso = _doc(rows)["isolation"]
    assert (iso["conversations"], iso["crossed_bindings"]) == (2, 1)
    dup = dataclasses.replace(rows[0])
    assert _doc([*rows, dup])["isolation"]["crossed_evidence_rows"] == 1


def test_collect_cli_errors_are_one_line(run: Run, tmp_path: Path) -> None:
    base = ["--out", str(tmp_path / "e.json"), "--policy", run.policy, "--deployment-id", "d"]
    cases = [
        (["--evidence-db", str(tmp_path / "nope.sqlite"), *base], "error: no database file"),
        (["--evidence-db", str(run.db), *base, "--levels", "ultra"], "error: --levels takes"),
        (
            ["--evidence-db", str(run.db), *base, "--runtime", "nobody"],
            "error: no forwarded call",
        ),
        (
            [
                "--evidence-db",
                str(run.db),
                *base[:3],
                "no_such_module_rw",
                *base[4:],
            ],
            "error: cannot import policy module",
        ),
    ]
    for args, start in cases:
        res = CliRunner().invoke(app, ["collect", *args, "--repo", str(ROOT)])
        assert res.exit_code == 2, res.output
        assert res.stderr.startswith(start) and len(res.stderr.strip().splitlines()) == 1


def test_validator_checks_the_subject_against_the_registry(run: Run) -> None:
    res = _collect(run)
    assert res.exit_code == 0, res.output
    text = run.out.read_text()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    reg = pinned_registry("http://x/v1")
    validate_text(text, head, registry=reg, policy=MEDIUM)
    route = reg.routes[ROUTE]
    changed = replace(route, levels={**route.levels, "low": {"reasoning_effort": "minimal"}})
    cases: list[tuple[Registry, OrgPolicy, str]] = []
    r1 = pinned_registry("http://x/v1")
    r1.routes[ROUTE] = changed
    cases.append((r1, MEDIUM, "the levels meant something else on the wire"))
    r2 = pinned_registry("http://x/v1")
    r2.revoke(ROUTE)
    cases.append((r2, MEDIUM, f"route {ROUTE} is revoked"))
    r3 = pinned_registry("http://x/v1")
    r3.adapters[0] = replace(r3.adapters[0], pin=replace(PIN, source_commit="4" * 40))
    cases.append((r3, MEDIUM, "is not the pinned v1.4.2"))
    r4 = pinned_registry("http://x/v1")
    r4.adapters = r4.adapters[1:]
    cases.append((r4, MEDIUM, "has no adapter record"))
    high = OrgPolicy(allowed=frozenset({"low", "medium", "high"}), maximum="high")
    cases.append((pinned_registry("http://x/v1"), high, "is not the policy's high"))
    for reg_, pol, expect in cases:
        with pytest.raises(EvidenceError) as e:
            validate_text(text, head, registry=reg_, policy=pol)
        assert any(expect in p for p in e.value.problems), e.value.problems
