"""A ring loaded from a keys directory follows it: a deleted public key, or a key id listed in
``revoked.txt``, is refused from the next verification on, without a restart, also by a
running gateway that had the binding cached."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from reasonwire.errors import ConfigError, PolicyRefusal
from reasonwire.govern import binding
from reasonwire.govern.binding import HEADER, REVOCATION_FILE, KeyRing, issue, verify
from reasonwire.govern.cli import gateway as gateway_cli
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import CONVERSATION_HEADER, Gateway
from reasonwire.govern.policy import OrgPolicy
from tests.govern.conftest import ROOMY, SUBJECT_CLAIMS, World, make_registry, new_conv

CLAIMS: dict[str, Any] = dict(SUBJECT_CLAIMS)


@pytest.fixture
def control() -> KeyRing:
    """Control's ring: signs with k1, then k2 (both keep verifying)."""
    ring = KeyRing.generate("k1")
    ring.rotate("k2")
    return ring


@pytest.fixture
def keydir(tmp_path: Path, control: KeyRing) -> Path:
    """A verifier's keys directory: public keys only."""
    d = tmp_path / "keys"
    control.save_dir(d)
    for f in d.glob("*.key.pem"):
        f.unlink()
    return d


def _token(control: KeyRing, kid: str, **over: Any) -> str:
    active, control.active = control.active, kid
    try:
        return issue(control, **{**CLAIMS, **over})
    finally:
        control.active = active


def _refusal(ring: KeyRing, token: str) -> PolicyRefusal:
    with pytest.raises(PolicyRefusal) as info:
        verify(ring, token)
    return info.value


def test_deleted_public_key_stops_verifying_at_once(control: KeyRing, keydir: Path) -> None:
    ring = KeyRing.load_dir(keydir)
    t1, t2 = _token(control, "k1"), _token(control, "k2")
    assert verify(ring, t1).key_id == "k1"
    (keydir / "k1.pub.pem").unlink()
    e = _refusal(ring, t1)  # the very next verification, no sleep, no restart
    assert e.reason == "binding-unknown-key"
    assert "k1" in str(e) and "removed from" in str(e)
    assert verify(ring, t2).key_id == "k2"  # the other key is untouched


def test_revocation_list_is_honoured_at_once(control: KeyRing, keydir: Path) -> None:
    ring = KeyRing.load_dir(keydir)
    t1, t2 = _token(control, "k1"), _token(control, "k2")
    assert verify(ring, t1).key_id == "k1"
    (keydir / REVOCATION_FILE).write_text("# compromised 2026-01-02\nk1  # laptop lost\n")
    e = _refusal(ring, t1)
    assert (e.reason, str(e)) == (
        "binding-revoked-key",
        "binding-revoked-key: key id 'k1' is revoked",
    )
    assert "k1" not in ring.public and ring.revoked == {"k1"}
    assert verify(ring, t2).key_id == "k2"
    (keydir / REVOCATION_FILE).write_text("k2\n")  # edited in place: k1 back, k2 out
    assert verify(ring, t1).key_id == "k1"
    assert _refusal(ring, t2).reason == "binding-revoked-key"
    (keydir / REVOCATION_FILE).unlink()
    assert verify(ring, t2).key_id == "k2"


def test_a_file_named_revoked_also_revokes(control: KeyRing, keydir: Path) -> None:
    ring = KeyRing.load_dir(keydir)
    (keydir / "revoked").write_text("k2\n")
    assert _refusal(ring, _token(control, "k2")).reason == "binding-revoked-key"


def test_revoked_at_startup_is_not_loaded(control: KeyRing, keydir: Path) -> None:
    (keydir / REVOCATION_FILE).write_text("k1\n")
    ring = KeyRing.load_dir(keydir)
    assert set(ring.public) == {"k2"}
    assert _refusal(ring, _token(control, "k1")).reason == "binding-revoked-key"


def test_new_key_is_picked_up(control: KeyRing, keydir: Path) -> None:
    ring = KeyRing.load_dir(keydir)
    control.rotate("k3")
    control.save_dir(keydir)  # (writes private keys too: a signer's directory)
    assert verify(ring, _token(control, "k3")).key_id == "k3"
    assert ring.active == "k3"


