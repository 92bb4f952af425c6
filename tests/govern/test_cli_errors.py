"""``reasonwire gateway`` and ``reasonwire qualify`` fail with one line and a non-zero exit
code, never a traceback: unreadable key files, broken policy modules, unopenable evidence
paths, key output paths that cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from reasonwire.govern.binding import KeyRing
from reasonwire.govern.cli import gateway as gateway_cli
from reasonwire.govern.cli import qualify as qualify_cli

GOOD_POLICY = (
    "from reasonwire.govern.policy import OrgPolicy\n"
    "from reasonwire.govern.registry import Registry\n"
    "REGISTRY = Registry()\n"
    "POLICY = OrgPolicy(allowed=frozenset({'low'}), maximum='low')\n"
)


def _one_line_error(res: Result, code: int = 2) -> str:
    assert res.exit_code == code, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    out = res.output.strip()
    assert "Traceback" not in out
    assert len(out.splitlines()) == 1, out
    assert out.startswith("error: ")
    return out


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = "rw_policy_" + uuid.uuid4().hex[:8]
    (tmp_path / f"{name}.py").write_text(GOOD_POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    d = tmp_path / "keys"
    KeyRing.generate("k1").save_dir(d)
    (d / "k1.key.pem").unlink()
    return d


def _serve(*args: str) -> Result:
    return CliRunner().invoke(gateway_cli.app, ["serve", *args])


@pytest.mark.parametrize("how", ["dangling symlink", "a directory", "garbage", "not Ed25519"])
def test_unreadable_public_key_file(policy: str, keys: Path, tmp_path: Path, how: str) -> None:
    f = keys / "k1.pub.pem"
    f.unlink()
    if how == "dangling symlink":
        f.symlink_to(tmp_path / "nowhere")
    elif how == "a directory":
        f.mkdir()
    elif how == "garbage":
        f.write_bytes(b"\xff\xfe not pem")
    else:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key

        f.write_bytes(
            generate_private_key(SECP256R1())
            .public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    out = _one_line_error(_serve("--policy", policy, "--keys", str(keys)))
    assert "k1.pub.pem" in out


@pytest.mark.parametrize(
    ("source", "expect"),
    [
        ("def broken(:\n", "SyntaxError"),
        ("raise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
        ("import rw_no_such_module_xyz\n", "ModuleNotFoundError"),
    ],
    ids=["syntax error", "raises at import", "imports a missing module"],
)
def test_broken_policy_module(
    keys: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, expect: str
) -> None:
    name = "rw_badpolicy_" + uuid.uuid4().hex[:8]
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = _one_line_error(_serve("--policy", name, "--keys", str(keys)))
    assert f"cannot import policy module {name!r}" in out and expect in out


def test_missing_policy_module(keys: Path) -> None:
    out = _one_line_error(
        _serve("--policy", "rw_not_there_" + uuid.uuid4().hex, "--keys", str(keys))
    )
    assert "cannot import policy module" in out


@pytest.mark.parametrize("how", ["a directory", "parent is a file"])
def test_unopenable_gateway_evidence_path(
    policy: str, keys: Path, tmp_path: Path, how: str
) -> None:
    if how == "a directory":
        path = tmp_path / "evdir"
        path.mkdir()
    else:
        (tmp_path / "plain").write_text("x")
        path = tmp_path / "plain" / "ev.sqlite"
    out = _one_line_error(_serve("--policy", policy, "--keys", str(keys), "--evidence", str(path)))
    assert "cannot open evidence database" in out


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--store-timeout", "0", "store timeout"),
        ("--store-timeout", "-1", "store timeout"),
        ("--retry-after", "0", "retry_after"),
        ("--retry-after", "3601", "retry_after"),
    ],
)
def test_store_bounds_out_of_range(
    policy: str, keys: Path, tmp_path: Path, flag: str, value: str, says: str
) -> None:
    ev = str(tmp_path / "ev.sqlite")
    out = _one_line_error(
        _serve("--policy", policy, "--keys", str(keys), "--evidence", ev, flag, value)
    )
    assert says in out


@pytest.mark.parametrize("how", ["missing", "a directory", "parent is a file", "not UTF-8"])
def test_unopenable_qualify_evidence_path(tmp_path: Path, how: str) -> None:
    path = tmp_path / "ev.json"
    if how == "a directory":
        path.mkdir()
    elif how == "parent is a file":
        (tmp_path / "plain").write_text("x")
        path = tmp_path / "plain" / "ev.json"
    elif how == "not UTF-8":
        path.write_bytes(b"\xff\xfe{}")
    res = CliRunner().invoke(qualify_cli.app, ["validate", "--evidence", str(path)])
    assert "cannot read evidence file" in _one_line_error(res)


def test_keygen_out_under_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    res = CliRunner().invoke(gateway_cli.app, ["keygen", "--out", str(tmp_path / "plain" / "k")])
    assert "cannot write keys to" in _one_line_error(res)
    assert (tmp_path / "plain").read_text() == "x"


def _unwritable(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        d = tmp_path / "ro"
        d.mkdir()
        d.chmod(0o500)
        return d
    # root writes through permission bits; /proc/self is a directory nobody can create in
    d = Path("/proc/self")
    if not d.is_dir():
        pytest.skip("no unwritable directory available to root")
    return d


def test_keygen_unwritable_out_dir(tmp_path: Path) -> None:
    d = _unwritable(tmp_path)
    res = CliRunner().invoke(gateway_cli.app, ["keygen", "--out", str(d), "--kid", "rwtest"])
    assert "cannot write keys to" in _one_line_error(res)
    assert not (d / "rwtest.pub.pem").exists() and not (d / "rwtest.key.pem").exists()


def test_keygen_refuses_a_path_as_key_id(tmp_path: Path) -> None:
    res = CliRunner().invoke(gateway_cli.app, ["keygen", "--out", str(tmp_path), "--kid", "../x"])
    assert "key id" in _one_line_error(res)
    assert list(tmp_path.iterdir()) == []


def _cli(*args: str, path: Path) -> subprocess.CompletedProcess[str]:
    """The real entry point in a child process (no CliRunner exception capture); ``path``
    (the policy module's directory) then this process's path (this worktree's sources)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), *sys.path])}
    return subprocess.run(
        [sys.executable, "-c", "from reasonwire.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_real_entry_point_one_line_no_traceback(tmp_path: Path, keys: Path) -> None:
    (tmp_path / "plain").write_text("x")
    (tmp_path / "rw_syntax_err_policy.py").write_text("def broken(:\n")
    cases = [
        ["gateway", "keygen", "--out", str(tmp_path / "plain" / "k")],
        ["gateway", "serve", "--policy", "rw_syntax_err_policy", "--keys", str(keys)],
    ]
    for args in cases:
        proc = _cli(*args, path=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr + proc.stdout
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert proc.stderr.startswith("error: ")
