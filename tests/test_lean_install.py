"""The lean core: ``pip install reasonwire`` (no extras) brings httpx and orjson only, and
``wire``, ``http``, ``credentials``, ``probe`` and ``agent`` work with it (DESIGN.md,
Dependencies). Without an extra, the command and the packages that need it say so in one line.

The slow test installs this tree into a fresh venv under the temp dir with no extras (pip
builds the wheel with hatchling from the configured index, about 10 s with a warm cache), checks
the installed distributions, then runs the probe and the agent in that venv against the
simulator started here (the simulator needs the [sim] extra, which this venv has). The fast
tests check the same contract in this venv by hiding the optional modules
(``sys.modules[name] = None`` makes both ``import`` and ``find_spec`` see them as absent).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from reasonwire import _extras
from reasonwire.probe.settings import user_data_dir

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
HEAVY_DISTS = frozenset(
    canonicalize_name(n)
    for n in (
        "numpy", "gguf", "tokenizers", "jinja2", "starlette", "uvicorn", "PyJWT",
        "cryptography", "typer", "rich", "pydantic", "platformdirs",
    )
)  # fmt: skip
OPTIONAL_MODULES = sorted({m for mods in _extras.EXTRAS.values() for m in mods})
# import name of a distribution, where it differs from the distribution's name
IMPORT_NAME = {
    "pyjwt": "jwt",
    "opentelemetry-sdk": "opentelemetry",
    "opentelemetry-exporter-otlp-proto-http": "opentelemetry",
}
SEED_DISTS = frozenset({"pip", "setuptools", "wheel"})  # what `python -m venv` puts there


def _hidden(
    code: str, *modules: str, argv: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter of this venv with ``modules`` hidden."""
    prelude = "import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    if argv is not None:
        prelude += f"sys.argv = {argv!r}\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )


def _command(args: list[str], *hidden: str) -> subprocess.CompletedProcess[str]:
    return _hidden("from reasonwire.cli import main\nmain()\n", *hidden, argv=["reasonwire", *args])


# ------------------------------------------------------------------------------------------
# fast: the extras table, the one-line messages, the data directory
# ------------------------------------------------------------------------------------------


def test_pyproject_core_is_httpx_and_orjson() -> None:
    core = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    assert sorted(canonicalize_name(r.name) for r in core) == ["httpx", "orjson"]
    httpx = next(r for r in core if r.name == "httpx")
    assert httpx.extras == {"http2"}  # make_client defaults to http2=True, which needs h2


