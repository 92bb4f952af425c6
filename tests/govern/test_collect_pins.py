"""Registry pins (exact version, source tag and commit, artifact checksums) and
``reasonwire qualify verify-pin`` on a local wheel, sdist and binary."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import uuid
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reasonwire.govern.cli.qualify import app
from reasonwire.govern.registry import ArtifactPin, RuntimeAdapter, RuntimePin

COMMIT = "5" * 40


def _wheel(path: Path, version: str) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("hermes/__init__.py", "")
        z.writestr(
            f"hermes-{version}.dist-info/METADATA",
            f"Metadata-Version: 2.1\nName: hermes\nVersion: {version}\n\nA runtime.\n",
        )
    return path


def _sdist(path: Path, version: str) -> Path:
    with tarfile.open(path, "w:gz") as t:
        data = f"Metadata-Version: 2.1\nName: hermes\nVersion: {version}\n".encode()
        info = tarfile.TarInfo(f"hermes-{version}/PKG-INFO")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    binary = tmp_path / "hermes-linux-x86_64"
    binary.write_bytes(b"\x7fELF" + os.urandom(4096))
    (tmp_path / "mislabelled").mkdir()
    return {
        "wheel": _wheel(tmp_path / "hermes-1.4.2-py3-none-any.whl", "1.4.2"),
        "sdist": _sdist(tmp_path / "hermes-1.4.2.tar.gz", "1.4.2"),
        "binary": binary,
        # published under the pinned version's name, but built as 1.4.1
        "mislabelled": _wheel(tmp_path / "mislabelled" / "hermes-1.4.2-py3-none-any.whl", "1.4.1"),
    }


@pytest.fixture
def policy(files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    arts = ", ".join(
        f"ArtifactPin({p.name!r}, {_sha(p)!r})"
        for k, p in files.items()
        if k in ("wheel", "sdist", "binary")
    )
    wrong = f"ArtifactPin('hermes-1.4.2-alt.whl', {_sha(files['mislabelled'])!r})"
    name = "rw_pin_policy_" + uuid.uuid4().hex[:8]
    (tmp_path / f"{name}.py").write_text(
        "from reasonwire.govern.levels import LEVELS\n"
        "from reasonwire.govern.policy import OrgPolicy\n"
        "from reasonwire.govern.registry import ArtifactPin, Registry, RuntimeAdapter, "
        "RuntimePin\n"
        f"PIN = RuntimePin('1.4.2', 'v1.4.2', {COMMIT!r}, ({arts}, {wrong}))\n"
        "REGISTRY = Registry(adapters=[\n"
        "    RuntimeAdapter('hermes', '1.4.2', 'discovery', '', frozenset(LEVELS), PIN),\n"
        "    RuntimeAdapter('hermes', '1.4.1', 'qualified', 'Q', frozenset(LEVELS)),\n"
        "])\n"
        "POLICY = OrgPolicy(allowed=frozenset({'low'}), maximum='low')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _verify(policy: str, *files: Path, version: str = "1.4.2") -> tuple[int, str, str]:
    args = ["verify-pin", "--policy", policy, "--runtime", "hermes", "--version", version]
    res = CliRunner().invoke(app, [*args, *map(str, files)])
    return res.exit_code, res.stdout, res.stderr


def test_pinned_artifacts_pass(policy: str, files: dict[str, Path]) -> None:
    code, out, err = _verify(policy, files["wheel"], files["sdist"], files["binary"])
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("PASS: ") for line in lines)
    assert f"sha256 {_sha(files['wheel'])}" in lines[0]
    assert f"tag v1.4.2, commit {COMMIT}" in lines[0]


def test_a_changed_byte_fails(policy: str, files: dict[str, Path]) -> None:
    f = files["binary"]
    data = bytearray(f.read_bytes())
    data[100] ^= 1
    f.write_bytes(bytes(data))
    code, out, err = _verify(policy, files["wheel"], f)
    assert code == 1
    assert out.startswith("PASS: ")  # the good one still said so
    assert err.startswith(f"FAIL: {f}: {f.name} has sha256 {_sha(f)}; the pin of hermes 1.4.2")


def test_an_unknown_file_fails(policy: str, tmp_path: Path) -> None:
    other = tmp_path / "whatever.bin"
    other.write_bytes(b"x")
    code, _, err = _verify(policy, other)
    assert code == 1 and "matches no pinned artifact of hermes 1.4.2" in err, err


def test_a_package_stating_another_version_fails(policy: str, files: dict[str, Path]) -> None:
    code, _, err = _verify(policy, files["mislabelled"])
    assert code == 1
    assert "states version 1.4.1, the pin is for 1.4.2" in err, err


@pytest.mark.parametrize(
    ("version", "start"),
    [
        ("1.4.0", "FAIL: runtime-version-unknown: "),
        ("1.4.1", "FAIL: runtime-not-pinned: "),
    ],
)
def test_no_pin_fails_closed(policy: str, files: dict[str, Path], version: str, start: str) -> None:
    code, _, err = _verify(policy, files["wheel"], version=version)
    assert code == 1 and err.startswith(start) and len(err.strip().splitlines()) == 1, err


def test_unreadable_file_is_an_error(policy: str, tmp_path: Path) -> None:
    code, _, err = _verify(policy, tmp_path / "missing.whl")
    assert code == 2 and err.startswith("error: cannot read") and "\n" not in err.strip()


def test_pins_are_checked_when_written() -> None:
    good = ArtifactPin("a.whl", "0" * 64)
    with pytest.raises(ValueError, match="64 lower-case hex"):
        ArtifactPin("a.whl", "0" * 63)
    with pytest.raises(ValueError, match="not a file name"):
        ArtifactPin("dir/a.whl", "0" * 64)
    with pytest.raises(ValueError, match="40 hex"):
        RuntimePin("1.0", "v1.0", "abc", (good,))
    with pytest.raises(ValueError, match="at least one artifact"):
        RuntimePin("1.0", "v1.0", COMMIT, ())
    with pytest.raises(ValueError, match=r"pin is for version 1\.0"):
        RuntimeAdapter(
            "r", "2.0", "qualified", "Q", frozenset(), RuntimePin("1.0", "v1.0", COMMIT, (good,))
        )
