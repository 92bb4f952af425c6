"""``reasonwire control sign``: a binding from the policy module, the keys directory, the
conversation and the requested level; Auto resolves to the organisation maximum; one-line
errors and exit codes."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonwire.cli import build_app
from reasonwire.govern.binding import KeyRing, verify

POLICY = (
    "from reasonwire.govern.policy import OrgPolicy\n"
    "from tests.govern.conftest import make_registry\n"
    "REGISTRY = make_registry('http://127.0.0.1:9/v1')\n"
    "POLICY = OrgPolicy(allowed=frozenset({'low', 'medium'}), maximum='medium')\n"
)


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "rw_ctl_policy_" + uuid.uuid4().hex[:8]
    (tmp_path / f"{name}.py").write_text(POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    d = tmp_path / "keys"
    KeyRing.generate("k7").save_dir(d)
    return d


def _sign(policy: str, keys: Path, *extra: str, level: str = "Auto") -> tuple[int, str, str]:
    args = [
        "control",
        "sign",
        "--policy",
        policy,
        "--keys",
        str(keys),
        "--conversation",
        "conv-1",
        "--runtime",
        "hermes",
        "--runtime-version",
        "1.4.2",
        "--route",
        "chat/sim-chat-all",
        "--level",
        level,
        *extra,
    ]
    res = CliRunner().invoke(build_app("control"), args)
    return res.exit_code, res.stdout, res.stderr


def test_auto_resolves_to_the_org_maximum(policy: str, keys: Path) -> None:
    code, out, err = _sign(policy, keys)
    assert code == 0, err
    token = out.strip()
    assert len(out.splitlines()) == 1  # only the binding on stdout
    b = verify(KeyRing.load_dir(keys), token)
    assert (b.conversation_id, b.task_id, b.requested, b.ceiling, b.key_id) == (
        "conv-1",
        "conv-1",
        "auto",
        "medium",
        "k7",
    )
    assert "requested auto -> medium (ceiling medium)" in err
    assert token not in err


def test_written_to_a_private_file(policy: str, keys: Path, tmp_path: Path) -> None:
    out_file = tmp_path / "binding.jws"
    code, out, err = _sign(policy, keys, "--out", str(out_file), "--task", "t9", level="Low")
    assert code == 0, err
    assert out == ""
    assert stat.S_IMODE(os.stat(out_file).st_mode) == 0o600
    b = verify(KeyRing.load_dir(keys), out_file.read_text().strip())
    assert (b.requested, b.task_id) == ("low", "t9")


@pytest.mark.parametrize(
    ("level", "extra", "code", "start"),
    [
        ("High", [], 1, "refused: over-policy: "),
        ("Extreme", [], 2, "error: unknown effort level 'Extreme'"),
        ("Low", ["--runtime-version", "9.9"], 1, "refused: runtime-version-unknown: "),
        ("Low", ["--route", "chat/nope"], 1, "refused: route-unknown: "),
        ("Low", ["--ttl", "0"], 2, "error: --ttl must be"),
    ],
)
def test_refusals_and_errors_are_one_line(
    policy: str, keys: Path, level: str, extra: list[str], code: int, start: str
) -> None:
    got, out, err = _sign(policy, keys, *extra, level=level)
    assert got == code, err
    assert out == "" and len(err.strip().splitlines()) == 1 and err.startswith(start), err


def test_public_keys_only_cannot_sign(policy: str, keys: Path) -> None:
    (keys / "k7.key.pem").unlink()
    code, out, err = _sign(policy, keys)
    assert code == 2 and out == "" and err.startswith("error: no private key"), err


def test_broken_policy_module(keys: Path) -> None:
    code, _, err = _sign("no_such_policy_module_x", keys)
    assert code == 2 and err.startswith("error: cannot import policy module"), err