def test_extras_table_matches_pyproject() -> None:
    """reasonwire._extras.EXTRAS names the import names of each extra's distributions."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra, modules in _extras.EXTRAS.items():
        dists = {canonicalize_name(Requirement(r).name) for r in extras[extra]}
        provided = {*modules, *_extras.ACCELERATORS.get(extra, ())}
        assert {IMPORT_NAME.get(d, d.replace("-", "_")) for d in dists} == provided, extra
    assert set(_extras.ACCELERATORS) <= set(_extras.EXTRAS)
    (everything,) = extras["all"]
    assert Requirement(everything).extras == set(_extras.EXTRAS)
    assert "reasonwire[all]" in extras["dev"]
    assert set(extras) == {*_extras.EXTRAS, "all", "dev"}


def test_core_imports_with_every_optional_module_hidden() -> None:
    proc = _hidden(
        """
        import reasonwire, reasonwire.wire, reasonwire.http, reasonwire.credentials
        import reasonwire.errors, reasonwire.probe, reasonwire.agent, reasonwire.routes
        import reasonwire.cli, reasonwire.eval
        print("ok")
        """,
        *OPTIONAL_MODULES,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_command_without_cli_extra_is_one_line_exit_2() -> None:
    for args, feature in (
        ([], "this command"),
        (["inspect", "x.json"], "this command"),
        (["probe", "report"], "the 'probe' command"),
    ):
        proc = _command(args, "typer")
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.splitlines() == [
            f"reasonwire: {feature} needs the 'cli' extra: pip install 'reasonwire[cli]'"
        ]
        assert proc.stdout == ""


@pytest.mark.parametrize(
    ("group", "hidden", "extra"),
    [
        ("sim", "uvicorn", "sim"),
        ("gateway", "jwt", "govern"),
        ("qualify", "pydantic", "govern"),
        ("templates", "jinja2", "templates"),
        ("localserver", "gguf", "localserver"),
        ("eval", "rich", "cli"),
    ],
)
def test_group_without_its_extra_is_one_line_exit_2(group: str, hidden: str, extra: str) -> None:
    proc = _command([group, "--help"], hidden)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"reasonwire: the '{group}' command needs the '{extra}' extra: "
        f"pip install 'reasonwire[{extra}]'"
    ]


def test_help_lists_only_groups_whose_extra_is_there() -> None:
    proc = _command(["--help"], "starlette")
    assert proc.returncode == 0, proc.stderr
    commands = set(re.findall(r"^\W+(\w+)\s{2,}", proc.stdout, re.M))
    assert {"inspect", "probe", "eval", "templates", "localserver"} <= commands
    assert not {"sim", "gateway", "qualify"} & commands


def test_eval_embedded_default_without_sim_names_the_extra(tmp_path: Path) -> None:
    """``reasonwire eval run`` against a route needs only [cli]; its embedded default starts
    the simulator, which says it needs [sim]."""
    proc = _command(["eval", "run", "--out", str(tmp_path), "--no-local-server"], "starlette")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "reasonwire: reasonwire.sim needs the 'sim' extra: pip install 'reasonwire[sim]'"
    ]


@pytest.mark.parametrize(
    ("module", "hidden", "extra"),
    [
        ("reasonwire.sim", "starlette", "sim"),
        ("reasonwire.govern", "pydantic", "govern"),
        ("reasonwire.govern.binding", "jwt", "govern"),
        ("reasonwire.templates.render", "jinja2", "templates"),
        ("reasonwire.templates.scan", "jinja2", "templates"),
        ("reasonwire.localserver.server", "numpy", "localserver"),
    ],
)
def test_package_without_its_extra_raises_one_line(module: str, hidden: str, extra: str) -> None:
    proc = _hidden(
        f"""
        from reasonwire.errors import MissingExtra
        try:
            import {module}
        except MissingExtra as exc:
            assert isinstance(exc, ModuleNotFoundError) and exc.extra == {extra!r}
            print(exc)
        """,
        hidden,
    )
    assert proc.returncode == 0, proc.stderr
    feature = "reasonwire." + extra
    assert proc.stdout.splitlines() == [
        f"{feature} needs the '{extra}' extra: pip install 'reasonwire[{extra}]'"
    ]


def test_missing_reasonwire_module_is_not_an_extra() -> None:
    exc = ModuleNotFoundError("No module named 'reasonwire.nope'", name="reasonwire.nope")
    assert _extras.missing_extra(exc, "x") is None
    assert _extras.as_missing_extra("sim", exc) is exc
    gguf = ModuleNotFoundError("No module named 'gguf'", name="gguf")
    assert _extras.missing_extra(gguf, "t", "templates") == (
        "reasonwire: t needs the 'templates' extra: pip install 'reasonwire[templates]'"
    )


def test_version() -> None:
    from importlib.metadata import version

    import reasonwire
    from reasonwire.cli import version as cli_version

    assert cli_version() in {version("reasonwire"), reasonwire.__version__}
    for flag in ("--version", "-V"):
        proc = _command([flag], *OPTIONAL_MODULES)
        assert proc.returncode == 0 and proc.stdout == f"reasonwire {cli_version()}\n"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG branch")
def test_user_data_dir_is_where_platformdirs_puts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    platformdirs = pytest.importorskip("platformdirs")
    for value in (None, "", "/tmp/xdg-data"):
        if value is None:
            monkeypatch.delenv("XDG_DATA_HOME", raising=False)
        else:
            monkeypatch.setenv("XDG_DATA_HOME", value)
        expected = Path(platformdirs.user_data_dir("reasonwire", appauthor=False))
        assert user_data_dir("reasonwire") == expected
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # ignored, as the XDG spec says
    assert user_data_dir() == Path.home() / ".local" / "share" / "reasonwire"


# ------------------------------------------------------------------------------------------
# slow: a real install with no extras, then the probe and the agent on it
# ------------------------------------------------------------------------------------------

LEAN_SCRIPT = '''
import json, sys
from pathlib import Path

import httpx

import reasonwire
from reasonwire import agent
from reasonwire.probe import ProbeTransport, flush, read_rows

base_url, ledger = sys.argv[1], Path(sys.argv[2])


def weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


key = lambda: "sk-lean-0123456789"  # noqa: E731
out = {}
with httpx.Client(transport=ProbeTransport("lean", purpose="lean", ledger_dir=ledger)) as c:
    claude = agent.anthropic(
        "sim-claude", base_url=base_url.removesuffix("/v1"), key=key, http_client=c
    )
    deepseek = agent.openai_compatible(
        base_url=base_url, model="sim-deepseek", profile="deepseek", effort="high", http_client=c
    )
    for label, model, stream in (("anthropic", claude, True), ("chat", deepseek, False)):
        result = agent.Agent(model, [weather]).run("Weather in Paris?", stream=stream)
        out[label] = {"answer": result.answer, "rounds": result.rounds}
assert flush(timeout=30)
out["rows"] = read_rows(ledger).rows
optional = sorted(m for m in sys.argv[3].split(",") if m in sys.modules)
out["optional_imported"] = optional
out["file"] = reasonwire.__file__
print(json.dumps(out))
'''

DISTS_SCRIPT = """
import json
from importlib.metadata import distributions
print(json.dumps({d.metadata["Name"]: d.requires or [] for d in distributions()}))
"""


def _closure(dists: dict[str, list[str]], root: str) -> set[str]:
    """Distributions ``root`` needs with no extras, following requirements and their extras."""
    reqs = {canonicalize_name(k): v for k, v in dists.items()}
    need: set[str] = set()
    todo: list[tuple[str, frozenset[str]]] = [(canonicalize_name(root), frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        need.add(name)
        for line in reqs.get(name, []):
            r = Requirement(line)
            envs = [{"extra": e} for e in extras] or [{"extra": ""}]
            if r.marker is None or any(r.marker.evaluate(env) for env in envs):
                todo.append((canonicalize_name(r.name), frozenset(r.extras)))
    return need


@pytest.mark.slow
def test_lean_install_runs_probe_and_agent(tmp_path: Path) -> None:
    from reasonwire.sim import SimServer

    venv = tmp_path / "lean"
    py = venv / "bin" / "python"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    installed_in = time.monotonic() - started

    listed = subprocess.run(
        [str(py), "-c", DISTS_SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    dists: dict[str, list[str]] = json.loads(listed.stdout)
    names = {canonicalize_name(n) for n in dists}
    assert not names & HEAVY_DISTS, sorted(names & HEAVY_DISTS)
    # Nothing but reasonwire's own requirement closure (and what venv seeds).
    assert names - SEED_DISTS == _closure(dists, "reasonwire"), sorted(names)
    assert {"httpx", "orjson", "h2", "reasonwire"} <= names

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    reasonwire_cmd = venv / "bin" / "reasonwire"
    version = subprocess.run(
        [str(reasonwire_cmd), "--version"], capture_output=True, text=True, env=env, timeout=60
    )
    assert version.returncode == 0 and version.stdout.startswith("reasonwire "), version.stderr
    no_cli = subprocess.run(
        [str(reasonwire_cmd), "probe", "report"], capture_output=True, text=True, env=env,
        timeout=60,
    )  # fmt: skip
    assert no_cli.returncode == 2 and no_cli.stderr.splitlines() == [
        "reasonwire: the 'probe' command needs the 'cli' extra: pip install 'reasonwire[cli]'"
    ], no_cli.stderr

    script = tmp_path / "lean_script.py"
    script.write_text(LEAN_SCRIPT, encoding="utf-8")
    ledger = tmp_path / "ledger"
    with SimServer(seed=0) as sim:
        run = subprocess.run(
            [str(py), str(script), sim.base_url, str(ledger), ",".join(OPTIONAL_MODULES)],
            capture_output=True,
            text=True,
            env={**env, "REASONWIRE_HOME": str(tmp_path / "home")},
            cwd=tmp_path,  # not the source tree: the installed package, not ./src
            timeout=120,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    out: dict[str, Any] = json.loads(run.stdout)
    assert out["optional_imported"] == []
    assert Path(out["file"]).is_relative_to(venv), out["file"]  # the install, not ./src
    for label in ("anthropic", "chat"):
        assert "sunny in" in out[label]["answer"] and out[label]["rounds"] >= 1, out[label]
    rows = out["rows"]
    assert len(rows) >= 4 and {r["status"] for r in rows} == {"ok"}, rows
    assert {r["dialect"] for r in rows} == {"anthropic", "chat"}
    assert all(r["reasoningBytes"] > 0 for r in rows if r["dialect"] == "anthropic")
    assert any(r["sentReasoningBytes"] > 0 for r in rows)
    print(f"\nlean install took {installed_in:.0f} s")  # measured, not asserted
