"""What the command pages show is what the commands print.

Each page of ``docs/commands/`` holds, besides its prose, blocks the page does not write by
hand: a line ``<!-- capture: NAME -->`` followed by a fenced ``console`` block. This module
runs the scene ``NAME`` of :data:`SCENES` (a ``reasonwire`` command line, in order, in one
scratch directory) and writes ``$ <command>`` and what it printed (stdout and stderr as they
came) into that block. ``make docs`` runs it with ``--write`` before the site is built;
``--check`` runs the scenes again and fails where a page differs from the run
(``tests/test_docs.py``).

Every scene is cheap and offline: the inputs are made here first, against the reference
simulator in-process (a saved stream, a probe ledger, a saved session whose signature was
cut, a policy module and keys, a few corpus chat templates), and nothing needs a key or the
network. What is not the same from one run to the next is named and masked, never edited:
the scratch directory is the page's working directory (``.``), the home directory is ``~``,
and in ``--check`` durations, dates, digests and loopback ports are compared as placeholders
(:data:`VARYING`).

Usage: ``python -m tools.docs_capture --write`` (or ``--check``; ``--only NAME`` for one
scene).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from reasonwire.wire.model import JSON, JsonObject

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "commands"
MARK = re.compile(r"^<!-- capture: ([a-z0-9-]+) -->$")
COLUMNS = 100
"""The terminal width the scenes see (rich tables and help wrap to it)."""


@dataclass(frozen=True, slots=True)
class Scene:
    """One command run for the pages. ``argv`` follows ``reasonwire``; ``until``: the command
    is a server, stopped with Ctrl-C (SIGINT) once a line matches; ``code``: the exit code
    the scene must end with (a doctor finding is 1); ``keep``: only the first and last lines of
    a long output are shown, with a line saying how many were left out; ``client``: the server
    runs in the background (``&``) while this command runs against it, then gets SIGINT
    (``kill -INT %1``)."""

    name: str
    argv: tuple[str, ...]
    code: int = 0
    until: str | None = None
    keep: tuple[int, int] | None = None  # (first, last) lines shown; the rest elided, counted
    program: str = "reasonwire"  # ``cat``: an input file made for the page, shown as it is
    columns: int = COLUMNS
    port: str = "8765"  # the port a PORT_OPEN server listens on
    client: tuple[str, ...] = ()  # a server run in the background while this command runs
    upstream: bool = False  # the simulator serves on 8765 in-process meanwhile

    def line(self) -> str:
        return shlex.join([self.program, *self.argv]) + (" &" if self.client else "")


PORT = "8765"
GATEWAY_PORT = "8787"


def _free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


LIVE: dict[str, str] = {PORT: _free_port(), GATEWAY_PORT: _free_port()}
"""The pages show the default ports (8765, 8787); the runs listen on free ones, so two runs on
one machine (two test suites, a suite beside ``make docs``) never collide. What a run prints is
mapped back to the shown port."""


def _live(text: str) -> str:
    for shown, live in LIVE.items():
        text = text.replace(f"127.0.0.1:{shown}", f"127.0.0.1:{live}")
    return text


def _shown(text: str) -> str:
    for shown, live in LIVE.items():
        text = text.replace(f"127.0.0.1:{live}", f"127.0.0.1:{shown}")
        text = text.replace(f"--port {live}", f"--port {shown}")
    return text


PORT_OPEN = "<port open>"
"""``until`` for a server that prints nothing when it is up: wait until the port answers."""
"""The port the server scenes listen on (the simulator's default); each scene stops its
server before the next one starts."""

SCENES: tuple[Scene, ...] = (
    Scene("help", ("--help",)),
    Scene("sim-models", ("sim", "models")),
    Scene("sim-serve", ("sim", "serve", "--port", PORT), until=r"reasonwire sim: http"),
    Scene("inspect", ("inspect", "saved-stream.txt")),
    Scene("inspect-json", ("inspect", "saved-stream.txt", "--json")),
    Scene("inspect-replay", ("inspect", "saved-stream.txt", "--replay")),
    Scene("doctor", ("doctor", "session.json"), code=1),
    Scene("doctor-out", ("doctor", "session.json", "--out", "repaired.json"), code=1),
    Scene("doctor-clean", ("doctor", "repaired.json")),
    Scene("probe-report", ("probe", "report", "--dir", "home/probe")),
    Scene("probe-report-json", ("probe", "report", "--dir", "home/probe", "--json")),
    Scene(
        "eval-run",
        ("eval", "run", "--no-local-server", "--out", "runs/sim", "--no-progress"),
        keep=(0, 1),
    ),
    Scene("eval-report", ("eval", "report", "--out", "runs/sim"), keep=(12, 0)),
    Scene(
        "fold-plan",
        (
            "fold",
            "plan",
            "--matrix",
            "runs/sim/matrix.json",
            "--ledger",
            "home/probe",
            "--out",
            "fold.toml",
        ),
    ),
    Scene(
        "templates-scan", ("templates", "scan", "templates", "--out", "out/templates"), columns=150
    ),
    Scene("agent-file", ("my_agent.py",), program="cat"),
    Scene("audit", ("audit", "--out", "audit-out", "--", "python", "my_agent.py")),
    Scene("policy-file", ("my_policy.py",), program="cat"),
    Scene("gateway-keygen", ("gateway", "keygen", "--out", "keys", "--kid", "k1")),
    Scene(
        "control-sign",
        (
            "control",
            "sign",
            "--policy",
            "my_policy",
            "--keys",
            "keys",
            "--conversation",
            "c1",
            "--runtime",
            "hermes",
            "--runtime-version",
            "1.4.2",
            "--route",
            "chat/sim-deepseek",
            "--level",
            "Auto",
            "--out",
            "binding.txt",
        ),
    ),
    Scene("ask-file", ("ask.py",), program="cat"),
    Scene(
        "gateway-serve",
        ("gateway", "serve", "--policy", "my_policy", "--keys", "keys"),
        until=PORT_OPEN,
        port=GATEWAY_PORT,
        client=("python", "ask.py"),
        upstream=True,
    ),
    Scene("qualify-help", ("qualify", "--help")),
    Scene("localserver-model", ("localserver", "model", "--template", "Qwen-Qwen3-0.6B")),
    Scene(
        "localserver-serve",
        ("localserver", "serve", "--template", "Qwen-Qwen3-0.6B", "--port", PORT),
        until=r"http://127\.0\.0\.1",
    ),
)


# ------------------------------------------------------------------------------------------
# the inputs, made first
# ------------------------------------------------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "get_weather",
        "description": "Weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
TEMPLATES = ("Qwen-Qwen3-0.6B", "GLM-4.7-Flash", "openai-gpt-oss-120b")
"""The corpus templates of the ``templates scan`` page (the cross-check's fast subset)."""

MY_AGENT = """\
from reasonwire import agent


def get_weather(city: str) -> str:
    \"\"\"Weather for a city.\"\"\"
    return f"sunny in {city}"


bot = agent.Agent(agent.anthropic("sim-claude"), tools=[get_weather])
print(bot.run("What's the weather in Oslo?").answer)
"""

MY_POLICY = """\
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration, RuntimeAdapter

LEVELS = frozenset({"low", "medium", "high"})
REGISTRY = Registry(
    adapters=[RuntimeAdapter("hermes", "1.4.2", "qualified", "Q-RT-hermes-1.4.2", LEVELS)]
)
REGISTRY.add_route(
    RouteRegistration(
        route_id="chat/sim-deepseek",
        provider="sim",
        model="sim-deepseek",
        dialect="chat",
        qualification_id="Q-ROUTE-sim-deepseek",
        levels={lv: {"reasoning_effort": lv} for lv in LEVELS},
        upstream_base_url="http://127.0.0.1:8765/v1",
        credential_env="SIM_KEY",
    )
)
POLICY = OrgPolicy(allowed=frozenset({"low", "medium"}), maximum="medium")
"""

ASK = """\
import json
from pathlib import Path

import httpx

# the runtime's request: its binding for this turn, and an effort the policy does not allow
res = httpx.post(
    "http://127.0.0.1:8787/v1/chat/completions",
    headers={
        "x-reasonwire-binding": Path("binding.txt").read_text().strip(),
        "x-reasonwire-conversation": "c1",
    },
    json={
        "model": "sim-deepseek",
        "reasoning_effort": "high",
        "messages": [{"role": "user", "content": "What's the weather in Oslo?"}],
    },
)
print(res.status_code)
print(json.dumps(res.json(), indent=2))
"""


def make_inputs(work: Path, scenes: Collection[str]) -> None:
    """The files the ``scenes`` read, made against the simulator in-process."""
    from reasonwire.probe import ProbeTransport
    from reasonwire.sim.server import SimServer

    home = work / "home"
    with SimServer(seed=0) as sim:
        # a Chat Completions tool loop through the probe: turn 2 sends turn 1's reasoning back
        probe = ProbeTransport("docs-s1", ledger_dir=home / "probe", provider="sim")
        with httpx.Client(transport=probe, base_url=sim.base_url, timeout=30) as client:
            msgs: list[JSON] = [{"role": "user", "content": "What's the weather in Oslo?"}]
            first = _stream_turn(client, "sim-deepseek", msgs)
            msgs.append(first)
            calls = first.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                assert isinstance(call, dict)
                msgs.append({"role": "tool", "tool_call_id": call["id"], "content": "sunny"})
            _stream_turn(client, "sim-deepseek", msgs)
        # a saved Anthropic stream with a signed thinking block
        body = {
            "model": "sim-claude",
            "max_tokens": 1024,
            "thinking": {"type": "enabled", "budget_tokens": 512},
            "tools": ANTHROPIC_TOOLS,
            "stream": True,
            "messages": [{"role": "user", "content": "What's the weather in Oslo?"}],
        }
        res = httpx.post(f"{sim.base_url}/messages", json=body, timeout=30)
        res.raise_for_status()
        (work / "saved-stream.txt").write_bytes(res.content)
    _damaged_session(work, body)
    if "templates-scan" in scenes:  # the llama.cpp sdist (downloaded once, cached)
        from reasonwire.llamacpp.sdist import templates_dir

        (work / "templates").mkdir()
        for name in TEMPLATES:
            shutil.copy(templates_dir() / f"{name}.jinja", work / "templates")
    (work / "my_agent.py").write_text(MY_AGENT, "utf-8")
    (work / "my_policy.py").write_text(_live(MY_POLICY), "utf-8")
    (work / "ask.py").write_text(_live(ASK), "utf-8")


def _stream_turn(client: httpx.Client, model: str, msgs: list[JSON]) -> JsonObject:
    """One streamed turn; the assistant message as a client replays it (reasoning kept)."""
    from reasonwire.doctor.inspect import inspect_bytes
    from reasonwire.wire.registry import get_dialect

    body = {"model": model, "messages": msgs, "tools": TOOLS, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    res = client.post("/chat/completions", json=body)
    res.raise_for_status()
    (replayed,) = get_dialect("chat").replay(inspect_bytes(res.content).turn)
    assert isinstance(replayed, dict)
    return replayed


def _damaged_session(work: Path, request: JsonObject) -> None:
    """The next request of the saved conversation, as a program that cut the thinking
    block's signature to 40 characters would have saved it."""
    from reasonwire.doctor.inspect import inspect_bytes
    from reasonwire.wire.registry import get_dialect

    ins = inspect_bytes((work / "saved-stream.txt").read_bytes())
    (assistant,) = get_dialect(ins.dialect).replay(ins.turn)
    assert isinstance(assistant, dict)
    content = assistant["content"]
    assert isinstance(content, list)
    results: list[JSON] = []
    for block in content:
        assert isinstance(block, dict)
        if block.get("type") == "thinking":
            block["signature"] = str(block["signature"])[:40]
        if block.get("type") == "tool_use":
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": "sunny"})
    asked = request["messages"]
    assert isinstance(asked, list)
    messages: list[JSON] = [*asked, assistant, {"role": "user", "content": results}]
    session = {k: v for k, v in request.items() if k not in ("messages", "stream")}
    session["messages"] = messages
    (work / "session.json").write_text(json.dumps(session, indent=2) + "\n", "utf-8")


# ------------------------------------------------------------------------------------------
# running the scenes
# ------------------------------------------------------------------------------------------


def _env(work: Path, columns: int = COLUMNS) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("REASONWIRE_", "OPENAI", "ANTHROPIC", "GEMINI", "GOOGLE"))
    }
    env.update(
        COLUMNS=str(columns), LINES="50", TERM="dumb", NO_COLOR="1", PYTHONPATH=_pythonpath(work)
    )
    env["REASONWIRE_HOME"] = str(work / "home")
    env["SIM_KEY"] = "sk-docs-simulator"  # the gateway's upstream credential (my_policy.py)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("FORCE_COLOR", None)
    return env


def _pythonpath(work: Path) -> str:
    """reasonwire from this tree, and the scratch directory (``--policy my_policy``)."""
    return os.pathsep.join([str(ROOT / "src"), str(work)])


def _argv(scene: Scene) -> list[str]:
    if scene.program != "reasonwire":
        return [scene.program, *scene.argv]
    argv = [LIVE.get(a, a) for a in scene.argv]
    if scene.until == PORT_OPEN and "--port" not in argv:  # a server on its default port
        argv += ["--port", LIVE[scene.port]]
    return [sys.executable, "-c", "from reasonwire.cli import main; main()", *argv]


def run_scene(scene: Scene, work: Path) -> str:
    """``$ <command>`` and what it printed, the scratch directory shown as ``.``."""
    with contextlib.ExitStack() as stack:
        if scene.upstream:
            from reasonwire.sim.server import SimServer

            stack.enter_context(SimServer(seed=0, port=int(LIVE[PORT])))
        proc = subprocess.Popen(
            _argv(scene),
            cwd=work,
            env=_env(work, scene.columns),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            out, code = _serve(scene, proc, work) if scene.until else _wait(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if code != scene.code:
        raise SystemExit(f"{scene.line()}: exit {code}, expected {scene.code}:\n{out[-2000:]}")
    out = _shown(out).replace(str(work) + os.sep, "").replace(str(work), ".")
    out = out.replace(str(Path.home()), "~")
    lines = [ln.rstrip() for ln in out.rstrip().splitlines()]
    if scene.keep is not None:
        head, tail = scene.keep
        if len(lines) > head + tail:
            cut = len(lines) - head - tail
            lines = [*lines[:head], f"[... {cut} lines not shown ...]", *lines[len(lines) - tail :]]
    return "\n".join([f"$ {scene.line()}", *lines])


def _wait(proc: subprocess.Popen[str]) -> tuple[str, int]:
    out, _ = proc.communicate(timeout=600)
    return out, proc.returncode


def _serve(scene: Scene, proc: subprocess.Popen[str], work: Path) -> tuple[str, int]:
    """A server scene: its output read up to the line ``until`` matches (or, for
    :data:`PORT_OPEN`, until its port answers), then stopped with SIGINT as Ctrl-C would;
    everything it printed, the ``^C`` marked. A server that ends by itself is a failed scene
    (its exit code)."""
    assert proc.stdout is not None and scene.until is not None
    seen: list[str] = []
    if scene.until == PORT_OPEN:
        if not _port_open(int(LIVE[scene.port]), proc):
            return _wait(proc)
    else:
        for line in proc.stdout:
            seen.append(line)
            if re.search(scene.until, line):
                break
        else:
            return "".join(seen), proc.wait(timeout=60)
    asked = ""
    if scene.client:
        program, *args = scene.client
        done = subprocess.run(
            [sys.executable if program == "python" else program, *args],
            cwd=work,
            env=_env(work, scene.columns),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
        )
        asked = f"$ {shlex.join(scene.client)}\n{done.stdout}$ kill -INT %1\n"
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    return "".join(seen) + (asked or "^C\n") + rest, 0


def _port_open(port: int, proc: subprocess.Popen[str], seconds: float = 60) -> bool:
    """Poll (with a deadline) until ``port`` accepts a connection; False if ``proc`` ended."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def run_all(work: Path, only: set[str] | None = None) -> dict[str, str]:
    make_inputs(work, scene_names() if only is None else only)
    out: dict[str, str] = {}
    for scene in SCENES:
        if only is None or scene.name in only:
            out[scene.name] = run_scene(scene, work)
    return out


# ------------------------------------------------------------------------------------------
# the pages
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Block:
    """A captured block of a page: the scene it shows and the lines of its fence."""

    page: Path
    name: str
    start: int  # index of the opening fence
    end: int  # index of the closing fence
    text: str


def blocks(page: Path) -> Iterator[Block]:
    lines = page.read_text("utf-8").splitlines()
    for i, line in enumerate(lines):
        found = MARK.match(line)
        if not found:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit(f"{page}:{i + 1}: a capture mark must be followed by a fence")
        end = next(
            (j for j in range(i + 2, len(lines)) if lines[j] == "```"),
            None,
        )
        if end is None:
            raise SystemExit(f"{page}:{i + 2}: unclosed fence")
        yield Block(page, found.group(1), i + 1, end, "\n".join(lines[i + 2 : end]))


def pages() -> list[Path]:
    return sorted(PAGES.glob("*.md"))


def write(captured: dict[str, str]) -> None:
    for page in pages():
        lines = page.read_text("utf-8").splitlines()
        for block in reversed(list(blocks(page))):
            if block.name in captured:
                lines[block.start + 1 : block.end] = captured[block.name].splitlines()
        page.write_text("\n".join(lines) + "\n", "utf-8")


VARYING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b\d+(\.\d+)?( ?)(s|ms|seconds)\b"), r"<t>\2\3"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?"), "<date>"),
    (re.compile(r"\b[0-9a-f]{12,}\b"), "<hex>"),
    (re.compile(r"\b(run|r)[-_][0-9a-z]{6,}\b"), "<run>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r'"created": \d+'), '"created": <epoch>'),
)
"""What differs between two honest runs: durations, dates, epochs, run ids, digests, ports."""


def masked(text: str) -> str:
    for pattern, repl in VARYING:
        text = pattern.sub(repl, text)
    return text


def check(captured: dict[str, str]) -> list[str]:
    """Where a page's block differs from this run (masked: :data:`VARYING`)."""
    problems: list[str] = []
    for page in pages():
        for block in blocks(page):
            if block.name not in captured:
                continue
            if masked(block.text) != masked(captured[block.name]):
                problems.append(f"{page.relative_to(ROOT)}: [{block.name}] differs from the run")
    return problems


def scene_names() -> set[str]:
    return {s.name for s in SCENES}


def main(argv: list[str] | None = None, report: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs_capture")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="write the captured blocks")
    mode.add_argument("--check", action="store_true", help="fail where a page differs")
    parser.add_argument("--only", action="append", help="run only this scene (repeat)")
    parser.add_argument("--keep", type=Path, help="run in this directory (kept) instead")
    args = parser.parse_args(argv)
    only = set(args.only) if args.only else None
    unknown = (only or set()) - scene_names()
    if unknown:
        parser.error(f"unknown scene(s): {', '.join(sorted(unknown))}")
    if args.keep is not None:
        shutil.rmtree(args.keep, ignore_errors=True)
        args.keep.mkdir(parents=True)
        captured = run_all(args.keep.resolve(), only)
    else:
        with tempfile.TemporaryDirectory(prefix="rw-docs-") as tmp:
            captured = run_all(Path(tmp).resolve(), only)
    if args.write:
        write(captured)
        report(f"docs: {len(captured)} command(s) captured into {PAGES.relative_to(ROOT)}/")
        return 0
    problems = check(captured)
    for p in problems:
        report(p)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
