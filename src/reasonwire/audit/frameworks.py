"""``reasonwire audit frameworks``: the built-in scenario through each agent framework.

Each framework is one :class:`Framework` record (data): its scenario script in
``scenarios/``, the pinned requirements of its own venv, the variants it speaks and, for the
ones it does not, why. Venvs live under :func:`venv_root`
(``$REASONWIRE_AUDIT_VENVS``, else ``$REASONWIRE_CACHE/audit-venvs``, else
``~/.cache/reasonwire/audit-venvs``), one per requirement set (``<name>-<version>``),
created with ``python3.11 -m venv`` and filled by pip from the package registry on first use;
a stamp file holding the requirement list marks a finished install. reasonwire's own agent
runs with this interpreter (the code under audit is this checkout).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reasonwire.audit.run import RunResult, audit_command
from reasonwire.errors import ConfigError
from reasonwire.wire.model import JsonObject

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
STAMP = ".reasonwire-audit-installed"

VARIANTS: Mapping[str, str] = {
    "chat": "chat",
    "responses-store": "responses store=true",
    "responses-nostore": "responses store=false",
    "anthropic": "anthropic",
    "gemini": "gemini",
}
"""Scenario variant id -> matrix column (the dialect, and ``store`` where it has one)."""

_OPENAI_ONLY = "speaks OpenAI's wire APIs only"


def _others(keep: tuple[str, ...], reason: str) -> dict[str, str]:
    """``reason`` for every variant not in ``keep``."""
    return {v: reason for v in VARIANTS if v not in keep}


@dataclass(frozen=True)
class Framework:
    """One audited framework: where its scenario is and what it needs."""

    name: str
    script: str
    requirements: tuple[str, ...] = ()
    venv: str | None = None  # venv directory name; None: this interpreter
    variants: tuple[str, ...] = tuple(VARIANTS)
    unsupported: Mapping[str, str] = field(default_factory=dict)
    packages: tuple[str, ...] = ()  # distributions whose installed versions are reported
    how: str = ""


FRAMEWORKS: tuple[Framework, ...] = (
    Framework(
        "reasonwire-agent",
        "fw_reasonwire_agent.py",
        packages=("httpx",),
        how="reasonwire.agent.Agent.run, two turns on one Agent",
    ),
    Framework(
        "openai-sdk",
        "fw_openai_sdk.py",
        ("openai==3.57.0",),
        "openai-3.57.0",
        ("chat", "responses-store", "responses-nostore"),
        {"anthropic": _OPENAI_ONLY, "gemini": _OPENAI_ONLY},
        ("openai", "httpx"),
        "hand-written loop: messages.append(choices[0].message); input += response.output",
    ),
    Framework(
        "anthropic-sdk",
        "fw_anthropic_sdk.py",
        ("anthropic==2.15.0",),
        "anthropic-2.15.0",
        ("anthropic",),
        _others(("anthropic",), "speaks the Anthropic Messages API only"),
        ("anthropic",),
        "hand-written loop: messages.create, assistant content = response.content",
    ),
    Framework(
        "anthropic-tool-runner",
        "fw_anthropic_tool_runner.py",
        ("anthropic==2.15.0",),
        "anthropic-2.15.0",
        ("anthropic",),
        _others(("anthropic",), "speaks the Anthropic Messages API only"),
        ("anthropic",),
        "client.beta.messages.tool_runner with @beta_tool functions",
    ),
    Framework(
        "pydantic-ai",
        "fw_pydantic_ai.py",
        ("pydantic-ai-slim[openai,anthropic,google]==2.68.0",),
        "pydantic-ai-2.68.0",
        packages=("pydantic-ai-slim", "openai", "anthropic", "google-genai"),
        how="Agent.run_sync, second turn with message_history=result.all_messages()",
    ),
    Framework(
        "openai-agents",
        "fw_openai_agents.py",
        ("openai-agents==0.24.0",),
        "openai-agents-0.24.0",
        ("chat", "responses-store", "responses-nostore"),
        {
            "anthropic": "only through the LiteLLM extension (openai-agents[litellm]); "
            "the litellm row measures that client",
            "gemini": "only through the LiteLLM extension (openai-agents[litellm]); "
            "the litellm row measures that client",
        },
        ("openai-agents", "openai"),
        "Runner.run_sync, second turn with result.to_input_list() + the new message",
    ),
    Framework(
        "litellm",
        "fw_litellm.py",
        ("litellm==1.110.2",),
        "litellm-1.110.2",
        packages=("litellm", "openai"),
        how="litellm.completion / litellm.responses in a hand-written loop",
    ),
    Framework(
        "langchain",
        "fw_langchain.py",
        ("langchain-openai==1.7.4", "langchain-anthropic==1.7.10"),
        "langchain-1.7.4",
        ("chat", "responses-store", "responses-nostore", "anthropic"),
        {
            "gemini": "needs langchain-google-genai, outside the pinned langchain-openai + "
            "langchain-anthropic set"
        },
        ("langchain-core", "langchain-openai", "langchain-anthropic", "openai", "anthropic"),
        "bind_tools + invoke, AIMessage and ToolMessage appended to the message list",
    ),
    Framework(
        "google-genai-afc",
        "fw_google_genai_afc.py",
        ("google-genai==3.6.1",),
        "google-genai-3.6.1",
        ("gemini",),
        _others(("gemini",), "speaks the Gemini API only"),
        ("google-genai",),
        "client.chats with Python functions as tools (automatic function calling)",
    ),
)

DEFAULT_TIMEOUT = 300.0


def get_framework(name: str) -> Framework:
    for fw in FRAMEWORKS:
        if fw.name == name:
            return fw
    raise ConfigError(
        f"unknown framework {name!r}; expected one of: {', '.join(f.name for f in FRAMEWORKS)}"
    )


def venv_root() -> Path:
    explicit = os.environ.get("REASONWIRE_AUDIT_VENVS")
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("REASONWIRE_CACHE")
    if cache:
        return Path(cache).expanduser() / "audit-venvs"
    return Path("~/.cache/reasonwire/audit-venvs").expanduser()


def _base_python() -> str:
    found = shutil.which("python3.11")
    if found:
        return found
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    raise ConfigError("python3.11 not found: the framework venvs are made with python3.11")


def _stamp_text(fw: Framework) -> str:
    return " ".join(fw.requirements)


def venv_python(fw: Framework) -> Path | None:
    """The venv interpreter of ``fw`` if its venv is installed (None: not yet)."""
    if fw.venv is None:
        return Path(sys.executable)
    d = venv_root() / fw.venv
    stamp = d / STAMP
    py = d / "bin" / "python"
    if stamp.exists() and stamp.read_text("utf-8").strip() == _stamp_text(fw) and py.exists():
        return py
    return None


def ensure_venv(fw: Framework, log: Callable[[str], None] = print) -> Path:
    """The venv interpreter of ``fw``, creating and filling the venv on first use."""
    ready = venv_python(fw)
    if ready is not None:
        return ready
    assert fw.venv is not None
    d = venv_root() / fw.venv
    if d.exists():
        shutil.rmtree(d)
    d.parent.mkdir(parents=True, exist_ok=True)
    log(f"creating {d} ({', '.join(fw.requirements)})")
    subprocess.run([_base_python(), "-m", "venv", str(d)], check=True)
    py = d / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    proc = subprocess.run(
        [*pip, *fw.requirements], stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
        raise ConfigError(f"pip install {' '.join(fw.requirements)} failed: {' / '.join(tail)}")
    (d / STAMP).write_text(_stamp_text(fw), "utf-8")
    return py


_VERSIONS = (
    "import importlib.metadata as m, json, sys\n"
    "out = {'python': sys.version.split()[0]}\n"
    "for p in sys.argv[1:]:\n"
    "    try: out[p] = m.version(p)\n"
    "    except m.PackageNotFoundError: out[p] = None\n"
    "print(json.dumps(out))\n"
)


def installed_versions(fw: Framework, python: Path) -> JsonObject:
    """The installed versions of ``fw.packages`` under ``python`` (and the pins)."""
    proc = subprocess.run(
        [str(python), "-c", _VERSIONS, *fw.packages],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    try:
        found: JsonObject = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        found = {"error": (proc.stderr or "")[-300:]}
    if fw.venv is None:
        from reasonwire.version import version

        found["reasonwire"] = version()
    found["pins"] = list(fw.requirements)
    return found


def reproduce(fw: Framework, variant: str) -> str:
    return f"reasonwire audit frameworks --framework {fw.name} --dialect {variant}"


def run_framework(
    fw: Framework,
    variant: str,
    python: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    env: Mapping[str, str] | None = None,
) -> RunResult:
    """One scenario run of ``fw`` in ``variant`` against a fresh recording simulator."""
    py = python or ensure_venv(fw)
    extra = {"REASONWIRE_AUDIT_VARIANT": variant, "PYTHONDONTWRITEBYTECODE": "1"}
    if fw.venv is None:
        import reasonwire

        src = str(Path(reasonwire.__file__).resolve().parents[1])
        extra["PYTHONPATH"] = os.pathsep.join(
            [src, *filter(None, [os.environ.get("PYTHONPATH", "")])]
        )
    extra.update(env or {})
    result = audit_command(
        [str(py), str(SCENARIOS / fw.script)],
        label=fw.name,
        variant=VARIANTS[variant],
        env=extra,
        cwd=SCENARIOS,
        timeout=timeout,
        capture=True,
        reproduce=reproduce(fw, variant),
    )
    result.meta = {"framework": fw.name, "variant": variant, "how": fw.how}
    return result


@dataclass
class FrameworksRun:
    runs: list[RunResult] = field(default_factory=list)
    unavailable: list[JsonObject] = field(default_factory=list)
    versions: JsonObject = field(default_factory=dict)


def run_frameworks(
    names: Sequence[str] = (),
    variants: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    log: Callable[[str], None] = print,
    python: Mapping[str, Path] | None = None,
) -> FrameworksRun:
    """Every (framework, variant) asked for (all by default); frameworks that cannot run and
    variants a framework does not speak are listed with the reason."""
    chosen = [get_framework(n) for n in names] if names else list(FRAMEWORKS)
    for v in variants:
        if v not in VARIANTS:
            raise ConfigError(
                f"unknown dialect variant {v!r}; expected one of: {', '.join(VARIANTS)}"
            )
    want = list(variants) or list(VARIANTS)
    out = FrameworksRun()
    for fw in chosen:
        for v in want:
            if v not in fw.variants:
                out.unavailable.append(
                    {
                        "framework": fw.name,
                        "column": VARIANTS[v],
                        "reason": fw.unsupported.get(v, "not supported"),
                    }
                )
        todo = [v for v in want if v in fw.variants]
        if not todo:
            continue
        try:
            py = (python or {}).get(fw.name) or ensure_venv(fw, log)
        except (OSError, subprocess.CalledProcessError, ConfigError) as exc:
            out.unavailable.append(
                {"framework": fw.name, "column": None, "reason": f"install failed: {exc}"}
            )
            continue
        out.versions[fw.name] = installed_versions(fw, py)
        log(f"{fw.name}: {json.dumps(out.versions[fw.name])}")
        for v in todo:
            res = run_framework(fw, v, py, timeout)
            if res.exit_code == 2 and not any(r.status for r in res.trace.requests):
                out.unavailable.append(
                    {
                        "framework": fw.name,
                        "column": VARIANTS[v],
                        "reason": res.output_tail.strip().splitlines()[-1:][0]
                        if res.output_tail.strip()
                        else "the scenario says it is unsupported",
                    }
                )
                continue
            out.runs.append(res)
            statuses = [r.status for r in res.trace.requests if r.dialect]
            log(f"  {fw.name} x {VARIANTS[v]}: exit {res.exit_code}, statuses {statuses}")
    return out


__all__ = [
    "FRAMEWORKS",
    "VARIANTS",
    "Framework",
    "FrameworksRun",
    "ensure_venv",
    "get_framework",
    "installed_versions",
    "run_framework",
    "run_frameworks",
    "venv_root",
]