def test_steady_state_costs_stats_not_reads(
    control: KeyRing, keydir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the files are older than the timestamp granularity window, a use only stats; a
    change is still seen through its stamp."""
    real = time.time_ns
    monkeypatch.setattr(binding.time, "time_ns", lambda: real() + 10 * 10**9)  # files look old
    ring = KeyRing.load_dir(keydir)
    reads = 0
    read = binding._KeyDir._read

    def counting(self: binding._KeyDir) -> Any:
        nonlocal reads
        reads += 1
        return read(self)

    monkeypatch.setattr(binding._KeyDir, "_read", counting)
    t1 = _token(control, "k1")
    for _ in range(50):
        verify(ring, t1)
    assert reads == 0
    _past_the_stamp_of(keydir / "k1.pub.pem")
    (keydir / "k1.pub.pem").unlink()
    assert _refusal(ring, t1).reason == "binding-unknown-key" and reads == 1
    ring.reload_soon()  # SIGHUP
    verify(ring, _token(control, "k2"))
    assert reads == 2


def _past_the_stamp_of(path: Path) -> None:
    """Wait (bounded) until a file written now gets a later timestamp than ``path`` has: the
    filesystem's clock has ticked past its creation (a probe file beside its directory)."""
    stamp = path.stat().st_mtime_ns
    probe = path.parent.parent / "tick"
    deadline = time.monotonic() + 10
    while True:
        probe.touch()
        if probe.stat().st_mtime_ns > stamp:
            return
        assert time.monotonic() < deadline, "the filesystem clock did not tick"
        time.sleep(0.001)


@pytest.mark.parametrize("change", ["new list", "same-size edit"])
def test_coarse_timestamps_do_not_hide_a_revocation(
    control: KeyRing, keydir: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """On a filesystem with 1 s timestamps, a revocation list created, or edited in place to
    the same size, within the second the ring was loaded leaves every stamp as it was: the
    recent stamps make the ring compare contents instead."""
    real = binding._stat

    def coarse(path: str) -> binding._Stat:
        t = real(path)
        if isinstance(t, str) or os.path.isdir(path):
            return t if isinstance(t, str) else (t[0], 0, t[2] // 10**9, t[3] // 10**9)
        return (t[0], t[1], t[2] // 10**9 * 10**9, t[3] // 10**9 * 10**9)

    monkeypatch.setattr(binding, "_stat", coarse)
    if change == "same-size edit":
        (keydir / REVOCATION_FILE).write_text("k2\n")
    while time.time() % 1 > 0.5:  # start early in a second: all of this takes milliseconds
        time.sleep(0.05)
    (keydir / REVOCATION_FILE).touch()  # every stamp in this second
    if change == "new list":
        (keydir / REVOCATION_FILE).unlink()
    ring = KeyRing.load_dir(keydir)
    t1 = _token(control, "k1")
    assert verify(ring, t1).key_id == "k1"
    with (keydir / REVOCATION_FILE).open("r+" if change == "same-size edit" else "w") as f:
        f.write("k1\n")  # in place: same inode, same size
    assert _refusal(ring, t1).reason == "binding-revoked-key"


def test_broken_key_file_on_reload_fails_closed_for_that_key(
    control: KeyRing, keydir: Path
) -> None:
    ring = KeyRing.load_dir(keydir)
    (keydir / "k1.pub.pem").write_text("not a key\n")
    e = _refusal(ring, _token(control, "k1"))
    assert e.reason == "binding-unknown-key" and "is not a readable PEM key" in str(e)
    assert verify(ring, _token(control, "k2")).key_id == "k2"


def test_unreadable_revocation_list_trusts_nothing(control: KeyRing, keydir: Path) -> None:
    ring = KeyRing.load_dir(keydir)
    (keydir / REVOCATION_FILE).mkdir()  # exists, cannot be read as a file
    e = _refusal(ring, _token(control, "k2"))
    assert e.reason == "binding-unknown-key" and "revocation list" in str(e)
    (keydir / REVOCATION_FILE).rmdir()
    assert verify(ring, _token(control, "k2")).key_id == "k2"


def test_vanished_directory_trusts_nothing(control: KeyRing, keydir: Path) -> None:
    ring = KeyRing.load_dir(keydir)
    moved = keydir.with_name("elsewhere")
    keydir.rename(moved)
    assert "cannot be read" in str(_refusal(ring, _token(control, "k1")))
    moved.rename(keydir)
    assert verify(ring, _token(control, "k1")).key_id == "k1"


def test_startup_errors_name_the_file(keydir: Path) -> None:
    (keydir / "k1.pub.pem").write_text("garbage")
    with pytest.raises(ConfigError, match=r"k1\.pub\.pem is not a readable PEM key"):
        KeyRing.load_dir(keydir)
    (keydir / "k1.pub.pem").unlink()
    (keydir / "k1.pub.pem").symlink_to(keydir / "nowhere")
    with pytest.raises(ConfigError, match=r"k1\.pub\.pem cannot be read \(FileNotFoundError\)"):
        KeyRing.load_dir(keydir)
    with pytest.raises(ConfigError, match="cannot be read"):
        KeyRing.load_dir(keydir / "missing")


def test_in_memory_revoke_and_retire(control: KeyRing) -> None:
    t1 = _token(control, "k1")
    control.revoke("k1")
    assert _refusal(control, t1).reason == "binding-revoked-key"
    control.retire("k2")
    assert _refusal(control, _token(KeyRing.generate("k2"), "k2")).reason == "binding-unknown-key"


# -- a gateway holding a directory ring ---------------------------------------------------------


class DirHarness:
    def __init__(self, world: World, keys: Path, control: KeyRing) -> None:
        self.control = control
        self.ring = KeyRing.load_dir(keys)
        upstream = world.gateway.registry.routes["chat/sim-chat-all"].upstream_base_url
        policy = OrgPolicy(allowed=frozenset({"low", "medium"}), maximum="medium")
        self.gw = Gateway(
            make_registry(upstream), policy, self.ring, SQLiteStore(), store_settings=ROOMY
        )

    async def call(self, conv: str, kid: str) -> httpx.Response:
        token = _token(self.control, kid, conversation_id=conv, task_id="t-" + conv)
        body = {"model": "sim-chat-all", "messages": [{"role": "user", "content": conv}]}
        transport = httpx.ASGITransport(app=self.gw.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
            return await c.post(
                "/v1/chat/completions",
                json=body,
                headers={HEADER: token, CONVERSATION_HEADER: conv},
            )


@pytest.fixture
async def dh(world: World, keydir: Path, control: KeyRing) -> AsyncIterator[DirHarness]:
    h = DirHarness(world, keydir, control)
    yield h
    await h.gw.aclose()


async def test_gateway_refuses_a_deleted_key_without_restart(dh: DirHarness, keydir: Path) -> None:
    conv = new_conv()
    assert (await dh.call(conv, "k1")).status_code == 200
    assert (await dh.call(conv, "k1")).status_code == 200  # now served from its cache
    (keydir / "k1.pub.pem").unlink()
    resp = await dh.call(conv, "k1")
    assert resp.status_code != 200 and resp.json()["error"]["code"] == "binding-unknown-key"
    assert (await dh.call(conv, "k2")).status_code == 200


async def test_gateway_honours_the_revocation_list_without_restart(
    dh: DirHarness, keydir: Path
) -> None:
    conv = new_conv()
    assert (await dh.call(conv, "k2")).status_code == 200
    (keydir / REVOCATION_FILE).write_text("k2\n")
    resp = await dh.call(conv, "k2")
    assert resp.json()["error"]["code"] == "binding-revoked-key"


# -- SIGHUP from `gateway serve` ------------------------------------------------------------


@pytest.fixture
def restore_sighup() -> Iterator[None]:
    old = signal.getsignal(signal.SIGHUP)
    yield
    signal.signal(signal.SIGHUP, old)


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP on this platform")
def test_serve_rereads_keys_on_sighup(
    keydir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_sighup: None
) -> None:
    (tmp_path / "rw_sighup_policy.py").write_text(
        "from reasonwire.govern.policy import OrgPolicy\n"
        "from reasonwire.govern.registry import Registry\n"
        "REGISTRY = Registry()\n"
        "POLICY = OrgPolicy(allowed=frozenset({'low'}), maximum='low')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: dict[str, Any] = {}

    def fake_serve(gw: Gateway, *args: Any) -> None:
        ring = gw.keys
        assert ring._dir is not None and not ring._dir.dirty
        os.kill(os.getpid(), signal.SIGHUP)
        seen["dirty"] = ring._dir.dirty

    monkeypatch.setattr(gateway_cli, "_serve_gateway", fake_serve)
    signal.signal(signal.SIGHUP, lambda _s, _f: None)  # if serve installed none: no crash
    args = ["serve", "--policy", "rw_sighup_policy", "--keys", str(keydir)]
    res = CliRunner().invoke(gateway_cli.app, [*args, "--evidence", str(tmp_path / "ev.sqlite")])
    assert res.exit_code == 0, res.output
    assert seen == {"dirty": True}
