"""Run any program against the recording simulator and trace what it did with reasoning.

:func:`environment` sets the variables the common clients read (base URLs and dummy keys for
the OpenAI, Anthropic, Gemini and DeepSeek SDKs and for LiteLLM) so that an unmodified
program talks to the in-process simulator; :func:`audit_command` runs it and returns a
:class:`RunResult` with the recorded exchanges and their :class:`~reasonwire.audit.trace.Trace`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reasonwire.audit.recorder import AuditServer, Exchange
from reasonwire.audit.trace import Trace, analyse
from reasonwire.wire.model import JsonObject

DUMMY_KEY = "reasonwire-audit-dummy-key"
"""The key every client gets: the simulator checks none, and no real key is ever passed on."""

MODELS: Mapping[str, str] = {
    "REASONWIRE_AUDIT_CHAT_MODEL": "sim-deepseek",
    "REASONWIRE_AUDIT_RESPONSES_MODEL": "sim-gpt",
    "REASONWIRE_AUDIT_ANTHROPIC_MODEL": "sim-claude",
    "REASONWIRE_AUDIT_GEMINI_MODEL": "sim-gemini",
}
"""Simulator models that hand out carriers and check them strictly, one per dialect
(``reasonwire.sim`` lists every behaviour), exported for the audited program to use."""

_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "DEEPSEEK_API_KEY",
)
_DROP = (
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


def environment(server: AuditServer, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) pointed at ``server``."""
    env = dict(os.environ if base is None else base)
    for name in _DROP:
        env.pop(name, None)
    env.update(
        {
            # OpenAI SDK (and clients built on it), LiteLLM's openai provider
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_BASE": server.base_url,
            # Anthropic SDK appends /v1/messages itself; LiteLLM reads ANTHROPIC_API_BASE
            "ANTHROPIC_BASE_URL": server.root_url,
            "ANTHROPIC_API_BASE": server.root_url,
            # google-genai (google/genai/_base_url.py); LiteLLM's gemini provider
            "GOOGLE_GEMINI_BASE_URL": server.root_url,
            "GEMINI_API_BASE": server.root_url + "/v1beta",
            # DeepSeek-style chat clients
            "DEEPSEEK_BASE_URL": server.base_url,
            "DEEPSEEK_API_BASE": server.base_url,
            "REASONWIRE_AUDIT_BASE_URL": server.base_url,
            "REASONWIRE_AUDIT_ROOT_URL": server.root_url,
            # no telemetry or trace export leaves the machine
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
            "LITELLM_TELEMETRY": "False",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "ANONYMIZED_TELEMETRY": "False",
            "LANGCHAIN_TRACING_V2": "false",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    for name in _KEYS:
        env[name] = DUMMY_KEY
    env.update(MODELS)
    return env


def default_label(argv: Sequence[str]) -> str:
    """The program's name: the script for ``python script.py``, else the command itself."""
    if not argv:
        return "command"
    name = Path(argv[0]).name
    if name.startswith("python") and len(argv) > 1 and not argv[1].startswith("-"):
        return Path(argv[1]).name
    return name


@dataclass
class RunResult:
    """One audited program run."""

    label: str
    argv: list[str]
    exit_code: int | None
    seconds: float
    exchanges: list[Exchange]
    trace: Trace
    variant: str | None = None
    reproduce: str = ""
    output_tail: str = ""
    error: str | None = None
    meta: JsonObject = field(default_factory=dict)


def audit_command(
    argv: Sequence[str],
    *,
    label: str | None = None,
    variant: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 600.0,
    capture: bool = False,
    seed: int = 0,
    reproduce: str | None = None,
) -> RunResult:
    """Run ``argv`` with the endpoint variables pointing at a fresh recording simulator.

    ``env`` entries are added over :func:`environment`. ``capture`` keeps the program's
    output (its last 4,000 characters go into the result) instead of passing it through.
    """
    argv = [str(a) for a in argv]
    start = time.monotonic()
    error: str | None = None
    tail = ""
    code: int | None = None
    with AuditServer(seed=seed) as server:
        full_env = environment(server)
        full_env.update(env or {})
        try:
            proc = subprocess.run(
                argv,
                env=full_env,
                cwd=cwd,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE if capture else None,
                stderr=subprocess.STDOUT if capture else None,
                check=False,
            )
            code = proc.returncode
            if capture and proc.stdout:
                tail = proc.stdout.decode("utf-8", "replace")[-4000:]
        except subprocess.TimeoutExpired as exc:
            error = f"timed out after {timeout:g} s"
            if exc.stdout:
                out = exc.stdout if isinstance(exc.stdout, bytes) else exc.stdout.encode()
                tail = out.decode("utf-8", "replace")[-4000:]
        except OSError as exc:
            error = f"could not start {argv[0]!r}: {exc.strerror or exc}"
        exchanges = server.exchanges
    trace = analyse(exchanges)
    return RunResult(
        label=label or default_label(argv),
        argv=argv,
        exit_code=code,
        seconds=round(time.monotonic() - start, 2),
        exchanges=exchanges,
        trace=trace,
        variant=variant,
        reproduce=reproduce or "reasonwire audit -- " + shlex.join(argv),
        output_tail=tail,
        error=error,
    )


__all__ = ["DUMMY_KEY", "MODELS", "RunResult", "audit_command", "default_label", "environment"]
